"""Fixtures for the backup tests: small state dirs with foreign-schema databases, and archive surgery."""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from statekit.install import ensure_install_id
import zstandard
from helpers import open_db

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO / ".." / "shared"
CORPUS = SHARED / "corpus"

SECRET = "sk-test-secret-value-0123456789"


def make_db(path: Path, *, role: str | None, agent_id: str | None = None, user_version: int = 1, tables: int = 3, rows: int = 5, wal: bool = True) -> Path:
    """A database with a schema statekit does not know: N tables, schema_meta when ``role`` is given."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = open_db(path)
    if wal:
        conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("BEGIN")  # one transaction, committed below
    if role is not None:
        conn.execute(
            "CREATE TABLE schema_meta (meta_key TEXT PRIMARY KEY, role TEXT NOT NULL, schema_version INTEGER NOT NULL,"
            " agent_id TEXT, app_version TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL)"
        )
        conn.execute("INSERT INTO schema_meta VALUES ('primary', ?, ?, ?, '2099.1.1', 1, 1)", (role, user_version, agent_id))
    for t in range(tables):
        conn.execute(f"CREATE TABLE future_table_{t} (id INTEGER PRIMARY KEY, payload TEXT, blob BLOB, n REAL)")
        conn.execute(f"CREATE INDEX idx_future_{t} ON future_table_{t}(payload)")
        conn.executemany(
            f"INSERT INTO future_table_{t}(payload, blob, n) VALUES (?, ?, ?)",
            [(f"row {t}-{i} ünïcode", os.urandom(16), i / 3) for i in range(rows)],
        )
    if role == "global":
        conn.execute("CREATE TABLE backup_runs (id TEXT NOT NULL PRIMARY KEY, created_at INTEGER NOT NULL, archive_path TEXT NOT NULL, status TEXT NOT NULL, manifest_json TEXT NOT NULL)")
    conn.execute(f"PRAGMA user_version = {user_version}")
    conn.commit()
    conn.close()
    return path


def rows_digest(db: Path) -> str:
    """Deterministic dump of every table (sorted rows), like the acceptance script."""
    conn = open_db(db, "ro")
    digest = hashlib.sha256()
    try:
        for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' ORDER BY name"):
            digest.update(name.encode())
            for row in sorted(repr(r) for r in conn.execute(f'SELECT * FROM "{name}"')):
                digest.update(row.encode())
    finally:
        conn.close()
    return digest.hexdigest()


def tree_state(root: Path) -> dict[str, tuple]:
    """Every entry below ``root``: kind, mode and content hash / link target (exact-state comparisons)."""
    state: dict[str, tuple] = {}
    for directory, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(dirs + files):
            path = Path(directory) / name
            st = os.lstat(path)
            rel = str(path.relative_to(root))
            if path.is_symlink():
                state[rel] = ("link", os.readlink(path))
            elif path.is_dir():
                state[rel] = ("dir", st.st_mode & 0o7777)
            else:
                state[rel] = ("file", st.st_mode & 0o7777, hashlib.sha256(path.read_bytes()).hexdigest())
    return state


@dataclass
class StateTree:
    root: Path  # the state dir
    home: Path
    global_db: Path
    agent_db: Path
    work_db: Path
    tasks_db: Path
    config: Path


@pytest.fixture
def state_tree(tmp_path: Path) -> StateTree:
    """A small state dir like a current OpenClaw's: foreign-schema DBs, config, sessions, symlinks."""
    home = tmp_path / "home"
    state = home / ".openclaw"
    state.mkdir(parents=True, mode=0o700)
    global_db = make_db(state / "state" / "openclaw.sqlite", role="global", user_version=7, tables=30)
    agent_db = make_db(state / "agents" / "main" / "agent" / "openclaw-agent.sqlite", role="agent", agent_id="main", user_version=4)
    work_db = make_db(state / "agents" / "work" / "agent" / "openclaw-agent.sqlite", role="agent", agent_id="work", user_version=4)
    tasks_db = make_db(state / "tasks" / "runs.sqlite", role=None, user_version=3, wal=False)
    config = state / "openclaw.json"
    config.write_text(
        json.dumps(
            {
                "agents": {
                    "defaults": {"workspace": "/old/home/.openclaw/workspace"},
                    "list": [{"id": "main"}, {"id": "work", "agentDir": "/old/home/.openclaw/agents/work/agent"}],
                },
                "models": {"providers": {"x": {"apiKey": SECRET}}},
            }
        )
    )
    os.chmod(config, 0o600)
    sessions = state / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    (sessions / "sessions.json").write_text('{"main": {"sessionId": "s1"}}')
    (sessions / "s1.jsonl").write_text('{"type":"session","id":"s1"}\n{"type":"message"}\n')
    (sessions / "s1.jsonl.lock").write_text("123")
    creds = state / "credentials"
    creds.mkdir(mode=0o700)
    (creds / "oauth.json").write_text(json.dumps({"token": SECRET}))
    os.chmod(creds / "oauth.json", 0o600)
    (state / "workspace").mkdir()
    (state / "workspace" / "AGENTS.md").write_text("# agents\n")
    (state / "empty-dir").mkdir()
    (state / "plugin-skills").mkdir()
    os.symlink("/nonexistent/outside/skill", state / "plugin-skills" / "outside-skill")
    os.symlink("../workspace/AGENTS.md", state / "plugin-skills" / "inside-link")
    (state / "weird name ü.txt").write_bytes(b"\x00\x01binary\xff" * 100)
    (state / "statekit-like.wal").write_text("not a sidecar")
    (state / "logs").mkdir()
    (state / "logs" / "gateway.log").write_text("line\n" * 1000)
    ensure_install_id(state)  # an install that was backed up once has its id (backups create it)
    return StateTree(state, home, global_db, agent_db, work_db, tasks_db, config)


# --------------------------------------------------------------------------- archive surgery


@dataclass
class Member:
    info: tarfile.TarInfo
    data: bytes


def read_members(archive: Path) -> list[Member]:
    raw = zstandard.ZstdDecompressor().stream_reader(open(archive, "rb"), read_across_frames=True).read()
    members = []
    with tarfile.open(fileobj=io.BytesIO(raw), mode="r:") as tar:
        for info in tar:
            handle = tar.extractfile(info) if info.isreg() else None
            members.append(Member(info, handle.read() if handle else b""))
    return members


def write_members(members: list[Member], dest: Path) -> Path:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for m in members:
            info = m.info
            if info.isreg():
                info.size = len(m.data)
                tar.addfile(info, io.BytesIO(m.data))
            else:
                tar.addfile(info)
    dest.write_bytes(zstandard.ZstdCompressor(level=3, write_checksum=True).compress(buffer.getvalue()))
    return dest


def manifest_of(members: list[Member]) -> dict:
    return json.loads(members[0].data)


def set_manifest(members: list[Member], manifest: dict) -> None:
    members[0].data = json.dumps(manifest).encode()


def rewrite(archive: Path, dest: Path, change: Callable[[list[Member]], None]) -> Path:
    members = read_members(archive)
    change(members)
    return write_members(members, dest)


def add_asset(members: list[Member], info: tarfile.TarInfo, data: bytes = b"", **fields) -> None:
    """Append a member and declare it in the manifest (so only the tested property is wrong)."""
    manifest = manifest_of(members)
    asset = {
        "id": f"state/{info.name.split('/payload/state/')[-1]}",
        "kind": "file",
        "role": "state",
        "agent_id": None,
        "schema_version": None,
        "source_path": "/x/" + info.name.rsplit("/", 1)[-1],
        "archive_path": info.name,
        "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "mode": 0o600,
        "mtime": 0,
    }
    asset.update(fields)
    manifest["assets"].append(asset)
    manifest["totals"]["assets"] += 1
    manifest["totals"]["bytes"] += asset["size"]
    set_manifest(members, manifest)
    members.append(Member(info, data))


def tar_info(name: str, kind: bytes = tarfile.REGTYPE, linkname: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    info.mode = 0o600
    return info


@pytest.fixture
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip("../shared/corpus is not present (a user's clone has no ../shared)")
    return CORPUS.resolve()
