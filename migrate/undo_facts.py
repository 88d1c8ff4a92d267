"""What a ``migrate`` run records so ``statekit undo`` can put the install back, or refuse.

At the start of a run: which databases already exist (the pre-migration
backup holds those; the others are the run's own and go away on undo) and the
modes retirement loses (sources not 0600, the directories above them). At the
end: a content digest of every database the run wrote, and the relocation
the run recorded. The facts go into the run's ``migration_runs`` report under
``"undo"``.

An agent database's digest is the SHA-256 of its file, once the run's WAL is
checkpointed into it (one sequential read, a few seconds for 228 MB at most);
up to 8 MiB also over its content, as below, so the database still counts as
unchanged after a later run's undo put it back from a backup (a ``VACUUM
INTO`` copy: other bytes, same content). The
global database holds the run's own row, written after the digest, so its
digest is over content: the schema (``sqlite_master``), ``user_version`` and
every row of every table except statekit's bookkeeping (``migration_runs``,
``migration_sources``, ``backup_runs``; the global database is small: cron,
devices, auth). A gateway or any other writer that changes a row or a table
after the run changes the digest.
"""

from __future__ import annotations

import hashlib
import os
from array import array
from collections.abc import Iterator, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from statekit.db import Connection, SQLiteError, read_only_view
from statekit.fsutil import PRIVATE_FILE_MODE, sha256_file, shared_mode
from statekit.layout import AGENT_DB_NAME, global_db_path, relative_posix

FACTS_KEY = "undo"
FACTS_VERSION = 1
CONTENT_DIGEST_LIMIT = 8 << 20  # agent databases up to 8 MiB also get a content digest (228 MB of rows took 19.6 s)
BOOKKEEPING_TABLES = frozenset({"migration_runs", "migration_sources", "backup_runs"})


def existing_databases(state_dir: Path) -> list[str]:
    """The state dir's databases statekit may write (global, one per agent) that exist now, relative POSIX paths."""
    found = [global_db_path(state_dir)]
    agents = state_dir / "agents"
    if agents.is_dir():
        found += sorted(p / "agent" / AGENT_DB_NAME for p in agents.iterdir() if p.is_dir() and not p.is_symlink())
    return sorted(relative_posix(p, state_dir) for p in found if p.is_file() and not p.is_symlink())


def path_modes(state_dir: Path, rels: list[str]) -> dict[str, int]:
    """Modes undo puts back: each source's that is not 0600 (its retired copy is made 0600) and every directory
    above a source (retirement removes directories it empties; recreating one takes the umask's mode)."""
    modes: dict[str, int] = {}
    for rel in rels:
        parts = PurePosixPath(rel).parts
        try:
            mode = shared_mode(os.lstat(state_dir.joinpath(*parts)).st_mode & 0o7777)  # one int per mode value
        except OSError:
            continue
        if mode != PRIVATE_FILE_MODE:
            modes[rel] = mode
        for depth in range(1, len(parts)):
            above = "/".join(parts[:depth])
            if above not in modes:
                try:
                    modes[above] = shared_mode(os.lstat(state_dir.joinpath(*parts[:depth])).st_mode & 0o7777)
                except OSError:
                    continue
    return dict(sorted(modes.items()))


class PackedModes(Mapping[str, int]):
    """What :func:`path_modes` found, held in three flat buffers from the start of a run to its end (the paths in one
    string, where each ends, the modes): a dict of 100,000 paths kept the planned path strings alive through the
    whole run, and with them every small-object page of the allocator they sat in (the plan, discovery and the
    backup freed everything around them; ~100 MB at 100,000 files that ``malloc_trim`` could not give back).
    Iterates in the dict's (sorted) order; :meth:`to_dict` is the dict again, for the run's report."""

    __slots__ = ("_text", "_ends", "_modes")

    def __init__(self, modes: Mapping[str, int]) -> None:
        names = sorted(modes)
        self._text = "\x00".join(names)  # no path holds NUL
        self._ends = array("q")
        self._modes = array("H", (modes[name] for name in names))  # permission bits: 0..0o7777
        end = -1
        for name in names:
            end += len(name) + 1
            self._ends.append(end)

    def __len__(self) -> int:
        return len(self._ends)

    def _name(self, index: int) -> str:
        start = self._ends[index - 1] + 1 if index else 0
        return self._text[start:self._ends[index]]

    def __iter__(self) -> Iterator[str]:
        return (self._name(index) for index in range(len(self._ends)))

    def __getitem__(self, name: str) -> int:
        index = self._find(name)
        if index < 0:
            raise KeyError(name)
        return self._modes[index]

    def _find(self, name: str) -> int:
        low, high = 0, len(self._ends)
        while low < high:
            middle = (low + high) // 2
            if self._name(middle) < name:
                low = middle + 1
            else:
                high = middle
        return low if low < len(self._ends) and self._name(low) == name else -1

    def to_dict(self) -> dict[str, int]:
        return {self._name(index): shared_mode(mode) for index, mode in enumerate(self._modes)}


def config_rels(plan: Any, state_dir: Path) -> list[str]:
    """The config file the run may rewrite, when it lives in the state dir."""
    config = getattr(plan, "config_path", None)
    if config is None:
        return []
    try:
        return [relative_posix(Path(config), state_dir)]
    except ValueError:
        return []


def content_digest(path: Path) -> str:
    """:func:`digest_connection` of the database at ``path``, read without writing a byte."""
    with read_only_view(path) as conn:
        return digest_connection(conn)


def digest_connection(conn: Connection) -> str:
    """SHA-256 over schema, ``user_version`` and rows (bookkeeping tables left out)."""
    digest = hashlib.sha256()
    digest.update(b"user_version=%d\0" % int(conn.execute("PRAGMA user_version").fetchone()[0]))
    schema = conn.execute(
        "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name"
    ).fetchall()
    for row in schema:
        if row[2] not in BOOKKEEPING_TABLES:
            digest.update(repr(tuple(row)).encode("utf-8", "surrogatepass") + b"\0")
    for kind, name, _table, _sql in schema:
        if kind != "table" or name in BOOKKEEPING_TABLES:
            continue
        digest.update(b"table\0" + name.encode("utf-8", "surrogatepass") + b"\0")
        quoted = name.replace('"', '""')
        for record in conn.execute(f'SELECT * FROM "{quoted}"'):
            digest.update(repr(tuple(record)).encode("utf-8", "surrogatepass") + b"\n")
    return digest.hexdigest()


def checkpointed_file_digest(conn: Connection, path: Path) -> str | None:
    """SHA-256 of the database file once the run's WAL is checkpointed into it (None when the checkpoint was blocked)."""
    busy, _log, _done = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    return None if busy else sha256_file(path)


def unchanged_since(path: Path, recorded: dict[str, Any]) -> bool:
    """Whether the database at ``path`` is as :func:`run_facts` recorded it: the same file bytes, or (an agent database put
    back from a backup by a later run's undo, or checkpointed by another tool) the same content when that was recorded."""
    if recorded.get("digest") is None:
        return False
    if recorded.get("digest_kind") == "content":
        return content_digest(path) == recorded["digest"]
    wal = Path(f"{path}-wal")
    if not (wal.exists() and wal.stat().st_size > 0) and sha256_file(path) == recorded["digest"]:
        return True
    return recorded.get("content_digest") is not None and content_digest(path) == recorded["content_digest"]


def run_facts(
    state_dir: Path, existed: list[str], modes: dict[str, int], written: dict[Path, Connection], steps: list[dict[str, Any]]
) -> dict[str, Any]:
    """The ``undo`` block of a finished run's report (see module doc); ``written``: each database the run wrote, with
    the run's own open connection to it (its committed rows, WAL included)."""
    databases: dict[str, dict[str, Any]] = {}
    global_db = global_db_path(state_dir)
    for path, conn in sorted(written.items()):
        rel = relative_posix(path, state_dir)
        kind = "content" if path == global_db else "file"
        content: str | None = None
        try:
            digest: str | None = digest_connection(conn) if kind == "content" else checkpointed_file_digest(conn, path)
            if kind == "file" and path.stat().st_size <= CONTENT_DIGEST_LIMIT:
                content = digest_connection(conn)
        except (SQLiteError, OSError):
            digest = None
        databases[rel] = {"existed": rel in existed, "digest": digest, "digest_kind": kind, "content_digest": content}
    relocated = next(({"from": s["from"], "to": s["to"]} for s in steps if s.get("kind") == "state-dir-relocated"), None)
    return {"version": FACTS_VERSION, "databases_before": sorted(existed), "databases": databases, "relocated": relocated,
            "modes": modes}


__all__ = ["unchanged_since", "existing_databases", "path_modes", "config_rels", "content_digest", "digest_connection", "run_facts", "PackedModes", "FACTS_KEY", "BOOKKEEPING_TABLES"]
