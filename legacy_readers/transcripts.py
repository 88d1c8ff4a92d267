"""Legacy JSONL transcripts: ``agents/<id>/sessions/<sessionId>.jsonl`` (and ``-topic-<id>`` variants).

Each file becomes ``transcript_events`` (header as seq 0, one row per
non-blank line, order and ids as in the file) plus
``transcript_event_identities`` in its agent's database. Headers of version
1 and 2 are upgraded to 3 as OpenClaw 2026.9.6's importer upgrades them: V1
entries get its deterministic ids (``sha256(<file path> NUL <session id>)``,
16 hex, ``-<position in base 36>``), a linear ``parentId`` chain and
``firstKeptEntryId``; ``hookMessage`` roles become ``custom``. Unchanged lines are stored byte for byte (minus the newline).

Bad lines: an invalid line in the middle of a file fails the whole file
(nothing imported, the file stays where it is, the line is named). A torn
last line (invalid JSON and no final newline: a crash mid-append) is
reported; the lines before it are imported and the original file is kept
byte-exact in the run's retired folder. A file without a session header
(written after a reset) is imported under the session id of its file name.
The file is streamed line by line; memory does not grow with its size.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Protocol

from statekit.values import file_mtime_ms, js_json, ms
from statekit.legacy_readers.base import ImportContext, Inspection, ReadContext, Reader, Source, WriteResult
from statekit.documents import parse_json_line, validate
from statekit.legacy_readers.writer import DatabaseWriter, Json
from statekit.legacy_readers.session_family import lineage_owners, recovered_key
from statekit.errors import SourceError
from statekit.fsutil import SMALL_READ, iter_lines

CURRENT_VERSION = 3
SESSION_ID_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,127}$", re.I)
BATCH = 2000
BATCH_BYTES = 8 << 20  # flush early when lines are big
READ_BLOCK = 1 << 20


def ensure_session_row(db: DatabaseWriter, ctx: ImportContext, agent_id: str, session_id: str, at_ms: int, updated_ms: int) -> None:
    """The ``sessions`` root of a transcript (the FK target of its rows); never overwrites an existing one.

    Its key is the one OpenClaw's own migration gives the same file: the key
    of the session-index entry whose family lists the id (a pre-compaction
    transcript belongs to its entry), else recovered history
    ``agent:<agentId>:recovered:<sessionId>`` with an archived entry
    ``{sessionId, updatedAt, archivedAt}`` (``updatedAt`` = the file's mtime, as
    OpenClaw sets it). A later import of an index that lists the session takes
    the row over (:func:`claim_recovered`).
    """
    if session_exists(db, session_id):
        return
    owners = ctx.run_cached(("session-lineage-owners", agent_id), lambda: lineage_owners(db))
    owner = owners.get(session_id)
    key = owner or recovered_key(agent_id, session_id)
    db.insert(
        "sessions",
        {"session_id": session_id, "session_key": key, "session_scope": "conversation", "created_at": at_ms, "updated_at": updated_ms},
        key=("session_id",),
    )
    if owner is not None:
        return
    entry = Json({"sessionId": session_id, "updatedAt": updated_ms, "archivedAt": updated_ms or 1})
    db.upsert("session_entries", {"session_key": key, "session_id": session_id, "entry_json": entry, "updated_at": updated_ms},
              ("session_key",), update=False)
    db.upsert("session_routes", {"session_key": key, "session_id": session_id, "updated_at": updated_ms}, ("session_key",), update=False)


def session_exists(db: DatabaseWriter, session_id: str) -> bool:
    return db.exists("sessions", {"session_id": session_id})


def claim_recovered(db: DatabaseWriter, agent_id: str, session_id: str) -> None:
    """An index now lists ``session_id``: drop the recovered entry and route an earlier import gave it."""
    key = recovered_key(agent_id, session_id)
    db.delete("session_entries", {"session_key": key, "session_id": session_id})
    db.delete("session_routes", {"session_key": key, "session_id": session_id})


@dataclass
class EventMerge:
    """How a transcript meets the events its session already has (:func:`session_events_merge`).

    Replacing (the default): the session's events were deleted, the file's are written from seq 0.
    Merging (the file came back after an import of other bytes): the imported events stay; the
    file's events go after them, except the header (the session has one) and events already there
    (the same ``id``, or for an event without one the same bytes).
    """

    merging: bool = False
    first_seq: int = 0
    ids: set[str] = field(default_factory=set)
    digests: set[bytes] = field(default_factory=set)
    keys: set[str] = field(default_factory=set)  # message idempotency keys already taken
    skipped: int = 0

    def known(self, line: bytes, event: dict[str, Any]) -> bool:
        """True for an event a merge leaves out (always False when replacing)."""
        if not self.merging:
            return False
        event_id = event.get("id")
        if event.get("type") == "session":
            found = True
        elif isinstance(event_id, str) and event_id:
            found = event_id in self.ids
        else:
            found = hashlib.sha1(line).digest() in self.digests
        self.skipped += found
        return found

    def report(self, rel: str, added: int, result: WriteResult) -> None:
        if not self.merging:
            return
        result.notices.append(f"{rel}: merged {added} new event(s) after the {self.first_seq} already imported"
                              f" ({self.skipped} already there, left as they were)")
        result.report["merged"] = {"kept_events": self.first_seq, "added_events": added, "already_there": self.skipped}


def session_events_merge(db: DatabaseWriter, ctx: ImportContext, session_id: str) -> EventMerge:
    """Replace the session's events, or -- when an earlier run imported other bytes of this path and the
    session has events -- keep them and merge (a stale writer's new file holds only its new lines)."""
    if ctx.merging and db.exists("transcript_events", {"session_id": session_id}):
        where = {"session_id": session_id}
        last = db.first("transcript_events", "max(seq)", where)
        merge = EventMerge(merging=True, first_seq=int(last[0]) + 1 if last and last[0] is not None else 0)
        for event_id, key in db.select("transcript_event_identities", ("event_id", "message_idempotency_key"), where):
            merge.ids.add(str(event_id))
            if isinstance(key, str):
                merge.keys.add(key)
        for (text,) in db.select("transcript_events", ("event_json",), where):
            if isinstance(text, str):
                merge.digests.add(hashlib.sha1(text.encode("utf-8")).digest())
        return merge
    db.delete("transcript_event_identities", {"session_id": session_id})
    db.delete("transcript_events", {"session_id": session_id})
    return EventMerge()


class EventRows:
    """The ``transcript_events`` + ``transcript_event_identities`` rows of one session, built a batch at a time.

    One identity row per event with a non-empty string ``id``; a message
    ``idempotencyKey`` seen twice is kept on the first message only (the
    column is unique per session), with a notice naming the line. No database
    here: the parse process (``transcript_worker``) builds the same rows.
    """

    def __init__(self, session_id: str, rel: str, notices: list[str], batch_lines: int = BATCH, batch_bytes: int = BATCH_BYTES) -> None:
        self.session_id = session_id
        self.rel = rel
        self.notices = notices
        self.events: list[tuple[Any, ...]] = []
        self.identities: list[tuple[Any, ...]] = []
        self.seen_keys: set[str] = set()
        self.pending_bytes = 0
        self.batch_lines = batch_lines
        self.batch_bytes = batch_bytes

    def add(self, number: int, seq: int, text: str, event: dict[str, Any], event_ms: int) -> bool:
        """Add one event's rows; True when the batch is full (:meth:`take` it)."""
        self.events.append((self.session_id, seq, text, event_ms))
        self.pending_bytes += len(text)
        event_id = event.get("id")
        if isinstance(event_id, str) and event_id:
            message = event["message"] if isinstance(event.get("message"), dict) else {}
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
        return len(self.events) >= self.batch_lines or self.pending_bytes >= self.batch_bytes

    def take(self) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        """The rows added since the last take (event rows, identity rows)."""
        taken = (self.events, self.identities)
        self.events, self.identities, self.pending_bytes = [], [], 0
        return taken


EVENT_COLUMNS = ("session_id", "seq", "event_json", "created_at")
IDENTITY_COLUMNS = ("session_id", "event_id", "seq", "event_type", "parent_id", "message_idempotency_key", "created_at")


def write_event_rows(db: DatabaseWriter, session_id: str, events: list[tuple[Any, ...]], identities: list[tuple[Any, ...]]) -> None:
    """Insert one batch of a session's event and identity rows (:class:`EventRows`)."""
    owner = {"session_id": session_id}
    if events:
        db.insert_many("transcript_events", EVENT_COLUMNS, events, owner=owner, plain=True)
    if identities:
        db.insert_many(
            "transcript_event_identities", IDENTITY_COLUMNS, identities, owner=owner, plain=True,
            conflict="(session_id, event_id) DO UPDATE SET seq = excluded.seq, event_type = excluded.event_type,"
            " parent_id = excluded.parent_id,"
            " message_idempotency_key = excluded.message_idempotency_key, created_at = excluded.created_at",
        )


class TranscriptRows(EventRows):
    """:class:`EventRows` written to ``db`` whenever a batch is full, and at :meth:`flush`."""

    def __init__(self, db: DatabaseWriter, session_id: str, rel: str, notices: list[str]) -> None:
        super().__init__(session_id, rel, notices)
        self.db = db

    def add(self, number: int, seq: int, text: str, event: dict[str, Any], event_ms: int) -> bool:
        if super().add(number, seq, text, event, event_ms):
            self.flush()
        return False

    def flush(self) -> None:
        write_event_rows(self.db, self.session_id, *self.take())


def event_time_ms(value: Any) -> int | None:
    """An event's time: ``statekit.values.ms`` (a number, or an ISO-8601 string), but none at 1e16 ms or beyond.

    A number past JavaScript's Date range (±8.64e15 ms) is no time OpenClaw could have written: the caller falls
    back to the previous event's time instead. Kept apart from ``values.ms`` for that bound (int64 there).
    """
    found = ms(value)
    return found if found is not None and abs(found) < 1e16 else None


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
    ``tests/readers/test_transcript_schema.py`` checks the two agree. Exact
    types (``type(v) is str``): the JSON parser makes no subclasses, and bool is
    no int here; anything else falls back to the schema.
    """
    kind = event.get("type")
    if type(kind) is not str or not kind:
        return False
    get = event.get
    value = get("id")
    if value is not None and type(value) is not str:
        return False
    value = get("parentId")
    if value is not None and type(value) is not str:
        return False
    value = get("timestamp")
    if value is not None and type(value) not in (str, int, float):
        return False
    value = get("version")
    if value is not None and type(value) is not int:
        return False
    value = get("message")
    return value is None or type(value) is dict


def file_session_id(name: str) -> str:
    stem = name[: -len(".jsonl")] if name.endswith(".jsonl") else name
    return stem.split("-topic-", 1)[0]


def v1_id_prefix(source_path: str, session_id: str) -> str:
    """OpenClaw 2026.9.6's id prefix for the entries of a version-1 transcript: sha256(path NUL session id), 16 hex."""
    return hashlib.sha256(f"{source_path}\0{session_id}".encode("utf-8")).hexdigest()[:16]


def v1_entry_id(prefix: str, index: int) -> str:
    """The id 9.6's importer gives the entry at ``index`` (0-based, the header counted): ``<prefix>-<index in base 36>``."""
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    text = ""
    while True:
        index, rest = divmod(index, 36)
        text = digits[rest] + text
        if index == 0:
            return f"{prefix}-{text}"


def _first_fast_decode(line: bytes) -> Any:
    """Load msgspec on the first transcript line (``statekit --help`` and commands that parse none never import it)."""
    global _fast_decode
    import msgspec

    _fast_decode = msgspec.json.Decoder().decode
    return _fast_decode(line)


_fast_decode: Callable[[bytes], Any] = _first_fast_decode  # msgspec's decoder once loaded: one, reused for every line


# A line this long goes to the full parse whatever it holds: it could hold an integer past Python's
# 4,300-digit conversion limit (an error for the full parse, a value the shape decoder only skips).
SHAPE_MAX_BYTES = 4096


def _first_shape_decode(line: bytes) -> Any:
    """Build the shape decoder on its first use (msgspec is imported only when a transcript line is parsed)."""
    global _shape_decode
    import msgspec

    # The fields the transcript-event schema constrains, typed as :func:`conforms` checks them (``message``
    # an object of any content, decoded as an empty struct); every other field checked as JSON and skipped.
    shape = msgspec.defstruct("EventShape", [
        ("type", str),
        ("id", str | None, None),
        ("parentId", str | None, None),
        ("timestamp", str | int | float | None, None),
        ("version", int | None, None),
        ("message", msgspec.defstruct("AnyObject", []) | None, None),
    ])
    _shape_decode = msgspec.json.Decoder(shape).decode
    return _shape_decode(line)


_shape_decode: Callable[[bytes], Any] = _first_shape_decode


def _shape(line: bytes) -> Any:
    # One frame between the caller and the decoder, as parse_line is between _Scan._event and its decoder:
    # msgspec stops at the recursion limit, so both decoders must meet it at the same nesting depth.
    return _shape_decode(line)


def surely_conforms(line: bytes) -> bool:
    """True only when :func:`parse_line` surely gives a dict :func:`conforms` accepts, without building it.

    For the plan's full check, which counts events and keeps none: one msgspec decode into the fields
    the schema constrains (the rest of the line checked as JSON and skipped; of duplicate keys the last
    one wins, as in the full parse). What the shape decoder does not check goes to the full parse:
    invalid UTF-8 inside a skipped string, lines long enough to hold a huge integer. False says
    nothing: the caller parses the line fully, which accepts it or names the problem.
    ``tests/readers/test_transcript_shape.py`` checks that the two agree.
    """
    if len(line) > SHAPE_MAX_BYTES:
        return False
    if not line.isascii():
        try:
            line.decode("utf-8")
        except UnicodeDecodeError:
            return False
    try:
        return bool(_shape(line).type)
    except Exception:  # not JSON, not an object, a field of another type, too deep: the full parse decides
        return False


def parse_line(line: bytes, rel: str, number: int) -> Any:
    """One transcript line, as :func:`statekit.documents.parse_json_line` parses it, about twice as fast.

    msgspec's decoder first: for every line it accepts it returns what ``json.loads`` returns
    (same values, big integers exact, the last of duplicate keys; ``tests/readers/test_transcript_parse.py``).
    What it rejects (NaN/Infinity, numbers past float range, lone surrogate escapes, invalid
    UTF-8, any malformed line) goes to ``parse_json_line``, which accepts it the same way
    ``json.loads`` does or names the problem.
    """
    try:
        return _fast_decode(line)
    except Exception:
        return parse_json_line(line, rel, number)


def _lines(handle: BinaryIO, block_size: int = READ_BLOCK) -> Iterator[tuple[int, bytes, bool]]:
    """Yield (1-based line number, stripped bytes, had_newline) for every non-blank line.

    Read in blocks of ``block_size`` (1 MiB; one hash update per block); a line longer than a block is joined once,
    when its end comes.
    """
    number = 0
    pending: list[bytes] = []
    while True:
        block = handle.read(block_size)
        if not block:
            break
        if b"\n" not in block:  # inside a long line
            pending.append(block)
            continue
        parts = block.split(b"\n")
        if pending:
            pending.append(parts[0])
            parts[0] = b"".join(pending)
            pending = []
        tail = parts.pop()
        if tail:
            pending.append(tail)
        if number == 0:
            parts[0] = _without_bom(parts[0])
        for part in parts:
            number += 1
            line = part.strip()
            if line:
                yield number, line, True
    if pending:
        line = b"".join(pending).strip()
        if number == 0:
            line = _without_bom(line)
        if line:
            yield number + 1, line, False


def _without_bom(line: bytes) -> bytes:
    """The first line without a UTF-8 byte order mark (and the blanks after it)."""
    stripped = line.strip()
    return stripped[3:].strip() if stripped.startswith(b"\xef\xbb\xbf") else line


class _Scan:
    """Parse a transcript stream; shared by inspect and write.

    Like OpenClaw 2026.9.6's importer, the *readable prefix* is imported: the
    scan stops at the first line that is not JSON (``unreadable`` = its
    number and the problem; ``rest`` = how many non-blank lines follow it).
    A torn last line (no final newline: a crash mid-append) is the common
    case of that. A line that is JSON but not a transcript event still fails
    the whole file.
    """

    def __init__(self, source: Source, handle: BinaryIO) -> None:
        self.source = source
        self.lines = _lines(handle)
        self.unreadable: tuple[int, str] | None = None
        self.torn: int | None = None  # the unreadable line was the last one and had no newline
        self.rest = 0

    def events(self) -> Iterator[tuple[int, bytes, dict[str, Any]]]:
        for number, line, had_newline in self.lines:
            event = self._event(number, line, had_newline)
            if event is None:
                return
            yield number, line, event

    def count(self) -> int:
        """How many events :meth:`events` would still yield, with the same errors and prefix, building none that surely conforms."""
        counted = 0
        for number, line, had_newline in self.lines:
            if not surely_conforms(line) and self._event(number, line, had_newline) is None:
                break
            counted += 1
        return counted

    def _event(self, number: int, line: bytes, had_newline: bool) -> dict[str, Any] | None:
        """The event on this line; None where the readable prefix ends (the rest counted); SourceError for a bad event."""
        try:
            event = parse_line(line, self.source.rel, number)
        except SourceError as exc:
            self.unreadable = (number, exc.problem)
            self.rest = sum(1 for _ in self.lines)
            if self.rest == 0 and not had_newline:
                self.torn = number
            return None
        if not isinstance(event, dict):
            raise SourceError(self.source.rel, "expected a JSON object", line=number)
        if not conforms(event):
            validate(event, "transcript-event", self.source.rel, line=number)
        return event

    def require_readable(self) -> None:
        """For files that must be read whole (a torn last line aside): an unreadable line fails the file."""
        if self.unreadable is not None and self.torn is None:
            number, problem = self.unreadable
            raise SourceError(self.source.rel, problem, line=number)

    def prefix_warning(self, imported: int, planned: bool) -> str | None:
        """One line for the plan (``planned``) or the run when the readable prefix ended early, else None."""
        if self.unreadable is None:
            return None
        number, problem = self.unreadable
        rel = self.source.rel
        if self.torn is not None:
            tail = "the lines before it will be imported" if planned else "not imported; the original file is kept byte-exact in the retired folder"
            return f"{rel}:{number}: torn last line (crash mid-append); {tail}"
        verb = "will be imported" if planned else "were imported"
        kept = "" if planned else "; the original file is kept byte-exact in the retired folder"
        return (f"{rel}:{number}: {problem}; the {imported} line(s) before it {verb} and the {1 + self.rest} from it on not, "
                f"as OpenClaw imports the readable prefix{kept}")


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


@dataclass
class TranscriptHead:
    """What a transcript's first line says: the session, its header version, the header's time (ms) if any."""

    session_id: str
    version: int
    header_ms: int | None


@dataclass
class TranscriptTail:
    """What the whole pass found: the events added, the notices, and where the readable prefix ended."""

    added: int
    notices: list[str]
    prefix_warning: str | None = None
    torn: int | None = None
    unreadable_line: int | None = None
    lines_not_imported: int = 0


class TranscriptPass:
    """One transcript read, parsed and turned into rows, a batch at a time (no database).

    ``head`` is known once the first line is parsed (a file with no event, or a header
    with a bad id, raises :class:`SourceError` here); :meth:`batches` yields the event and
    identity rows in file order and then sets ``tail``. The apply loop runs it in this
    process, or a parse process (``transcript_worker``) runs it and sends the batches.
    """

    def __init__(self, source: Source, handle: BinaryIO, abs_path: str, fallback_ms: int,
                 batch_lines: int = BATCH, batch_bytes: int = BATCH_BYTES, first_batch_lines: int | None = None) -> None:
        self.rel = source.rel
        self.scan = _Scan(source, handle)
        self._events = self.scan.events()
        first = next(self._events, None)
        if first is None:
            raise SourceError(source.rel, "transcript is empty")
        self._first = first
        session_id, version, header, self.notices = _header_info(source, first[2])
        self._header = header
        self.v1_prefix = v1_id_prefix(abs_path, session_id) if version < 2 else None
        self.head = TranscriptHead(session_id, version, event_time_ms(header.get("timestamp")) if header else None)
        self.fallback_ms = fallback_ms
        self.batch_lines, self.batch_bytes = batch_lines, batch_bytes
        self.first_batch_lines = first_batch_lines or batch_lines  # batches grow from it (4x) to batch_lines
        self.tail: TranscriptTail | None = None

    def batches(self, merge: EventMerge) -> Iterator[tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]]:
        """The rows, a batch at a time; ``merge`` leaves out the events a session already has (:class:`EventMerge`)."""
        head, header = self.head, self._header
        rows = EventRows(head.session_id, self.rel, self.notices, self.first_batch_lines, self.batch_bytes)
        rows.seen_keys |= merge.keys
        previous_ms = head.header_ms or self.fallback_ms
        seq = merge.first_seq
        upgrade = TranscriptReader._upgrade
        for number, line, event in itertools.chain((self._first,), self._events):
            if merge.known(line, event):
                continue
            changed = False
            if head.version < CURRENT_VERSION:
                changed = upgrade(event, seq, header is not None and seq == 0, head.version, self.v1_prefix, header is not None)
            event_ms = event_time_ms(event.get("timestamp")) or previous_ms
            previous_ms = event_ms
            if rows.add(number, seq, js_json(event) if changed else line.decode("utf-8"), event, event_ms):
                yield rows.take()
                rows.batch_lines = min(rows.batch_lines * 4, self.batch_lines)
            seq += 1
        if rows.events or rows.identities:
            yield rows.take()
        added = seq - merge.first_seq  # the events this file added
        scan = self.scan
        self.tail = TranscriptTail(
            added, self.notices, scan.prefix_warning(added, planned=False), scan.torn,
            scan.unreadable[0] if scan.unreadable else None, (1 + scan.rest) if scan.unreadable else 0,
        )


class TranscriptRun(Protocol):
    """A transcript's pass as the reader's ``write`` uses it: run here (:class:`TranscriptPass`) or by a parse process."""

    head: TranscriptHead
    tail: TranscriptTail | None

    def batches(self, merge: EventMerge) -> Iterator[tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]]: ...


@contextlib.contextmanager
def local_pass(source: Source, handle: BinaryIO, fallback_ms: int) -> Iterator[TranscriptPass]:
    """A :class:`TranscriptPass` run in this process (the same context shape as a parse process's)."""
    yield TranscriptPass(source, handle, os.path.abspath(source.path), fallback_ms)


class TranscriptReader(Reader):
    kind = "transcript-jsonl"
    family = "sessions"
    description = "Legacy JSONL transcript (PI session format, header versions 1-3)"
    patterns = ("agents/*/sessions/*.jsonl", "sessions/*.jsonl")
    exclude = ("**.trajectory.jsonl", "**.acp-stream.jsonl", "**.checkpoint.*.jsonl")
    schema_name = "transcript-event"
    # A transcript's ``sessions`` root (and, for history no index lists, its recovered entry and route).
    target_tables = ("agent.transcript_events", "agent.transcript_event_identities", "agent.sessions", "agent.session_entries", "agent.session_routes")
    action = "import"
    depends_on = ("session-index",)  # reads and completes the session rows
    batchable = True  # rows through ctx.writer only (migrate.apply._Batch)

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        scan = _Scan(source, handle)
        header = next(scan.events(), None)  # the first event parsed in full (the header); the rest only counted
        if header is None:
            raise SourceError(source.rel, "transcript is empty")
        first = header[2]
        count = 1 + scan.count()
        session_id, version, _header, notices = _header_info(source, first)
        warnings = list(notices)
        prefix = scan.prefix_warning(count, planned=True)
        if prefix:
            warnings.append(prefix)
        name = source.rel.rsplit("/", 1)[-1]
        return Inspection(
            record_count=count + (1 + scan.rest if scan.unreadable is not None else 0),
            warnings=warnings,
            details={
                "identity": (session_id,),
                "identity_label": "session id",
                "preferred": file_session_id(name).lower() == session_id.lower(),
                "session_id": session_id,
                "version": version,
            },
        )

    def glance(self, source: Source, handle: BinaryIO) -> Inspection | None:
        """What ``migrate``'s plan needs without parsing every line: the header (session id, version).

        The write reads, hashes and parses the file once (``migrate.plan.finish_glanced``).
        None when the first line does not make a header or a session id: the plan then
        inspects the file fully (and says why it is unreadable).
        """
        for number, line, _had_newline in _lines(handle, SMALL_READ):  # the first line, not a 1 MiB block
            try:
                first = parse_line(line, source.rel, number)
                if not isinstance(first, dict):
                    return None
                session_id, version, _header, notices = _header_info(source, first)
            except SourceError:
                return None
            name = source.rel.rsplit("/", 1)[-1]
            return Inspection(record_count=0, warnings=notices, details={
                "identity": (session_id,),
                "identity_label": "session id",
                "preferred": file_session_id(name).lower() == session_id.lower(),
                "session_id": session_id,
                "version": version,
            })
        return None

    @staticmethod
    def written_record_count(result: WriteResult) -> int:
        """The record count ``inspect`` gives the same bytes, from what ``write`` reported (events + lines not imported)."""
        return int(result.report["events"]) + int(result.report["lines_not_imported"])

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        agent_id = source.agent_id
        if agent_id is None:
            raise SourceError(source.rel, "cannot tell which agent owns this transcript")
        db = ctx.writer.agent(agent_id)
        fallback_ms = file_mtime_ms(source, ctx.now_ms)  # Math.floor(mtimeMs), as OpenClaw reads it
        worker = None if ctx.merging else ctx.parse_worker  # a second process parses a large file (not a merge)
        with worker.transcript(source, handle, fallback_ms) if worker is not None else local_pass(source, handle, fallback_ms) as run:
            head = run.head
            ensure_session_row(db, ctx, agent_id, head.session_id, head.header_ms or fallback_ms, fallback_ms)
            merge = session_events_merge(db, ctx, head.session_id)  # replaces what this session owns, or merges (a file that came back)
            for events, identities in run.batches(merge):
                write_event_rows(db, head.session_id, events, identities)
            tail = run.tail
            assert tail is not None  # set once the batches are through
        result = WriteResult(records=tail.added, notices=tail.notices)
        if tail.prefix_warning:
            result.warnings.append(tail.prefix_warning)
        merge.report(source.rel, tail.added, result)
        result.report.update({
            "session_id": head.session_id, "header_version": head.version, "events": tail.added, "torn_line": tail.torn,
            "unreadable_line": tail.unreadable_line, "lines_not_imported": tail.lines_not_imported,
        })
        return result

    @staticmethod
    def _upgrade(event: dict[str, Any], seq: int, is_header: bool, version: int, v1_prefix: str | None, has_header: bool) -> bool:
        """Upgrade one event to version 3 as OpenClaw 2026.9.6's importer does.

        Version 1 entries get the id ``v1_entry_id(prefix, position)`` and a
        linear ``parentId`` chain (the header is not a parent); a compaction's
        ``firstKeptEntryIndex`` becomes the ``firstKeptEntryId`` of an earlier
        entry. ``hookMessage`` roles become ``custom`` (``customType`` "hook"
        when unset). The header keeps its fields, with ``timestamp`` and ``cwd``
        defaulted to "" and version 3.
        """
        if is_header:
            event["version"] = CURRENT_VERSION
            event.setdefault("timestamp", "")
            event.setdefault("cwd", "")
            if not isinstance(event.get("timestamp"), str):
                event["timestamp"] = ""
            if not isinstance(event.get("cwd"), str):
                event["cwd"] = ""
            event.pop("sessionId", None)
            return True
        changed = False
        if version < 2 and v1_prefix is not None:
            first = 1 if has_header else 0
            event["id"] = v1_entry_id(v1_prefix, seq)
            event["parentId"] = v1_entry_id(v1_prefix, seq - 1) if seq > first else None
            if event.get("type") == "compaction" and "firstKeptEntryIndex" in event:
                index = event.pop("firstKeptEntryIndex")
                if isinstance(index, int) and not isinstance(index, bool) and first <= index < seq:
                    event["firstKeptEntryId"] = v1_entry_id(v1_prefix, index)
            changed = True
        message = event.get("message")
        if event.get("type") == "message" and isinstance(message, dict) and message.get("role") == "hookMessage":
            message["role"] = "custom"
            if not message.get("customType"):
                message["customType"] = "hook"
            changed = True
        return changed


__all__ = ["EventMerge", "TranscriptReader", "TranscriptRows", "session_events_merge", "ensure_session_row", "event_time_ms", "v1_entry_id", "v1_id_prefix", "iter_lines", "local_pass"]
