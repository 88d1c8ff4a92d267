"""Small filesystem helpers: streaming hashes, private modes, atomic writes, fsync, safe opens.

Two rules every module keeps through the primitives here (tests/core/test_safe_open_sites.py
scans the product for opens that bypass them):

* **What statekit creates** (databases, locks, temp files, sidecars, receipts, journals,
  directories) is created with :func:`create_file` / :func:`make_dir`: exclusive, never through
  a symlink (``O_EXCL | O_NOFOLLOW``), 0600 / 0700 whatever the umask, and, when statekit runs
  as root in a directory someone else owns, handed to that directory's owner (``fchown``), so a
  root run on a user's state dir leaves nothing the user cannot read or remove. A file that
  must be reopened (a lock) goes through :func:`open_own_file`: a regular file with one link,
  owned by us or by its directory's owner, never what a planted symlink points to.
  :func:`ensure_inside` refuses a write whose path leaves its root through a symlinked
  directory.
* **What statekit did not create** is opened with :func:`open_regular_file` /
  :func:`read_regular_file` / :func:`read_prefix`: ``O_NONBLOCK`` first, then ``fstat``, so a
  FIFO, a socket or a device (``/dev/zero``) is refused before a byte is read and never hangs
  the run, and whole-file reads are bounded (:data:`READ_LIMIT`).
"""

from __future__ import annotations

import errno
import hashlib
import io
import os
import secrets
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from statekit.errors import StatekitError

CHUNK = 1 << 20
# A read of n bytes allocates n bytes first; above glibc's mmap threshold (128 KiB) that is an mmap and a munmap per
# read, which cost a small file more than reading and hashing it. Reads of a small file ask for this much (its size
# + 1 when that is more): enough for the buffered reader to read into it directly and see the end in two calls.
SMALL_READ = 64 << 10
PRIVATE_FILE_MODE = 0o600
PRIVATE_DIR_MODE = 0o700
READ_LIMIT = 64 << 20
"""The most :func:`read_regular_file` reads of a file statekit did not create (configs, markers, sidecars)."""

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)


class UnsafePathError(StatekitError):
    """A path statekit was about to write leads outside its root, or is not statekit's own file."""


# ---------------------------------------------------------------------------- ownership


def inherited_owner(directory: Path) -> tuple[int, int] | None:
    """(uid, gid) a new entry in ``directory`` is given: its owner's, when we run as root in someone else's directory.

    None when nothing is to change (not root, the directory is root's, or it cannot be stat'ed).
    """
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return None
    try:
        st = os.stat(directory)
    except OSError:
        return None
    if st.st_uid == 0:
        return None
    return st.st_uid, st.st_gid


def adopt_owner(fd: int, directory: Path) -> None:
    """``fchown`` the new file or directory open as ``fd`` to ``directory``'s owner when we run as root (see above)."""
    owner = inherited_owner(directory)
    if owner is not None:
        os.fchown(fd, *owner)


# ---------------------------------------------------------------------------- creating


def create_file(path: Path, mode: int = PRIVATE_FILE_MODE) -> int:
    """Create ``path`` (must not exist, never through a symlink) with exactly ``mode``; return its fd open for writing."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, mode)
    try:
        if stat.S_IMODE(os.fstat(fd).st_mode) != mode:
            os.fchmod(fd, mode)  # the umask narrowed it; never wider than asked either
        adopt_owner(fd, path.parent)
    except BaseException:
        os.close(fd)
        raise
    return fd


def make_dir(path: Path, mode: int = PRIVATE_DIR_MODE) -> None:
    """``mkdir`` ``path`` with exactly ``mode`` (umask or not), owned like :func:`create_file`'s files."""
    os.mkdir(path, mode)
    fd = os.open(path, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC)
    try:
        if stat.S_IMODE(os.fstat(fd).st_mode) != mode:
            os.fchmod(fd, mode)
        adopt_owner(fd, path.parent)
    finally:
        os.close(fd)


def open_own_file(path: Path) -> int:
    """Open (creating 0600 when missing) a file statekit keeps reopening, a lock: fd open read-write.

    Never follows a symlink and never truncates or locks anything else: an existing entry must
    be a regular file with one link, owned by us or by its directory's owner; otherwise
    :class:`UnsafePathError` names it.
    """
    try:
        return create_file(path)
    except FileExistsError:
        pass
    try:
        fd = os.open(path, os.O_RDWR | _NOFOLLOW | _NONBLOCK | _CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafePathError(f"{path}: is a symbolic link, not statekit's own file; remove it (nothing was written)") from None
        raise
    try:
        st = os.fstat(fd)
        problem = _own_file_problem(path, st)
        if problem:
            raise UnsafePathError(f"{path}: {problem}, not statekit's own file; remove it (nothing was written)")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _own_file_problem(path: Path, st: os.stat_result) -> str | None:
    if not stat.S_ISREG(st.st_mode):
        return (file_kind_problem(path, st) or "is not a regular file").replace(", expected a regular file", "")
    if st.st_nlink != 1:
        return f"has {st.st_nlink} hard links"
    allowed = {os.geteuid()} if hasattr(os, "geteuid") else set()
    try:
        allowed.add(os.stat(path.parent).st_uid)
    except OSError:
        pass
    if allowed and st.st_uid not in allowed:
        return f"is owned by uid {st.st_uid}"
    return None


def ensure_inside(path: Path, root: Path, *, database: bool = False) -> Path:
    """``path``, when it and every directory on the way stay inside ``root`` once symlinks are followed.

    Raises :class:`UnsafePathError` (one line naming the path and where it leads) when a
    symlinked directory, a symlink at ``path`` itself, or ``..`` would take a write outside
    ``root``; with ``database``, SQLite's ``-wal``/``-shm``/``-journal`` beside it count as part of it.
    """
    top = os.path.realpath(root)
    sidecars = [Path(f"{path}{suffix}") for suffix in ("-wal", "-shm", "-journal")] if database else []
    for candidate in (path, *sidecars):
        real = os.path.realpath(os.path.abspath(candidate))
        if real != top and not real.startswith(top.rstrip(os.sep) + os.sep):
            raise UnsafePathError(
                f"{candidate}: leads outside {root} through a symbolic link (to {real}); statekit writes only inside it, "
                "nothing was written there"
            )
    return path


# ---------------------------------------------------------------------------- reading


def sha256_file(path: Path, *, follow_symlinks: bool = True) -> str:
    """SHA-256 of a regular file (a FIFO or device is refused with OSError, never read; a symlink too, unless
    ``follow_symlinks``); streams in C."""
    with open_regular_file(path, follow_symlinks=follow_symlinks) as handle:
        return _sha256_rest(handle, os.fstat(handle.fileno()).st_size)


def protect_and_hash(path: Path, mode: int, warnings: list[str] | None = None) -> str:
    """SHA-256 of the regular file at ``path`` (followed if a symlink; a FIFO or device is refused with OSError, never
    read), its permission bits made ``mode``: what :func:`chmod_best_effort` and :func:`sha256_file` do, with one
    open, and no chmod when the open file's bits are already right."""
    with open_regular_file(path, follow_symlinks=True) as handle:
        st = os.fstat(handle.fileno())
        if stat.S_IMODE(st.st_mode) != mode:
            chmod_best_effort(path, mode, warnings)  # by path, as every chmod of statekit
        return _sha256_rest(handle, st.st_size)


def _sha256_rest(handle: io.BufferedReader, size: int) -> str:
    """SHA-256 of what is left to read in ``handle``, an open regular file of ``size`` bytes when it was stat'ed.

    A file under ``CHUNK`` goes through :class:`HashingReader`, whose reads ask a small file for what it holds
    (``SMALL_READ``), where ``hashlib.file_digest`` would allocate its 256 KiB buffer for every file.
    """
    if size >= CHUNK:
        return hashlib.file_digest(handle, "sha256").hexdigest()
    return HashingReader(handle).finish()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


_MODES: dict[int, int] = {}


def shared_mode(mode: int) -> int:
    """One int object per permission value (at most 4,096 of them), however many files carry it: a backup's assets
    and a run's undo facts hold one mode per file (100,000 ints of 28 bytes otherwise)."""
    return _MODES.setdefault(mode, mode) if 0 <= mode <= 0o7777 else mode


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
    while not os.path.lexists(current):
        missing.append(current)
        current = current.parent
    for directory in reversed(missing):
        try:
            make_dir(directory, PRIVATE_DIR_MODE)
        except FileExistsError:
            continue  # made meanwhile by someone else: not ours to chmod
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
    fd = create_file(tmp, mode)
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


def open_regular_file(path: Path, *, follow_symlinks: bool = False) -> io.BufferedReader:
    """Open ``path`` for binary reading, refusing FIFOs, sockets and devices without blocking.

    A symlink at ``path`` is refused unless ``follow_symlinks`` (then what it points to must be a
    regular file).
    """
    flags = os.O_RDONLY | _NONBLOCK | _CLOEXEC | (0 if follow_symlinks else _NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow_symlinks:
            raise OSError(errno.ELOOP, "is a symbolic link, expected a regular file", str(path)) from None
        raise
    try:
        st = os.fstat(fd)
        problem = file_kind_problem(path, st)
        if problem:
            raise OSError(errno.EINVAL, problem, str(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular_file(path: Path, limit: int = READ_LIMIT) -> bytes:
    """The bytes of a regular file, following symlinks; never blocks on a FIFO or device; at most ``limit`` bytes.

    Raises OSError when ``path`` is missing, not a regular file (a FIFO at a config path must not
    hang a run that only wanted to read it) or larger than ``limit`` (EFBIG).
    """
    with open_regular_file(path, follow_symlinks=True) as handle:
        # read(n) allocates n bytes first: ask for the file's size (+1 to see growth), not the limit (64 MiB each call)
        expected = min(os.fstat(handle.fileno()).st_size, limit) + 1
        data = handle.read(expected)
        if len(data) == expected <= limit:  # it grew since the stat: the rest, up to the limit
            data += handle.read(limit + 1 - expected)
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"is larger than {limit} bytes, too large to read", str(path))
    return data


def read_prefix(path: Path, size: int, *, follow_symlinks: bool = True) -> bytes:
    """The first ``size`` bytes (or fewer) of a regular file; never blocks, never reads past ``size``."""
    with open_regular_file(path, follow_symlinks=follow_symlinks) as handle:
        return handle.read(size)


def iter_lines(handle: Iterable[bytes]) -> Iterator[bytes]:
    """Yield lines without their trailing ``\n`` (a CR is kept) from a binary handle, one at a time."""
    for line in handle:
        yield line[:-1] if line.endswith(b"\n") else line


class HashingReader:
    """A binary reader that hashes (SHA-256) and counts every byte it hands out.

    Readers use it like a file: ``read``, ``readline`` and line iteration.
    :meth:`finish` drains the rest so the digest always covers the whole file.

    A ``read`` that returns fewer bytes than asked (or one of everything) has reached the end:
    a buffered regular file returns short only there. Later reads and :meth:`finish` then read
    nothing more (no system call per file for an end already seen), so the digest covers exactly
    the bytes handed out: bytes appended after that end make the file differ from its digest
    (the import's and retirement's checks see a changed file) instead of being hashed unread.
    """

    def __init__(self, handle: BinaryIO) -> None:
        self._handle = handle
        self._digest = hashlib.sha256()
        self.size = 0
        self._ended = False
        self._expected = _regular_file_size(handle)

    def _capped(self, n: int) -> int:
        """``n``, but for a regular file no more than ``SMALL_READ`` or one byte past the end it had when this
        reader was made (``SMALL_READ``'s comment says why). Past that end (the file grew) reads are not capped;
        a short read is the end, as before."""
        if self.size <= self._expected:  # -1 (not a regular file): never
            return min(n, max(self._expected - self.size + 1, SMALL_READ))
        return n

    def _take(self, data: bytes) -> bytes:
        self._digest.update(data)
        self.size += len(data)
        return data

    def read(self, n: int = -1) -> bytes:
        if self._ended:
            return b""
        if n is not None and n > 0:
            n = self._capped(n)
        data = self._handle.read(n)
        if n is None or n < 0 or len(data) < n:
            self._ended = True
        return self._take(data)

    def readline(self, limit: int = -1) -> bytes:
        return self._take(self._handle.readline(limit))

    def __iter__(self) -> Iterator[bytes]:
        for line in self._handle:
            yield self._take(line)

    def finish(self) -> str:
        while not self._ended:
            self.read(CHUNK)
        return self._digest.hexdigest()


def _regular_file_size(handle: BinaryIO) -> int:
    """The size of the regular file open in ``handle``; -1 for anything else (a stream, a pipe, a wrapper)."""
    try:
        st = os.fstat(handle.fileno())
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return -1
    return st.st_size if stat.S_ISREG(st.st_mode) else -1
