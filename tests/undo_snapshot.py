"""A tree snapshot for the undo tests: every path's kind, mode and bytes (symlinks by target), dirs by name and mode."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from helpers import db_dump, open_db

# What `statekit undo` leaves in a state dir on purpose (maintenance/undo.py REMAINS, docs/upgrade.md "go back"):
# the .statekit dir itself, its run lock and the install id the pre-migration backup created.
ALLOWED_REMAINS = {".statekit": "dir", ".statekit/lock": "file", ".statekit/install-id": "file"}

Snapshot = dict[str, tuple[str, int, str]]


def snapshot(root: Path) -> Snapshot:
    found: Snapshot = {}
    for directory, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            path = Path(directory) / name
            st = path.lstat()
            rel = path.relative_to(root).as_posix()
            if stat.S_ISLNK(st.st_mode):
                found[rel] = ("symlink", 0, os.readlink(path))
            elif stat.S_ISDIR(st.st_mode):
                found[rel] = ("dir", st.st_mode & 0o7777, "")
            else:
                found[rel] = ("file", st.st_mode & 0o7777, hashlib.sha256(path.read_bytes()).hexdigest())
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(directory, d))]
    return found


def database_content(path: Path) -> tuple[int, list[tuple[str, str]], dict[str, list[str]]]:
    conn = open_db(path, "ro")
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        schema = conn.execute("SELECT name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name").fetchall()
    finally:
        conn.close()
    return version, [tuple(r) for r in schema], db_dump(path)


def undo_differences(before: Snapshot, after: Snapshot, *, content_only: dict[str, tuple[object, ...]] | None = None,
                     root: Path | None = None) -> list[str]:
    """Every difference between ``before`` and ``after`` except :data:`ALLOWED_REMAINS`.

    ``content_only``: databases that existed before the run, by path, with their :func:`database_content` before;
    those come back as the pre-migration backup holds them (same schema, ``user_version`` and rows, compacted pages),
    so their bytes are compared by content and their mode exactly."""
    content_only = content_only or {}
    problems = []
    for rel in sorted(set(before) | set(after)):
        old, new = before.get(rel), after.get(rel)
        if old == new:
            continue
        if new is not None and ALLOWED_REMAINS.get(rel) == new[0] and (old is None or old[0] == new[0]):
            continue  # created by the run (or rewritten: the lock holds the last holder's pid)
        if rel in content_only and old is not None and new is not None and old[:2] == new[:2]:
            assert root is not None
            if database_content(root / rel) == content_only[rel]:
                continue
            problems.append(f"{rel}: database content differs")
            continue
        problems.append(f"{rel}: {old} -> {new}")
    return problems
