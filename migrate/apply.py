"""The apply loop of ``statekit migrate`` (docs/migration-contract.md, "Apply").

1. take the state-dir lock; refuse while an OpenClaw gateway runs;
2. re-plan under the lock; make a verified pre-migration backup;
3. open or create both database levels and a ``migration_runs`` row;
4. per source, in plan order: parse, validate, transform and write its rows
   and its ``migration_sources`` receipt in one transaction per database
   (agent rows commit first, then the global receipt: a crash between the
   two leaves rows without a receipt, and the rerun re-imports them with
   replace/upsert semantics, so every rerun converges). Small sources of a
   batchable reader share that transaction, a savepoint each (:class:`_Batch`):
   their receipts are written just before its commits, and a source that fails
   is rolled back alone;
5. after commit, check the rows exist, then retire the source under
   ``.statekit/migrated/<run_id>/`` (or delete it with ``--remove-sources``);
6. close the run: ``completed``, ``warning`` or ``failed``.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, cast

from statekit.legacy_readers.base import (
    ImportContext,
    Reader,
    ReceiptLookup,
    Source,
    SourceChanged,
    WriteResult,
    completed_receipt_report,
    read_config,
)
from statekit.legacy_readers.writer import forget_schema_facts, tables_of, unguarded
from statekit.legacy_readers.transcript_worker import OFFLOAD_BYTES, ParseWorkerLost, TranscriptWorker
from statekit.legacy_readers.transcripts import TranscriptReader
from statekit.migrate.plan import PackedSources, Plan, PlannedSource, build_plan, check_state_dir, ensure_not_schema_error, finish_glanced, plan_source
from statekit.migrate.discover import FileEntry
from statekit.migrate.outcomes import OutcomeLog, SourceOutcome
from statekit.migrate.receipts import (
    Receipt,
    came_back_line,
    close_interrupted_runs,
    close_run,
    earlier_version,
    load_receipts,
    load_receipts_readonly,
    mark_removed,
    mark_removed_many,
    open_run,
    RECEIPT_REPORT,
    RECEIPT_SHA256,
    receipt_row,
    write_receipts,
)
from statekit.migrate.retire import ChangedAtRetire, RetireBatch, parent_modes, retired_path
from statekit.migrate.undo_facts import PackedModes, config_rels, existing_databases, path_modes, run_facts
from statekit import __version__
from statekit.errors import (
    ExitCode,
    SchemaError,
    SourceError,
    StateDirError,
    StatekitError,
    interruption_reason,
    ValueRangeError,
    database_path_problem,
    os_cause,
    redact,
    redact_json,
    sqlite_cause,
    transient_os_error,
    transient_sqlite_name,
)
from statekit.db import Connection, NotADatabaseFile, OperationalError, SQLiteError, error_name, immediate, open_rw, read_only_view, table_names
from statekit.heap import release_free_heap
from statekit.seams import checkpoint
from statekit.fsutil import HashingReader, UnsafePathError, fsync_dir, open_regular_file, remove_orphaned_temps, sha256_file
from statekit.progress import ProgressReader, null_progress, start_phase
from statekit.layout import STATEKIT_DIR_NAME, ResolvedStateDir, agent_db_path, global_db_path, lock_path, relative_posix
from statekit.locking import exclusive_lock, refuse_if_gateway_running
from statekit.schema import open_agent, open_global
from statekit.states import BackupRunStatus, ReceiptStatus, RunStatus

WARNING_OUTCOMES = ("failed", "unreadable", "conflict")
# A source this big gets a bigger SQLite page cache on its agent databases while it is imported (its identity
# upserts, keyed by random event ids, stay in cache); the default (2 MiB) comes back after, freeing the pages.
BIG_SOURCE_BYTES = 32 << 20
BIG_SOURCE_CACHE_KIB = 64 << 10
DEFAULT_CACHE_KIB = 2000
# Small sources of a reader that allows it (``Reader.batchable``) share one transaction per database, each in a
# savepoint of its own: at most this many sources, and this many bytes, per batch; a source this big or bigger
# gets its own transaction.
BATCH_SOURCES = 64
BATCH_BYTES = 4 << 20
BATCH_SOURCE_BYTES = 256 << 10
BATCH_SAVEPOINT = "statekit_source"


@dataclass
class MigrateOptions:
    backup: bool = True
    backup_output: Path | None = None
    backup_to: str | None = None  # s3://bucket/prefix: also copy the pre-migration backup offsite (backup/remote.py)
    remove_sources: bool = False
    retry_failed: bool = False
    env: dict[str, str] | None = None


@dataclass
class MigrationReport:
    state_dir: Path
    run_id: str | None
    status: str  # completed | warning | failed | nothing-to-do
    backup_path: Path | None = None
    outcomes: OutcomeLog = field(default_factory=OutcomeLog)  # final once recorded (migrate.outcomes)
    warnings: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    changes: list[str] = field(default_factory=list)
    started_at: int = 0
    finished_at: int | None = None
    interrupted: str | None = None  # the signal that stopped the run (SIGINT, SIGTERM)
    undo: dict[str, Any] | None = None  # migrate.undo_facts: what `statekit undo` checks and puts back

    @property
    def exit_code(self) -> ExitCode:
        if self.status == "failed":
            return ExitCode.FATAL
        return ExitCode.WARNINGS if self.warnings else ExitCode.OK

    def counts(self) -> dict[str, int]:
        return self.outcomes.counts()

    def report_text(self) -> str:
        """``json.dumps(self.to_json(), ensure_ascii=False, sort_keys=True)``: the text :meth:`report_utf8` encodes."""
        return self.report_utf8().decode("utf-8")

    def report_utf8(self) -> bytearray:
        """``json.dumps(self.to_json(), ensure_ascii=False, sort_keys=True)`` as UTF-8 (:meth:`report_pieces` joined)."""
        out = bytearray()
        for piece in self.report_pieces():
            out += piece
        return out

    def report_pieces(self) -> Iterator[bytes]:
        """``json.dumps(self.to_json(), ensure_ascii=False, sort_keys=True)`` in UTF-8 pieces, one source's entry at a time.

        ``close_run`` writes them into the run's row one by one: the text of 100,000 sources (~27 MB, with the undo
        facts' mode of each) is never held whole in Python (nor a list of 100,000 pieces, nor a dict per source).
        """
        whole = self.to_json(sources=False)
        whole["sources"] = _SOURCES_PLACEHOLDER
        streamed: dict[str, Callable[[], Iterator[bytes]]] = {json.dumps(_SOURCES_PLACEHOLDER): self._source_pieces}
        modes = self.undo.get("modes") if self.undo is not None else None
        if isinstance(modes, dict) and modes:
            whole["undo"] = {**whole["undo"], "modes": _MODES_PLACEHOLDER}
            streamed[json.dumps(_MODES_PLACEHOLDER)] = lambda: _mapping_pieces(modes)
        text = json.dumps(whole, ensure_ascii=False, sort_keys=True)
        if any(text.count(marker) != 1 for marker in streamed):  # a message quoting a marker: the whole report at once
            yield json.dumps(self.to_json(), ensure_ascii=False, sort_keys=True).encode("utf-8")
            return
        start = 0
        for at, marker in sorted((text.index(marker), marker) for marker in streamed):
            yield text[start:at].encode("utf-8")
            yield from streamed[marker]()
            start = at + len(marker)
        yield text[start:].encode("utf-8")

    def _source_pieces(self) -> Iterator[bytes]:
        return _joined_pieces(b"[", self.outcomes.entries(), b"]")

    def to_json(self, *, sources: bool = True) -> dict[str, Any]:
        return {
            "kind": "legacy-state",
            "statekit_version": __version__,
            "run_id": self.run_id,
            "status": self.status,
            "state_dir": str(self.state_dir),
            "backup_path": str(self.backup_path) if self.backup_path else None,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "counts": self.counts(),
            "sources": [o.to_json() for o in self.outcomes] if sources else [],
            "changes": self.changes,
            "warnings": self.warnings,
            "notices": self.notices,
            **({"interrupted": True, "interrupted_by": self.interrupted} if self.interrupted else {}),
            **({"undo": self.undo} if self.undo is not None else {}),
        }


_SOURCES_PLACEHOLDER = "\x00statekit: the sources of the run\x00"  # no path or message holds it: \x00 is never in one
_MODES_PLACEHOLDER = "\x00statekit: the modes of the undo facts\x00"


def _mapping_pieces(mapping: dict[str, Any]) -> Iterator[bytes]:
    """``json.dumps(mapping, ensure_ascii=False, sort_keys=True)`` in UTF-8 pieces, one item at a time."""
    items = (f"{json.dumps(key, ensure_ascii=False)}: {json.dumps(mapping[key], ensure_ascii=False, sort_keys=True)}".encode("utf-8")
             for key in sorted(mapping))
    return _joined_pieces(b"{", items, b"}")


def _joined_pieces(opening: bytes, items: Iterable[bytes], closing: bytes) -> Iterator[bytes]:
    """A JSON array or object in pieces, as ``json.dumps`` separates its items (``", "``)."""
    yield opening
    for number, item in enumerate(items):
        yield b", " + item if number else item
    yield closing


def now_ms() -> int:
    return int(time.time() * 1000)


class _SourceChanged(Exception):
    pass


class Migration:
    """One ``migrate`` run over one state dir (use :func:`migrate`)."""

    def __init__(self, state_dir: Path, options: MigrateOptions, progress: Callable[[int], None] | None = None) -> None:
        self.state_dir = state_dir
        self.options = options
        self.progress = progress or null_progress
        self.run_id = str(uuid.uuid4())
        self.report = MigrationReport(state_dir=state_dir, run_id=self.run_id, status="running", started_at=now_ms(),
                                      outcomes=OutcomeLog(state_dir / STATEKIT_DIR_NAME))
        self.global_conn: Connection | None = None
        self.agent_conns: dict[str, Connection] = {}
        self.receipts: dict[str, Receipt] = {}
        self.config: dict[str, Any] = {}
        self.run_cache: dict[Any, Any] = {}  # ImportContext.run_cached: facts read once per run
        self._dir_modes: dict[str, dict[str, int]] = {}  # parent directory -> its modes and its parents' (parent_modes)
        self._batch: _Batch | None = None  # small sources written, not yet committed (_import_batched)
        self.retirements: RetireBatch[tuple[str, dict[str, Any]]] = RetireBatch(state_dir, self._mark_retired, self.report.warnings)
        # Large transcripts are parsed in a second process while this one writes (transcript_worker); one core: here
        self.parse_worker = TranscriptWorker() if (os.cpu_count() or 1) > 1 else None

    # -- databases ----------------------------------------------------------

    def agent_conn(self, agent_id: str) -> Connection:
        conn = self.agent_conns.get(agent_id)
        if conn is None:
            conn, _ = open_agent(self.state_dir, agent_id, self.global_conn, self.report.warnings)
            self.agent_conns[agent_id] = conn
        return conn

    def close(self) -> None:
        if self.parse_worker is not None:
            self.parse_worker.close()
        for conn in self.agent_conns.values():
            conn.close()
        self.agent_conns.clear()
        if self.global_conn is not None:
            self.global_conn.close()
            self.global_conn = None

    # -- the run ------------------------------------------------------------

    def run(self, plan: Plan) -> MigrationReport:
        from statekit.migrate.steps import apply_steps  # state-dir relocation / config aliases (planned steps)

        databases_before = existing_databases(self.state_dir)
        modes_before = PackedModes(path_modes(self.state_dir, [s.rel for s in plan.sources] + config_rels(plan, self.state_dir)))
        import_bytes = sum(p.size or 0 for p in plan.sources if p.needs_import)
        if self.parse_worker is not None and any(_offloaded(p) for p in plan.sources):
            self.parse_worker.start()  # forked now, while this process is small and before its files and backup are open
        # The plan out of the small-object pages the backup and the imports fill (a session index parsed whole beside it)
        packed = PackedSources(plan.sources)
        plan.sources = []
        if self.options.backup:
            release_free_heap()  # what planning freed (an index parsed whole), before the backup's own peak
        backup_result = self._backup() if self.options.backup else None
        checkpoint("migrate-backup-done")
        self.global_conn, _ = open_global(self.state_dir, self.report.warnings)
        if backup_result is not None:
            self._record_backup(backup_result)
            backup_result = None  # its asset records (~650 bytes a file) are not held through the imports
        for stale in close_interrupted_runs(self.global_conn, now_ms()):
            self.report.notices.append(interrupted_run_notice(stale))
        self.report.warnings.extend(plan.name_warnings())
        open_run(self.global_conn, self.run_id, self.report.started_at, {"kind": "legacy-state", "state_dir": str(self.state_dir)})
        checkpoint("run-opened")
        self.receipts = load_receipts(self.global_conn)
        self.config = plan_config(plan)
        start_phase(self.progress, "migrate", import_bytes, "bytes")
        handing_out = packed.hand_out()  # each made when handed out, in plan order; the iterator alone holds the rest
        del packed
        try:
            self._converge_interrupted_retirements()
            for planned in handing_out:
                if self._batchable(planned):
                    done = self._import_batched(planned)
                    if done is not None:
                        self._record(done)
                    continue
                self._commit_batch()  # the sources before it are committed, validated and retired first (plan order)
                self._record(self._handle(planned))
            self._commit_batch()
            self.retirements.flush()
            self._finish_shared_auth_store()
            apply_steps(plan, self.state_dir, self.run_id, self.report)
        except BaseException as exc:
            with contextlib.suppress(Exception):  # a batch not committed: rolled back, none of its sources reported
                self._abandon_batch()
            with contextlib.suppress(Exception):  # what was retired before the failure keeps its receipt
                self.retirements.flush()
            self.report.status = RunStatus.FAILED
            self.report.finished_at = now_ms()
            if isinstance(exc, KeyboardInterrupt):  # SIGINT or SIGTERM (statekit.errors.Interrupted): name it
                self.report.interrupted = interruption_reason(exc)
                self.report.warnings.append(f"run interrupted by {self.report.interrupted}")
            else:
                self.report.warnings.append(f"run failed: {exc}")
            try:
                close_run(self.global_conn, self.run_id, self.report.finished_at, RunStatus.FAILED, self.report.report_pieces)
            except SQLiteError:
                pass
            raise
        self.report.undo = run_facts(self.state_dir, databases_before, modes_before.to_dict(), self._written_databases(), plan.steps)
        status = RunStatus.WARNING if self.report.warnings else RunStatus.COMPLETED
        self.report.status = status
        self.report.finished_at = now_ms()
        release_free_heap()  # what the backup and the imports freed, before SQLite stores the report (twice its size)
        checkpoint("before-close-run")
        close_run(self.global_conn, self.run_id, self.report.finished_at, status, self.report.report_pieces)
        return self.report

    def _record(self, outcome: SourceOutcome) -> None:
        """A source's final outcome, in the report (plan order)."""
        self.report.outcomes.append(outcome)
        if outcome.status in WARNING_OUTCOMES and outcome.message:
            self.report.warnings.append(outcome.message)
        self.report.notices.extend(outcome.notices)

    def _written_databases(self) -> dict[Path, Connection]:
        from statekit.layout import agent_db_path

        assert self.global_conn is not None
        written = {agent_db_path(self.state_dir, agent): conn for agent, conn in self.agent_conns.items()}
        return {global_db_path(self.state_dir): self.global_conn, **written}

    def _finish_shared_auth_store(self) -> None:
        """OpenClaw 2026.9.6 keeps the shared-main (``main``) auth store in the state database; mark it so (auth readers)."""
        from statekit.legacy_readers.auth_profiles import SHARED_MAIN_AGENT_ID, finish_shared_auth_store
        from statekit.layout import agent_db_path

        assert self.global_conn is not None
        main = self.agent_conn(SHARED_MAIN_AGENT_ID) if agent_db_path(self.state_dir, SHARED_MAIN_AGENT_ID).exists() else None
        notice = finish_shared_auth_store(self.global_conn, main)
        if notice:
            self.report.notices.append(notice)

    def _backup(self) -> Any:
        try:
            from statekit.backup import create_backup
        except ImportError as exc:  # pragma: no cover - the backup package ships with statekit
            raise StatekitError(f"the backup package is unavailable ({exc}); rerun with --no-backup to skip the backup") from None
        result = create_backup(self.state_dir, self.options.backup_output, verify=True, record=False, env=self.options.env,
                               progress=self.progress, state_lock_held=True)
        self.report.backup_path = result.archive_path
        self.report.changes.append(f"verified pre-migration backup: {result.archive_path}")
        if self.options.backup_to:
            from statekit.backup.remote import copy_offsite

            self.report.changes.append(f"offsite copy of the pre-migration backup: {copy_offsite(self.state_dir, self.options.backup_to, result)}")
        self.report.warnings.extend(getattr(result, "warnings", []) or [])
        return result

    def _record_backup(self, result: Any) -> None:
        try:
            from statekit.backup import record_backup_run
        except ImportError:  # pragma: no cover
            return
        assert self.global_conn is not None
        record_backup_run(self.global_conn, result, BackupRunStatus.OK)

    def _converge_interrupted_retirements(self) -> None:
        """A crash after the move but before the receipt update: finish the bookkeeping."""
        assert self.global_conn is not None
        for receipt in self.receipts.values():
            if receipt.status != "completed" or receipt.removed_source:
                continue
            source = self.state_dir / receipt.source_path
            if source.exists():
                continue
            retired = retired_path(self.state_dir, receipt.last_run_id, receipt.source_path)
            if retired.exists() and (receipt.source_sha256 is None or sha256_file(retired) == receipt.source_sha256):
                report = dict(receipt.report, retired_to=relative_posix(retired, self.state_dir))
                mark_removed(self.global_conn, receipt.source_key, report)
                self.report.changes.append(f"{receipt.source_path}: finished retiring (interrupted earlier)")

    def _handle(self, planned: PlannedSource) -> SourceOutcome:
        outcome = SourceOutcome(planned.kind, planned.rel, planned.agent_id, planned.action, planned.record_count)
        if planned.action in ("unreadable", "conflict"):
            outcome.message = planned.reason or f"{planned.rel}: {planned.action}"
            if planned.failure_recorded:  # still in place, still unreadable: a warning (exit 3) on every run
                outcome.status = "left-in-place"
                self.report.warnings.append(outcome.message)
            elif planned.source_key and planned.sha256:
                self._set_receipt_status(planned, ReceiptStatus.FAILED, {"error": outcome.message, "action": planned.action})
            return outcome
        if planned.action in ("deferred", "retain"):
            outcome.message = planned.reason
            if planned.reader is not None and planned.reader.action != planned.action:  # decided for this one file: say so
                outcome.notices.append(f"{planned.rel}: kept in place: {planned.reason}")
            return outcome
        if planned.needs_retire:
            receipt = planned.receipt
            if receipt is not None and not receipt.removed_source:
                earlier = {k: v for k, v in receipt.report.items() if k != "dir_modes"}  # the modes as they are now
                self._retire(planned, receipt.last_run_id, earlier, outcome)
            else:
                outcome.status = "already-imported"
            return outcome
        return self._import(planned, outcome)

    def _import(self, planned: PlannedSource, outcome: SourceOutcome, retried: bool = False) -> SourceOutcome:
        """One source in its own transaction per database (module docstring, step 4), then validated and retired."""
        assert self.global_conn is not None and planned.reader is not None and (planned.sha256 is not None or planned.glanced)
        source = Source(self.state_dir, planned.rel, planned.agent_id)
        transaction = _SourceTransaction(self.global_conn, BIG_SOURCE_CACHE_KIB if planned.size >= BIG_SOURCE_BYTES else None)
        # The file changed or came back: merge. (A glanced source has no receipt for its path: build_plan plans those fully.)
        earlier = earlier_version(self.receipts, planned.rel, planned.sha256)
        ctx = self._context(planned, transaction.agent_opener(self.agent_conn), earlier)
        try:
            with open_regular_file(source.path) as raw:
                transaction.begin()
                try:
                    result, report, receipt = self._write_opened(planned, source, raw, ctx)
                    write_receipts(self.global_conn, [receipt])
                    checkpoint("before-commit")
                    transaction.commit_agents()
                    checkpoint("between-commits")
                    transaction.commit_global()
                except BaseException:
                    transaction.rollback()
                    raise
        except (_SourceChanged, SourceChanged):
            return self._replan(planned, outcome, retried)
        except Exception as exc:  # one source's failure never stops the run...
            return self._import_failed(planned, outcome, source, exc)
        checkpoint("after-commit")
        return self._imported(_Written(planned, outcome, result, report, earlier, _expected_rows(result, ctx)))

    def _context(self, planned: PlannedSource, agent_opener: Callable[[str], Connection], earlier: Receipt | None) -> ImportContext:
        assert self.global_conn is not None
        return ImportContext(
            self.state_dir, self.run_id, now_ms(), self.global_conn, agent_opener, self.config, self.run_cache,
            planned_hashes={**planned.reopened, **({planned.rel: planned.sha256} if planned.sha256 else {})},
            receipts=self._receipt_lookup(),
            earlier_import=earlier.report if earlier is not None else None,
            parse_worker=self.parse_worker if _offloaded(planned) else None,
        )

    def _write_opened(self, planned: PlannedSource, source: Source, raw: BinaryIO, ctx: ImportContext, *,
                      batched: bool = False) -> tuple[WriteResult, dict[str, Any], tuple[Any, ...]]:
        """Inside the open transaction (or a batch's savepoint): the reader writes the rows and the bytes read are checked
        against the plan. Returns the result, the source's report and its ``completed`` receipt (the values
        ``write_receipts`` binds), for the caller to write in the same transaction. Raises :class:`_SourceChanged` when
        the file is not the one planned."""
        assert self.global_conn is not None and planned.reader is not None
        reader = planned.reader
        watched = None if self.progress is null_progress else ProgressReader(raw, self.progress)  # the TTY bar only
        hashing = HashingReader(raw if watched is None else cast(BinaryIO, watched))
        checkpoint("before-write")
        if planned.action == "drop":
            result = WriteResult(records=0, report={"dropped": reader.reason})
        else:
            with ctx.writer.guarded(reader.kind, reader.target_tables, keep=batched):  # a batch removes them (_Batch)
                result = reader.write(source, cast(BinaryIO, hashing), ctx)
        digest = hashing.finish()
        if planned.glanced:  # read, hashed and counted here, once (migrate.plan.finish_glanced)
            if not finish_glanced(planned, digest, hashing.size, os.fstat(raw.fileno()), result):
                raise _SourceChanged()
        elif digest != planned.sha256:
            raise _SourceChanged()
        if watched is not None:
            watched.flush_progress()
        report = self._source_report(planned, result)  # once: the receipt's now, and the retired one's after
        return result, report, self._receipt(planned, digest, ReceiptStatus.COMPLETED, ctx.now_ms, report)

    def _import_failed(self, planned: PlannedSource, outcome: SourceOutcome, source: Source, exc: Exception) -> SourceOutcome:
        """A source whose write failed, its transaction (or savepoint) rolled back: fail it, or stop the run."""
        if environmental(exc):  # ...but a full or failing disk is no property of the file: stop, retry it next run
            raise exc
        if isinstance(exc, FileNotFoundError) and planned.details.get("sibling_of") and not os.path.lexists(source.path):
            return _gone_sibling(planned, outcome)
        if planned.glanced:  # planned from its header only: plan it fully (as statekit plan does) and handle that
            assert planned.reader is not None
            entry = FileEntry(planned.rel, planned.size, planned.mtime_ms, "file")
            return self._handle(plan_source(self.state_dir, entry, planned.reader, self.receipts, self.options.retry_failed))
        return self._fail(planned, outcome, _describe(planned.rel, exc))

    def _imported(self, written: _Written) -> SourceOutcome:
        """After the commit of its rows and receipt: the source's outcome, its validation, its retirement."""
        planned, outcome, result = written.planned, written.outcome, written.result
        outcome.records = result.records
        outcome.notices.extend(map(redact, result.notices))
        if written.earlier is not None:
            self.report.warnings.append(came_back_line(planned.rel, written.earlier))
        self.report.warnings.extend(map(redact, result.warnings))
        problem = self._validate(planned, written.expected)
        if problem:
            return self._fail(planned, outcome, problem)
        outcome.status = "dropped" if planned.action == "drop" else "imported"
        return self._retire(planned, self.run_id, written.report, outcome)

    # -- batches of small sources -------------------------------------------

    def _batchable(self, planned: PlannedSource) -> bool:
        """A small source of a reader that allows it (``Reader.batchable``), to import: it joins the open batch."""
        reader = planned.reader
        return (reader is not None and reader.batchable and planned.action == "import" and planned.size <= BATCH_SOURCE_BYTES
                and (planned.sha256 is not None or planned.glanced))

    def _import_batched(self, planned: PlannedSource) -> SourceOutcome | None:
        """``planned`` written inside the open batch, in a savepoint of its own; None while its outcome waits for the
        batch's commit. A source that fails is rolled back alone; the batch so far is committed (and its sources
        validated and retired) before the failure is handled as :meth:`_import` handles it."""
        assert self.global_conn is not None and planned.reader is not None
        outcome = SourceOutcome(planned.kind, planned.rel, planned.agent_id, planned.action, planned.record_count)
        batch = self._batch
        if batch is None:
            batch = self._batch = _Batch(self.global_conn)
        source = Source(self.state_dir, planned.rel, planned.agent_id)
        earlier = earlier_version(self.receipts, planned.rel, planned.sha256)
        ctx = self._context(planned, batch.agent_opener(self.agent_conn), earlier)
        try:
            with open_regular_file(source.path) as raw:
                batch.begin_source(planned.reader)
                result, report, receipt = self._write_opened(planned, source, raw, ctx, batched=True)
                batch.end_source()
        except BaseException as exc:
            if not batch.rollback_source() or not isinstance(exc, Exception) or environmental(exc):
                # The whole transaction is gone (SQLite rolls it back on an interrupt, a full disk...), or the run stops.
                self._abandon_batch()
                if not isinstance(exc, Exception) or environmental(exc):
                    raise
                self._replay(batch.pending)
            else:
                self._commit_batch()
            if isinstance(exc, (_SourceChanged, SourceChanged)):
                return self._replan(planned, outcome, False)
            return self._import_failed(planned, outcome, source, exc)
        batch.pending.append(_Written(planned, outcome, result, report, earlier, _expected_rows(result, ctx), receipt))
        batch.size += planned.size
        if len(batch.pending) >= BATCH_SOURCES or batch.size >= BATCH_BYTES:
            self._commit_batch()
        return None

    def _commit_batch(self) -> None:
        """Commit the open batch (agent databases first, then the state database with the receipts), then give each
        of its sources its outcome, validation and retirement, in plan order, as :meth:`_import` does for one."""
        batch, self._batch = self._batch, None
        if batch is None:
            return
        try:
            batch.write_receipts()  # in the state database's transaction, before any commit (as for one source)
            checkpoint("before-commit")
            batch.commit_agents()
            checkpoint("between-commits")
            batch.commit_global()
        except BaseException as exc:
            batch.rollback()
            if not isinstance(exc, Exception) or environmental(exc):
                raise  # no source of the batch is reported: none says "imported" for rows that are not committed
            self._replay(batch.pending)  # a commit refused (a deferred constraint): each source again, in its own transaction
            return
        checkpoint("after-commit")
        for written in batch.pending:
            self._record(self._imported(written))

    def _abandon_batch(self) -> None:
        """Roll the open batch back (the run stops, or the transaction is already gone): its outcomes are dropped."""
        batch, self._batch = self._batch, None
        if batch is not None:
            batch.rollback()

    def _replay(self, pending: list[_Written]) -> None:
        """Sources of a batch that was rolled back as a whole (not by their own failure): each imported alone."""
        for written in pending:
            self._record(self._import(written.planned, written.outcome))

    def _receipt_lookup(self) -> ReceiptLookup:
        """The receipts a reader may ask about (``ctx.dependency_pending``, ``ctx.imported_report``), read by the apply loop.

        Inside a batch they include the receipts of the batch's earlier sources, written only at its commit."""
        conn = self.global_conn
        assert conn is not None

        def lookup(rel: str, digest: str | None) -> dict[str, Any] | None:
            batch = self._batch
            for written in reversed(batch.pending if batch is not None else ()):  # written at the batch's commit: the latest
                if written.planned.rel == rel and (digest is None or written.receipt[RECEIPT_SHA256] == digest):
                    found: dict[str, Any] = json.loads(written.receipt[RECEIPT_REPORT])  # as read back from the table
                    return found
            with unguarded(conn):
                return completed_receipt_report(conn, rel, digest)

        return lookup

    def _replan(self, planned: PlannedSource, outcome: SourceOutcome, retried: bool) -> SourceOutcome:
        if retried:
            return self._fail(planned, outcome, f"{planned.rel}: file keeps changing while being imported; left in place")
        try:
            st = os.lstat(self.state_dir / planned.rel)
        except OSError as exc:
            if isinstance(exc, FileNotFoundError) and planned.details.get("sibling_of"):
                return _gone_sibling(planned, outcome)
            return self._fail(planned, outcome, f"{planned.rel}: vanished during the run ({exc.strerror})")
        entry = FileEntry(planned.rel, st.st_size, st.st_mtime_ns // 1_000_000, "file")
        assert planned.reader is not None
        fresh = plan_source(self.state_dir, entry, planned.reader, self.receipts, self.options.retry_failed)
        outcome.notices.append(f"{planned.rel}: changed since the plan; planned again")
        if not fresh.needs_import:
            outcome.status = fresh.action
            outcome.message = fresh.reason
            return outcome
        return self._import(fresh, outcome, retried=True)

    def _validate(self, planned: PlannedSource, expected_rows: list[tuple[str, str, str, tuple[Any, ...], int]]) -> str | None:
        """After commit: every expectation (the reader's own and those the writer derived) holds."""
        assert self.global_conn is not None
        for db, table, where, params, expected in expected_rows:
            if db == "global":
                conn = self.global_conn
            else:
                agent = db.split(":", 1)[1] if ":" in db else planned.agent_id
                if agent is None:
                    return f"{planned.rel}: validation names an agent database but the source has no agent"
                conn = self.agent_conn(agent)
            clause = f" WHERE {where}" if where else ""
            try:
                found = conn.execute(f'SELECT count(*) FROM "{table}"{clause}', params).fetchone()[0]
            except SQLiteError as exc:  # a check built from the file's own data: its failure is this source's
                if environmental(exc):
                    raise
                message = f"{planned.rel}: validation failed: the check on {table} could not run ({exc}); source left in place"
                self._set_receipt_status(planned, ReceiptStatus.FAILED, {"error": message})
                return message
            if found < expected:
                message = f"{planned.rel}: validation failed: {table} has {found} rows, expected {expected}; source left in place"
                self._set_receipt_status(planned, ReceiptStatus.FAILED, {"error": message})
                return message
        return None

    def _receipt(self, planned: PlannedSource, sha256: str, status: ReceiptStatus, at_ms: int, report: dict[str, Any]) -> tuple[Any, ...]:
        """The ``migration_sources`` row of ``planned`` for this run (``receipts.receipt_row``), its source still in place."""
        return receipt_row(
            key=planned.source_key or "", rel=planned.rel, target_tables=planned.target_tables, sha256=sha256, size=planned.size,
            record_count=planned.record_count, run_id=self.run_id, status=status, now_ms=at_ms, removed_source=False, report=report,
        )

    def _set_receipt_status(self, planned: PlannedSource, status: ReceiptStatus, extra: dict[str, Any]) -> None:
        assert self.global_conn is not None and planned.sha256 is not None
        report = {"kind": planned.kind, "path": planned.rel, **extra}
        write_receipts(self.global_conn, [self._receipt(planned, planned.sha256, status, now_ms(), report)])

    def _fail(self, planned: PlannedSource, outcome: SourceOutcome, message: str) -> SourceOutcome:
        outcome.status = "failed"
        outcome.message = message
        if planned.source_key and planned.sha256:
            try:
                self._set_receipt_status(planned, ReceiptStatus.FAILED, {"error": message})
            except SQLiteError:
                pass
        return outcome

    def _retire(self, planned: PlannedSource, run_id: str, report: dict[str, Any], outcome: SourceOutcome) -> SourceOutcome:
        """Move the imported source into the run's retired folder and check the moved bytes are the imported ones.

        Bytes that changed since the plan (a writer appended after the import) are never deleted and never
        left unimported in silence: the file is put back where it was (the next run imports it, merging),
        or, when a new file already took its place, kept in the retired folder and named.
        With ``--remove-sources`` the verified copy is deleted.
        """
        assert self.global_conn is not None
        if "dir_modes" not in report:  # recover recreates them as they were (an import's report has them already)
            report = dict(report, dir_modes=self._parent_modes(planned.rel))
        key = planned.source_key or ""
        retired_to: str | None = None

        def token(dest: Path | None) -> tuple[str, dict[str, Any]]:
            nonlocal retired_to
            retired_to = None if dest is None else _relative_posix(dest, self.state_dir)
            return key, dict(report, retired_to=retired_to)

        try:
            # Moved now and its bytes re-hashed (RetireBatch.retire); the receipt is marked when the batch is durable.
            self.retirements.retire(planned.rel, run_id, planned.sha256, token, remove=self.options.remove_sources)
        except ChangedAtRetire as changed:
            return self._changed_at_retire(planned, changed.moved, outcome)
        except OSError as exc:
            outcome.message = f"{planned.rel}: imported, but could not be retired ({exc.strerror or exc}); rerun to finish"
            self.report.warnings.append(outcome.message)
            return outcome
        checkpoint("after-retire")  # the receipt is marked retired when the batch is durable (RetireBatch.flush)
        outcome.retired_to = retired_to
        if outcome.status not in ("imported", "dropped"):
            outcome.status = "retired"
        return outcome

    def _changed_at_retire(self, planned: PlannedSource, moved: Path, outcome: SourceOutcome) -> SourceOutcome:
        """The moved file is not what was imported: put it back (never over a newer file), say so in one line."""
        source = self.state_dir / planned.rel
        try:
            os.link(moved, source)  # fails when a new file already sits at the old path
        except OSError:
            outcome.message = (f"{planned.rel}: changed after it was imported; its bytes are kept, not imported, at"
                               f" {relative_posix(moved, self.state_dir)}, as a new file took its place; compare the two before removing either")
        else:
            moved.unlink()
            outcome.message = f"{planned.rel}: changed after it was imported; left in place: run statekit migrate again to import the new bytes"
        self.report.warnings.append(outcome.message)
        with contextlib.suppress(OSError):  # where the bytes now are is on disk before the run goes on
            fsync_dir(moved.parent)
            fsync_dir(source.parent)
        return outcome

    def _parent_modes(self, rel: str) -> dict[str, int]:
        """``retire.parent_modes``, read once per directory and run (the sources of one directory share them)."""
        parent = rel.rpartition("/")[0]
        modes = self._dir_modes.get(parent)
        if modes is None:
            modes = self._dir_modes[parent] = parent_modes(self.state_dir, rel)
        return dict(modes)

    def _mark_retired(self, retired: list[tuple[str, dict[str, Any]]]) -> None:
        """The receipts of a durable batch of retirements: ``removed_source = 1``, in one transaction."""
        assert self.global_conn is not None
        with immediate(self.global_conn):
            mark_removed_many(self.global_conn, retired)

    def _source_report(self, planned: PlannedSource, result: WriteResult) -> dict[str, Any]:
        return {
            "kind": planned.kind,
            "path": planned.rel,
            "agent_id": planned.agent_id,
            "size": planned.size,
            "mtime_ms": planned.mtime_ms,
            # In the receipt from the import on: a crash before the batch of retirements is durable leaves it
            # to the next run to mark the move, and recover still recreates the directories as they were.
            "dir_modes": self._parent_modes(planned.rel),
            "sha256": planned.sha256,
            "record_count": planned.record_count,
            "target_tables": list(planned.target_tables),
            "records_written": result.records,
            "notices": [redact(n) for n in result.notices],
            "warnings": [redact(w) for w in result.warnings],
            **cast(dict[str, Any], redact_json(result.report)),  # a reader's report may name keys of the file
        }


def _offloaded(planned: PlannedSource) -> bool:
    """A transcript the run's parse process will parse (``transcript_worker``: large, to import; a merge aside)."""
    return planned.kind == TranscriptReader.kind and planned.needs_import and planned.size >= OFFLOAD_BYTES


def _relative_posix(path: Path, root: Path) -> str:
    """``layout.relative_posix`` without building paths, for a path under ``root`` (a retired copy under the state dir)."""
    text, prefix = os.fspath(path), os.fspath(root).rstrip(os.sep) + os.sep
    if os.sep == "/" and text.startswith(prefix) and "/./" not in text and "//" not in text[len(prefix):]:
        return text[len(prefix):]
    return relative_posix(path, root)


def _gone_sibling(planned: PlannedSource, outcome: SourceOutcome) -> SourceOutcome:
    """A ``-wal``/``-shm``/``-journal`` the plan saw that SQLite removed before its import (the last connection to its
    database closed: a WAL is deleted only once checkpointed into the database, a journal once rolled back or
    committed). Nothing of it is lost and nothing is left to import: no receipt, a note. (A pre-migration backup
    killed while it had the database open leaves these two files; the next run's backup closes it again.)"""
    outcome.status = "gone"
    outcome.notices.append(f"{planned.rel}: removed by SQLite before its import, when {planned.details['sibling_of']} was last closed"
                           " (its rows are in that database); nothing to import")
    return outcome


@dataclass(slots=True)
class _Written:
    """A source whose rows and receipt are written (committed, or waiting in a batch): what its outcome needs after."""

    planned: PlannedSource
    outcome: SourceOutcome
    result: WriteResult
    report: dict[str, Any]
    earlier: Receipt | None
    expected: list[tuple[str, str, str, tuple[Any, ...], int]]
    receipt: tuple[Any, ...] = ()  # its completed receipt (receipts.receipt_row), written when its batch commits


def _expected_rows(result: WriteResult, ctx: ImportContext) -> list[tuple[str, str, str, tuple[Any, ...], int]]:
    """What the post-commit validation checks: the reader's own expectations and those the writer derived."""
    return [*result.expected, *(e.as_tuple() for e in ctx.writer.expectations())]


class _Batch:
    """Small sources sharing one transaction per database, each source in a savepoint of its own.

    The state database's transaction begins with the first source; an agent database's the first time a source
    of the batch opens it. A source that fails is rolled back to its savepoint alone (:meth:`rollback_source`);
    the commit is the agents' first, then the state database's with every receipt of the batch, as for one source
    (a crash between them leaves rows without receipts: the rerun imports them again, replacing).
    """

    def __init__(self, global_conn: Connection) -> None:
        self.global_conn = global_conn
        self.begun = False  # the state database's transaction
        self.agents: list[Connection] = []  # agent databases in the batch's transaction
        self._by_agent: dict[str, Connection] = {}
        self.pending: list[_Written] = []
        self.size = 0
        self._savepoints: list[Connection] = []  # the connections holding the current source's savepoint

    def begin_source(self, reader: Reader) -> None:
        """A savepoint for the next source on the state database only when its reader may write there: the guard
        refuses any other write of the reader, so the apply loop's own (an agent's registration) are all it holds."""
        if not self.begun:
            self.global_conn.execute("BEGIN IMMEDIATE")
            self.begun = True
        self._savepoints = []
        if tables_of(reader.target_tables, "global"):
            self.global_conn.execute(f"SAVEPOINT {BATCH_SAVEPOINT}")
            self._savepoints.append(self.global_conn)

    def agent_opener(self, open_agent_conn: Callable[[str], Connection]) -> Callable[[str], Connection]:
        def opener(agent_id: str) -> Connection:
            conn = self._by_agent.get(agent_id)
            if conn is None:
                with unguarded(self.global_conn):  # opening an agent registers it in the state database
                    conn = self._by_agent[agent_id] = open_agent_conn(agent_id)
                conn.execute("BEGIN IMMEDIATE")
                self.agents.append(conn)
            conn.execute(f"SAVEPOINT {BATCH_SAVEPOINT}")
            self._savepoints.append(conn)
            return conn

        return opener

    def end_source(self) -> None:
        while self._savepoints:
            self._savepoints[-1].execute(f"RELEASE {BATCH_SAVEPOINT}")
            self._savepoints.pop()

    def rollback_source(self) -> bool:
        """Undo the current source alone. False when that is not possible: the batch's transaction is gone on some
        database (SQLite rolls a whole transaction back on an interrupt, a full disk, ...) or a savepoint is."""
        intact = True
        for conn in self._savepoints:
            forget_schema_facts(conn)  # a rolled-back ALTER brings the schema version number back
            try:
                conn.execute(f"ROLLBACK TO {BATCH_SAVEPOINT}")
                conn.execute(f"RELEASE {BATCH_SAVEPOINT}")
            except SQLiteError:
                intact = False
        self._savepoints = []
        return intact and self.begun and all(c.in_transaction for c in (self.global_conn, *self.agents))

    def write_receipts(self) -> None:
        """The receipts of every source of the batch, in the state database's transaction (the guards go first)."""
        self._unguard()
        write_receipts(self.global_conn, [written.receipt for written in self.pending])

    def commit_agents(self) -> None:
        for number, conn in enumerate(self.agents):
            if number:
                checkpoint("between-agent-commits")
            conn.execute("COMMIT")

    def commit_global(self) -> None:
        if self.begun:
            self.global_conn.execute("COMMIT")
        self._unguard()

    def rollback(self) -> None:
        self._savepoints = []
        _rollback(self.global_conn, *self.agents)
        self._unguard()

    def _unguard(self) -> None:
        """The readers' guards left on the databases for the batch's next source (``Writer.guarded``) go."""
        for conn in (self.global_conn, *self.agents):
            conn.authorizer = None


class _SourceTransaction:
    """One source's transaction: the state database's, and each agent database's the reader opens.

    Agent rows commit first, then the state database with the receipt (module docstring, step 4).
    """

    def __init__(self, global_conn: Connection, cache_kib: int | None = None) -> None:
        self.global_conn = global_conn
        self.agents: list[Connection] = []
        self.cache_kib = cache_kib

    def begin(self) -> None:
        self.global_conn.execute("BEGIN IMMEDIATE")

    def agent_opener(self, open_agent_conn: Callable[[str], Connection]) -> Callable[[str], Connection]:
        def opener(agent_id: str) -> Connection:
            with unguarded(self.global_conn):  # opening an agent registers it in the state database
                conn = open_agent_conn(agent_id)
            if self.cache_kib:
                conn.execute(f"PRAGMA cache_size = -{self.cache_kib}")
            conn.execute("BEGIN IMMEDIATE")
            self.agents.append(conn)
            return conn

        return opener

    def commit_agents(self) -> None:
        for conn in self.agents:
            conn.execute("COMMIT")

    def commit_global(self) -> None:
        self.global_conn.execute("COMMIT")
        self._default_cache()

    def rollback(self) -> None:
        _rollback(self.global_conn, *self.agents)
        self._default_cache()

    def _default_cache(self) -> None:
        if self.cache_kib:
            for conn in self.agents:
                with contextlib.suppress(SQLiteError):
                    conn.execute(f"PRAGMA cache_size = -{DEFAULT_CACHE_KIB}")


def _rollback(*conns: Connection) -> None:
    for conn in conns:
        try:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
        except SQLiteError:
            pass


def root_error(exc: BaseException) -> BaseException:
    """The error a failed ``ROLLBACK`` in a handler masks (SQLite already rolled back after a full disk)."""
    while "cannot rollback" in str(exc) and isinstance(exc.__context__, SQLiteError):
        exc = exc.__context__
    return exc


def environmental(exc: BaseException) -> bool:
    """A condition of the machine, not of the source being imported: the run stops, the source is retried next run.

    A full, failing or read-only disk under the databases; a lock another process holds (``SQLITE_BUSY``,
    ``SQLITE_LOCKED``); exhausted resources (``EMFILE``, ``ENFILE``, ``ENOMEM``, ``SQLITE_NOMEM``).
    """
    exc = root_error(exc)
    if isinstance(exc, ParseWorkerLost):  # killed or out of memory: the file was not the problem
        return True
    if isinstance(exc, NotADatabaseFile):  # a directory or link at a database path: named by database_failure
        return True
    if isinstance(exc, SQLiteError):
        name = error_name(exc)
        if transient_sqlite_name(name):
            return True
        if isinstance(exc, OperationalError):
            return (name in ("SQLITE_FULL", "SQLITE_READONLY", "SQLITE_CANTOPEN") or name.startswith(("SQLITE_IOERR", "SQLITE_READONLY_", "SQLITE_CANTOPEN_"))
                    or "disk" in str(exc))
        return False
    return isinstance(exc, OSError) and (exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS) or transient_os_error(exc))


def _describe(rel: str, exc: BaseException) -> str:
    if isinstance(exc, SourceError):
        return str(exc)
    if isinstance(exc, (SchemaError, UnsafePathError, ValueRangeError)):  # UnsafePathError: a database path leading out of the state dir
        return f"{rel}: {exc}"
    if isinstance(exc, SQLiteError):
        return f"{rel}: database refused the rows: {exc}"
    if isinstance(exc, OSError):
        return f"{rel}: {exc.strerror or exc}"
    if isinstance(exc, (RecursionError, MemoryError)):
        return f"{rel}: input too deeply nested or too large"
    return redact(f"{rel}: unexpected {type(exc).__name__}: {exc}")


def plan_config(plan: Plan) -> dict[str, Any]:
    """The parsed config (JSON5), or {} when it is missing or does not parse."""
    return read_config(plan.config_path)


def interrupted_retirements(state_dir: Path) -> list[str]:
    """Sources a killed run moved into ``.statekit/migrated/`` before its receipt said so (read-only check).

    The plan cannot see them (they are no longer in place), so without this a rerun
    would report "nothing to migrate" and leave ``removed_source = 0`` forever.
    """
    found = []
    for receipt in load_receipts_readonly(state_dir).values():
        if receipt.status != "completed" or receipt.removed_source or (state_dir / receipt.source_path).exists():
            continue
        if retired_path(state_dir, receipt.last_run_id, receipt.source_path).exists():
            found.append(receipt.source_path)
    return found


def end_of_run_left(state_dir: Path) -> bool:
    """A run stopped after its last import but before its end-of-run step (the shared auth store's marker): the
    plan sees no source left, yet the step is work (read-only check; an unreadable database is the run's to name)."""
    from statekit.layout import agent_db_path
    from statekit.legacy_readers.auth_profiles import SHARED_MAIN_AGENT_ID, shared_store_unsettled

    global_db, main_db = global_db_path(state_dir), agent_db_path(state_dir, SHARED_MAIN_AGENT_ID)
    if not global_db.is_file():
        return False
    try:
        with read_only_view(global_db) as state:
            if not main_db.is_file():
                return shared_store_unsettled(state, None)
            with read_only_view(main_db) as main:
                return shared_store_unsettled(state, main)
    except SQLiteError:
        return False


def database_failure(state_dir: Path, exc: SQLiteError) -> str:
    """One line for a database error that stopped the run: the root cause (not a failed ROLLBACK after it), named by
    what is actually there (a directory or a link at a database path, a lock, a full disk)."""
    root = root_error(exc)
    text = str(root)
    found = next(filter(None, map(database_path_problem, run_databases(state_dir))), None)
    cause = f"{found}; fix that and" if found else sqlite_cause(error_name(root), text)
    return (f"{state_dir}: migration stopped by a database error ({text}); sources imported before it are committed with"
            f" their receipts, the others are still in place; {cause} run statekit migrate again")


def machine_failure(state_dir: Path, exc: OSError) -> str:
    """One line for an OS error of the machine (full disk, too many open files, no memory) that stopped the run."""
    where = f" at {exc.filename}" if exc.filename else ""
    cause = f"{exc.strerror}:" if isinstance(exc, ParseWorkerLost) else os_cause(exc)
    return (f"{state_dir}: migration stopped{where}: {cause} run statekit migrate again; sources imported before it"
            " are committed with their receipts, the others are still in place and are retried")


def failure_exit_code(exc: BaseException) -> ExitCode:
    """Busy (4) for a lock another process holds, else fatal (1)."""
    return ExitCode.BUSY if error_name(root_error(exc)).startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) else ExitCode.FATAL


def run_databases(state_dir: Path) -> list[Path]:
    """The databases a run writes: the state database and every agent's (on disk or not yet)."""
    found = [global_db_path(state_dir)]
    agents = state_dir / "agents"
    try:
        found += sorted(agent_db_path(state_dir, child.name) for child in agents.iterdir() if child.is_dir() and not child.is_symlink())
    except OSError:
        pass
    return found


def check_writable(state_dir: Path) -> None:
    if not os.access(state_dir, os.W_OK):
        raise StateDirError(f"{state_dir}: state dir is read-only; nothing was changed")


def interrupted_run_notice(run_id: str) -> str:
    return f"run {run_id} was interrupted before it finished; marked failed (its completed sources keep their receipts)"


def _close_stale_runs(state_dir: Path, report: MigrationReport) -> None:
    """A run killed after its last source (nothing left to import) still says ``running``: close it."""
    db = global_db_path(state_dir)
    if not db.is_file():
        return
    try:
        with read_only_view(db) as view:
            if "migration_runs" not in table_names(view) or view.execute(
                "SELECT 1 FROM migration_runs WHERE status = 'running' LIMIT 1"
            ).fetchone() is None:
                return
        conn = open_rw(db)
    except SQLiteError:
        return  # best effort: the history stays as it was
    try:
        with immediate(conn):
            stale = close_interrupted_runs(conn, now_ms())
    except SQLiteError:
        return
    finally:
        conn.close()
    for run_id in stale:
        report.notices.append(interrupted_run_notice(run_id))


def migrate(
    resolved: ResolvedStateDir | Path,
    options: MigrateOptions | None = None,
    progress: Callable[[int], None] | None = None,
) -> MigrationReport:
    """Run the whole migration. Raises StatekitError for fatal problems; per-source problems are in the report."""
    options = options or MigrateOptions()
    if isinstance(resolved, Path):
        resolved = ResolvedStateDir(resolved, "flag")
    from statekit.migrate.relocate import relocate_state_dir

    resolved = relocate_state_dir(resolved, options.env)  # a planned step: only a found legacy root moves
    state_dir = resolved.path
    check_state_dir(state_dir)
    check_writable(state_dir)
    try:
        lock = exclusive_lock(lock_path(state_dir), f"state dir {state_dir}")
        lock.__enter__()
    except PermissionError as exc:
        raise StateDirError(f"{state_dir}: cannot create statekit's lock ({exc.strerror}); nothing was changed") from None
    try:
        refuse_if_gateway_running(state_dir)
        # Temp files of a killed statekit write (config, retired copy, archive receipt); we hold the lock.
        remove_orphaned_temps(state_dir)
        remove_orphaned_temps(state_dir / STATEKIT_DIR_NAME, recursive=True)
        try:
            plan = build_plan(resolved, options.env, options.retry_failed, progress, full=False)
        except OSError as exc:  # too many open files, no memory while planning: nothing was written
            if not environmental(exc):
                raise
            raise StatekitError(machine_failure(state_dir, exc)) from None
        ensure_not_schema_error(plan)
        if not plan.has_work and not interrupted_retirements(state_dir) and not end_of_run_left(state_dir):
            # Every source is imported, or failed before in this very version and was reported then. A
            # source still in place and still unreadable is work left undone: a warning (exit 3), every run.
            report = MigrationReport(state_dir=state_dir, run_id=None, status="nothing-to-do", started_at=now_ms())
            for planned in plan.sources:
                if planned.action in ("unreadable", "conflict"):
                    report.warnings.append(planned.reason or planned.rel)
                    report.outcomes.append(SourceOutcome(planned.kind, planned.rel, planned.agent_id, "left-in-place", message=planned.reason))
            from statekit.migrate.steps import config_warnings

            report.warnings.extend(config_warnings(plan.steps))  # a config OpenClaw 2026.9.6 would refuse is not "done"
            report.warnings.extend(plan.name_warnings())
            report.finished_at = report.started_at
            _close_stale_runs(state_dir, report)
            return report
        migration = Migration(state_dir, options, progress)
        try:
            return migration.run(plan)
        except SQLiteError as exc:  # the disk filled up or failed, or a lock or memory ran out: stop, retry next run
            raise StatekitError(database_failure(state_dir, exc), exit_code=failure_exit_code(exc)) from None
        except OSError as exc:
            if not environmental(exc):
                raise
            raise StatekitError(machine_failure(state_dir, exc)) from None
        finally:
            migration.close()
    finally:
        lock.__exit__(None, None, None)
