"""``statekit recover RUN_ID``: put back the sources a migration run retired.

For every receipt of the run with ``removed_source = 1``, the retired copy
under ``.statekit/migrated/<run_id>/`` (the receipt's ``retired_to``) goes
back to its original path, byte-identical: its SHA-256 must match the
receipt, and a *different* file already at the original path is never
overwritten (an identical one counts as already recovered). The move is a
hard link + unlink (no copy, mode and mtime kept, cannot clobber), with a
verified copy as the fallback. The receipt then says ``status =
'recovered'``, ``removed_source = 0``: the next ``migrate`` no longer
treats the file as imported and imports it again (rows are upserted, so the
re-import converges). Rows already imported stay where they are.

Directories the retirement removed (it removes the ones it leaves empty)
are recreated with the modes the receipt recorded when the source was
retired (``dir_modes``; 0700 for receipts older than that), exactly,
whatever the umask; under root in a user's state dir they get the state
dir's owner. Nothing is placed through a symlinked directory leading out of
the state dir.

A config rewritten by the run (receipt kind ``config``) is put back the same
way; the ``openclaw.json`` that statekit wrote is replaced only while it is
still byte-identical to what statekit wrote.

The recovery is recorded as a ``migration_runs`` row whose report has
``kind: "recover"``. ``--report FILE`` writes a sanitized JSON report for a
bug report: relative paths, counts, outcome and error lines — no absolute
path, no secret, no message text.
"""

from __future__ import annotations

import errno
import json
import os
import platform
import re
import shutil
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from statekit.migrate.receipts import Receipt, _row_to_receipt, close_interrupted_runs  # noqa: PLC2701 - same package
from statekit.migrate.retire import remove_empty_parents, retired_path
from statekit import __version__
from statekit.db import Connection, SQLiteError, immediate, open_rw, read_only_view, table_names
from statekit.errors import ExitCode, StatekitError
from statekit.fsutil import (
    PRIVATE_DIR_MODE,
    PRIVATE_FILE_MODE,
    UnsafePathError,
    atomic_write_bytes,
    create_file,
    ensure_inside,
    fsync_dir,
    make_dir,
    open_regular_file,
    read_regular_file,
    sha256_file,
)
from statekit.layout import canonical_state_dir, global_db_path, lock_path, migrated_dir
from statekit.locking import exclusive_lock, refuse_if_gateway_running
from statekit.states import RecoverStatus, RunStatus

_SELECT = (
    "SELECT source_key, source_path, status, last_run_id, removed_source, source_sha256, report_json"
    " FROM migration_sources WHERE last_run_id = ? ORDER BY source_path"
)


@dataclass
class RecoverItem:
    kind: str
    path: str
    status: RecoverStatus
    size: int | None = None
    retired_to: str | None = None
    message: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "path": self.path, "status": self.status, "size": self.size, "retired_to": self.retired_to,
                "message": self.message}


@dataclass
class RecoverReport:
    state_dir: Path
    run_id: str
    dry_run: bool
    run_status: str | None = None
    recover_run_id: str | None = None
    items: list[RecoverItem] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for item in self.items:
            counts[item.status] = counts.get(item.status, 0) + 1
        return dict(sorted(counts.items()))

    @property
    def exit_code(self) -> ExitCode:
        if any(i.status == RecoverStatus.HASH_MISMATCH for i in self.items):
            return ExitCode.VERIFY_FAILED
        return ExitCode.WARNINGS if self.errors else ExitCode.OK

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "run_status": self.run_status,
            "recover_run_id": self.recover_run_id,
            "dry_run": self.dry_run,
            "state_dir": str(self.state_dir),
            "counts": self.counts(),
            "sources": [i.to_json() for i in self.items],
            "errors": self.errors,
        }


def _now_ms() -> int:
    return int(time.time() * 1000)


def _load(conn: Connection, run_id: str) -> tuple[str | None, dict[str, Any], list[Receipt]]:
    if "migration_runs" not in table_names(conn):
        raise StatekitError("no migration_runs table: this state dir has no statekit migration history")
    row = conn.execute("SELECT status, report_json FROM migration_runs WHERE id = ?", (run_id,)).fetchone()
    if row is None:
        raise StatekitError(f"no migration run {run_id!r} (see `statekit history`)")
    try:
        run_report = json.loads(row[1]) if row[1] else {}
    except (ValueError, RecursionError):
        run_report = {}
    receipts = [_row_to_receipt(r) for r in conn.execute(_SELECT, (run_id,))] if "migration_sources" in table_names(conn) else []
    return row[0], run_report if isinstance(run_report, dict) else {}, receipts


def _safe_rel(rel: str) -> Path | None:
    parts = PurePosixPath(rel).parts
    if not parts or PurePosixPath(rel).is_absolute() or ".." in parts:
        return None
    return Path(*parts)


def _retired_copy(state_dir: Path, receipt: Receipt) -> Path | None:
    retired_to = receipt.report.get("retired_to") if "retired_to" in receipt.report else "__default__"
    if retired_to is None:
        return None
    if retired_to == "__default__":
        return retired_path(state_dir, receipt.last_run_id, receipt.source_path)
    rel = _safe_rel(str(retired_to))
    return state_dir / rel if rel is not None else None


def _place(source: Path, dest: Path, sha256: str | None) -> None:
    """Move ``source`` to ``dest`` without ever overwriting: hard link + unlink, else verified copy."""
    try:
        os.link(source, dest)
    except FileExistsError:
        raise
    except OSError as exc:
        if exc.errno not in (errno.EXDEV, errno.EPERM, errno.ENOTSUP, errno.EMLINK, errno.EOPNOTSUPP):
            raise
        tmp = dest.with_name(f".{dest.name}.statekit-recover-{os.getpid()}")
        with open_regular_file(source) as src, open(create_file(tmp, PRIVATE_FILE_MODE), "wb") as out:
            shutil.copyfileobj(src, out, 1 << 20)
            out.flush()
            os.fsync(out.fileno())
        shutil.copystat(source, tmp)
        if sha256 and sha256_file(tmp) != sha256:
            tmp.unlink(missing_ok=True)
            raise OSError(errno.EIO, "copy does not match its hash") from None
        if os.path.lexists(dest):
            tmp.unlink(missing_ok=True)
            raise FileExistsError(errno.EEXIST, "appeared meanwhile", str(dest)) from None
        os.rename(tmp, dest)
    fsync_dir(dest.parent)
    source.unlink()
    fsync_dir(source.parent)


def _mark(conn: Connection, receipt: Receipt, recover_run_id: str, now_ms: int, note: str) -> None:
    report = dict(receipt.report, recovered_by=recover_run_id, recovered_at=now_ms, recovery=note)
    conn.execute(
        "UPDATE migration_sources SET status = 'recovered', removed_source = 0, report_json = ? WHERE source_key = ?",
        (json.dumps(report, ensure_ascii=False, sort_keys=True), receipt.source_key),
    )


def _file_sha(path: Path) -> str | None:
    if not path.is_file() or path.is_symlink():
        return None
    return sha256_file(path)


def _recover_one(state_dir: Path, receipt: Receipt, dry_run: bool) -> tuple[RecoverItem, bool]:
    """Returns (item, whether the receipt is to be marked recovered)."""
    kind = str(receipt.report.get("kind") or "?")
    item = RecoverItem(kind, receipt.source_path, RecoverStatus.ERROR, receipt.report.get("size"))
    rel = _safe_rel(receipt.source_path)
    if rel is None:
        item.message = f"{receipt.source_path}: receipt names a path outside the state dir; skipped"
        return item, False
    original = state_dir / rel
    retired = _retired_copy(state_dir, receipt)
    if retired is None:
        item.status = RecoverStatus.MISSING
        item.message = (f"{receipt.source_path}: deleted by --remove-sources, no retired copy to put back"
                        " (restore it from the pre-migration backup)")
        return item, False
    item.retired_to = retired.relative_to(state_dir).as_posix() if retired.is_relative_to(state_dir) else None
    expected = receipt.source_sha256
    # statekit's own rewrite of the config (may sit at the original path or at openclaw.json)
    written: Path | None = None
    if kind == "config" and receipt.report.get("written_path"):
        written_rel = _safe_rel(str(receipt.report["written_path"]))
        written = state_dir / written_rel if written_rel is not None else None
    written_sha = receipt.report.get("written_sha256")

    if os.path.lexists(original):
        current = _file_sha(original)
        if expected is not None and current == expected:
            item.status = RecoverStatus.ALREADY_IN_PLACE
            if not dry_run:
                _drop_statekit_copy(written, written_sha, original)
                if retired.is_file() and _file_sha(retired) == expected:
                    retired.unlink()
            return item, not dry_run
        if not (written == original and current is not None and current == written_sha):
            item.status = RecoverStatus.CONFLICT
            item.message = f"{receipt.source_path}: a different file exists at the original path; left alone"
            return item, False
    if written is not None and written != original and os.path.lexists(written) and _file_sha(written) != written_sha:
        item.status = RecoverStatus.CONFLICT
        item.message = f"{receipt.report.get('written_path')}: changed since statekit wrote it; the old config was not put back"
        return item, False
    if not retired.is_file():
        item.status = RecoverStatus.MISSING
        item.message = f"{receipt.source_path}: retired copy {item.retired_to or retired.name} is missing"
        return item, False
    if expected is not None and sha256_file(retired) != expected:
        item.status = RecoverStatus.HASH_MISMATCH
        item.message = f"{receipt.source_path}: retired copy does not match the SHA-256 in its receipt; left alone"
        return item, False
    ensure_inside(original, state_dir)
    if dry_run:
        item.status = RecoverStatus.WOULD_RECOVER
        return item, False
    recreate_parents(state_dir, rel, receipt.report.get("dir_modes"))
    if written == original:
        # replace statekit's rewrite (checked byte-identical above) with the old bytes
        st = retired.stat()
        atomic_write_bytes(original, read_regular_file(retired, st.st_size), PRIVATE_FILE_MODE)
        os.utime(original, ns=(st.st_atime_ns, st.st_mtime_ns))
        retired.unlink()
        fsync_dir(retired.parent)
    else:
        try:
            _place(retired, original, expected)
        except FileExistsError:
            item.status = RecoverStatus.CONFLICT
            item.message = f"{receipt.source_path}: a file appeared at the original path; left alone"
            return item, False
        _drop_statekit_copy(written, written_sha, original)
    remove_empty_parents(retired.parent, migrated_dir(state_dir, receipt.last_run_id).parent)
    item.status = RecoverStatus.RECOVERED
    return item, True


def recreate_parents(state_dir: Path, rel: Path, recorded: Any) -> list[Path]:
    """Make the missing directories on the way to ``rel`` with the modes recorded at retirement (else 0700).

    Exact modes, whatever the umask (``fsutil.make_dir``); returns the directories made.
    """
    modes = recorded if isinstance(recorded, dict) else {}
    made: list[Path] = []
    for depth in range(1, len(rel.parts)):
        key = PurePosixPath(*rel.parts[:depth]).as_posix()
        directory = state_dir.joinpath(*rel.parts[:depth])
        if os.path.lexists(directory):
            continue
        mode = modes.get(key)
        mode = mode & 0o7777 if isinstance(mode, int) and not isinstance(mode, bool) and 0 <= mode <= 0o7777 else PRIVATE_DIR_MODE
        try:
            make_dir(directory, mode)
        except FileExistsError:
            continue
        made.append(directory)
    return made


def _drop_statekit_copy(written: Path | None, written_sha: Any, original: Path) -> None:
    """Remove the config statekit wrote under a new name, while it is still exactly what statekit wrote."""
    if written is None or written == original or not written.is_file():
        return
    if _file_sha(written) == written_sha:
        written.unlink()
        fsync_dir(written.parent)


def recover(state_dir: Path, run_id: str, *, dry_run: bool = False) -> RecoverReport:
    """Put back every source ``run_id`` retired (see module doc). Takes the lock unless ``dry_run``."""
    state_dir = canonical_state_dir(state_dir)  # a symlinked state dir is the directory it points to
    db = global_db_path(state_dir)
    if not db.is_file():
        raise StatekitError(f"{db}: no global database; nothing to recover")
    report = RecoverReport(state_dir, run_id, dry_run)
    if dry_run:
        with read_only_view(db) as conn:
            report.run_status, _, receipts = _load(conn, run_id)
            _collect(state_dir, receipts, report, None, None)
        return report
    with exclusive_lock(lock_path(state_dir), f"state dir {state_dir}"):
        refuse_if_gateway_running(state_dir)
        conn = open_rw(db, inside=state_dir)
        try:
            report.run_status, _, receipts = _load(conn, run_id)
            report.recover_run_id = str(uuid.uuid4())
            started = _now_ms()
            close_interrupted_runs(conn, started)  # we hold the lock: any statekit run still 'running' was killed
            conn.execute(
                "INSERT INTO migration_runs(id, started_at, finished_at, status, report_json) VALUES (?, ?, NULL, ?, ?)",
                (report.recover_run_id, started, RunStatus.RUNNING, json.dumps({"kind": "recover", "recovers_run_id": run_id}, sort_keys=True)),
            )
            _collect(state_dir, receipts, report, conn, report.recover_run_id)
            status = RunStatus.WARNING if report.errors else RunStatus.COMPLETED
            summary = {"kind": "recover", "recovers_run_id": run_id, "counts": report.counts(),
                       "sources": [i.to_json() for i in report.items], "errors": report.errors}
            conn.execute(
                "UPDATE migration_runs SET finished_at = ?, status = ?, report_json = ? WHERE id = ?",
                (_now_ms(), status, json.dumps(summary, ensure_ascii=False, sort_keys=True), report.recover_run_id),
            )
        except SQLiteError as exc:
            raise StatekitError(f"{db}: {exc}") from None
        finally:
            conn.close()
    return report


def load_run(conn: Connection, run_id: str) -> tuple[str | None, dict[str, Any], list[Receipt]]:
    """(status, report, receipts) of migration run ``run_id``; StatekitError when there is no such run."""
    return _load(conn, run_id)


def put_back(state_dir: Path, run_id: str, receipts: list[Receipt], *, dry_run: bool) -> RecoverReport:
    """The core of :func:`recover` without its bookkeeping: put the retired copies back (or, with ``dry_run``, say what
    would happen); no receipt is marked, no run recorded (``statekit undo`` replaces the databases afterwards)."""
    report = RecoverReport(state_dir, run_id, dry_run)
    _collect(state_dir, receipts, report, None, None)
    return report


def _collect(state_dir: Path, receipts: list[Receipt], report: RecoverReport, conn: Connection | None, recover_id: str | None) -> None:
    for receipt in receipts:
        if not receipt.removed_source:
            continue
        try:
            item, mark = _recover_one(state_dir, receipt, report.dry_run)
        except OSError as exc:
            item = RecoverItem(str(receipt.report.get("kind") or "?"), receipt.source_path, RecoverStatus.ERROR,
                               message=f"{receipt.source_path}: {exc.strerror or exc}")
            mark = False
        except UnsafePathError as exc:  # the original path leads out of the state dir through a symlink: left alone
            item = RecoverItem(str(receipt.report.get("kind") or "?"), receipt.source_path, RecoverStatus.ERROR, message=str(exc))
            mark = False
        report.items.append(item)
        if item.message and item.status not in (RecoverStatus.ALREADY_IN_PLACE,):
            report.errors.append(item.message)
        if mark and conn is not None and recover_id is not None:
            with immediate(conn):
                _mark(conn, receipt, recover_id, _now_ms(), item.status)


# --- sanitized report -----------------------------------------------------------

_SECRETISH = re.compile(r"\b(?:sk-[A-Za-z0-9_-]{8,}|[A-Za-z0-9_\-+/=]{32,})\b")


def sanitize_line(line: str, state_dir: Path) -> str:
    text = line.replace(str(state_dir) + os.sep, "").replace(str(state_dir), "<state-dir>")
    home = os.path.expanduser("~")
    if home and home != "/":
        text = text.replace(home, "~")
    text = re.sub(r"(?<![\w.~<])/(?:[^\s/:]+/)+[^\s/:]*", "<path>", text)
    text = _SECRETISH.sub("<redacted>", text)
    return text[:300]


def sanitized_report(report: RecoverReport, run_report: dict[str, Any] | None = None) -> dict[str, Any]:
    """A report safe to attach to a bug report: relative paths, counts, error lines; no secret, no message text."""
    run_report = run_report or {}
    migration = {
        "status": report.run_status,
        "counts": run_report.get("counts") if isinstance(run_report.get("counts"), dict) else None,
        "sources": len(run_report.get("sources") or []) if isinstance(run_report.get("sources"), list) else None,
        "warnings": [sanitize_line(str(w), report.state_dir) for w in (run_report.get("warnings") or [])][:50]
        if isinstance(run_report.get("warnings"), list) else [],
    }
    return {
        "format": "statekit-recover-report",
        "version": 1,
        "statekit_version": __version__,
        "python": platform.python_version(),
        "platform": sys.platform,
        "generated_at": _now_ms(),
        "run_id": report.run_id,
        "recover_run_id": report.recover_run_id,
        "dry_run": report.dry_run,
        "migration_run": migration,
        "counts": report.counts(),
        "sources": [
            {"kind": i.kind, "path": i.path, "status": i.status, "size": i.size} for i in report.items
        ],
        "errors": [sanitize_line(e, report.state_dir) for e in report.errors],
    }


def write_report(path: Path, report: RecoverReport) -> None:
    run_report: dict[str, Any] = {}
    db = global_db_path(report.state_dir)
    try:
        with read_only_view(db) as conn:
            row = conn.execute("SELECT report_json FROM migration_runs WHERE id = ?", (report.run_id,)).fetchone()
        loaded = json.loads(row[0]) if row and row[0] else {}
        run_report = loaded if isinstance(loaded, dict) else {}
    except (SQLiteError, ValueError, OSError, RecursionError):
        run_report = {}
    data = json.dumps(sanitized_report(report, run_report), indent=2, ensure_ascii=False) + "\n"
    atomic_write_bytes(Path(os.path.abspath(path)), data.encode("utf-8"), PRIVATE_FILE_MODE)


__all__ = ["recover", "load_run", "put_back", "RecoverReport", "RecoverItem", "sanitized_report", "write_report", "sanitize_line"]
