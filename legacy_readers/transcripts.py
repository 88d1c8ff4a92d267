"""Legacy JSONL transcripts: ``agents/<id>/sessions/<sessionId>.jsonl`` (and ``-topic-<id>`` variants).

Each file becomes ``transcript_events`` (header as seq 0, one row per
non-blank line, order and ids as in the file) plus
``transcript_event_identities`` in its agent's database. Headers of version
1 and 2 are upgraded to 3: V1 entries get the deterministic ids OpenClaw's
importer gives them (sha256 of ``"openclaw-transcript-v1\\n" +
JSON.stringify({index, entry})``, first unused 8-hex slice), a linear
``parentId`` chain and ``firstKeptEntryId``; V2 ``hookMessage`` roles become
``custom``. Unchanged lines are stored byte for byte (minus the newline).

Bad lines: an invalid line in the middle of a file fails the whole file
(nothing imported, the file stays where it is, the line is named). A torn
last line (invalid JSON and no final newline: a crash mid-append) is
reported; the lines before it are imported and the original file is kept
byte-exact in the run's retired folder. A file without a session header
(written after a reset) is imported under the session id of its file name.
The file is streamed line by line; memory does not grow with its size.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any, BinaryIO

from legacy_readers._jsjson import js_stringify
from legacy_readers.base import ImportContext, Inspection, Reader, Source, WriteResult, parse_json_line, validate
from legacy_readers.session_family import lineage_owners, recovered_key
from statekit.errors import SourceError
from statekit.fsutil import iter_lines, open_regular_file

CURRENT_VERSION = 3
SESSION_ID_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,127}$", re.I)
BATCH = 2000
BATCH_BYTES = 8 << 20  # flush early when lines are big


def ensure_session_row(conn: Any, ctx: ImportContext, agent_id: str, session_id: str, at_ms: int, updated_ms: int) -> None:
    """The ``sessions`` root of a transcript (the FK target of its rows); never overwrites an existing one.

    Its key is the one OpenClaw's own migration gives the same file: the key
    of the session-index entry whose family lists the id (a pre-compaction
    transcript belongs to its entry), else recovered history
    ``agent:<agentId>:recovered:<sessionId>`` with an archived entry
    ``{sessionId, updatedAt, archivedAt}`` (``updatedAt`` = the file's mtime, as
    OpenClaw sets it). A later import of an index that lists the session takes
    the row over (:func:`claim_recovered`).
    """
    if session_exists(conn, session_id):
        return
    owners = ctx.run_cached(("session-lineage-owners", agent_id), lambda: lineage_owners(conn))
    owner = owners.get(session_id)
    key = owner or recovered_key(agent_id, session_id)
    conn.execute(
        "INSERT INTO sessions(session_id, session_key, session_scope, created_at, updated_at) VALUES (?, ?, 'conversation', ?, ?)",
        (session_id, key, at_ms, updated_ms),
    )
    if owner is not None:
        return
    entry = js_stringify({"sessionId": session_id, "updatedAt": updated_ms, "archivedAt": updated_ms or 1})
    conn.execute(
        "INSERT INTO session_entries(session_key, session_id, entry_json, updated_at) VALUES (?, ?, ?, ?)"
        " ON CONFLICT(session_key) DO NOTHING",
        (key, session_id, entry, updated_ms),
    )
    conn.execute(
        "INSERT INTO session_routes(session_key, session_id, updated_at) VALUES (?, ?, ?) ON CONFLICT(session_key) DO NOTHING",
        (key, session_id, updated_ms),
    )


def session_exists(conn: Any, session_id: str) -> bool:
    return conn.execute("SELECT 1 FROM sessions WHERE session_id = ?", (session_id,)).fetchone() is not None


def claim_recovered(conn: Any, agent_id: str, session_id: str) -> None:
    """An index now lists ``session_id``: drop the recovered entry and route an earlier import gave it."""
    key = recovered_key(agent_id, session_id)
    conn.execute("DELETE FROM session_entries WHERE session_key = ? AND session_id = ?", (key, session_id))
    conn.execute("DELETE FROM session_routes WHERE session_key = ? AND session_id = ?", (key, session_id))


class TranscriptRows:
    """Batched ``transcript_events`` + ``transcript_event_identities`` rows for one session.

    One identity row per event with a non-empty string ``id``; a message
    ``idempotencyKey`` seen twice is kept on the first message only (the
    column is unique per session), with a notice naming the line.
    """

    def __init__(self, conn: Any, session_id: str, rel: str, notices: list[str]) -> None:
        self.conn = conn
        self.session_id = session_id
        self.rel = rel
        self.notices = notices
        self.events: list[tuple[Any, ...]] = []
        self.identities: list[tuple[Any, ...]] = []
        self.seen_keys: set[str] = set()
        self.pending_bytes = 0

    def add(self, number: int, seq: int, text: str, event: dict[str, Any], event_ms: int) -> None:
        self.events.append((self.session_id, seq, text, event_ms))
        self.pending_bytes += len(text)
        event_id = event.get("id")
        if isinstance(event_id, str) and event_id:
            message = event.get("message") if isinstance(event.get("message"), dict) else {}
            key = message.get("idempotencyKey")
            key = key if isinstance(key, str) and key else None
            if key is not None:
                if key in self.seen_keys:
                    self.notices.append(f"{self.rel}:{number}: duplicate message idempotencyKey; kept on the first message only")
                    key = None
                else:
                    self.seen_keys.add(key)
            parent = event.get("parentId")
            self.identities.append(
                (self.session_id, event_id, seq, event.get("type"), parent if isinstance(parent, str) else None, key, event_ms)
            )
        if len(self.events) >= BATCH or self.pending_bytes >= BATCH_BYTES:
            self.flush()

    def flush(self) -> None:
        self.pending_bytes = 0
        if self.events:
            self.conn.executemany("INSERT INTO transcript_events(session_id, seq, event_json, created_at) VALUES (?, ?, ?, ?)", self.events)
            self.events.clear()
        if self.identities:
            self.conn.executemany(
                "INSERT INTO transcript_event_identities(session_id, event_id, seq, event_type, parent_id,"
                " message_idempotency_key, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT(session_id, event_id) DO UPDATE SET seq = excluded.seq, event_type = excluded.event_type,"
                " parent_id = excluded.parent_id,"
                " message_idempotency_key = excluded.message_idempotency_key, created_at = excluded.created_at",
                self.identities,
            )
            self.identities.clear()


def parse_iso_ms(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return int(value) if value == value and abs(value) < 1e16 else None
    if not isinstance(value, str) or not value:
        return None
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        from datetime import timezone

        parsed = parsed.replace(tzinfo=timezone.utc)
    return int(parsed.timestamp() * 1000)


_OPTIONAL_TYPES: tuple[tuple[str, tuple[type, ...]], ...] = (
    ("id", (str,)),
    ("parentId", (str,)),
    ("timestamp", (str, int, float)),
    ("version", (int,)),
    ("message", (dict,)),
)


def conforms(event: dict[str, Any]) -> bool:
    """Fast path for the transcript-event JSON Schema: True only when the schema surely accepts ``event``.

    The schema stays the authority: when this returns False the line is
    validated with jsonschema, which either accepts it or names the problem.
    ``tests/readers/test_transcript_schema.py`` checks the two agree.
    """
    kind = event.get("type")
    if not isinstance(kind, str) or not kind:
        return False
    for name, types in _OPTIONAL_TYPES:
        value = event.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, types):
            return False
    return True


def file_session_id(name: str) -> str:
    stem = name[: -len(".jsonl")] if name.endswith(".jsonl") else name
    return stem.split("-topic-", 1)[0]


def v1_entry_id(index: int, entry: Any, used: set[str]) -> str:
    digest = hashlib.sha256(("openclaw-transcript-v1\n" + js_stringify({"index": index, "entry": entry})).encode("utf-8")).hexdigest()
    for start in range(0, len(digest) - 7, 8):
        candidate = digest[start : start + 8]
        if candidate not in used:
            return candidate
    return digest


def _lines(handle: BinaryIO) -> Iterator[tuple[int, bytes, bool]]:
    """Yield (1-based line number, stripped bytes, had_newline) for every non-blank line."""
    number = 0
    for raw in handle:
        number += 1
        had_newline = raw.endswith(b"\n")
        line = raw.strip()
        if number == 1 and line.startswith(b"\xef\xbb\xbf"):
            line = line[3:].strip()
        if line:
            yield number, line, had_newline


class _Scan:
    """Parse a transcript stream; shared by inspect and write."""

    def __init__(self, source: Source, handle: BinaryIO) -> None:
        self.source = source
        self.lines = _lines(handle)
        self.torn: int | None = None

    def events(self) -> Iterator[tuple[int, bytes, dict[str, Any]]]:
        pending: tuple[int, bytes, bool] | None = None
        for item in self.lines:
            if pending is not None:
                yield self._parse(pending, last=False)
            pending = item
        if pending is not None:
            number, line, had_newline = pending
            try:
                yield self._parse(pending, last=True)
            except SourceError:
                if had_newline:
                    raise
                self.torn = number

    def _parse(self, item: tuple[int, bytes, bool], last: bool) -> tuple[int, bytes, dict[str, Any]]:
        number, line, _ = item
        event = parse_json_line(line, self.source.rel, number)
        if not isinstance(event, dict):
            raise SourceError(self.source.rel, "expected a JSON object", line=number)
        if not conforms(event):
            validate(event, "transcript-event", self.source.rel, line=number)
        return number, line, event


def _header_info(source: Source, first: dict[str, Any] | None) -> tuple[str, int, dict[str, Any] | None, list[str]]:
    """(session_id, version, header or None, notices) for a transcript."""
    name = source.rel.rsplit("/", 1)[-1]
    from_name = file_session_id(name)
    notices: list[str] = []
    if first is not None and first.get("type") == "session":
        session_id = first.get("id")
        if not isinstance(session_id, str) or not SESSION_ID_RE.match(session_id):
            raise SourceError(source.rel, "session header has no valid id", line=1, json_path="$.id")
        version = first.get("version")
        version = version if isinstance(version, int) and not isinstance(version, bool) else 1
        if session_id.lower() != from_name.lower():
            notices.append(f"{source.rel}: session header id {session_id!r} differs from the file name; imported as {session_id!r}")
        return session_id, version, first, notices
    if not SESSION_ID_RE.match(from_name):
        raise SourceError(source.rel, "transcript has no session header and its file name is not a session id")
    notices.append(f"{source.rel}: no session header (written after a reset); imported under the file name's session id {from_name!r}")
    return from_name, CURRENT_VERSION, None, notices


class TranscriptReader(Reader):
    kind = "transcript-jsonl"
    family = "sessions"
    description = "Legacy JSONL transcript (PI session format, header versions 1-3)"
    patterns = ("agents/*/sessions/*.jsonl", "sessions/*.jsonl")
    exclude = ("**.trajectory.jsonl", "**.acp-stream.jsonl", "**.checkpoint.*.jsonl")
    schema_name = "transcript-event"
    target_tables = ("agent.transcript_events", "agent.transcript_event_identities")
    action = "import"
    order = 20

    def inspect(self, source: Source, handle: BinaryIO) -> Inspection:
        scan = _Scan(source, handle)
        count = 0
        first: dict[str, Any] | None = None
        for _number, _line, event in scan.events():
            if count == 0:
                first = event
            count += 1
        if count == 0:
            raise SourceError(source.rel, "transcript is empty")
        session_id, version, _header, notices = _header_info(source, first)
        warnings = list(notices)
        if scan.torn is not None:
            warnings.append(f"{source.rel}:{scan.torn}: torn last line (crash mid-append); the lines before it will be imported")
        name = source.rel.rsplit("/", 1)[-1]
        return Inspection(
            record_count=count + (1 if scan.torn is not None else 0),
            warnings=warnings,
            details={
                "identity": (session_id,),
                "identity_label": "session id",
                "preferred": file_session_id(name).lower() == session_id.lower(),
                "session_id": session_id,
                "version": version,
            },
        )

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        agent_id = source.agent_id
        if agent_id is None:
            raise SourceError(source.rel, "cannot tell which agent owns this transcript")
        conn = ctx.agent_db(agent_id)
        try:
            fallback_ms = os.stat(source.path).st_mtime_ns // 1_000_000  # Math.floor(mtimeMs), as OpenClaw reads it
        except OSError:
            fallback_ms = ctx.now_ms
        scan = _Scan(source, handle)
        events = scan.events()
        first_item = next(events, None)
        if first_item is None:
            raise SourceError(source.rel, "transcript is empty")
        session_id, version, header, notices = _header_info(source, first_item[2])
        v1_ids = self._v1_ids(source) if version < 2 else None
        header_ms = parse_iso_ms(header.get("timestamp")) if header else None

        ensure_session_row(conn, ctx, agent_id, session_id, header_ms or fallback_ms, fallback_ms)
        conn.execute("DELETE FROM transcript_event_identities WHERE session_id = ?", (session_id,))
        conn.execute("DELETE FROM transcript_events WHERE session_id = ?", (session_id,))

        rows = TranscriptRows(conn, session_id, source.rel, notices)
        previous_ms = header_ms or fallback_ms
        seq = 0
        last_ms = previous_ms

        def all_events() -> Iterator[tuple[int, bytes, dict[str, Any]]]:
            yield first_item
            yield from events

        for number, line, event in all_events():
            changed = False
            if version < CURRENT_VERSION:
                changed = self._upgrade(event, seq, header is not None and seq == 0, version, v1_ids)
            event_ms = parse_iso_ms(event.get("timestamp")) or previous_ms
            previous_ms = event_ms
            last_ms = max(last_ms, event_ms)
            rows.add(number, seq, js_stringify(event) if changed else line.decode("utf-8"), event, event_ms)
            seq += 1
        rows.flush()
        result = WriteResult(records=seq, notices=notices)
        if scan.torn is not None:
            result.warnings.append(
                f"{source.rel}:{scan.torn}: torn last line (crash mid-append) not imported; the original file is kept byte-exact in the retired folder"
            )
        result.expect("agent:" + agent_id, "transcript_events", "session_id = ?", (session_id,), seq)
        result.report.update({"session_id": session_id, "header_version": version, "events": seq, "torn_line": scan.torn})
        return result

    @staticmethod
    def _upgrade(event: dict[str, Any], seq: int, is_header: bool, version: int, v1_ids: list[str | None] | None) -> bool:
        if is_header:
            event["version"] = CURRENT_VERSION
            return True
        changed = False
        if version < 2 and v1_ids is not None:
            event_id = v1_ids[seq]
            previous = next((v1_ids[i] for i in range(seq - 1, -1, -1) if v1_ids[i] is not None), None)
            event["id"] = event_id
            event["parentId"] = previous
            if event.get("type") == "compaction" and "firstKeptEntryIndex" in event:
                index = event.pop("firstKeptEntryIndex")
                if isinstance(index, int) and 0 <= index < len(v1_ids) and v1_ids[index] is not None:
                    event["firstKeptEntryId"] = v1_ids[index]
            changed = True
        message = event.get("message")
        if event.get("type") == "message" and isinstance(message, dict) and message.get("role") == "hookMessage":
            message["role"] = "custom"
            changed = True
        return changed

    @staticmethod
    def _v1_ids(source: Source) -> list[str | None]:
        """Deterministic ids for every entry of a V1 file (index = position in the file, header = 0)."""
        ids: list[str | None] = []
        used: set[str] = set()
        with open_regular_file(source.path) as handle:
            for index, (_number, line, _nl) in enumerate(_lines(handle)):
                try:
                    entry = json.loads(line)
                except ValueError:
                    ids.append(None)
                    continue
                if isinstance(entry, dict) and entry.get("type") == "session":
                    ids.append(None)
                    continue
                new_id = v1_entry_id(index, entry, used)
                used.add(new_id)
                ids.append(new_id)
        return ids


__all__ = ["TranscriptReader", "TranscriptRows", "ensure_session_row", "parse_iso_ms", "v1_entry_id", "iter_lines"]
