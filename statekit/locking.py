"""Run locks (kernel ``flock``: released when the process dies) and gateway detection."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from statekit.errors import BusyError
from statekit.fsutil import ensure_inside, ensure_private_dir, open_own_file, read_prefix
from statekit.layout import STATEKIT_DIR_NAME

LOCK_READ_LIMIT = 4096  # a gateway lock file holds a pid and a few fields; nothing larger is read
PROC_READ_LIMIT = 1 << 20


def _lock_root(path: Path) -> Path:
    """The tree a lock file must stay inside: the state dir for ``<state>/.statekit/lock``, else its own directory."""
    return path.parent.parent if path.parent.name == STATEKIT_DIR_NAME else path.parent


@contextmanager
def exclusive_lock(path: Path, what: str, *, shared: bool = False) -> Iterator[Path]:
    """Hold an exclusive, non-blocking ``flock`` on ``path`` (created 0600) or raise BusyError.

    The lock file stays on disk; the kernel drops the lock when the holder
    exits, even on SIGKILL, so a crashed run never blocks the next one. It is
    opened through :func:`statekit.fsutil.open_own_file`: a symlink planted at
    the lock (or a symlinked ``.statekit`` leading out of the state dir) is
    refused with one line, never followed, never truncated.
    ``shared``: a shared lock instead (``backup create``: any number of readers, excluded by every writer
    holding it exclusively -- migrate, in-place restore, recover); a shared holder does not write its pid.
    """
    ensure_inside(path, _lock_root(path))
    ensure_private_dir(path.parent)
    fd = open_own_file(path)
    try:
        try:
            fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                holder = _read_holder(fd)
                raise BusyError(f"{what} is busy: another statekit run holds {path}{holder}") from None
            raise
        if not shared:
            os.ftruncate(fd, 0)
            os.write(fd, json.dumps({"pid": os.getpid()}).encode())
        yield path
    finally:
        os.close(fd)


def _read_holder(fd: int) -> str:
    try:
        data = os.pread(fd, 256, 0)
        pid = json.loads(data or b"{}").get("pid")
        return f" (pid {pid})" if pid else ""
    except (OSError, ValueError, AttributeError, RecursionError):
        return ""


def is_locked(path: Path) -> bool:
    """True when another process holds the flock on ``path`` (never creates the file, never follows a link)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (ours counts; an impossible pid does not)."""
    if pid <= 0 or pid == os.getpid():
        return pid == os.getpid()
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # no such process / not a pid at all
        return False
    except PermissionError:
        return True
    return True


def _lock_pid(path: Path) -> int | None:
    try:  # OpenClaw's file: a FIFO or a link to /dev/zero there must neither hang nor balloon the run
        text = read_prefix(path, LOCK_READ_LIMIT).decode("utf-8", errors="replace").strip()
    except OSError:
        return None
    try:
        data = json.loads(text)
        pid = data.get("pid") if isinstance(data, dict) else data
    except (ValueError, RecursionError):
        pid = text.split()[0] if text else None
    try:
        return int(pid) if pid is not None else None
    except (TypeError, ValueError, OverflowError):  # also Infinity, NaN, 1e999
        return None


def _gateway_lock_files(state_dir: Path) -> list[Path]:
    candidates = list(state_dir.glob("gateway.*.lock")) + list(state_dir.glob("gateway.lock"))
    tmp_root = Path(tempfile.gettempdir()) / f"openclaw-{os.getuid()}" if hasattr(os, "getuid") else None
    if tmp_root and tmp_root.is_dir():
        candidates += list(tmp_root.glob("gateway.*.lock"))
    return candidates


def _lock_mentions(path: Path, state_dir: Path) -> bool:
    if path.parent == state_dir:
        return True
    try:
        text = read_prefix(path, LOCK_READ_LIMIT).decode("utf-8", errors="replace")
    except OSError:
        return False
    return str(state_dir) in text


def running_gateway(state_dir: Path) -> str | None:
    """Describe a live OpenClaw gateway using ``state_dir``, or None.

    Looks for gateway lock files (in the state dir, and OpenClaw's
    ``$TMPDIR/openclaw-<uid>/gateway.*.lock`` naming this state dir) whose
    recorded pid is alive, and for processes whose command line runs an
    OpenClaw gateway with this state dir in their environment.
    """
    for lock in _gateway_lock_files(state_dir):
        pid = _lock_pid(lock)
        if pid is not None and pid_alive(pid) and _lock_mentions(lock, state_dir):
            return f"gateway pid {pid} (lock {lock})"
    proc = Path("/proc")
    if not proc.is_dir():
        return None
    target = str(state_dir)
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = read_prefix(entry / "cmdline", PROC_READ_LIMIT).replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        lowered = cmdline.lower()
        if "gateway" not in lowered or not any(n in lowered for n in ("openclaw", "clawdbot", "moltbot")):
            continue
        if "statekit" in lowered:
            continue
        try:
            environ = read_prefix(entry / "environ", PROC_READ_LIMIT).split(b"\0")
        except OSError:
            environ = []
        env = dict(item.decode("utf-8", "replace").split("=", 1) for item in environ if b"=" in item)
        state = env.get("OPENCLAW_STATE_DIR") or env.get("CLAWDBOT_STATE_DIR")
        if state is None and env.get("HOME"):
            state = str(Path(env["HOME"]) / ".openclaw")
        if state and os.path.realpath(state) == os.path.realpath(target):
            return f"gateway pid {entry.name} ({cmdline.strip()[:80]})"
    return None


def refuse_if_gateway_running(state_dir: Path) -> None:
    found = running_gateway(state_dir)
    if found:
        raise BusyError(f"{state_dir}: an OpenClaw gateway is running on this state dir ({found}); stop it first")
