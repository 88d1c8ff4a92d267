"""The reliability harness: run statekit in a killable child process, then compare outcomes.

``fork_cli`` runs the real command line (``statekit.cli.main``) in a forked
child of the test process: the same code path as ``python -m statekit``
without paying the interpreter start and imports for each of the hundreds of
runs the suite makes. The child gets its own stdout/stderr files, its own
environment, optional I/O faults (``faultkit.iofaults``) and an optional file
size limit, and can be SIGKILLed after a delay or at a named checkpoint
(``STATEKIT_CRASHPOINT`` in its environment: the child installs the
``faultkit`` checkpoint hook for it). ``real_cli`` runs a new interpreter for
the few tests that prove the two behave the same: ``python -m statekit``, or
the test entry point ``faultkit/run_statekit.py`` when the run asks for faults
(the product never reads the fault variables).

The comparisons: ``data_dump`` (every table of every database, sorted rows,
bookkeeping tables left out), ``bookkeeping`` (receipts, runs, schema meta and
agent registry by outcome: no ids, no timestamps), ``tree_outcome`` (every
file under the state dir by path and content, run ids replaced by ``<run>``,
databases by their dump), ``lost_sources`` (every original legacy file is in
place byte-identical or retired byte-identical) and ``leftovers`` (temp,
staging and partial files nothing may leave behind).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from statekit import backup  # noqa: F401  -- the real package (tests/backup must not shadow it in forked children)
import faultkit
from helpers import open_db
from statekit.db import Connection
from statekit.fsutil import ensure_private_dir
from statekit.install import install_id_path, read_install_id

REPO = Path(__file__).resolve().parents[2]
SEED = int(os.environ.get("STATEKIT_RELIABILITY_SEED", "20261130"))
FIGURES: defaultdict[str, Counter[str]] = defaultdict(Counter)  # printed at the end of the session
FIXTURES = REPO / "fixtures"
SQLITE_HEADER = b"SQLite format 3\x00"
BOOKKEEPING = ("migration_runs", "migration_sources", "agent_databases", "schema_meta", "backup_runs")
SIDECAR_SUFFIXES = ("-wal", "-shm", "-journal")
UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
STAMP_RE = re.compile(r"\d{8}T\d{6}Z")
LEFTOVER_PATTERNS = (
    re.compile(r"\.partial$"),
    re.compile(r"^\.statekit-backup-(?!lock$)"),
    re.compile(r"^\.statekit-verify-"),
    re.compile(r"^\.statekit-restore-"),
    re.compile(r"\.statekit-partial$"),
    re.compile(r"\.statekit-tmp-"),
)


# --------------------------------------------------------------------------- running statekit


@dataclass
class Run:
    args: tuple[str, ...]
    returncode: int  # exit code, or -signal when killed
    stdout: str
    stderr: str
    elapsed: float
    faults_fired: int = 0

    @property
    def killed(self) -> bool:
        return self.returncode == -signal.SIGKILL

    @property
    def traceback(self) -> bool:
        return "Traceback (most recent call last)" in self.stderr

    def __str__(self) -> str:
        return f"statekit {' '.join(self.args)} -> {self.returncode}\n--- stdout\n{self.stdout[-2000:]}\n--- stderr\n{self.stderr[-3000:]}"


_CLEAN_ENV = (*faultkit.FAULT_ENV, "STATEKIT_DEBUG")


def _child(args: list[str], env: Mapping[str, str], out: int, err: int, io_faults: str | None, fsize: int | None, counter: int,
           umask: int | None = None) -> int:
    os.dup2(out, 1)
    os.dup2(err, 2)
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", line_buffering=True)
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8", line_buffering=True)
    sys.stdin = io.TextIOWrapper(io.FileIO(os.open(os.devnull, os.O_RDONLY), "r"), encoding="utf-8")
    for name in _CLEAN_ENV:
        os.environ.pop(name, None)
    os.environ.update(env)
    faultkit.disarm()  # counts start from zero; nothing inherited from the parent
    if spec := env.get(faultkit.CRASHPOINT_ENV):
        faultkit.install_crashpoints(spec)
    if umask is not None:
        os.umask(umask)
    if fsize is not None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    plan = faultkit.install_io_faults(io_faults) if io_faults else None
    from statekit.cli import main

    try:
        code = main(args)
    except BaseException:  # what the real interpreter would print and exit with
        traceback.print_exc()
        code = 1
    if plan is not None and counter >= 0:
        os.write(counter, str(plan.fired).encode())
    return code


def fork_many(commands: list[tuple[Any, ...]], jobs: int = 0) -> list[Run]:
    """Run independent read-only commands in parallel children (``jobs`` at a time, default: one per CPU)."""
    jobs = jobs or os.cpu_count() or 2
    results: list[Run | None] = [None] * len(commands)
    running: dict[int, tuple[int, tuple[str, ...], Any, Any, float]] = {}
    queue = list(enumerate(commands))
    while queue or running:
        while queue and len(running) < jobs:
            index, args = queue.pop(0)
            argv = [str(a) for a in args]
            out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:  # pragma: no cover - the child
                code = 1
                try:
                    code = _child(argv, {}, out.fileno(), err.fileno(), None, None, -1)
                except BaseException:
                    traceback.print_exc()
                finally:
                    os._exit(code)
            running[pid] = (index, tuple(argv), out, err, time.monotonic())
        pid, status = os.waitpid(-1, 0)
        if pid not in running:
            continue
        index, argv, out, err, start = running.pop(pid)
        out.seek(0)
        err.seek(0)
        code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        results[index] = Run(argv, code, out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace"), time.monotonic() - start)
        out.close()
        err.close()
    return [r for r in results if r is not None]


def fork_cli(
    *args: Any,
    env: Mapping[str, str] | None = None,
    kill_after: float | None = None,
    io_faults: str | None = None,
    fsize: int | None = None,
    umask: int | None = None,
    timeout: float = 600,
) -> Run:
    """Run ``statekit ARGS`` in a forked child; SIGKILL it after ``kill_after`` seconds if still running."""
    argv = [str(a) for a in args]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        read_end, write_end = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        start = time.monotonic()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            code = 1
            try:
                os.close(read_end)
                code = _child(argv, dict(env or {}), out.fileno(), err.fileno(), io_faults, fsize, write_end, umask)
            except BaseException:
                try:
                    traceback.print_exc()
                except BaseException:
                    pass
            finally:
                try:
                    sys.stdout.flush()
                    sys.stderr.flush()
                except BaseException:
                    pass
                os._exit(code)
        os.close(write_end)
        status = _wait(pid, kill_after, timeout, start)
        elapsed = time.monotonic() - start
        fired = os.read(read_end, 64)
        os.close(read_end)
        out.seek(0)
        err.seek(0)
        code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        return Run(tuple(argv), code, out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace"), elapsed, int(fired or 0))


def _wait(pid: int, kill_after: float | None, timeout: float, start: float) -> int:
    if kill_after is not None:
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return status
            left = kill_after - (time.monotonic() - start)
            if left <= 0:
                os.kill(pid, signal.SIGKILL)
                break
            time.sleep(min(left, 0.005))
    deadline = start + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise TimeoutError(f"statekit run {pid} exceeded {timeout}s")
        time.sleep(0.002)


def real_cli(*args: Any, env: Mapping[str, str] | None = None, timeout: float = 600) -> Run:
    """``python -m statekit ARGS`` in a real new interpreter (the test entry point when ``env`` asks for faults)."""
    full = {k: v for k, v in os.environ.items() if k not in _CLEAN_ENV}
    full.update(env or {})
    start = time.monotonic()
    proc = subprocess.run([*faultkit.statekit_command(env), *map(str, args)], capture_output=True, text=True, env=full, timeout=timeout, cwd=REPO)
    return Run(tuple(map(str, args)), proc.returncode, proc.stdout, proc.stderr, time.monotonic() - start)


# --------------------------------------------------------------------------- worlds


def copy_world(fixture: str, dest: Path) -> Path:
    """Copy ``fixtures/<fixture>/.openclaw`` to ``dest/home/.openclaw``; returns the state dir."""
    state = dest / "home" / ".openclaw"
    shutil.copytree(FIXTURES / fixture / ".openclaw", state, symlinks=True)
    os.chmod(dest / "home", 0o700)
    # as every install that was backed up once (the first backup creates it); one fixed id per fixture, so every
    # trial's tree and archives compare equal to the reference run's
    ensure_private_dir(install_id_path(state).parent)
    install_id_path(state).write_text(hashlib.md5(fixture.encode()).hexdigest() + "\n")
    os.chmod(install_id_path(state), 0o600)
    assert read_install_id(state)
    return state


def file_map(root: Path) -> dict[str, bytes]:
    """Every regular file below ``root`` (relative POSIX path -> bytes)."""
    found: dict[str, bytes] = {}
    for directory, dirs, files in os.walk(root):
        dirs.sort()
        for name in files:
            path = Path(directory) / name
            if path.is_file() and not path.is_symlink():
                found[path.relative_to(root).as_posix()] = path.read_bytes()
    return found


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --------------------------------------------------------------------------- databases


def is_sqlite(path: Path) -> bool:
    try:
        with open(path, "rb") as handle:
            return handle.read(16) == SQLITE_HEADER
    except OSError:
        return False


def live_databases(state: Path) -> list[Path]:
    """Databases in use (found by header), outside statekit's own folders."""
    found = []
    for directory, dirs, files in os.walk(state):
        rel = Path(directory).relative_to(state).parts
        if rel[:1] == (".statekit",):
            dirs[:] = []
            continue
        dirs.sort()
        for name in sorted(files):
            path = Path(directory) / name
            if not name.endswith(SIDECAR_SUFFIXES) and not path.is_symlink() and is_sqlite(path):
                found.append(path)
    return found


def _connect_ro(db: Path) -> Connection:
    return open_db(db, "ro")


def table_dump(db: Path, skip: Iterable[str] = ()) -> dict[str, list[str]]:
    skip = set(skip)
    conn = _connect_ro(db)
    try:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]
        return {t: sorted(repr(r) for r in conn.execute(f'SELECT * FROM "{t}"')) for t in names if t not in skip}
    finally:
        conn.close()


def data_dump(state: Path) -> dict[str, dict[str, list[str]]]:
    """Every data table of every live database (bookkeeping tables left out)."""
    return {db.relative_to(state).as_posix(): table_dump(db, BOOKKEEPING) for db in live_databases(state)}


def _rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = _connect_ro(db)
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        needed = re.findall(r"FROM (\w+)", sql)
        if any(t not in tables for t in needed):
            return []
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def bookkeeping(state: Path) -> dict[str, Any]:
    """Receipts, runs, schema meta and agent registry by outcome (no ids, no timestamps)."""
    outcome: dict[str, Any] = {}
    gdb = state / "state" / "openclaw.sqlite"
    if gdb.is_file():
        outcome["migration_sources"] = sorted(
            _rows(
                gdb,
                "SELECT source_path, migration_kind, target_table, source_sha256, source_size_bytes, source_record_count,"
                " status, removed_source FROM migration_sources",
            )
        )
        outcome["agent_databases"] = sorted(_rows(gdb, "SELECT agent_id, path, schema_version FROM agent_databases"))
    for db in live_databases(state):
        rel = db.relative_to(state).as_posix()
        meta = _rows(db, "SELECT meta_key, role, schema_version, agent_id, app_version FROM schema_meta")
        if meta:
            outcome[f"schema_meta:{rel}"] = sorted(meta)
    return outcome


def run_statuses(state: Path) -> list[str]:
    """``migration_runs`` statuses, oldest first; a killed run reads ``interrupted`` (the next run marks it
    ``failed`` with ``interrupted: true``; until then it is still ``running``)."""
    gdb = state / "state" / "openclaw.sqlite"
    if not gdb.is_file():
        return []
    query = ("SELECT CASE WHEN json_extract(report_json, '$.interrupted') THEN 'interrupted' ELSE status END"
             " FROM migration_runs ORDER BY started_at, id")
    return [r[0] for r in _rows(gdb, query)]


def backup_run_rows(state: Path) -> list[tuple[str, str]]:
    gdb = state / "state" / "openclaw.sqlite"
    return _rows(gdb, "SELECT status, archive_path FROM backup_runs ORDER BY created_at, id") if gdb.is_file() else []


# --------------------------------------------------------------------------- trees


def normalise(rel: str) -> str:
    """Run ids (``.statekit/migrated/<run_id>/``) and archive time stamps become placeholders."""
    parts = rel.split("/")
    if parts[:2] == [".statekit", "migrated"] and len(parts) > 2:
        parts[2] = "<run>"
    return STAMP_RE.sub("<ts>", "/".join(parts))


def tree_outcome(state: Path) -> dict[str, str]:
    """Every entry under the state dir: normalised path -> content hash (databases: just "db").

    Left out: the lock file, SQLite sidecars and rollback copies of restores.
    """
    outcome: dict[str, str] = {}
    for directory, dirs, files in os.walk(state):
        dirs.sort()
        base = Path(directory)
        for name in sorted(files + [d for d in dirs if (base / d).is_symlink()]):
            path = base / name
            rel = path.relative_to(state).as_posix()
            if rel == ".statekit/lock" or name.endswith(SIDECAR_SUFFIXES) or rel.startswith(".statekit/pre-restore/"):
                continue
            if path.is_symlink():
                value = "link:" + os.readlink(path)
            elif is_sqlite(path) and not rel.startswith(".statekit/migrated/"):
                value = "db"  # contents compared table by table (data_dump / db_dumps)
            else:
                value = sha(path.read_bytes())
            key = normalise(rel)
            if key in outcome:  # two runs retired the same path: keep both, order-free
                key = f"{key}#{value}"
            outcome[key] = value
    return outcome


def lost_sources(state: Path, originals: Mapping[str, bytes], *, require_receipt: bool) -> list[str]:
    """Original files that are neither in place byte-identical nor retired byte-identical."""
    gdb = state / "state" / "openclaw.sqlite"
    receipts: dict[str, list[tuple[str, int, str, object]]] = {}
    if require_receipt and gdb.is_file():
        for path, status, removed, run_id, report in _rows(
                gdb, "SELECT source_path, status, removed_source, last_run_id, report_json FROM migration_sources"):
            try:
                named = json.loads(report).get("retired_to")
            except (ValueError, AttributeError):
                named = None
            receipts.setdefault(path, []).append((status, removed, run_id, named))
    migrated = state / ".statekit" / "migrated"
    problems = []
    for rel, data in originals.items():
        place = state / rel
        copies = sorted(migrated.glob(f"*/{rel}")) if migrated.is_dir() else []
        good = [c for c in copies if c.read_bytes() == data]
        if place.is_file() and not place.is_symlink():
            if place.read_bytes() != data and not good:  # a config the 9.6 step rewrote in place is retired byte-exact first
                problems.append(f"{rel}: in place but changed")
            continue
        if not good:
            problems.append(f"{rel}: neither in place nor retired byte-identical")
            continue
        if require_receipt:
            runs = {c.relative_to(migrated).parts[0] for c in good}
            named_copies = {c.relative_to(state).as_posix() for c in good}  # a rerun that kept a killed run's copy names it
            if not any(status == "completed" and removed == 1 and (run in runs or named in named_copies)
                       for status, removed, run, named in receipts.get(rel, [])):
                problems.append(f"{rel}: retired without a completed receipt naming that run")
    return problems


def leftovers(*roots: Path) -> list[str]:
    """Temp, staging and partial files statekit must never leave behind after a completed run."""
    found = []
    for root in roots:
        if not root.exists():
            continue
        for directory, dirs, files in os.walk(root):
            for name in dirs + files:
                if any(p.search(name) for p in LEFTOVER_PATTERNS):
                    found.append(str(Path(directory, name)))
    return sorted(found)


def modes(root: Path) -> dict[str, int]:
    out = {}
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(directory, name)
            if not path.is_symlink():
                out[path.relative_to(root).as_posix()] = os.lstat(path).st_mode & 0o7777
    return out


# --------------------------------------------------------------------------- import-time columns

_MS = re.compile(r"(?<![0-9])1[0-9]{12}(?![0-9])")
_SEC = re.compile(r"(?<![0-9.])1[0-9]{9}(?![0-9])")


def mask_times(dump: dict[str, dict[str, list[str]]], since: float) -> dict[str, dict[str, list[str]]]:
    """Replace timestamps taken during the test (import times: ms or s since ``since``) by a placeholder."""
    low_ms, high_ms = int(since * 1000), int((time.time() + 3600) * 1000)

    def fix(text: str) -> str:
        text = _MS.sub(lambda m: "<now-ms>" if low_ms <= int(m.group()) <= high_ms else m.group(), text)
        return _SEC.sub(lambda m: "<now-s>" if low_ms // 1000 <= int(m.group()) <= high_ms // 1000 else m.group(), text)

    return {db: {t: sorted(fix(r) for r in rows) for t, rows in tables.items()} for db, tables in dump.items()}


class Arena:
    """One fixed place where every trial of a module runs (absolute paths in rows stay identical)."""

    def __init__(self, base: Path, fixture: str) -> None:
        self.base = base
        self.fixture = fixture
        self.home = base / "home"
        self.state = self.home / ".openclaw"
        self.output = base / "backups"
        self.output2 = base / "backups-rerun"  # reruns publish here: archive names have a one-second resolution

    def fresh(self) -> Path:
        for path in (self.home, self.output, self.output2):
            if path.exists():
                _force_rmtree(path)
        copy_world(self.fixture, self.base)
        return self.state


def _force_rmtree(path: Path) -> None:
    for directory, dirs, _files in os.walk(path):
        for name in dirs:
            child = Path(directory, name)
            if not child.is_symlink():
                os.chmod(child, 0o700)
    os.chmod(path, 0o700)
    shutil.rmtree(path)


def next_archive_second(*outputs: Path) -> None:
    """Archive names have a one-second resolution and are never overwritten: before a rerun into the
    same output dir, wait out the second of an archive a killed run has just published."""
    from datetime import datetime, timezone

    for _ in range(3):
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        if not any((out / f"openclaw-backup-{stamp}.tar.zst").exists() for out in outputs):
            return
        time.sleep(1.0 - (time.time() % 1.0) + 0.01)


# --------------------------------------------------------------------------- a migrate reference world


@dataclass
class MigrateWorld:
    """An uninterrupted ``statekit migrate`` of a fixture in one fixed place, and its outcome."""

    arena: Arena
    since: float
    names: list[str]  # the checkpoints the run passes, in order
    elapsed: float
    exit_code: int
    originals: dict[str, bytes]
    data: dict
    books: dict
    tree: dict
    backup: bool = True

    def args(self, output: Path | None = None) -> tuple:
        if not self.backup:
            return ("migrate", "--state-dir", self.arena.state, "--yes", "--no-backup")
        return ("migrate", "--state-dir", self.arena.state, "--yes", "--backup-output", output or self.arena.output)


def build_migrate_world(base: Path, fixture: str, *, backup: bool = True) -> MigrateWorld:
    since = time.time()
    arena = Arena(base, fixture)
    state = arena.fresh()
    originals = file_map(state)
    trace = base / "trace.txt"
    world = MigrateWorld(arena, since, [], 0.0, 0, originals, {}, {}, {}, backup)
    run = fork_cli(*world.args(), env={"STATEKIT_CRASHPOINT": f"trace={trace}"})
    assert run.returncode in (0, 3) and not run.traceback, run
    world.names = trace.read_text().split()
    trace.unlink()
    world.elapsed, world.exit_code = run.elapsed, run.returncode
    world.data, world.books, world.tree = mask_times(data_dump(state), since), bookkeeping(state), tree_outcome(state)
    return world


def convergence_problems(world: MigrateWorld, *outputs: Path) -> list[str]:
    """After a rerun to the end: the same outcome as the uninterrupted run, nothing lost, nothing left behind."""
    state = world.arena.state
    problems = []
    data = mask_times(data_dump(state), world.since)
    if data != world.data:
        diff = sorted({f"{db}:{t}" for db in set(data) | set(world.data) for t in set(data.get(db, {})) | set(world.data.get(db, {}))
                       if data.get(db, {}).get(t) != world.data.get(db, {}).get(t)})
        problems.append(f"data differs from the uninterrupted run: {diff[:8]}")
    books = bookkeeping(state)
    if books != world.books:
        problems.append(f"bookkeeping differs: {sorted(k for k in set(books) | set(world.books) if books.get(k) != world.books.get(k))}")
    tree = tree_outcome(state)
    if tree != world.tree:
        problems.append(f"state tree differs: extra {sorted(set(tree) - set(world.tree))[:5]}, missing {sorted(set(world.tree) - set(tree))[:5]},"
                        f" changed {[k for k in tree if k in world.tree and tree[k] != world.tree[k]][:5]}")
    problems += lost_sources(state, world.originals, require_receipt=True)
    problems += [f"left behind: {p}" for p in leftovers(state, *outputs)]
    statuses = run_statuses(state)
    if "running" in statuses:  # a rerun closes every run a kill left open
        problems.append(f"run records: {statuses}")
    for status, path in backup_run_rows(state):
        if status in ("ok", "completed") and not Path(path).is_file():
            problems.append(f"backup_runs says {status} for {path}, which does not exist")
    return problems


def error_lines(run: Run) -> list[str]:
    return [line for line in run.stderr.splitlines() if line.startswith("statekit: error:")]


def clear_failure(run: Run, codes: tuple[int, ...]) -> list[str]:
    """The contract's exit code, no traceback, and for a fatal error exactly one ``statekit: error:`` line."""
    problems = []
    if run.returncode not in codes:
        problems.append(f"exit {run.returncode}, expected one of {codes}")
    if run.traceback:
        problems.append(f"traceback: {run.stderr[-1200:]}")
    elif run.returncode == 1 and len(error_lines(run)) != 1:
        problems.append(f"expected one error line, got: {run.stderr[-600:]!r}")
    return problems


# --------------------------------------------------------------------------- a real full disk (tmpfs)

_MOUNT_OK: bool | None = None


def can_mount_tmpfs(scratch: Path) -> bool:
    """True when this process may mount a tmpfs (root with CAP_SYS_ADMIN, as on the project VM)."""
    global _MOUNT_OK
    if _MOUNT_OK is None:
        probe = scratch / "mount-probe"
        probe.mkdir(parents=True, exist_ok=True)
        try:
            ok = os.geteuid() == 0 and subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(probe)], capture_output=True).returncode == 0
        except OSError:
            ok = False
        if ok:
            subprocess.run(["umount", str(probe)], capture_output=True)
        _MOUNT_OK = ok
    return _MOUNT_OK


def mount_tmpfs(path: Path, size_kb: int, inodes: int | None = None) -> None:
    path.mkdir(parents=True, exist_ok=True)
    options = f"size={size_kb}k,mode=700" + (f",nr_inodes={inodes}" if inodes else "")
    subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], check=True, capture_output=True)


def remount_tmpfs(path: Path, size_kb: int, inodes: int | None = None) -> None:
    options = f"remount,size={size_kb}k" + (f",nr_inodes={inodes}" if inodes else ",nr_inodes=100000")
    subprocess.run(["mount", "-o", options, str(path)], check=True, capture_output=True)


def umount(path: Path) -> None:
    subprocess.run(["umount", "-l", str(path)], capture_output=True)


def empty_dir(path: Path) -> None:
    for child in list(path.iterdir()):
        if child.is_dir() and not child.is_symlink():
            _force_rmtree(child)
        else:
            child.unlink()


# --------------------------------------------------------------------------- backup and restore worlds


def archives(directory: Path) -> list[Path]:
    return sorted(directory.glob("openclaw-backup-*.tar.zst")) if directory.is_dir() else []


def db_dumps(state: Path) -> dict[str, dict[str, list[str]]]:
    """Every table (bookkeeping included) of every live database."""
    return {db.relative_to(state).as_posix(): table_dump(db) for db in live_databases(state)}


def add_wal_database(state: Path) -> None:
    """A plugin database left in WAL mode with committed rows still in its -wal file."""
    path = state / "plugins" / "memory" / "index.sqlite"
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = open_db(path)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    conn.execute("CREATE TABLE chunks (id INTEGER PRIMARY KEY, text TEXT)")
    with conn:
        conn.executemany("INSERT INTO chunks(text) VALUES (?)", [(f"chunk {i} " * 20,) for i in range(200)])
    conn.close()


@dataclass
class BackupWorld:
    """A migrated install (home/ kept pristine under ``pristine``) that every create trial starts from."""

    base: Path
    arena: Arena
    pristine: Path
    tree: dict
    dumps: dict
    names: list[str] = field(default_factory=list)
    elapsed: float = 0.0

    def reset(self) -> Path:
        for path in (self.arena.home, self.arena.output):
            if path.exists():
                _force_rmtree(path)
        shutil.copytree(self.pristine, self.arena.home, symlinks=True)
        return self.arena.state

    def args(self) -> tuple:
        return ("backup", "create", "--state-dir", self.arena.state, "--output", self.arena.output)


def build_backup_world(base: Path) -> BackupWorld:
    arena = Arena(base, "demo-install")
    state = arena.fresh()
    run = fork_cli("migrate", "--state-dir", state, "--yes", "--no-backup")
    assert run.returncode == 3, run
    add_wal_database(state)
    pristine = base / "pristine"
    shutil.copytree(arena.home, pristine, symlinks=True)
    world = BackupWorld(base, arena, pristine, {}, {})
    world.reset()
    world.tree, world.dumps = tree_outcome(state), db_dumps(state)
    return world


RESTORE_EXTRA = b"written after the backup; the archive does not know this file\n"


@dataclass
class RestoreWorld:
    """State A in an archive; the state dir holds a newer state B (kept under ``newer``)."""

    base: Path
    arena: Arena
    archive: Path
    newer: Path
    b_files: dict[str, bytes]
    b_tree_state: dict
    expected_tree: dict
    a_dumps: dict
    b_dumps: dict
    names: list[str] = field(default_factory=list)
    elapsed: float = 0.0

    def reset(self) -> Path:
        if self.arena.home.exists():
            _force_rmtree(self.arena.home)
        shutil.copytree(self.newer, self.arena.home, symlinks=True)
        return self.arena.state

    def args(self) -> tuple:
        return ("backup", "restore", self.archive, "--state-dir", self.arena.state, "--yes")


def build_restore_world(base: Path, fmt: str = "statekit") -> RestoreWorld:
    """``fmt="openclaw"``: the archive is statekit's ``--format openclaw`` one (restored through OpenClaw's layout)."""
    arena = Arena(base, "demo-install")
    state = arena.fresh()
    assert fork_cli("migrate", "--state-dir", state, "--yes", "--no-backup").returncode == 3
    made = fork_cli("backup", "create", "--state-dir", state, "--output", base / "archives", "--format", fmt)
    assert made.returncode == 0, made
    archive = archives(base / "archives")[0] if fmt == "statekit" else next((base / "archives").glob("*.tar.gz"))
    a_tree, a_dumps = tree_outcome(state), db_dumps(state)
    # State B: a row added to every database, a file changed, one deleted, one added.
    for db in live_databases(state):
        conn = open_db(db)
        conn.execute("CREATE TABLE IF NOT EXISTS after_backup (id INTEGER PRIMARY KEY, note TEXT)")
        conn.execute("INSERT INTO after_backup(note) VALUES ('B')")
        conn.commit()
        conn.close()
    (state / "workspace" / "AGENTS.md").write_text("changed after the backup\n")
    (state / "openclaw.json").unlink()
    (state / "notes-after-backup.txt").write_bytes(RESTORE_EXTRA)
    newer = base / "newer"
    shutil.copytree(arena.home, newer, symlinks=True)
    b_files = {k: v for k, v in file_map(newer / ".openclaw").items() if k != ".statekit/lock"}
    expected = dict(a_tree, **{"notes-after-backup.txt": sha(RESTORE_EXTRA)})
    world = RestoreWorld(base, arena, archive, newer, b_files, exact_state(newer / ".openclaw"), expected, a_dumps, db_dumps(state))
    world.reset()
    return world


def exact_state(root: Path) -> dict[str, tuple]:
    """Every entry below ``root``: kind, mode and content hash / link target (the lock file left out)."""
    found: dict[str, tuple] = {}
    for directory, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(dirs + files):
            path = Path(directory) / name
            rel = path.relative_to(root).as_posix()
            if rel == ".statekit/lock":
                continue
            st = os.lstat(path)
            if path.is_symlink():
                found[rel] = ("link", os.readlink(path))
            elif path.is_dir():
                found[rel] = ("dir", st.st_mode & 0o7777)
            elif path.is_file():
                found[rel] = ("file", st.st_mode & 0o7777, sha(path.read_bytes()))
            else:  # FIFO, socket, device: never opened
                found[rel] = ("special", st.st_mode)
    return found


def record_crash(group: str, killed: bool, problems: list[str]) -> None:
    """One crash trial in the figures: tried, really killed, converged."""
    figures = FIGURES[f"crash/{group}"]
    figures["trials"] += 1
    figures["killed"] += int(killed)
    figures["converged"] += int(not problems)


def named_sample(names: list[str], count: int, rng: random.Random) -> list[int]:
    """``count`` kill points (1-based positions): every distinct checkpoint name at least once, the rest at random."""
    chosen: set[int] = set()
    for name in sorted(set(names)):
        chosen.add(rng.choice([i + 1 for i, n in enumerate(names) if n == name]))
    rest = [i for i in range(1, len(names) + 1) if i not in chosen]
    rng.shuffle(rest)
    chosen.update(rest[: max(0, count - len(chosen))])
    return sorted(chosen)


def restores_refused(archives: list[tuple[str, Path]], state: Path, outside: Path, scratch: Path, figures: Counter[str]) -> list[str]:
    """Each hostile archive: ``restore --target`` exits 5 and creates nothing; in place it exits 5 and changes nothing;
    nothing is written outside (``outside`` holds only its ``victim``). Counts refusals in ``figures``."""
    problems: list[str] = []
    targets = [scratch / f"target-{i}" for i in range(len(archives))]
    restored = fork_many([("backup", "restore", archive, "--target", target, "--yes") for (_l, archive), target in zip(archives, targets)])
    for (label, _archive), target, run in zip(archives, targets, restored):
        if run.returncode != 5 or run.traceback or target.exists():
            problems.append(f"{label}: restore --target exit {run.returncode}, target created: {target.exists()}")
        else:
            figures["restores refused, nothing written"] += 1
    before = exact_state(state)
    for label, archive in archives:  # in place: one at a time (each takes the state-dir lock)
        run = fork_cli("backup", "restore", archive, "--state-dir", state, "--yes")
        if run.returncode != 5 or run.traceback or exact_state(state) != before:
            problems.append(f"{label}: in-place restore exit {run.returncode}, state dir changed: {exact_state(state) != before}")
        else:
            figures["restores refused, nothing written"] += 1
    if sorted(p.name for p in outside.iterdir()) != ["victim"] or (outside / "victim").read_text() != "must never change\n":
        problems.append(f"something was written outside: {sorted(p.name for p in outside.iterdir())}")
    return problems
