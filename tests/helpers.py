"""Shared test helpers: build state dirs, run statekit, read rows, find the shared corpus."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest

import faultkit
from statekit.db import Connection, connect, named_row

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "fixtures"
SHARED = (REPO / ".." / "shared").resolve()
CORPUS = SHARED / "corpus"


def corpus_or_skip() -> Path:
    if not CORPUS.is_dir():
        pytest.skip("../shared/corpus is not available in this checkout")
    return CORPUS


def write_files(root: Path, files: dict[str, Any]) -> Path:
    """Create files under ``root``: str/bytes written as-is, dict/list written as JSON."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        elif isinstance(content, str):
            path.write_text(content, encoding="utf-8")
        else:
            path.write_text(json.dumps(content, indent=2), encoding="utf-8")
    return root


def make_state(tmp_path: Path, files: dict[str, Any] | None = None, name: str = ".openclaw") -> Path:
    state = tmp_path / name
    state.mkdir(parents=True, exist_ok=True)
    return write_files(state, files or {})


def extract_corpus_tree(name: str, dest: Path) -> Path:
    """Copy a corpus tree (tarball under generated/ or dir under public-repos/) to ``dest``; return its state dir."""
    corpus = corpus_or_skip()
    tar = corpus / "generated" / f"{name}.tar"
    if tar.exists():
        with tarfile.open(tar) as archive:
            archive.extractall(dest, filter="tar")
        return dest / "home" / ".openclaw"
    src = corpus / "public-repos" / name
    if not src.is_dir():
        pytest.skip(f"corpus tree {name} not found")
    shutil.copytree(src, dest / "state", symlinks=True)
    return dest / "state"


def corpus_tree_names() -> list[str]:
    if not CORPUS.is_dir():
        return []
    names = [p.stem for p in sorted((CORPUS / "generated").glob("*.tar"))]
    names += [p.name for p in sorted((CORPUS / "public-repos").iterdir()) if p.is_dir()]
    return names


def run_cli(*args: Any, env: dict[str, str] | None = None, input: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``python -m statekit`` in a subprocess (real exit codes, real streams).

    When ``env`` sets a fault variable (``STATEKIT_CRASHPOINT``...), the test entry point
    ``faultkit/run_statekit.py`` runs instead: only it arms the fault layer."""
    full_env = {**faultkit.without_fault_env(), **(env or {})}
    return subprocess.run(
        [*faultkit.statekit_command(env), *map(str, args)],
        capture_output=True,
        text=True,
        env=full_env,
        input=input,
        timeout=600,
    )


def open_db(path: Path | str, mode: str = "rwc", *, named_rows: bool = False, **options: Any) -> Connection:
    """Open a database through statekit's engine (``statekit.db``), as every test must.

    Never stdlib ``sqlite3``: a second SQLite library in the process breaks the
    POSIX locks of the first one on the same file. ``mode``: ``rwc``, ``rw`` or
    ``ro``; ``named_rows``: rows readable by column name too (like ``sqlite3.Row``).
    Autocommit: each statement commits unless the test begins a transaction
    (``BEGIN``/``COMMIT``, or ``with conn:``).
    """
    conn = connect(path, mode=mode, **options)
    if named_rows:
        conn.row_trace = named_row
    return conn


def rows(db: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    conn = open_db(db, "ro")
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def agent_db(state: Path, agent: str = "main") -> Path:
    return state / "agents" / agent / "agent" / "openclaw-agent.sqlite"


def global_db(state: Path) -> Path:
    return state / "state" / "openclaw.sqlite"


def tree_digest(root: Path) -> str:
    """Hash of every path and file content under ``root`` (symlinks by target)."""
    digest = hashlib.sha256()
    for directory, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files + [d for d in dirs if os.path.islink(os.path.join(directory, d))]):
            path = Path(directory) / name
            digest.update(str(path.relative_to(root)).encode())
            if path.is_symlink():
                digest.update(os.readlink(path).encode())
            elif path.is_file():
                digest.update(path.read_bytes())
    return digest.hexdigest()


def db_dump(db: Path) -> dict[str, list[str]]:
    """Deterministic dump: every table's rows, sorted."""
    conn = open_db(db, "ro")
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]
        return {t: sorted(repr(r) for r in conn.execute(f'SELECT * FROM "{t}"')) for t in tables}
    finally:
        conn.close()


PEAK_RSS_RUNNER = (
    "import runpy, sys\n"
    "sys.argv = ['statekit', *sys.argv[1:]]\n"
    "try:\n"
    "    runpy.run_module('statekit', run_name='__main__', alter_sys=True)\n"
    "finally:\n"
    "    hwm = next(l for l in open('/proc/self/status') if l.startswith('VmHWM'))\n"
    "    sys.stderr.write('VmHWM ' + hwm.split()[1] + '\\n')\n"
)


def run_cli_peak_rss(*args: Any, timeout: float = 600) -> tuple[subprocess.CompletedProcess[str], float]:
    """``statekit ARGS`` in a new interpreter, and its own peak RSS in MB (VmHWM: ``ru_maxrss`` of children would also
    count the forking pytest's pages and every earlier child's)."""
    proc = subprocess.run([sys.executable, "-c", PEAK_RSS_RUNNER, *map(str, args)], capture_output=True, text=True, timeout=timeout)
    head, _sep, tail = proc.stderr.rpartition("VmHWM ")
    peak_kb = int(tail.split()[0])
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout, head), peak_kb / 1024
