"""The reader interface: one subclass of :class:`Reader` per legacy source family.

A reader declares what it claims (``patterns``), what its input must look
like (``schema_name``: a JSON Schema under ``legacy_readers/schemas``), which
tables it writes (``target_tables``) and what happens to the file
(``action``). It implements two steps:

* :meth:`Reader.inspect` (plan, read-only): count records and notice
  problems cheaply; raise :class:`SourceError` for an unreadable source.
* :meth:`Reader.write` (apply): parse, validate, transform and write rows
  through ``ctx.writer`` (:mod:`statekit.legacy_readers.writer`); the writer
  remembers what was written, so the apply loop validates the rows after
  commit.

Both steps get a context with the same config, clock and verified re-open
(:class:`ReadContext`; :class:`ImportContext` adds the writer). The apply
loop owns transactions, receipts and retirement: a reader never commits,
never writes a table outside its ``target_tables`` (an SQLite authorizer
refuses it), never reads statekit's bookkeeping tables and never opens a
file except through its handle or the context.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, BinaryIO, ClassVar, cast

from statekit.db import Connection
from statekit.documents import load_schema, parse_json5_document
from statekit.errors import SchemaError, SourceError
from statekit.layout import DEFAULT_AGENT_ID, is_valid_agent_id, normalize_agent_id
from statekit.states import ReaderAction

if TYPE_CHECKING:
    from statekit.legacy_readers.transcript_worker import TranscriptWorker

ACTIONS: tuple[str, ...] = tuple(action.value for action in ReaderAction)


@dataclass(frozen=True)
class Source:
    """One legacy file: where it is and which agent owns it."""

    state_dir: Path
    rel: str  # POSIX path relative to the state dir
    agent_id: str | None = None

    @cached_property
    def path(self) -> Path:
        return self.state_dir.joinpath(*PurePosixPath(self.rel).parts)


@dataclass
class Inspection:
    """What the plan learns about a source without writing anything."""

    record_count: int
    warnings: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    # A reader may decide, for this one file, not to import it: "retain" (kept in place on purpose)
    # or "drop" (retired without rows). ``reason`` says why, in one line.
    action: str | None = None
    reason: str | None = None


@dataclass
class WriteResult:
    """What a reader wrote: ``expected`` maps ``db.table`` to (where-clause, params, row count) for validation."""

    records: int
    expected: list[tuple[str, str, str, tuple[Any, ...], int]] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)  # informational lines (repairs, skipped duplicates)
    warnings: list[str] = field(default_factory=list)  # something could not be imported: the run ends "warning", exit 3
    report: dict[str, Any] = field(default_factory=dict)

    def expect(self, db: str, table: str, where: str, params: Sequence[Any], count: int) -> None:
        """Record that after commit ``SELECT count(*) FROM table WHERE where`` must be >= count.

        ``db`` is ``"global"``, ``"agent"`` (the source's agent) or ``"agent:<id>"``. Only for a
        condition an equality mapping cannot state (``nodes``: ``... IS NOT NULL``); otherwise the
        writer derives the expectation, or ``DatabaseWriter.expect_rows`` records it.
        """
        self.expected.append((db, table, where, tuple(params), count))


class SourceChanged(SourceError):
    """A file a reader re-opened is not the version the plan hashed: the apply loop plans the source again."""


def read_config(path: Path | None) -> dict[str, Any]:
    """The parsed config (JSON5), or {} when it is missing or does not parse: the one config loader of plan and apply.

    ``path`` is :func:`statekit.layout.config_path` of the run (it honours ``OPENCLAW_CONFIG_PATH``).
    """
    if path is None:
        return {}
    from statekit.fsutil import read_regular_file  # local: base stays light

    try:
        data = parse_json5_document(read_regular_file(path), path.name)
    except (OSError, SourceError):
        return {}
    return data if isinstance(data, dict) else {}


def wall_clock_ms() -> int:
    """Epoch ms now (``time.time``, so a frozen clock in tests freezes it)."""
    import time

    return int(time.time() * 1000)


class ReadContext:
    """What plan and apply give every reader alike: the run's config, its clock, verified re-opens.

    ``config`` is the state dir's config as the one loader read it
    (:func:`read_config` of ``config_path``, which honours
    ``OPENCLAW_CONFIG_PATH``); ``now_ms`` is the run's clock, taken once.
    :meth:`reopen` reads a file of the state dir (the source again, or a
    sibling) through the hashing reader: when the plan recorded a hash for it
    and the file no longer matches, :class:`SourceChanged` is raised.
    """

    def __init__(
        self,
        state_dir: Path,
        now_ms: int,
        config: Mapping[str, Any] | None = None,
        planned_hashes: Mapping[str, str] | None = None,
        *,
        imported: Callable[[str], bool] | None = None,
    ) -> None:
        self.state_dir = state_dir
        self.now_ms = now_ms
        self.config = config or {}
        self.planned_hashes = dict(planned_hashes or {})
        self.reopened: dict[str, str] = {}  # rel -> sha256 of what the reader re-read
        self.imported = imported  # the plan's receipts: whether a path has a completed import (was_imported)

    def was_imported(self, rel: str) -> bool:
        """Whether the plan's receipts hold a ``completed`` import of ``rel`` (any version; it may be retired since).

        A reader whose file belongs to another source asks this when that source is gone from its place: a run
        killed after retiring it, before this file's own import committed, leaves exactly that."""
        return self.imported is not None and self.imported(rel)

    @classmethod
    def for_source(cls, source: Source) -> ReadContext:
        """A context for a reader called on its own (tests, tools): the state dir's config, the wall clock."""
        from statekit.layout import config_path

        return cls(source.state_dir, wall_clock_ms(), read_config(config_path(source.state_dir)))

    def path(self, rel: str) -> Path:
        return self.state_dir.joinpath(*PurePosixPath(rel).parts)

    @contextmanager
    def reopen(self, rel: str) -> Iterator[BinaryIO]:
        """The file ``rel`` opened again (never a FIFO, never through a link), hashed while read; verified on close."""
        from statekit.fsutil import HashingReader, open_regular_file

        with open_regular_file(self.path(rel)) as raw:
            hashing = HashingReader(raw)
            yield cast(BinaryIO, hashing)  # reads like a binary file
            digest = hashing.finish()
        self._verify(rel, digest)

    def read(self, rel: str) -> bytes:
        """The whole file ``rel`` (see :meth:`reopen`)."""
        with self.reopen(rel) as handle:
            return handle.read()

    def _verify(self, rel: str, digest: str) -> None:
        expected = self.planned_hashes.get(rel)
        if expected is not None and expected != digest:
            raise SourceChanged(rel, "changed since the plan")
        self.reopened[rel] = digest


# The receipts the apply loop keeps (migration_sources): a reader asks the context, never the table.
ReceiptLookup = Callable[[str, "str | None"], "dict[str, Any] | None"]


class ImportContext(ReadContext):
    """What a reader writes through: ``ctx.writer`` (see :mod:`statekit.legacy_readers.writer`).

    The apply loop has already begun the state database's transaction; an
    agent's database is opened (created if needed) and its transaction begun
    the first time ``ctx.writer.agent(id)`` is called. The apply loop commits
    or rolls back, and validates what the writer wrote after commit.
    """

    def __init__(
        self,
        state_dir: Path,
        run_id: str,
        now_ms: int,
        global_db: Connection,
        agent_db_factory: Callable[[str], Connection],
        config: Mapping[str, Any] | None = None,
        run_cache: dict[Any, Any] | None = None,
        *,
        planned_hashes: Mapping[str, str] | None = None,
        receipts: ReceiptLookup | None = None,
        earlier_import: Mapping[str, Any] | None = None,
        parse_worker: TranscriptWorker | None = None,
    ) -> None:
        from statekit.legacy_readers.writer import Writer

        super().__init__(state_dir, now_ms, config, planned_hashes)
        self.run_id = run_id
        # The report of an earlier completed import of this path with other bytes (the file changed or came
        # back after its migration: a stale writer). A reader then merges: it adds what is new and never
        # deletes the rows that import wrote (:attr:`merging`).
        self.earlier_import = dict(earlier_import) if earlier_import is not None else None
        self.writer = Writer(global_db, agent_db_factory)
        self._run_cache = {} if run_cache is None else run_cache
        self._receipts = receipts if receipts is not None else _receipts_of(global_db)
        self.parse_worker = parse_worker  # the run's parse process, for a source large enough to use it (transcript_worker)

    def run_cached(self, key: Any, compute: Callable[[], Any]) -> Any:
        """A value computed once per migrate run (facts earlier sources of the run settled, read once)."""
        if key not in self._run_cache:
            self._run_cache[key] = compute()
        return self._run_cache[key]

    @property
    def merging(self) -> bool:
        """True when an earlier run imported another version of this path: keep its rows, add what is new."""
        return self.earlier_import is not None

    # -- the apply loop's receipts, asked through the context -----------------------------------

    def imported_report(self, rel: str) -> dict[str, Any] | None:
        """The report of the latest ``completed`` import of ``rel`` (any version), or None."""
        return self._receipts(rel, None)

    def dependency_pending(self, rel: str) -> bool:
        """True while the source ``rel`` (imported earlier in plan order) is still waiting for its rows.

        A dependency is satisfied when its current file version has a
        ``completed`` receipt (it may still be on disk if its retirement
        failed), or when the file is gone (retired by an earlier run).
        Readers call this instead of testing whether the file exists.
        """
        path = self.path(rel)
        if not os.path.lexists(path):
            return False
        from statekit.fsutil import HashingReader, open_regular_file  # local: base stays light for the plan

        try:
            with open_regular_file(path) as handle:  # never blocks on a FIFO, never follows a link
                digest = HashingReader(handle).finish()
        except OSError:
            return True  # a FIFO, link or unreadable file is no imported dependency
        return self._receipts(rel, digest) is None

def _receipts_of(conn: Connection) -> ReceiptLookup:
    """Receipt look-ups straight on ``conn`` (a context built outside the apply loop: tests, tools)."""

    def lookup(rel: str, digest: str | None) -> dict[str, Any] | None:
        return completed_receipt_report(conn, rel, digest)

    return lookup


def completed_receipt_report(conn: Connection, rel: str, digest: str | None) -> dict[str, Any] | None:
    """The report of the latest ``completed`` receipt of ``rel`` (of the version ``digest`` when given); None when none."""
    sql = "SELECT report_json FROM migration_sources WHERE source_path = ? AND status = 'completed'"
    params: list[Any] = [rel]
    if digest is not None:
        sql += " AND source_sha256 = ?"
        params.append(digest)
    try:
        row = conn.execute(sql + " ORDER BY imported_at DESC LIMIT 1", params).fetchone()
    except Exception:  # a foreign receipts table we cannot read: treat as no receipt
        return None
    if row is None:
        return None
    try:
        report = json.loads(row[0]) if row[0] is not None else {}
    except (TypeError, ValueError):
        report = {}
    return report if isinstance(report, dict) else {}


def fingerprint(value: str) -> str:
    """A short, non-reversible fingerprint for receipts (never the secret itself)."""
    return "sha256:" + hashlib.sha256(value.encode("utf-8")).hexdigest()[:16]


def agent_id_from_rel(rel: str) -> str | None:
    """``agents/<id>/...`` -> normalised id; flat ``sessions/`` -> the default agent; else None."""
    directory, slash, _name = rel.rpartition("/")
    if slash and directory and _name not in ("", ".") and not directory.startswith("/"):  # the directory decides: once per directory
        return _agent_of_directory(directory)
    return _agent_id(rel)


@lru_cache(maxsize=4096)
def _agent_of_directory(directory: str) -> str | None:
    return _agent_id(directory + "/file")


def _agent_id(rel: str) -> str | None:
    parts = PurePosixPath(rel).parts
    if len(parts) >= 3 and parts[0] == "agents":
        agent = normalize_agent_id(parts[1])
        return agent if is_valid_agent_id(agent) else None
    if parts and parts[0] in ("sessions", "agent"):
        return DEFAULT_AGENT_ID
    return None


def match_patterns(rel: str, patterns: Sequence[str]) -> bool:
    """Glob match where ``*`` stays inside one path segment and ``**`` spans segments."""
    return any(_compile_pattern(p).match(rel) for p in patterns)


@lru_cache(maxsize=None)
def _compile_pattern(pattern: str) -> re.Pattern[str]:
    return re.compile("^" + pattern_regex(pattern) + "$")


def pattern_regex(pattern: str) -> str:
    """The regular expression (unanchored) of one glob of :func:`match_patterns`."""
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)


class Reader:
    """Base class for one legacy source family. Subclasses set the ClassVars and override the steps."""

    kind: ClassVar[str]
    family: ClassVar[str] = ""
    description: ClassVar[str] = ""
    patterns: ClassVar[tuple[str, ...]] = ()
    exclude: ClassVar[tuple[str, ...]] = ()
    # Patterns relative to a workspace root (``workspace/``, ``workspace-*/``): discovery does not walk
    # workspaces (user content) but probes these paths inside each one. Matches are also tested
    # against ``patterns`` with the workspace prefix, so list them in both.
    workspace_patterns: ClassVar[tuple[str, ...]] = ()
    schema_name: ClassVar[str | None] = None
    target_tables: ClassVar[tuple[str, ...]] = ()
    action: ClassVar[str] = "import"
    reason: ClassVar[str | None] = None  # why a drop/deferred/retain source is not imported
    # Kinds this reader must come after in plan order (it reads their rows or receipts, or lets them claim first).
    depends_on: ClassVar[tuple[str, ...]] = ()
    order: ClassVar[int] = 100  # set by the registry: the reader's position in plan order (smaller first)
    # Small sources of this reader may share one transaction per database with other small sources (a savepoint
    # each: migrate.apply._Batch). Only for a reader whose write is rows through ``ctx.writer`` and nothing else:
    # no file written, nothing it keeps outside the databases (``ctx.run_cached`` facts stay right on a rollback).
    batchable: ClassVar[bool] = False

    def claims(self, rel: str) -> bool:
        return match_patterns(rel, self.patterns) and not match_patterns(rel, self.exclude)

    def agent_for(self, rel: str) -> str | None:
        return agent_id_from_rel(rel)

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        """Plan step: count records; raise SourceError when unreadable. Must not write anything.

        ``ctx`` is the run's :class:`ReadContext` (the same config and clock the
        apply step gets); ``None`` when a reader is called on its own, when
        ``ReadContext.for_source`` stands in.
        """
        raise NotImplementedError

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        """Apply step: parse, validate, transform and write rows through ``ctx``."""
        raise NotImplementedError

    @classmethod
    def schema(cls) -> dict[str, Any] | None:
        return load_schema(cls.schema_name) if cls.schema_name else None

    def describe(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "family": self.family,
            "description": self.description,
            "patterns": list(self.patterns),
            "target_tables": list(self.target_tables),
            "action": self.action,
            "reason": self.reason,
            "schema": self.schema_name,
        }
