"""Walk a state dir once and put every file in exactly one bucket.

Buckets: a legacy source (with the reader that claims it), a current SQLite
database (found by its header, with its -wal/-shm/-journal sidecars), user
content that stays where it is (config, workspaces, credential files owned
by other tools), statekit's own files (``.statekit/``), or unrecognised
(listed, never touched). Nothing is opened except to read the 16-byte
SQLite header of regular files.
"""

from __future__ import annotations

import glob
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from statekit.legacy_readers import all_readers, reader_for
from statekit.legacy_readers.base import Reader, match_patterns
from statekit.db import SQLITE_HEADER
from statekit.errors import display_path
from statekit.fsutil import temp_writer_pid
from statekit.layout import STATEKIT_DIR_NAME

# Files and trees that are the user's, not state: they stay where they are.
USER_CONTENT: tuple[tuple[str, str], ...] = (
    ("openclaw.json", "config"),
    ("openclaw.json.*", "config backup"),
    ("clawdbot.json", "legacy config"),
    ("clawdbot.json.*", "legacy config backup"),
    ("moldbot.json", "legacy config"),
    ("moldbot.json.*", "legacy config backup"),
    ("moltbot.json", "legacy config"),
    ("moltbot.json.*", "legacy config backup"),
    (".env", "environment file"),
    ("workspace/**", "workspace"),
    ("workspace-*/**", "workspace"),
    ("agents/*/workspace/**", "workspace"),
    ("credentials/**", "credential files owned by their tools"),
    ("plugin-skills/**", "installed skills"),
    ("skills/**", "installed skills"),
    ("extensions/**", "installed plugins"),
    ("canvas/**", "user canvas files"),
    ("backups/**", "user backups"),
    ("wiki/**", "Memory Wiki vault (markdown notes)"),
)

# Directories whose whole subtree is user content: not descended into.
PRUNED_USER_DIRS: tuple[tuple[str, str], ...] = (
    ("workspace", "workspace"),
    ("workspace-*", "workspace"),
    ("agents/*/workspace", "workspace"),
    ("plugin-skills", "installed skills"),
    ("skills", "installed skills"),
    ("extensions", "installed plugins"),
)

# OpenClaw state dirs whose names look like ``workspace-<agent>`` but are not workspaces.
STATE_DIRS_NOT_WORKSPACES = frozenset({"workspace-attestations"})

SQLITE_SIDECAR_SUFFIXES = ("-wal", "-shm", "-journal")


@dataclass(frozen=True, slots=True)  # one per file: no __dict__ each
class FileEntry:
    rel: str
    size: int
    mtime_ms: int
    file_type: str  # "file" | "symlink" | "fifo" | "socket" | "device" | "other"


@dataclass
class Discovery:
    state_dir: Path
    legacy: list[tuple[FileEntry, Reader]] = field(default_factory=list)
    databases: list[FileEntry] = field(default_factory=list)
    database_sidecars: list[FileEntry] = field(default_factory=list)
    user_content: list[tuple[str, str, int]] = field(default_factory=list)  # (rel, reason, file count)
    statekit_files: int = 0
    unrecognised: list[FileEntry] = field(default_factory=list)
    # What a legacy file under a name that is not UTF-8 would be: each a warning, the file left in place (display_path)
    unnamed_legacy: list[str] = field(default_factory=list)


UNDECODABLE = "name is not valid UTF-8"


def is_utf8(rel: str) -> bool:
    """False for a name the OS gave with bytes that are not UTF-8 (``os.fsdecode`` keeps them as surrogates): such a
    path cannot be recorded in a receipt, a report or a database, nor printed."""
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _file_type(mode: int) -> str:
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return "other"


def _has_sqlite_header(path: Path) -> bool:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return False
    try:
        return os.read(fd, len(SQLITE_HEADER)) == SQLITE_HEADER
    except OSError:
        return False
    finally:
        os.close(fd)


def _count_files(path: Path) -> int:
    total = 0
    for _root, _dirs, files in os.walk(path, followlinks=False):
        total += len(files)
    return total


def walk(state_dir: Path) -> Iterator[tuple[str, os.DirEntry[str] | None, str | None]]:
    """Yield ``(rel, entry, pruned_reason)``: files, plus pruned user dirs (entry None)."""
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        directory = state_dir / rel_dir if rel_dir else state_dir
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name, reverse=True)
        except OSError:
            continue
        while entries:
            # Each entry (with the stat it caches) is let go of once handled: a directory of 50,000 transcripts
            # held them all until its last file (~45 MB).
            entry = entries.pop()
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            if is_dir and not is_utf8(entry.name):
                yield rel, None, UNDECODABLE  # not descended into: nothing under it can be named either
                continue
            if is_dir:
                if rel == STATEKIT_DIR_NAME:
                    yield rel, None, "statekit"
                    continue
                reason = None
                if rel not in STATE_DIRS_NOT_WORKSPACES:
                    reason = next((why for pattern, why in PRUNED_USER_DIRS if match_patterns(rel, (pattern,))), None)
                if reason:
                    yield rel, None, reason
                    continue
                stack.append(rel)
            else:
                yield rel, entry, None


def _probe_workspace(state_dir: Path, rel_dir: str, readers: tuple[Reader, ...]) -> list[tuple[FileEntry, Reader]]:
    """Legacy files at the few known places inside a workspace (ClawHub tracking, setup state)."""
    found: list[tuple[FileEntry, Reader]] = []
    seen: set[str] = set()
    root = state_dir / rel_dir
    for reader in readers:
        for pattern in reader.workspace_patterns:
            # glob.glob, unlike Path.glob, lists dangling and looping symlinks (lexists), so a broken
            # link at a legacy path is planned as "unreadable" instead of vanishing from every bucket.
            for path in sorted(Path(p) for p in glob.glob(os.path.join(glob.escape(str(root)), pattern))):
                rel = f"{rel_dir}/{path.relative_to(root).as_posix()}"
                if rel in seen or not is_utf8(rel) or not reader.claims(rel):
                    continue
                try:
                    st = path.lstat()
                except OSError:
                    continue
                seen.add(rel)
                found.append((FileEntry(rel, st.st_size, st.st_mtime_ns // 1_000_000, _file_type(st.st_mode)), reader))
    return found


def _unnamed(found: Discovery, item: FileEntry) -> None:
    """A file whose name is not UTF-8: listed as unrecognised (shown escaped), and a warning if a reader would claim it."""
    shown = display_path(item.rel)
    found.unrecognised.append(FileEntry(shown, item.size, item.mtime_ms, item.file_type))
    if reader_for(shown) is not None:
        found.unnamed_legacy.append(shown)


def discover(state_dir: Path) -> Discovery:
    found = Discovery(state_dir=state_dir)
    pending_sidecars: list[FileEntry] = []
    for rel, entry, pruned in walk(state_dir):
        if entry is None:
            count = _count_files(state_dir / rel)
            if pruned == UNDECODABLE:
                found.user_content.append((display_path(rel) + "/", UNDECODABLE, count))
                continue
            if pruned == "statekit":
                found.statekit_files += count
                continue
            probed = _probe_workspace(state_dir, rel, all_readers()) if pruned == "workspace" else []
            for item, reader in probed:
                found.legacy.append((item, reader))
            found.user_content.append((rel + "/", pruned or "user content", count - len(probed)))
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        item = FileEntry(rel, st.st_size, st.st_mtime_ns // 1_000_000, _file_type(st.st_mode))
        if not is_utf8(entry.name):
            _unnamed(found, item)
            continue
        claimed = reader_for(rel)  # the registry loads on the first file (cached)
        if claimed is not None:
            found.legacy.append((item, claimed))
            continue
        if temp_writer_pid(entry.name) is not None:
            found.statekit_files += 1  # a statekit temp file (a killed write); migrate removes it when its writer is gone
            continue
        if rel.endswith(SQLITE_SIDECAR_SUFFIXES):
            pending_sidecars.append(item)
            continue
        if item.file_type == "file" and _has_sqlite_header(state_dir / rel):
            found.databases.append(item)
            continue
        reason = next((why for pattern, why in USER_CONTENT if match_patterns(rel, (pattern,))), None)
        if reason:
            found.user_content.append((rel, reason, 1))
            continue
        found.unrecognised.append(item)
    database_rels = {d.rel for d in found.databases}
    for item in pending_sidecars:
        base = next((item.rel[: -len(s)] for s in SQLITE_SIDECAR_SUFFIXES if item.rel.endswith(s)), "")
        if base in database_rels:
            found.database_sidecars.append(item)
        else:
            found.unrecognised.append(item)
    return found
