"""Build the migration plan: read-only, nothing is written anywhere.

For each legacy source the plan holds reader kind, path, size, mtime,
SHA-256, record count, target tables, action and warnings. Actions:
``import``, ``import+archive``, ``drop`` (regenerable cache), ``deferred``
(recognised, imported by a later statekit step), ``retain`` (kept on
purpose, with a reason), ``already-imported``, ``conflict`` and
``unreadable``.
"""

from __future__ import annotations

import os
from array import array
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, BinaryIO, Mapping, Protocol, cast

from statekit.legacy_readers.base import Inspection, ReadContext, Reader, Source, WriteResult, read_config, wall_clock_ms
from statekit.migrate.discover import Discovery, FileEntry, discover
from statekit.migrate.receipts import Receipt, load_receipts_readonly, source_key
from statekit.db import read_only_view
from statekit.errors import SchemaError, SourceError, StateDirError, redact, transient_os_error
from statekit.fsutil import HashingReader, file_kind_problem, open_regular_file
from statekit.layout import ResolvedStateDir, config_path, relative_posix
from statekit.progress import ProgressFn, start_phase
from statekit.schema import SCHEMA_VERSION
from statekit.states import ReceiptStatus

ACTIVE_ACTIONS = ("import", "import+archive", "drop")

# Shared, read-only empties: most of 100,000 planned sources have no warning, no details and no re-opened file,
# and an empty list and two empty dicts each were ~180 bytes per file (tests/migration/test_plan_memory.py).
_NOTHING: Mapping[str, Any] = MappingProxyType({})


@dataclass(slots=True)  # one per file: no __dict__ each
class PlannedSource:
    kind: str
    rel: str
    agent_id: str | None
    size: int
    mtime_ms: int
    sha256: str | None
    record_count: int | None
    target_tables: tuple[str, ...]
    action: str
    source_key: str | None = None
    warnings: tuple[str, ...] = ()
    reason: str | None = None
    details: Mapping[str, Any] = field(default_factory=lambda: _NOTHING)  # the reader's own dict when it has details (never copied)
    receipt: Receipt | None = None
    reader: Reader | None = field(default=None, repr=False, compare=False)
    reopened: Mapping[str, str] = field(default_factory=lambda: _NOTHING, repr=False, compare=False)  # files the reader re-read -> sha256
    # Planned from a glance (migrate's plan, no receipt for the path yet): the import reads, hashes and counts
    # the file once; sha256, record_count and source_key are filled in by finish_glanced.
    glanced: bool = field(default=False, repr=False, compare=False)

    @property
    def needs_import(self) -> bool:
        return self.action in ACTIVE_ACTIONS

    @property
    def needs_retire(self) -> bool:
        return self.action == "already-imported"

    @property
    def failure_recorded(self) -> bool:
        """An unreadable/conflicting source whose failure an earlier run already recorded (same file version)."""
        return self.action in ("unreadable", "conflict") and self.receipt is not None and self.receipt.status == "failed"

    @property
    def needs_failure_receipt(self) -> bool:
        """A problem not yet recorded: the run writes a ``failed`` receipt for it (once per file version)."""
        return self.action in ("unreadable", "conflict") and self.receipt is None and self.source_key is not None

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "path": self.rel,
            "agent_id": self.agent_id,
            "size": self.size,
            "mtime_ms": self.mtime_ms,
            "sha256": self.sha256,
            "record_count": self.record_count,
            "target_tables": list(self.target_tables),
            "action": self.action,
            "source_key": self.source_key,
            "reason": self.reason,
            "warnings": list(self.warnings),
        }


class PackedSources:
    """Planned sources held in flat buffers while a run's pre-migration backup and imports go on (``Migration.run``):
    ~70 bytes a source instead of ~320 (the record, its path, size and mtime), and none of them in the allocator's
    small-object pages, which the backup's records and a session index parsed whole then reuse (at 100,000 files
    the plan sat under both peaks).

    A source the plan made from a glance or a plain file look (no hash, count, key, receipt, reason, warning or
    details yet) keeps only its path, size and mtime, beside the first source of the same kind, agent, tables,
    action, reader and glance; any other source is kept as it is. Iterating gives equal records, in plan order."""

    __slots__ = ("_templates", "_shape", "_sizes", "_mtimes", "_ends", "_text", "_others")

    def __init__(self, sources: list[PlannedSource]) -> None:
        shapes: dict[tuple[Any, ...], int] = {}
        self._templates: list[PlannedSource] = []
        self._others: dict[int, PlannedSource] = {}
        self._shape, self._sizes, self._mtimes, self._ends = array("q"), array("q"), array("q"), array("q")
        names: list[str] = []
        end = -1
        for index, source in enumerate(sources):
            key = _shape_of(source)
            if key is None:
                self._others[index] = source
                shape, name = -1, ""
            else:
                shape = shapes.setdefault(key, len(self._templates))
                if shape == len(self._templates):
                    self._templates.append(source)
                name = source.rel
            names.append(name)
            end += len(name) + 1
            self._shape.append(shape)
            self._sizes.append(source.size if shape >= 0 else 0)
            self._mtimes.append(source.mtime_ms if shape >= 0 else 0)
            self._ends.append(end)
        self._text = "\x00".join(names)  # no path holds NUL

    def __len__(self) -> int:
        return len(self._shape)

    def __iter__(self) -> Iterator[PlannedSource]:
        return self._sources(let_go=False)

    def hand_out(self) -> Iterator[PlannedSource]:
        """The sources in order, each source kept as an object let go of once handed out (a rerun's planned sources
        each carry a receipt: 100,000 of them are not held to the end)."""
        return self._sources(let_go=True)

    def _sources(self, let_go: bool) -> Iterator[PlannedSource]:
        start = 0
        for index, shape in enumerate(self._shape):
            end = self._ends[index]
            if shape < 0:
                yield self._others.pop(index) if let_go else self._others[index]
            else:
                like = self._templates[shape]
                yield PlannedSource(kind=like.kind, rel=self._text[start:end], agent_id=like.agent_id, size=self._sizes[index],
                                    mtime_ms=self._mtimes[index], sha256=None, record_count=None, target_tables=like.target_tables,
                                    action=like.action, reader=like.reader, glanced=like.glanced)
            start = end + 1


def _shape_of(source: PlannedSource) -> tuple[Any, ...] | None:
    """What a source shares with others of its kind, when everything else about it is still the default."""
    if (source.sha256 is not None or source.record_count is not None or source.source_key is not None or source.warnings != ()
            or source.reason is not None or source.details is not _NOTHING or source.receipt is not None
            or source.reopened is not _NOTHING or type(source.rel) is not str or "\x00" in source.rel
            or type(source.size) is not int or type(source.mtime_ms) is not int or not -(1 << 63) <= source.size < 1 << 63
            or not -(1 << 63) <= source.mtime_ms < 1 << 63):
        return None
    return (source.kind, source.agent_id, source.target_tables, source.action, id(source.reader), source.glanced)


@dataclass
class PlannedDatabase:
    rel: str
    size: int
    role: str | None
    agent_id: str | None
    user_version: int | None
    status: str  # "ok" | "too-new" | "foreign" | "unreadable"
    problem: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.rel,
            "size": self.size,
            "role": self.role,
            "agent_id": self.agent_id,
            "user_version": self.user_version,
            "status": self.status,
            "problem": self.problem,
        }


@dataclass
class Plan:
    state_dir: Path
    origin: str
    legacy_root: bool
    config_path: Path | None
    sources: list[PlannedSource]
    databases: list[PlannedDatabase]
    user_content: list[tuple[str, str, int]]
    unrecognised: list[FileEntry]
    statekit_files: int
    database_sidecars: list[FileEntry] = field(default_factory=list)
    steps: list[dict[str, Any]] = field(default_factory=list)  # planned non-source steps (relocation, config)
    unnamed_legacy: list[str] = field(default_factory=list)  # legacy files whose name is not UTF-8 (shown escaped)

    def name_warnings(self) -> list[str]:
        """One line per legacy file statekit cannot name (not UTF-8): left in place, a warning every run."""
        return [f"{rel}: file name is not valid UTF-8, so statekit cannot record it; left in place"
                " (rename it to UTF-8 and run migrate again)" for rel in self.unnamed_legacy]

    def counts(self) -> dict[str, int]:
        return dict(sorted(Counter(s.action for s in self.sources).items()))

    @property
    def has_work(self) -> bool:
        return any(s.needs_import or s.needs_retire or s.needs_failure_receipt for s in self.sources) or any(
            s.get("apply") for s in self.steps
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "format": "statekit-plan",
            "schema_version": 1,
            "state_dir": str(self.state_dir),
            "state_dir_origin": self.origin,
            "legacy_root": self.legacy_root,
            "config_path": str(self.config_path) if self.config_path else None,
            "summary": {
                "sources": len(self.sources),
                "actions": self.counts(),
                "databases": len(self.databases),
                "user_content": len(self.user_content),
                "unrecognised": len(self.unrecognised),
                "statekit_files": self.statekit_files,
            },
            "steps": self.steps,
            "sources": [s.to_json() for s in self.sources],
            "databases": [d.to_json() for d in self.databases],
            "user_content": [{"path": rel, "reason": reason, "files": count} for rel, reason, count in self.user_content],
            "unrecognised": [{"path": e.rel, "size": e.size, "type": e.file_type} for e in self.unrecognised],
        }


def check_state_dir(state_dir: Path) -> None:
    if not state_dir.exists():
        raise StateDirError(f"{state_dir}: state dir does not exist (set --state-dir or OPENCLAW_STATE_DIR)")
    if not state_dir.is_dir():
        raise StateDirError(f"{state_dir}: state dir is not a directory")
    if not os.access(state_dir, os.R_OK | os.X_OK):
        raise StateDirError(f"{state_dir}: state dir is not readable")


def inspect_database(state_dir: Path, entry: FileEntry) -> PlannedDatabase:
    path = state_dir / entry.rel
    try:
        with read_only_view(path) as conn:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            role = agent_id = None
            if "schema_meta" in tables:
                try:
                    row = conn.execute("SELECT role, agent_id FROM schema_meta WHERE meta_key = 'primary'").fetchone()
                except Exception:  # foreign schema_meta shape: record what we can
                    row = None
                if row:
                    role, agent_id = row
    except Exception as exc:  # corrupt or locked: report, never crash the plan
        return PlannedDatabase(entry.rel, entry.size, None, None, None, "unreadable", f"cannot read database: {exc}")
    status, problem = "ok", None
    if version > SCHEMA_VERSION:
        status, problem = "too-new", f"schema version {version} is newer than statekit supports ({SCHEMA_VERSION}); left untouched"
    elif version == 0 and tables - {"sqlite_sequence"}:
        status, problem = "foreign", "has tables but no schema version"
    return PlannedDatabase(entry.rel, entry.size, role, agent_id, version, status, problem)


class Glancing(Protocol):
    """A reader whose import can count and hash its file itself: migrate's plan only glances at it.

    Only for a reader whose ``inspect`` never decides the action per file (retain/drop): the
    glance cannot, and the import goes ahead on it. A glance's details serve the plan's conflict
    check only (``identity``): once every source is planned they are let go of, except for a source
    that shares its identity, which is inspected fully.
    """

    def glance(self, source: Source, handle: BinaryIO) -> Inspection | None: ...

    def written_record_count(self, result: WriteResult) -> int: ...


def glancing(reader: Reader | None) -> Glancing | None:
    return cast(Glancing, reader) if reader is not None and callable(getattr(reader, "glance", None)) else None


def completed_lookup(receipts: dict[str, Receipt]) -> Callable[[str], bool]:
    """``ReadContext.imported``: whether ``receipts`` hold a completed import of a path (the set made on first use)."""
    paths: set[str] | None = None

    def imported(rel: str) -> bool:
        nonlocal paths
        if paths is None:
            paths = {r.source_path for r in receipts.values() if r.status == ReceiptStatus.COMPLETED}
        return rel in paths

    return imported


def plan_source(
    state_dir: Path,
    entry: FileEntry,
    reader: Reader,
    receipts: dict[str, Receipt],
    retry_failed: bool = False,
    ctx: ReadContext | None = None,
    *,
    glance: bool = False,
) -> PlannedSource:
    """Inspect one legacy source: hash, count and decide its action (read-only).

    ``ctx`` is the run's reader context (config, clock); one is made when none is given.
    ``glance``: the source has no receipt and migrate asks: a reader that can (transcripts)
    reads only its header; the import hashes and counts the file (:func:`finish_glanced`).
    """
    agent_id = reader.agent_for(entry.rel)
    planned = PlannedSource(
        kind=reader.kind,
        rel=entry.rel,
        agent_id=agent_id,
        size=entry.size,
        mtime_ms=entry.mtime_ms,
        sha256=None,
        record_count=None,
        target_tables=tuple(reader.target_tables),
        action=reader.action,
        reason=reader.reason,
        reader=reader,
    )
    path = state_dir / entry.rel
    problem = file_kind_problem(path)
    if problem:
        planned.action = "unreadable"
        planned.reason = f"{entry.rel}: {problem}"
        return planned
    source = Source(state_dir, entry.rel, agent_id)
    glancer = glancing(reader) if glance and reader.action in ("import", "import+archive") else None
    if glancer is not None and _glance(planned, path, source, glancer):
        return planned
    if ctx is None:
        ctx = ReadContext.for_source(source)
    # re-opens are recorded per source
    ctx = ReadContext(state_dir, ctx.now_ms, ctx.config, imported=ctx.imported or completed_lookup(receipts))
    try:
        with open_regular_file(path) as raw:
            hashing = HashingReader(raw)
            try:
                if reader.action in ("import", "import+archive"):
                    inspection = reader.inspect(source, cast(BinaryIO, hashing), ctx)
                    planned.record_count = inspection.record_count
                    _add_findings(planned, tuple(map(redact, inspection.warnings)), inspection.details)
                    if inspection.action in ("retain", "drop"):
                        planned.action = inspection.action
                        planned.reason = inspection.reason or planned.reason
            except (SourceError, ValueError, RecursionError, MemoryError) as exc:
                planned.action = "unreadable"
                planned.reason = str(exc) if isinstance(exc, SourceError) else redact(f"{entry.rel}: cannot read: {exc or type(exc).__name__}")
            except Exception as exc:  # a reader tripped over a value it did not expect (1e999, a wrong type): this file only
                planned.action = "unreadable"
                planned.reason = f"{entry.rel}: cannot read: unexpected {type(exc).__name__} in the {reader.kind} reader"
            planned.sha256 = hashing.finish()
            planned.size = hashing.size
            planned.reopened = dict(ctx.reopened) if ctx.reopened else _NOTHING
            if planned.action != "unreadable" and ctx.reopened.get(entry.rel, planned.sha256) != planned.sha256:
                planned.action = "unreadable"
                planned.reason = f"{entry.rel}: changed while being planned"
    except OSError as exc:
        if transient_os_error(exc):  # too many open files, no memory: the machine's, not the file's (the run stops)
            raise
        planned.action = "unreadable"
        detail = exc.strerror or str(exc) or type(exc).__name__
        planned.reason = f"{entry.rel}: cannot read: {detail}"
        return planned
    if planned.action == "unreadable":
        planned.source_key = source_key(reader.kind, entry.rel, reader.target_tables, planned.sha256 or "", planned.size, entry.mtime_ms, None)
        planned.receipt = None if retry_failed else receipts.get(planned.source_key)
        if planned.failure_recorded and planned.receipt is not None:
            planned.reason = f"{planned.reason} (recorded by run {planned.receipt.last_run_id}; unchanged since, left in place)"
        return planned
    if reader.action in ACTIVE_ACTIONS:
        planned.source_key = source_key(
            reader.kind, entry.rel, reader.target_tables, planned.sha256, planned.size, entry.mtime_ms, planned.record_count
        )
        receipt = receipts.get(planned.source_key)
        planned.receipt = receipt
        if receipt is not None and receipt.status == "completed":
            planned.action = "already-imported"
            planned.reason = f"imported by run {receipt.last_run_id}; left to retire" if not receipt.removed_source else None
        elif receipt is not None and receipt.status == "failed" and not retry_failed:
            # This version of the file already failed and was reported: it is retried when it
            # changes (a new key) or with --retry-failed, not on every run.
            planned.action = "unreadable"
            error = receipt.report.get("error") or "import failed"
            planned.reason = f"{error} (recorded by run {receipt.last_run_id}; unchanged since, left in place)"
    return planned


def _glance(planned: PlannedSource, path: Path, source: Source, glancer: Glancing) -> bool:
    """Plan ``planned`` from its header only; False (nothing changed) when the full inspection must decide."""
    try:
        with open_regular_file(path) as raw:
            inspection = glancer.glance(source, raw)
    except (OSError, ValueError, RecursionError, MemoryError):
        return False
    if inspection is None:
        return False
    _add_findings(planned, tuple(inspection.warnings), inspection.details)
    planned.glanced = True
    return True


def _add_findings(planned: PlannedSource, warnings: tuple[str, ...], details: Mapping[str, Any]) -> None:
    """An inspection's warnings and details onto ``planned``, sharing what is empty and the reader's dict when it is the only one."""
    if warnings:
        planned.warnings = planned.warnings + warnings
    if details:
        planned.details = details if not planned.details else {**planned.details, **details}


def finish_glanced(planned: PlannedSource, sha256: str, size: int, st: os.stat_result, result: WriteResult) -> bool:
    """After the import of a glanced source: its hash, size, record count and key, as a full plan gives them.

    ``size``: the bytes read and hashed; ``st``: the open file's stat after reading. False when the file is
    not the one discovery saw (size, or mtime at discovery's millisecond, changed): the caller plans it again.
    """
    glancer = glancing(planned.reader)
    same_ms = planned.mtime_ms * 1_000_000 <= st.st_mtime_ns < (planned.mtime_ms + 1) * 1_000_000
    if glancer is None or size != planned.size or st.st_size != size or not same_ms:
        return False
    planned.sha256 = sha256
    planned.record_count = glancer.written_record_count(result)
    planned.source_key = source_key(planned.kind, planned.rel, planned.target_tables, sha256, size, planned.mtime_ms, planned.record_count)
    planned.glanced = False
    return True


def _identity_counts(sources: list[PlannedSource]) -> Counter[tuple[Any, ...]]:
    """How many sources to import claim each identity (kind, agent, identity)."""
    counts: Counter[tuple[Any, ...]] = Counter()
    for source in sources:
        identity = source.details.get("identity")
        if identity is not None and source.needs_import:
            counts[(source.kind, source.agent_id, *identity)] += 1
    return counts


NO_CLAIM = -1  # never a hash in CPython (-1 signals an error: a hash that comes out -1 is replaced)


def identity_claim(source: PlannedSource) -> int:
    """The hash of the identity ``source`` claims among the sources to import (kind, agent, identity), or :data:`NO_CLAIM`."""
    identity = source.details.get("identity")
    if identity is None or not source.needs_import:
        return NO_CLAIM
    return hash((source.kind, source.agent_id, *identity))


def shared_claims(claims: array[int]) -> set[int]:
    """The claims that two or more sources make (found by sorting: no counter of every identity)."""
    shared: set[int] = set()
    previous = NO_CLAIM
    for claim in sorted(claims):
        if claim == previous and claim != NO_CLAIM:
            shared.add(claim)
        previous = claim
    return shared


def _inspect_glanced_conflicts(
    state_dir: Path, sources: list[PlannedSource], claims: array[int], receipts: dict[str, Receipt], retry_failed: bool,
    ctx: ReadContext,
) -> list[PlannedSource]:
    """Glanced sources that share an identity with another source are inspected fully (conflicts decide on it).

    ``claims``: each source's :func:`identity_claim`, in the order of ``sources`` (a glanced source's details are let
    go of once planned). Two identities with one hash only cost their sources a full inspection.
    A glanced source is a regular file planned from discovery's rel, size and mtime, which it keeps: its entry is made again.
    """
    shared = shared_claims(claims)
    if not shared:  # the common case
        return sources
    out = []
    for source, claim in zip(sources, claims):
        if claim in shared and source.glanced and source.reader is not None:
            entry = FileEntry(source.rel, source.size, source.mtime_ms, "file")
            source = plan_source(state_dir, entry, source.reader, receipts, retry_failed, ctx)
        out.append(source)
    return out


def _resolve_conflicts(sources: list[PlannedSource]) -> None:
    """Two sources of one kind that claim the same identity: keep the preferred one, mark the rest ``conflict``."""
    counts = _identity_counts(sources)
    groups: dict[tuple[Any, ...], list[PlannedSource]] = {}
    for source in sources:
        identity = source.details.get("identity")
        if identity is not None and source.needs_import:
            key = (source.kind, source.agent_id, *identity)
            if counts[key] > 1:  # only identities two sources claim get a group
                groups.setdefault(key, []).append(source)
    for members in groups.values():
        if len(members) < 2:
            continue
        members.sort(key=lambda s: (not s.details.get("preferred", False), s.rel))
        keep = members[0]
        for other in members[1:]:
            other.action = "conflict"
            other.reason = f"{other.rel}: holds the same {other.details.get('identity_label', 'identity')} as {keep.rel}; left in place"


def _agent_conflicts(sources: list[PlannedSource], databases: list[PlannedDatabase]) -> None:
    blocked = {
        d.rel: d for d in databases if d.status != "ok"
    }
    if not blocked:  # the common case: no database refuses a source
        return
    for source in sources:
        if not source.needs_import:
            continue
        targets = []
        if any(t.startswith("agent.") for t in source.target_tables) and source.agent_id:
            targets.append(f"agents/{source.agent_id}/agent/openclaw-agent.sqlite")
        if any(t.startswith("global.") for t in source.target_tables):
            targets.append("state/openclaw.sqlite")
        for rel in targets:
            if rel in blocked:
                source.action = "conflict"
                source.reason = f"{rel}: {blocked[rel].problem}"


def build_plan(
    resolved: ResolvedStateDir | Path, env: dict[str, str] | None = None, retry_failed: bool = False, progress: ProgressFn | None = None,
    *, full: bool = True,
) -> Plan:
    """Discover and plan. Writes nothing: not the state dir, not a database, not a lock.

    ``progress`` (see :mod:`statekit.progress`) is told the bytes of each source once it is planned.
    ``full=False`` (migrate's own plan, and the plan it shows before ``--yes``): a transcript no
    receipt names yet is only glanced at (its header); the import then reads, hashes, parses
    and counts it once. ``statekit plan`` and ``migrate --dry-run`` keep the full check of every line.
    """
    if isinstance(resolved, Path):
        resolved = ResolvedStateDir(resolved, "flag")
    state_dir = resolved.path
    check_state_dir(state_dir)
    found: Discovery = discover(state_dir)
    try:
        receipts = load_receipts_readonly(state_dir)
    except Exception:  # an unreadable global DB shows up in databases[]
        receipts = {}
    databases = [inspect_database(state_dir, entry) for entry in found.databases]
    cfg = config_path(state_dir, env)
    # one config, one clock, one look-up of the receipts for every reader
    ctx = ReadContext(state_dir, wall_clock_ms(), read_config(cfg), imported=completed_lookup(receipts))
    start_phase(progress, "plan", sum(entry.size for entry, _ in found.legacy), "bytes")
    known = {receipt.source_path for receipt in receipts.values()}
    sources = []
    claims = array("q")  # identity_claim of each source, in planning order (8 bytes each), for a plan that glances
    pending, found.legacy = found.legacy[::-1], []  # each discovery entry let go of once planned (100,000 of them)
    while pending:
        entry, reader = pending.pop()
        planned = plan_source(state_dir, entry, reader, receipts, retry_failed, ctx, glance=not full and entry.rel not in known)
        if not full:
            claims.append(identity_claim(planned))
        if planned.glanced:  # its claim stands for its details until the conflict check (Glancing)
            planned.details = _NOTHING
        sources.append(planned)
        if progress is not None:
            progress(entry.size)
    if not full:
        sources = _inspect_glanced_conflicts(state_dir, sources, claims, receipts, retry_failed, ctx)
    del claims
    _resolve_conflicts(sources)
    _agent_conflicts(sources, databases)
    sources.sort(key=lambda s: (s.reader.order if s.reader else 1000, s.agent_id or "", s.rel))
    plan = Plan(
        state_dir=state_dir,
        origin=resolved.origin,
        legacy_root=resolved.legacy,
        config_path=cfg,
        sources=sources,
        databases=databases,
        user_content=found.user_content,
        unrecognised=found.unrecognised,
        statekit_files=found.statekit_files,
        database_sidecars=found.database_sidecars,
        unnamed_legacy=found.unnamed_legacy,
    )
    from statekit.migrate.steps import plan_steps

    plan.steps = plan_steps(plan, resolved, env)
    return plan


def ensure_not_schema_error(plan: Plan) -> None:
    """Refuse early when the global database cannot be used at all."""
    for database in plan.databases:
        if database.rel == "state/openclaw.sqlite" and database.status in ("too-new", "foreign"):
            raise SchemaError(f"{plan.state_dir / database.rel}: {database.problem}")


__all__ = ["Plan", "PlannedSource", "PlannedDatabase", "build_plan", "finish_glanced", "check_state_dir", "relative_posix"]
