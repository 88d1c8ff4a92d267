"""Issue 11 item 2: a backup is never silently incomplete.

An archive that misses a database or the config that exists, or holds no state at all, is a failure
(exit 5, nothing published), never "ok"; only statekit's own files and the ``-wal``/``-shm``/``-journal``
beside a database the backup snapshots are left out silently: user files that merely look like them are
backed up, and every other skipped entry is printed. Each test here fails on 308a7ed.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import socket
import tarfile
from pathlib import Path

import pytest
import zstandard

from helpers import open_db
from rel_harness import FIGURES, archives, fork_cli
from statekit.backup.archive import open_tar_stream

LOOKALIKES = {
    "workspace/yarn.lock": b"# yarn lockfile v1\n",
    "workspace/Cargo.lock": b"version = 3\n",
    "workspace/foo.lock": b"lock-looking user file\n",
    "notes/travel-journal": b"day 1: left home\n",
    "notes/diary.txt-wal": b"not a sidecar: no diary.txt database\n",
    "notes/plain.sqlite-shm": b"no plain.sqlite beside it\n",
    "agents/main/sessions/s1.jsonl.lock": b"4242",
}


def _db(path: Path, rows: int = 3, wal: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = open_db(path)
    if wal:
        conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
    conn.executemany("INSERT INTO t (v) VALUES (?)", [(f"row {i}",) for i in range(rows)])
    conn.close()
    return path


def _state(base: Path) -> Path:
    state = base / "home" / ".openclaw"
    state.mkdir(parents=True)
    _db(state / "state" / "openclaw.sqlite")
    (state / "openclaw.json").write_text('{"agents": {"list": [{"id": "main"}]}}')
    (state / ".statekit").mkdir()
    (state / ".statekit" / "lock").write_text('{"pid": 1}')
    for rel, data in LOOKALIKES.items():
        path = state / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return state


def _member_names(archive: Path) -> dict[str, int]:
    with open_tar_stream(archive, "zstd", 1 << 32) as (tar, _counter):
        return {m.name.split("/payload/state/", 1)[-1]: m.size for m in tar if "/payload/state/" in m.name}


def test_lookalike_user_files_are_backed_up_and_restored(tmp_path: Path) -> None:
    """Fails on 308a7ed: ``*.lock`` and every ``*-wal/-shm/-journal`` were dropped by name (yarn.lock, travel-journal)."""
    state = _state(tmp_path)
    db = state / "state" / "openclaw.sqlite"
    wal_conn = open_db(db)  # keep the -wal and -shm beside the database while the backup runs
    wal_conn.execute("INSERT INTO t (v) VALUES ('live')")
    assert Path(f"{db}-wal").exists()
    out = tmp_path / "out"
    run = fork_cli("backup", "create", "--state-dir", state, "--output", out)
    wal_conn.close()
    assert run.returncode in (0, 3), run
    [archive] = archives(out)
    names = _member_names(archive)
    for rel in LOOKALIKES:
        assert rel in names, f"{rel} was not backed up"
    assert "state/openclaw.sqlite-wal" not in names and "state/openclaw.sqlite-shm" not in names
    assert ".statekit/lock" not in names
    target = tmp_path / "restored"
    restored = fork_cli("backup", "restore", archive, "--target", target, "--yes")
    assert restored.returncode == 0, restored
    for rel, data in LOOKALIKES.items():
        assert (target / rel).read_bytes() == data, rel
    FIGURES["backup complete"]["lookalike files backed up"] += len(LOOKALIKES)


def test_every_other_skipped_entry_is_printed(tmp_path: Path) -> None:
    """Fails on 308a7ed: a FIFO and a socket in the state dir were left out without a word on stderr."""
    state = _state(tmp_path)
    os.mkfifo(state / "pipe")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(state / "gw.sock"))
    try:
        run = fork_cli("backup", "create", "--state-dir", state, "--output", tmp_path / "out")
    finally:
        sock.close()
    assert run.returncode in (0, 3), run
    assert f"{state / 'pipe'}: not backed up (FIFO)" in run.stderr
    assert f"{state / 'gw.sock'}: not backed up (socket)" in run.stderr
    assert ".statekit/lock" not in run.stderr  # statekit's own lock is left out silently
    assert "-wal" not in run.stderr
    FIGURES["backup complete"]["skipped entries printed"] += 2


def test_empty_state_dir_is_not_an_ok_backup(tmp_path: Path) -> None:
    """Fails on 308a7ed: an archive holding no state at all was published and verified as "ok" (exit 0)."""
    state = tmp_path / "home" / ".openclaw"
    (state / "agents" / "main").mkdir(parents=True)
    (state / ".statekit").mkdir()
    (state / ".statekit" / "lock").write_text("{}")
    out = tmp_path / "out"
    dry = fork_cli("backup", "create", "--state-dir", state, "--output", out, "--dry-run")
    assert "the backup would fail" in dry.stderr and "no state at all" in dry.stderr, dry
    run = fork_cli("backup", "create", "--state-dir", state, "--output", out)
    assert run.returncode == 5, run
    assert "holds no state" in run.stderr or "no state at all" in run.stderr
    assert "Traceback" not in run.stderr
    assert not archives(out)
    FIGURES["backup complete"]["empty backups refused"] += 1


@pytest.mark.parametrize("layout", ["symlinked-agent-dir", "symlinked-state-dir"])
def test_a_database_that_exists_is_in_the_archive_or_the_backup_fails(tmp_path: Path, layout: str) -> None:
    """Fails on 308a7ed: the agent database behind a symlinked ``agents/<id>/agent`` (or every file behind a symlinked
    state dir) was left out and the backup said "Verification: passed". Now either the database is archived or
    the run fails with exit 5 naming it, and nothing is published."""
    real = tmp_path / "real"
    if layout == "symlinked-agent-dir":
        state = _state(tmp_path)
        _db(real / "agent" / "openclaw-agent.sqlite", rows=5)
        (state / "agents" / "work").mkdir(parents=True)
        os.symlink(real / "agent", state / "agents" / "work" / "agent")
    else:
        inner = _state(real)
        state = tmp_path / "home2" / ".openclaw"
        state.parent.mkdir(parents=True)
        os.symlink(inner, state)
    out = tmp_path / "out"
    run = fork_cli("backup", "create", "--state-dir", state, "--output", out)
    assert "Traceback" not in run.stderr, run
    if run.returncode == 5:
        assert not archives(out)
        assert "not in the archive" in run.stderr or "no state" in run.stderr, run
        FIGURES["backup complete"]["incomplete backups refused"] += 1
        return
    assert run.returncode in (0, 3), run
    [archive] = archives(out)
    with open_tar_stream(archive, "zstd", 1 << 32) as (tar, _counter):
        sizes = [m.size for m in tar if m.name.endswith("openclaw-agent.sqlite" if layout == "symlinked-agent-dir" else "state/openclaw.sqlite")]
    assert sizes and all(size > 0 for size in sizes)
    FIGURES["backup complete"]["linked databases archived"] += 1


def _register(global_db: Path, agent_id: str, path: str) -> None:
    """An ``agent_databases`` row as pre-9.6 OpenClaw wrote them: the absolute path at the home it ran under."""
    conn = open_db(global_db)
    conn.execute("CREATE TABLE IF NOT EXISTS schema_meta (meta_key TEXT PRIMARY KEY, role TEXT, agent_id TEXT)")
    conn.execute("INSERT OR IGNORE INTO schema_meta (meta_key, role) VALUES ('primary', 'global')")
    conn.execute("CREATE TABLE IF NOT EXISTS agent_databases (agent_id TEXT NOT NULL, path TEXT NOT NULL, schema_version INTEGER)")
    conn.execute("INSERT INTO agent_databases (agent_id, path, schema_version) VALUES (?, ?, 1)", (agent_id, path))
    conn.close()


def test_a_copied_install_backs_up_while_the_original_its_registry_names_still_exists(tmp_path: Path) -> None:
    """Fails on 62c0aae: the registry of a state dir copied elsewhere (restored to a new place, or a corpus tree
    unpacked beside the live copy at the path it was written under) still names the original's agent database by
    its absolute path. That database existing made every backup (and so every migrate) of the copy fail with exit
    5: "database exists but is not in the archive". A registered path inside a state-dir-shaped root is read
    relative to the state dir being backed up, as the config's agent dirs are: the copy's own database is archived."""
    original = _state(tmp_path / "original")
    _db(original / "agents" / "main" / "agent" / "openclaw-agent.sqlite", rows=7)
    registered = str(original / "agents" / "main" / "agent" / "openclaw-agent.sqlite")
    _register(original / "state" / "openclaw.sqlite", "main", registered)
    copy = tmp_path / "copy" / ".openclaw"
    copy.parent.mkdir()
    shutil.copytree(original, copy, symlinks=True)
    out = tmp_path / "out"
    run = fork_cli("backup", "create", "--state-dir", copy, "--output", out)
    assert run.returncode == 0, run
    [archive] = archives(out)
    names = _member_names(archive)
    assert names.get("agents/main/agent/openclaw-agent.sqlite", 0) > 0
    FIGURES["backup complete"]["copied installs backed up"] += 1


def test_a_registered_database_outside_any_state_dir_must_be_in_the_archive(tmp_path: Path) -> None:
    """The registry still counts where it names a database outside every state-dir-shaped root: one that exists
    there and is not archived fails the backup (exit 5, nothing published)."""
    state = _state(tmp_path)
    outside = _db(tmp_path / "elsewhere" / "agent-db" / "openclaw-agent.sqlite", rows=2)
    _register(state / "state" / "openclaw.sqlite", "ops", str(outside))
    out = tmp_path / "out"
    run = fork_cli("backup", "create", "--state-dir", state, "--output", out)
    assert run.returncode == 5, run
    assert f"{outside}: database exists but is not in the archive" in run.stderr
    assert not archives(out)
    FIGURES["backup complete"]["incomplete backups refused"] += 1


def _rewrite_hollow(archive: Path, dest: Path) -> Path:
    """The same archive with every member but the directories left out, and a manifest that says so."""
    raw = zstandard.ZstdDecompressor().stream_reader(open(archive, "rb"), read_across_frames=True).read()
    with tarfile.open(fileobj=io.BytesIO(raw), mode="r:") as tar:
        infos = [(info, tar.extractfile(info).read() if info.isreg() else b"") for info in tar]  # type: ignore[union-attr]
    manifest = json.loads(infos[0][1])
    manifest["assets"] = [a for a in manifest["assets"] if a["kind"] == "dir"]
    keep = {a["archive_path"] for a in manifest["assets"]}
    manifest["totals"] = {"assets": len(keep), "bytes": 0, "files": 0, "sqlite": 0, "dirs": len(keep), "symlinks": 0}
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        head, _ = infos[0]
        data = json.dumps(manifest).encode()
        head.size = len(data)
        tar.addfile(head, io.BytesIO(data))
        for info, _data in infos[1:]:
            if info.name.rstrip("/") in keep:
                tar.addfile(info)
    dest.write_bytes(zstandard.ZstdCompressor(level=3, write_checksum=True).compress(buffer.getvalue()))
    return dest


def test_verify_fails_an_archive_without_state(tmp_path: Path) -> None:
    """Fails on 308a7ed: ``backup verify`` passed an archive whose manifest lists nothing but directories."""
    state = _state(tmp_path)
    out = tmp_path / "out"
    assert fork_cli("backup", "create", "--state-dir", state, "--output", out).returncode in (0, 3)
    [archive] = archives(out)
    hollow = _rewrite_hollow(archive, tmp_path / "hollow.tar.zst")
    run = fork_cli("backup", "verify", hollow)
    assert run.returncode == 5, run
    assert "no state" in run.stdout + run.stderr
    FIGURES["backup complete"]["hollow archives failed"] += 1


def test_verify_fails_an_openclaw_archive_without_state(tmp_path: Path) -> None:
    """Fails on 308a7ed: an OpenClaw-format archive holding its manifest and bare directories verified as OK."""
    import gzip

    from rel_harness import copy_world

    state = copy_world("demo-install", tmp_path)
    out = tmp_path / "out"
    assert fork_cli("backup", "create", "--state-dir", state, "--output", out, "--format", "openclaw").returncode in (0, 3)
    [archive] = [p for p in out.iterdir() if p.name.endswith(".tar.gz")]
    with tarfile.open(archive, "r:gz") as tar:
        infos = [(i, tar.extractfile(i).read() if i.isreg() else b"") for i in tar]  # type: ignore[union-attr]
    keep = [(i, d) for i, d in infos if i.isdir() or i.name.endswith("/manifest.json")]
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for info, data in keep:
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
    hollow = tmp_path / "hollow" / archive.name
    hollow.parent.mkdir()
    hollow.write_bytes(gzip.compress(buffer.getvalue()))
    run = fork_cli("backup", "verify", hollow)
    assert run.returncode == 5, run
    assert "holds no state" in run.stdout + run.stderr
    FIGURES["backup complete"]["hollow archives failed"] += 1
