"""Session-directory artifacts next to the transcripts (``agents/<id>/sessions/`` and flat ``sessions/``).

Plan orders 40-49, after the session index (10) and the transcripts (20):

* ``<id>.trajectory.jsonl`` (40, import): trajectory runtime events ->
  ``trajectory_runtime_events``. ``run_id`` is the line's ``runId`` (``''``
  when absent); ``seq`` is the line's own ``seq`` (its position inside the
  run, 1-based, as OpenClaw wrote it) when that is a positive integer not yet
  used in the run, otherwise the next free number of that run. File-era
  transcript paths (``sessionFile`` and friends) are stripped from the event
  (top level, ``data``, ``data.harness``); every other byte of a line is kept.
* ``<parentId>.checkpoint.<uuid>.jsonl`` (41, import): a pre-compaction copy of
  a transcript -> a ``transcript_snapshots`` row on the owning session; the
  events are stored only when they are not already a prefix of that session's
  imported ``transcript_events`` (then under their own session id
  ``<sessionId>.checkpoint.<uuid>``, never over the live transcript).
* ``<id>.acp-stream.jsonl`` (42, retain), reset/deleted/bak transcript archives
  and ``sessions.json.bak*`` (43, retain): kept in place, byte for byte.
* ``*.jsonl.lock`` / ``sessions.json.lock`` (44, drop): stale lock files.
* ``<id>.trajectory-path.json`` (45, drop): a file-era path pointer; its facts
  (not its path) go into the trajectory sidecar's receipt.

Details and reasons: docs/readers/session-artifacts.md.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Generator, Iterator
from typing import Any, BinaryIO

from statekit.values import file_mtime_ms, js_json
from statekit.legacy_readers.base import ImportContext, Inspection, ReadContext, Reader, Source, WriteResult
from statekit.documents import parse_json_line, validate
from statekit.legacy_readers.transcripts import (
    CURRENT_VERSION,
    SESSION_ID_RE,
    TranscriptReader,
    TranscriptRows,
    _Scan,
    ensure_session_row,
    file_session_id,
    event_time_ms,
    session_exists,
    v1_id_prefix,
)
from statekit.legacy_readers.session_family import recovered_key
from statekit.errors import SourceError
from statekit.legacy_readers.writer import DatabaseWriter, Json

_DIRS = ("agents/*/sessions/", "sessions/")
BATCH = 1000
BATCH_BYTES = 8 << 20  # flush early for big lines (trajectory lines reach 70 KB)
FILE_ERA_FIELDS = ("sessionFile", "sessionFilePath", "transcriptPath", "transcriptLocator", "transcriptFile", "lockPath")
TRAJECTORY_SUFFIX = ".trajectory.jsonl"
POINTER_SUFFIX = ".trajectory-path.json"
CHECKPOINT_RE = re.compile(
    r"^(?P<parent>.+)\.checkpoint\.(?P<checkpoint>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$",
    re.I,
)
CHECKPOINT_REASON = "compaction-checkpoint"


def _in_session_dirs(*names: str) -> tuple[str, ...]:
    return tuple(d + n for d in _DIRS for n in names)


def _basename(rel: str) -> str:
    return rel.rsplit("/", 1)[-1]


class _JsonlScan:
    """Stream a JSONL file: one validated JSON object per non-blank line; a torn last line is tolerated.

    An invalid line in the middle fails the file (SourceError naming the line).
    An invalid *last* line without a final newline (a crash mid-append) is
    remembered in ``torn`` and skipped.
    """

    def __init__(self, source: Source, handle: BinaryIO, schema: str) -> None:
        self.source = source
        self.handle = handle
        self.schema = schema
        self.torn: int | None = None

    def _lines(self) -> Iterator[tuple[int, bytes, bool]]:
        number = 0
        for raw in self.handle:
            number += 1
            had_newline = raw.endswith(b"\n")
            line = raw.strip()
            if number == 1 and line.startswith(b"\xef\xbb\xbf"):
                line = line[3:].strip()
            if line:
                yield number, line, had_newline

    def events(self) -> Iterator[tuple[int, bytes, dict[str, Any]]]:
        pending: tuple[int, bytes, bool] | None = None
        for item in self._lines():
            if pending is not None:
                yield self._parse(pending)
            pending = item
        if pending is not None:
            try:
                yield self._parse(pending)
            except SourceError:
                if pending[2]:
                    raise
                self.torn = pending[0]

    def _parse(self, item: tuple[int, bytes, bool]) -> tuple[int, bytes, dict[str, Any]]:
        number, line, _ = item
        event = parse_json_line(line, self.source.rel, number)
        if not isinstance(event, dict):
            raise SourceError(self.source.rel, "expected a JSON object", line=number)
        validate(event, self.schema, self.source.rel, line=number)
        return number, line, event


# --- trajectory sidecars ---------------------------------------------------------


def strip_file_era(event: dict[str, Any]) -> int:
    """Remove file-era transcript paths at the places OpenClaw wrote them; return how many were removed."""
    removed = 0
    containers: list[Any] = [event]
    data = event.get("data")
    if isinstance(data, dict):
        containers.append(data)
        if isinstance(data.get("harness"), dict):
            containers.append(data["harness"])
    for container in containers:
        for name in FILE_ERA_FIELDS:
            if name in container:
                del container[name]
                removed += 1
    return removed


def trajectory_session_id(rel: str) -> str:
    name = _basename(rel)
    session_id = name[: -len(TRAJECTORY_SUFFIX)] if name.endswith(TRAJECTORY_SUFFIX) else name
    if not SESSION_ID_RE.match(session_id):
        raise SourceError(rel, "file name does not start with a valid session id")
    return session_id


def pointer_facts(source: Source, session_id: str, ctx: ReadContext) -> dict[str, Any] | None:
    """Non-path facts of the sibling ``<id>.trajectory-path.json`` pointer (read-only; None when absent)."""
    pointer = source.path.with_name(session_id + POINTER_SUFFIX)
    if not pointer.exists():
        return None
    rel = source.rel[: -len(_basename(source.rel))] + pointer.name
    facts: dict[str, Any] = {"path": rel}
    try:
        with ctx.reopen(rel) as handle:
            data = handle.read(1 << 20)
    except OSError as exc:
        facts["problem"] = f"unreadable ({exc.strerror or exc})"
        return facts
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        facts["problem"] = "not valid JSON"
        return facts
    if not isinstance(document, dict):
        facts["problem"] = "not a JSON object"
        return facts
    for name in ("traceSchema", "schemaVersion", "sessionId"):
        if isinstance(document.get(name), (str, int)) and not isinstance(document.get(name), bool):
            facts[name] = document[name]
    runtime = document.get("runtimeFile")
    if isinstance(runtime, str) and runtime:
        runtime_name = runtime.replace("\\", "/").rsplit("/", 1)[-1]
        facts["runtime_file_name"] = runtime_name
        facts["runtime_file_matches"] = runtime_name == _basename(source.rel)
    facts["session_id_matches"] = document.get("sessionId") == session_id
    return facts


class TrajectoryReader(Reader):
    kind = "trajectory-jsonl"
    family = "sessions"
    description = "Trajectory runtime-event sidecar <sessionId>.trajectory.jsonl"
    patterns = _in_session_dirs("*.trajectory.jsonl")
    schema_name = "trajectory-event"
    target_tables = ("agent.trajectory_runtime_events",)
    action = "import"
    depends_on = ("session-index", "transcript-jsonl")  # its events reference the sessions rows

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        session_id = trajectory_session_id(source.rel)
        scan = _JsonlScan(source, handle, self.schema_name or "")
        count = sum(1 for _ in scan.events())
        warnings = []
        if count == 0:
            if scan.torn is not None:
                raise SourceError(source.rel, "the only line is torn (crash mid-append); nothing to import", line=scan.torn)
            raise SourceError(source.rel, "trajectory sidecar is empty")
        if scan.torn is not None:
            warnings.append(f"{source.rel}:{scan.torn}: torn last line (crash mid-append); the lines before it will be imported")
        return Inspection(
            record_count=count + (1 if scan.torn is not None else 0),
            warnings=warnings,
            details={
                "identity": (session_id,),
                "identity_label": "trajectory session id",
                "preferred": source.rel.startswith("agents/"),
                "session_id": session_id,
            },
        )

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        agent_id = source.agent_id
        if agent_id is None:
            raise SourceError(source.rel, "cannot tell which agent owns this trajectory sidecar")
        db = ctx.writer.agent(agent_id)
        session_id = owning_session(db, source.rel)
        fallback_ms = file_mtime_ms(source, ctx.now_ms)
        scan = _JsonlScan(source, handle, self.schema_name or "")
        first, known = _trajectory_merge_base(db, session_id) if ctx.merging else (0, set())  # a file that came back: keep what is there
        if not ctx.merging:
            db.delete("trajectory_runtime_events", {"session_id": session_id})  # replace what this session owns

        notices: list[str] = []
        runs: set[str | None] = set()
        rows: list[tuple[Any, ...]] = []
        previous_ms = fallback_ms
        total = stripped = other_session = pending_bytes = 0

        def flush() -> None:
            nonlocal pending_bytes
            if rows:
                db.insert_many("trajectory_runtime_events", ("session_id", "seq", "run_id", "event_json", "created_at"), rows,
                               owner={"session_id": session_id})
                rows.clear()
            pending_bytes = 0

        for _number, line, event in scan.events():
            run_id = event.get("runId") if isinstance(event.get("runId"), str) and event.get("runId") else None
            runs.add(run_id)
            line_session = event.get("sessionId")
            if isinstance(line_session, str) and line_session != session_id:
                other_session += 1
            removed = strip_file_era(event)
            stripped += removed
            text = js_json(event) if removed else line.decode("utf-8")
            if text in known:
                continue
            event_ms = event_time_ms(event.get("ts")) or previous_ms
            previous_ms = event_ms
            total += 1
            rows.append((session_id, first + total, run_id, text, event_ms))
            pending_bytes += len(line)
            if len(rows) >= BATCH or pending_bytes >= BATCH_BYTES:
                flush()
        flush()
        if total == 0 and not known:
            if scan.torn is None:
                raise SourceError(source.rel, "trajectory sidecar is empty")
            raise SourceError(source.rel, "the only line is torn (crash mid-append); nothing to import", line=scan.torn)
        if other_session:
            notices.append(f"{source.rel}: {other_session} line(s) name another sessionId; imported under the file's session {session_id!r}")
        result = WriteResult(records=total, notices=notices)
        if scan.torn is not None:
            result.warnings.append(
                f"{source.rel}:{scan.torn}: torn last line (crash mid-append) not imported; the original file is kept byte-exact in the retired folder"
            )
        result.report.update({
            "session_id": session_id,
            "events": total,
            "runs": len(runs),
            "file_era_fields_stripped": stripped,
            "torn_line": scan.torn,
            "pointer": pointer_facts(source, session_id, ctx),
        })
        return result


def _trajectory_merge_base(db: DatabaseWriter, session_id: str) -> tuple[int, set[str]]:
    """For a trajectory sidecar that came back after its import: the last seq imported and the events already there."""
    where = {"session_id": session_id}
    last = db.first("trajectory_runtime_events", "max(seq)", where)
    events = {str(row[0]) for row in db.select("trajectory_runtime_events", ("event_json",), where)}
    return (int(last[0]) if last and last[0] is not None else 0), events


def owning_session(db: DatabaseWriter, rel: str) -> str:
    """The imported session a trajectory sidecar belongs to; a sidecar never creates a session of its own.

    ``<sessionId>.trajectory.jsonl`` belongs to that session; a thread's
    ``<sessionId>-topic-<thread>.trajectory.jsonl`` to the session whose
    transcript is ``<sessionId>-topic-<thread>.jsonl`` (its header id is the
    session id). With no such session imported yet the file stays in place.
    """
    stem = trajectory_session_id(rel)
    for candidate in dict.fromkeys((stem, file_session_id(stem + ".jsonl"))):
        if session_exists(db, candidate):
            return candidate
    raise SourceError(rel, f"left in place: no imported session {stem!r} owns this trajectory (its transcript must be imported first)")


class TrajectoryPointerReader(Reader):
    kind = "trajectory-pointer"
    family = "sessions"
    description = "Trajectory path pointer <sessionId>.trajectory-path.json"
    patterns = _in_session_dirs("*.trajectory-path.json")
    target_tables = ()
    action = "drop"
    reason = "file-era path pointer to the trajectory sidecar; its facts are recorded in the sidecar's receipt and no row stores a file path"
    depends_on = ("trajectory-jsonl",)  # the sidecar reads this pointer, so it is retired after it


# --- compaction checkpoints --------------------------------------------------------


def parse_checkpoint_name(rel: str) -> tuple[str, str]:
    match = CHECKPOINT_RE.match(_basename(rel))
    if match is None:
        raise SourceError(rel, "not a compaction checkpoint name (<sessionId>.checkpoint.<uuid>.jsonl)")
    return match.group("parent"), match.group("checkpoint").lower()


class _CheckpointEvents:
    """The checkpoint's events as the transcript reader would store them (same header upgrade, same ids)."""

    def __init__(self, source: Source, handle: BinaryIO) -> None:
        self.source = source
        self.scan = _Scan(source, handle)
        self.header: dict[str, Any] | None = None
        self.version = CURRENT_VERSION
        self.v1_prefix: str | None = None

    def rows(self) -> Iterator[tuple[int, int, str, dict[str, Any]]]:
        """Yield (line number, seq, event_json, event)."""
        seq = 0
        for number, line, event in self.scan.events():
            if seq == 0:
                if event.get("type") == "session":
                    self.header = event
                    version = event.get("version")
                    self.version = version if isinstance(version, int) and not isinstance(version, bool) else 1
                    if self.version < 2:
                        # the ids the live transcript it copies got: that file's path and the session id
                        parent, _checkpoint = parse_checkpoint_name(self.source.rel)
                        live = os.path.abspath(self.source.path.with_name(f"{parent}.jsonl"))
                        self.v1_prefix = v1_id_prefix(live, str(event.get("id")))
            changed = False
            if self.version < CURRENT_VERSION:
                changed = TranscriptReader._upgrade(
                    event, seq, self.header is not None and seq == 0, self.version, self.v1_prefix, self.header is not None
                )
            yield number, seq, (js_json(event) if changed else line.decode("utf-8")), event
            seq += 1


class CheckpointReader(Reader):
    kind = "transcript-checkpoint"
    family = "sessions"
    description = "Pre-compaction checkpoint copy of a transcript <sessionId>.checkpoint.<uuid>.jsonl"
    patterns = _in_session_dirs("*.checkpoint.*.jsonl")
    schema_name = "transcript-event"
    target_tables = (
        "agent.transcript_snapshots",
        "agent.transcript_events",
        "agent.transcript_event_identities",
        "agent.sessions",  # the owning session's root, and the copy's (recovered entry and route included)
        "agent.session_entries",
        "agent.session_routes",
    )
    action = "import"
    depends_on = ("session-index", "transcript-jsonl")  # compares with the imported transcript

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        parent, checkpoint = parse_checkpoint_name(source.rel)
        scan = _Scan(source, handle)
        count = 0
        header_id = None
        for _number, _line, event in scan.events():
            if count == 0 and event.get("type") == "session":
                header_id = event.get("id")
                if not isinstance(header_id, str) or not SESSION_ID_RE.match(header_id):
                    raise SourceError(source.rel, "session header has no valid id", line=1, json_path="$.id")
            count += 1
        scan.require_readable()
        if count == 0:
            raise SourceError(source.rel, "checkpoint transcript is empty")
        if header_id is None and not SESSION_ID_RE.match(parent):
            raise SourceError(source.rel, "checkpoint has no session header and its file name does not start with a session id")
        warnings = []
        if scan.torn is not None:
            warnings.append(f"{source.rel}:{scan.torn}: torn last line (crash mid-append); the lines before it will be imported")
        return Inspection(
            record_count=count + (1 if scan.torn is not None else 0),
            warnings=warnings,
            details={
                "identity": (header_id or parent, checkpoint),
                "identity_label": "checkpoint id",
                "preferred": source.rel.startswith("agents/"),
            },
        )

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        agent_id = source.agent_id
        if agent_id is None:
            raise SourceError(source.rel, "cannot tell which agent owns this checkpoint")
        parent, checkpoint = parse_checkpoint_name(source.rel)
        db = ctx.writer.agent(agent_id)
        fallback_ms = file_mtime_ms(source, ctx.now_ms)

        # Pass 1 (the hashed handle): compare with the owning session's imported events.
        events = _CheckpointEvents(source, handle)
        owner: str | None = None
        count = 0
        prefix = True
        last_id: str | None = None
        last_ms: int | None = None
        stored: Generator[tuple[Any, ...], None, None] | None = None  # db.query's rows (a generator: closed early)
        for _number, seq, text, event in events.rows():
            if seq == 0:
                owner = self._owner(source, parent, events.header)
                stored = db.query("SELECT seq, event_json FROM transcript_events WHERE session_id = ? ORDER BY seq", (owner,))
            if prefix:
                row = next(stored, None) if stored is not None else None
                if row is None or row[0] != seq or row[1] != text:
                    prefix = False
            count += 1
            if isinstance(event.get("id"), str) and event.get("type") != "session":
                last_id = event["id"]
            last_ms = event_time_ms(event.get("timestamp")) or last_ms
        if owner is None:
            raise SourceError(source.rel, "checkpoint transcript is empty")
        events.scan.require_readable()
        torn = events.scan.torn
        header_ms = event_time_ms(events.header.get("timestamp")) if events.header else None
        copy_id = f"{owner}.checkpoint.{checkpoint}"
        if stored is not None:
            stored.close()
        ensure_session_row(db, ctx, agent_id, owner, header_ms or fallback_ms, fallback_ms)
        # Rows a previous import of this checkpoint stored as a copy (the copy id is ours alone).
        db.delete("transcript_event_identities", {"session_id": copy_id})
        db.delete("transcript_events", {"session_id": copy_id})
        db.delete("sessions", {"session_id": copy_id, "session_key": recovered_key(agent_id, copy_id)})
        notices: list[str] = []
        if prefix:
            storage, events_session = "prefix-of-session", owner
            notices.append(f"{source.rel}: its {count} events are a prefix of session {owner!r}; recorded as a snapshot of that session")
        else:
            storage, events_session = "copy", copy_id
            self._store_copy(source, db, ctx, agent_id, copy_id, header_ms or fallback_ms, notices)
            notices.append(
                f"{source.rel}: events differ from (or are missing in) session {owner!r}; stored as session {copy_id!r}"
            )
        metadata = {
            "checkpointId": checkpoint,
            "storage": storage,
            "eventsSessionId": events_session,
            "headerSessionId": events.header.get("id") if events.header else None,
            "fileSessionId": parent,
            "headerVersion": events.version,
            "leafId": last_id,
            "tornLine": torn,
        }
        db.upsert(
            "transcript_snapshots",
            {"session_id": owner, "snapshot_id": checkpoint, "reason": CHECKPOINT_REASON, "event_count": count,
             "created_at": last_ms or fallback_ms, "metadata_json": Json(metadata)},
            ("session_id", "snapshot_id"),
        )
        if prefix:  # the events are the owning session's: they must still be there
            db.expect_rows("transcript_events", {"session_id": owner}, count)
        result = WriteResult(records=count, notices=notices)
        if torn is not None:
            result.warnings.append(
                f"{source.rel}:{torn}: torn last line (crash mid-append) not imported; the original file is kept byte-exact in the retired folder"
            )
        result.report.update({
            "session_id": owner,
            "checkpoint_id": checkpoint,
            "storage": storage,
            "events_session_id": events_session,
            "events": count,
            "torn_line": torn,
        })
        return result

    @staticmethod
    def _owner(source: Source, parent: str, header: dict[str, Any] | None) -> str:
        if header is not None:
            header_id = header.get("id")
            if not isinstance(header_id, str) or not SESSION_ID_RE.match(header_id):
                raise SourceError(source.rel, "session header has no valid id", line=1, json_path="$.id")
            return header_id
        if not SESSION_ID_RE.match(parent):
            raise SourceError(source.rel, "checkpoint has no session header and its file name does not start with a session id")
        return parent

    @staticmethod
    def _store_copy(source: Source, db: DatabaseWriter, ctx: ImportContext, agent_id: str, copy_id: str, created_ms: int, notices: list[str]) -> None:
        """Pass 2: store the checkpoint's events under their own session id (streamed again from the file, verified)."""
        ensure_session_row(db, ctx, agent_id, copy_id, created_ms, created_ms)
        rows = TranscriptRows(db, copy_id, source.rel, notices)
        previous_ms = created_ms
        with ctx.reopen(source.rel) as handle:
            for number, seq, text, event in _CheckpointEvents(source, handle).rows():
                event_ms = event_time_ms(event.get("timestamp")) or previous_ms
                previous_ms = event_ms
                rows.add(number, seq, text, event, event_ms)
        rows.flush()


class AcpStreamReader(Reader):
    kind = "acp-stream-jsonl"
    family = "sessions"
    description = "ACP parent relay stream log <sessionId>.acp-stream.jsonl"
    patterns = _in_session_dirs("*.acp-stream.jsonl")
    target_tables = ()
    action = "retain"
    reason = (
        "operator-facing ACP relay log; the target schema has no acp_parent_stream_events table, "
        "so it stays in place byte for byte"
    )


class TranscriptArchiveReader(Reader):
    kind = "transcript-archive"
    family = "sessions"
    description = "Reset/deleted/backup transcript archives and session index backups"
    patterns = _in_session_dirs("*.jsonl.reset.*", "*.jsonl.deleted.*", "*.jsonl.bak*", "sessions.json.bak*")
    target_tables = ()
    action = "retain"
    reason = (
        "archived history of a reset/deleted session or OpenClaw's own backup copy; importing it would resurrect "
        "it as a live session and schema v1 has no transcript-archive table, so it stays in place byte for byte"
    )


class SessionLockReader(Reader):
    kind = "session-lock"
    family = "sessions"
    description = "Transcript and session index lock files"
    patterns = _in_session_dirs("*.jsonl.lock", "sessions.json.lock")
    target_tables = ()
    action = "drop"
    reason = "stale lock file (the gateway is stopped)"
