"""Small filesystem helpers: streaming hashes, private modes, atomic writes, fsync."""

from __future__ import annotations

import hashlib
import os
import secrets
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

CHUNK = 1 << 20
PRIVATE_FILE_MODE = 0o600
PRIVATE_DIR_MODE = 0o700


def sha256_file(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()  # streams in C, without a Python loop per block


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def chmod_best_effort(path: Path, mode: int, warnings: list[str] | None = None) -> None:
    """chmod, tolerating filesystems that refuse it (NFS, SMB, some Docker volumes)."""
    try:
        os.chmod(path, mode)
    except OSError as exc:
        if warnings is not None:
            warnings.append(f"{path}: could not set mode {mode:o}: {exc.strerror}")


def ensure_private_dir(path: Path, warnings: list[str] | None = None) -> Path:
    """Create ``path`` (and parents) with mode 0700 for every directory created."""
    missing: list[Path] = []
    current = path
    while not current.exists():
        missing.append(current)
        current = current.parent
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=PRIVATE_DIR_MODE)
        except FileExistsError:
            pass
        chmod_best_effort(directory, PRIVATE_DIR_MODE, warnings)
    return path


def fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


TEMP_MARKER = ".statekit-tmp-"


def temp_writer_pid(name: str) -> int | None:
    """The pid in an :func:`atomic_write_bytes` temp name (``.<name>.statekit-tmp-<pid>-<hex8>``), else None."""
    if not name.startswith(".") or TEMP_MARKER not in name:
        return None
    pid, _, token = name.rsplit(TEMP_MARKER, 1)[1].partition("-")
    if not (pid.isdigit() and len(token) == 8 and all(c in "0123456789abcdef" for c in token)):
        return None
    return int(pid)


def remove_orphaned_temps(directory: Path, recursive: bool = False) -> list[Path]:
    """Delete the temp files of :func:`atomic_write_bytes` whose writer is dead (a killed run).

    Only our own names (``.<name>.statekit-tmp-<pid>-<hex8>``, regular files) whose pid no longer
    exists; a live writer's temp file is never touched. Best effort: returns what was removed.
    """
    from statekit.locking import pid_alive  # locking imports this module

    removed: list[Path] = []
    walker = os.walk(directory) if recursive else [(str(directory), [], _names(directory))]
    for root, _dirs, names in walker:
        for name in names:
            pid = temp_writer_pid(name)
            if pid is None or pid_alive(pid):
                continue
            path = Path(root) / name
            try:
                if stat.S_ISREG(path.lstat().st_mode):
                    path.unlink()
                    removed.append(path)
            except OSError:
                continue
    return removed


def _names(directory: Path) -> list[str]:
    try:
        return os.listdir(directory)
    except OSError:
        return []


def atomic_write_bytes(path: Path, data: bytes, mode: int = PRIVATE_FILE_MODE) -> None:
    """Write ``data`` to ``path`` through a temp file, fsync and rename (a killed writer leaves the temp
    file; :func:`temp_writer_pid` lets a later run recognise it)."""
    tmp = path.with_name(f".{path.name}{TEMP_MARKER}{os.getpid()}-{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def file_kind_problem(path: Path, st: os.stat_result | None = None) -> str | None:
    """Why ``path`` is not a plain regular file we may read, or None when it is."""
    try:
        st = st or os.lstat(path)
    except OSError as exc:
        return f"cannot stat: {exc.strerror}"
    if stat.S_ISLNK(st.st_mode):
        return "is a symbolic link, expected a regular file"
    if stat.S_ISFIFO(st.st_mode):
        return "is a FIFO, expected a regular file"
    if stat.S_ISSOCK(st.st_mode):
        return "is a socket, expected a regular file"
    if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
        return "is a device, expected a regular file"
    if stat.S_ISDIR(st.st_mode):
        return "is a directory, expected a regular file"
    if not stat.S_ISREG(st.st_mode):
        return "is not a regular file"
    return None


def open_regular_file(path: Path) -> BinaryIO:
    """Open ``path`` for binary reading, refusing symlinks, FIFOs and devices without blocking."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        problem = file_kind_problem(path, st)
        if problem:
            raise OSError(0, problem)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular_file(path: Path) -> bytes:
    """The bytes of a regular file, following symlinks; never blocks on a FIFO or device.

    Raises OSError when ``path`` is missing or not a regular file (a FIFO at
    a config path must not hang a run that only wanted to read it).
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(0, "not a regular file", str(path))
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return handle.read()


def iter_lines(handle: Iterable[bytes]) -> Iterator[bytes]:
    """Yield lines without their trailing ``\n`` (a CR is kept) from a binary handle, one at a time."""
    for line in handle:
        yield line[:-1] if line.endswith(b"\n") else line


class HashingReader:
    """A binary reader that hashes (SHA-256) and counts every byte it hands out.

    Readers use it like a file: ``read``, ``readline`` and line iteration.
    :meth:`finish` drains the rest so the digest always covers the whole file.
    """

    def __init__(self, handle: BinaryIO) -> None:
        self._handle = handle
        self._digest = hashlib.sha256()
        self.size = 0

    def _take(self, data: bytes) -> bytes:
        self._digest.update(data)
        self.size += len(data)
        return data

    def read(self, n: int = -1) -> bytes:
        return self._take(self._handle.read(n))

    def readline(self, limit: int = -1) -> bytes:
        return self._take(self._handle.readline(limit))

    def __iter__(self) -> Iterator[bytes]:
        for line in self._handle:
            yield self._take(line)

    def finish(self) -> str:
        for block in iter(lambda: self._handle.read(CHUNK), b""):
            self._take(block)
        return self._digest.hexdigest()
