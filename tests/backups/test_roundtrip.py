"""Done-when: corpus round trips, and snapshots taken while another process commits to the DB."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import textwrap
from pathlib import Path

import pytest

from statekit.install import ensure_install_id

from statekit.backup.assets import skip_reason
from statekit.backup.create import create_backup
from statekit.backup.restore import restore_archive
from statekit.backup.verify import verify_archive
from backup_helpers import read_members, rows_digest, tree_state
from helpers import open_db


def _corpus_trees() -> list[str]:
    from backup_helpers import CORPUS

    if not CORPUS.is_dir():
        return []
    trees = sorted(p.name for p in (CORPUS / "generated").glob("*.tar"))
    trees += sorted(p.name for p in (CORPUS / "public-repos").iterdir() if p.is_dir())
    return trees


def _find_state(root: Path) -> Path:
    queue = [root]
    while queue:
        directory = queue.pop(0)
        if any((directory / m).exists() for m in ("openclaw.json", "clawdbot.json", "moltbot.json", "agents", "cron")):
            return directory
        queue += sorted(p for p in directory.iterdir() if p.is_dir() and not p.is_symlink())
    return root


def _archived_files(state: Path) -> dict[str, tuple]:
    """The tree as it should come back: databases compared by rows instead, excluded entries left out."""
    result = {}
    for rel, value in tree_state(state).items():
        path = state / rel
        beside = {path.name[: -len(x)] for x in ("-wal", "-shm", "-journal") if path.name.endswith(x)}
        snapshotted = frozenset(b for b in beside if (path.parent / b).is_file() and (path.parent / b).read_bytes()[:16] == b"SQLite format 3\x00")
        if value[0] == "file" and (path.read_bytes()[:16] == b"SQLite format 3\x00" or skip_reason(rel, path.lstat(), snapshotted)):
            continue
        result[rel] = value
    return result


@pytest.mark.corpus
@pytest.mark.parametrize("tree", _corpus_trees() or ["(no corpus)"])
def test_corpus_round_trip(corpus, tree, tmp_path):
    source = corpus / "generated" / tree if tree.endswith(".tar") else corpus / "public-repos" / tree
    work = tmp_path / "t"
    if source.suffix == ".tar":
        with tarfile.open(source) as tar:
            tar.extractall(work, filter="tar")
    else:
        shutil.copytree(source, work, symlinks=True)
    state = _find_state(work)
    ensure_install_id(state)  # the first backup creates it, and the archive holds it
    dbs = [p for p in state.rglob("*") if p.is_file() and not p.is_symlink() and p.read_bytes()[:16] == b"SQLite format 3\x00"]
    digests = {p.relative_to(state): rows_digest(p) for p in dbs}
    (state / ".statekit").mkdir(mode=0o700, exist_ok=True)  # a backup holds .statekit/lock: the dir is archived with it
    expected = _archived_files(state)
    for rel, value in expected.items():
        if rel.startswith("credentials/") and value[0] == "file":
            expected[rel] = ("file", 0o600, value[2])  # restored credentials are always private
    result = create_backup(state, tmp_path / "out", record=False)
    assert verify_archive(result.archive_path).ok
    assert len([a for a in result.manifest["assets"] if a["kind"] == "sqlite"]) == len(dbs)
    target = tmp_path / "restored"
    restore_archive(result.archive_path, target=target)
    for rel, digest in digests.items():
        assert rows_digest(target / rel) == digest, rel
    assert _archived_files(target) == expected


@pytest.mark.corpus
def test_current_openclaw_databases_with_far_newer_schemas(corpus, tmp_path):
    with tarfile.open(corpus / "generated" / "legacy-2026.7.35-std.tar") as tar:
        tar.extractall(tmp_path / "t", filter="tar")
    state = tmp_path / "t" / "home" / ".openclaw"
    conn = open_db(state / "state" / "openclaw.sqlite")
    tables = conn.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table'").fetchone()[0]
    conn.close()
    assert tables > 50
    result = create_backup(state, tmp_path / "out")
    dbs = {a["id"]: a for a in result.manifest["assets"] if a["kind"] == "sqlite"}
    assert dbs["state/state/openclaw.sqlite"]["role"] == "global"
    assert dbs["state/agents/work/agent/openclaw-agent.sqlite"]["agent_id"] == "work"
    target = tmp_path / "r"
    restore_archive(result.archive_path, target=target)
    # the live DB got its backup_runs row before the snapshot: the restore matches it row for row
    assert rows_digest(target / "state" / "openclaw.sqlite") == rows_digest(state / "state" / "openclaw.sqlite")


WRITER = textwrap.dedent(
    """
    import sys, os
    from statekit.db import connect
    db, stop = sys.argv[1], sys.argv[2]
    conn = connect(db)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA busy_timeout = 30000")
    n = 0
    while True:
        n += 1
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO events(n, body) VALUES (?, ?)", (n, "x" * 200))
        conn.execute("UPDATE counter SET value = ?", (n,))
        conn.execute("COMMIT")
        if n == 200:
            print("ready", flush=True)
        if n % 50 == 0 and os.path.exists(stop):
            break
    print(n, flush=True)
    """
)


def test_snapshots_hold_a_committed_prefix_while_another_process_writes(state_tree, tmp_path):
    db = state_tree.root / "live" / "busy.sqlite"
    db.parent.mkdir()
    conn = open_db(db)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE events (n INTEGER PRIMARY KEY, body TEXT)")
    conn.execute("CREATE TABLE counter (value INTEGER)")
    conn.execute("INSERT INTO counter VALUES (0)")
    conn.commit()
    conn.close()
    stop = tmp_path / "stop"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(db), str(stop)], stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().strip() == "ready"
        archives = [create_backup(state_tree.root, tmp_path / f"out{i}", record=False).archive_path for i in range(3)]
    finally:
        stop.write_text("stop")
        total = int(writer.stdout.readline())
        writer.wait(timeout=60)
    seen = []
    for index, archive in enumerate(archives):
        member = next(m for m in read_members(archive) if m.info.name.endswith("live/busy.sqlite"))
        snap = tmp_path / f"snap{index}.sqlite"
        snap.write_bytes(member.data)
        check = open_db(snap)
        assert check.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        count, top = check.execute("SELECT count(*), coalesce(max(n), 0) FROM events").fetchone()
        (value,) = check.execute("SELECT value FROM counter").fetchone()
        check.close()
        assert count == top == value  # rows 1..k and the counter of the same transaction: a committed prefix
        assert value >= 200
        seen.append(value)
    assert seen == sorted(seen) and total > seen[0]  # the writer kept committing while we backed up
