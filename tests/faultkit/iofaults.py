"""I/O faults for the reliability suite: chosen file-system calls fail with a chosen errno.

Installed only by test code (:func:`install_io_faults`, called by the forked
children of ``rel_harness.fork_cli`` and by ``faultkit.run_statekit`` from
``STATEKIT_IOFAULT``); importing statekit never patches anything. A spec is
comma-separated items, each ``op:ERRNO:N[:PATH_SUBSTRING]``:

* ``op``: ``write`` (``os.write`` and writes through file objects opened for
  writing), ``fsync``, ``rename``, ``replace``, ``link``, ``open`` (opening a
  file for writing), ``read`` (opening a file for reading: ``EACCES`` here is
  how a test running as root sees a file it may not read), ``mkdir``, ``copy``
  (``os.copy_file_range`` / ``os.sendfile``), ``unlink``, ``chmod``, or ``*``
  (any of them);
* ``ERRNO``: a name from :mod:`errno` (``ENOSPC``, ``EIO``, ``EDQUOT``, ``EROFS``...);
* ``N``: the N-th matching call fails (1-based); ``N+`` makes that call and
  every later one fail (a disk that stays full);
* ``PATH_SUBSTRING``: only calls on paths containing it count (``=PATH``:
  only that exact path; file descriptors are resolved through
  ``/proc/self/fd``; stdin/stdout/stderr, pipes and sockets never count).

Only Python-level calls are reached: SQLite's own writes happen in C, so the
suite adds a size-capped tmpfs (real ENOSPC) and ``RLIMIT_FSIZE`` (EFBIG) for
those.
"""

from __future__ import annotations

import builtins
import errno as _errno
import io
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

OPS = ("write", "fsync", "rename", "replace", "link", "open", "read", "mkdir", "copy", "unlink", "chmod")
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_real: dict[str, Callable[..., Any]] = {}


@dataclass
class FaultRule:
    op: str
    errno: int
    nth: int
    sticky: bool = False
    path: str | None = None
    seen: int = 0
    fired: int = 0

    def matches(self, op: str, path: str | None) -> bool:
        if self.op != "*" and self.op != op:
            return False
        if self.path is None:
            return True
        if path is None:
            return False
        return path == self.path[1:] if self.path.startswith("=") else self.path in path


@dataclass
class FaultPlan:
    rules: list[FaultRule] = field(default_factory=list)

    @property
    def fired(self) -> int:
        return sum(rule.fired for rule in self.rules)


_plan: FaultPlan | None = None


def parse_io_spec(spec: str) -> FaultPlan:
    plan = FaultPlan()
    for item in filter(None, (part.strip() for part in spec.split(","))):
        parts = item.split(":", 3)
        if len(parts) < 3:
            raise ValueError(f"I/O fault item {item!r}: expected op:ERRNO:N[:path]")
        op, name, nth = parts[0], parts[1], parts[2]
        if op != "*" and op not in OPS:
            raise ValueError(f"I/O fault item {item!r}: unknown op {op!r}")
        code = getattr(_errno, name, None)
        if not isinstance(code, int):
            raise ValueError(f"I/O fault item {item!r}: unknown errno {name!r}")
        sticky = nth.endswith("+")
        plan.rules.append(FaultRule(op, code, int(nth.rstrip("+")), sticky, parts[3] if len(parts) == 4 else None))
    return plan


def _fd_path(fd: int) -> str | None:
    if fd <= 2:
        return None
    try:
        target = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None
    return target if target.startswith("/") else None  # pipes, sockets, anon inodes: never


def _path_of(value: Any) -> str | None:
    if isinstance(value, int):
        return _fd_path(value)
    try:
        return os.fsdecode(os.fspath(value))
    except TypeError:
        return None


def _check(op: str, path: str | None, filename: Any = None) -> None:
    plan = _plan
    if plan is None or path is None:
        return
    for rule in plan.rules:
        if not rule.matches(op, path):
            continue
        rule.seen += 1
        if rule.seen == rule.nth or (rule.sticky and rule.seen > rule.nth):
            rule.fired += 1
            code = rule.errno
            raise OSError(code, f"{os.strerror(code)} (injected)", filename if filename is not None else path)


class _FaultyFile:
    """A file object opened for writing whose writes pass through the fault check."""

    def __init__(self, inner: Any, path: str | None) -> None:
        self._inner = inner
        self._path = path

    def write(self, data: Any) -> Any:
        _check("write", self._path)
        return self._inner.write(data)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __enter__(self) -> _FaultyFile:
        self._inner.__enter__()
        return self

    def __exit__(self, *exc: Any) -> Any:
        return self._inner.__exit__(*exc)

    def __iter__(self) -> Any:
        return iter(self._inner)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _writing_mode(mode: str) -> bool:
    return any(ch in mode for ch in "wax+")


def _patched() -> dict[str, Callable[..., Any]]:
    real = _real

    def write(fd: int, data: Any) -> int:
        _check("write", _fd_path(fd))
        return real["write"](fd, data)

    def fsync(fd: Any) -> None:
        number = fd if isinstance(fd, int) else fd.fileno()
        _check("fsync", _fd_path(number))
        return real["fsync"](fd)

    def rename(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
        _check("rename", _path_of(dst) or _path_of(src), src)
        return real["rename"](src, dst, *args, **kwargs)

    def replace(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
        _check("replace", _path_of(dst) or _path_of(src), src)
        return real["replace"](src, dst, *args, **kwargs)

    def link(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
        _check("link", _path_of(dst), dst)
        return real["link"](src, dst, *args, **kwargs)

    def open_(path: Any, flags: int, mode: int = 0o777, *args: Any, **kwargs: Any) -> int:
        _check("open" if flags & _WRITE_FLAGS else "read", _path_of(path), path)
        return real["open"](path, flags, mode, *args, **kwargs)

    def mkdir(path: Any, *args: Any, **kwargs: Any) -> None:
        _check("mkdir", _path_of(path), path)
        return real["mkdir"](path, *args, **kwargs)

    def unlink(path: Any, *args: Any, **kwargs: Any) -> None:
        _check("unlink", _path_of(path), path)
        return real["unlink"](path, *args, **kwargs)

    def chmod(path: Any, *args: Any, **kwargs: Any) -> None:
        _check("chmod", _path_of(path), path)
        return real["chmod"](path, *args, **kwargs)

    def copy_file_range(src: int, dst: int, *args: Any, **kwargs: Any) -> int:
        _check("copy", _fd_path(dst))
        return real["copy_file_range"](src, dst, *args, **kwargs)

    def sendfile(out_fd: int, in_fd: int, *args: Any, **kwargs: Any) -> int:
        _check("copy", _fd_path(out_fd))
        return real["sendfile"](out_fd, in_fd, *args, **kwargs)

    def file_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if _writing_mode(mode):
            path = _path_of(file)
            if not isinstance(file, int):
                _check("open", path, file)
            handle = real["io.open"](file, mode, *args, **kwargs)
            try:
                resolved = _fd_path(handle.fileno())
            except (OSError, ValueError):
                resolved = path
            return _FaultyFile(handle, resolved)
        if not isinstance(file, int):
            _check("read", _path_of(file), file)
        return real["io.open"](file, mode, *args, **kwargs)

    return {
        "write": write,
        "fsync": fsync,
        "rename": rename,
        "replace": replace,
        "link": link,
        "open": open_,
        "mkdir": mkdir,
        "unlink": unlink,
        "chmod": chmod,
        "copy_file_range": copy_file_range,
        "sendfile": sendfile,
        "io.open": file_open,
    }


def install_io_faults(spec: str | FaultPlan) -> FaultPlan:
    """Patch the ``os`` / ``io`` calls listed in the module doc; returns the live plan (its counts)."""
    global _plan
    plan = parse_io_spec(spec) if isinstance(spec, str) else spec
    if not _real:
        for name in ("write", "fsync", "rename", "replace", "link", "open", "mkdir", "unlink", "chmod", "copy_file_range", "sendfile"):
            if hasattr(os, name):
                _real[name] = getattr(os, name)
        _real["io.open"] = io.open
        for name, func in _patched().items():
            if name == "io.open":
                io.open = func  # type: ignore[assignment]  # os.fdopen and pathlib call io.open
                builtins.open = func  # type: ignore[assignment]
            elif name in _real:
                setattr(os, name, func)
    _plan = plan
    return plan


def uninstall_io_faults() -> None:
    """Undo :func:`install_io_faults` (in-process tests)."""
    global _plan
    _plan = None
    if not _real:
        return
    for name, func in _real.items():
        if name == "io.open":
            io.open = func  # type: ignore[assignment]
            builtins.open = func  # type: ignore[assignment]
        else:
            setattr(os, name, func)
    _real.clear()


def io_faults_fired() -> int:
    return 0 if _plan is None else _plan.fired


def real(name: str) -> Callable[..., Any]:
    """The unpatched ``os`` function ``name`` (what the fault layer itself must call)."""
    return _real.get(name, getattr(os, name))


__all__ = [
    "OPS",
    "FaultPlan",
    "FaultRule",
    "install_io_faults",
    "io_faults_fired",
    "parse_io_spec",
    "real",
    "uninstall_io_faults",
]
