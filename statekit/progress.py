"""Progress reporting for the long operations, without any rendering.

The library's long functions (``build_plan``, ``migrate``, ``create_backup``, ``verify_archive``,
``restore_archive``) take ``progress``: a callable that is told how many units were done since the
last call. A sink that also has :meth:`PhasedProgress.phase` is told when a phase starts, with its
total and unit, so a renderer can show "verify 120 MB of 600 MB, 80 MB/s, ETA 0:00:06". A plain
callable (a test's ``list.append``) works too: :func:`start_phase` skips it. The CLI's renderer
(rich, on a TTY only) lives in :mod:`statekit.output`; nothing here imports rich.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import BinaryIO, Literal, Protocol, runtime_checkable

Unit = Literal["bytes", "sources", "files"]
ProgressFn = Callable[[int], None]

#: How many bytes :class:`ProgressReader` gathers before it tells the sink (keeps the per-line cost nil).
REPORT_EVERY = 1 << 18


@runtime_checkable
class PhasedProgress(Protocol):
    """A progress sink that knows about phases (the CLI's bar)."""

    def __call__(self, done: int) -> None: ...

    def phase(self, name: str, total: int | None, unit: Unit = "bytes") -> None: ...


def start_phase(progress: ProgressFn | None, name: str, total: int | None, unit: Unit = "bytes") -> None:
    """Tell ``progress`` that phase ``name`` starts (``total`` units, None when unknown); plain callables ignore it."""
    if isinstance(progress, PhasedProgress):
        progress.phase(name, total, unit)


def null_progress(_done: int) -> None:
    """The sink used when nobody watches."""


class ProgressReader:
    """A binary reader that reports the bytes handed out to a progress sink, in batches of :data:`REPORT_EVERY`.

    Wraps the file a reader or verifier consumes (``read``, ``readline``, line iteration), so a
    single 500 MB source still moves the bar. Only used when a sink is watching.
    """

    def __init__(self, handle: BinaryIO, progress: ProgressFn) -> None:
        self._handle = handle
        self._progress = progress
        self._pending = 0

    def _count(self, data: bytes) -> bytes:
        self._pending += len(data)
        if self._pending >= REPORT_EVERY:
            self._progress(self._pending)
            self._pending = 0
        return data

    def read(self, n: int = -1) -> bytes:
        return self._count(self._handle.read(n))

    def readline(self, limit: int = -1) -> bytes:
        return self._count(self._handle.readline(limit))

    def readinto(self, buffer: bytearray | memoryview) -> int:
        n = self._handle.readinto(buffer)  # type: ignore[attr-defined]
        self._pending += n or 0
        if self._pending >= REPORT_EVERY:
            self._progress(self._pending)
            self._pending = 0
        return int(n or 0)

    def __iter__(self) -> Iterator[bytes]:
        for line in self._handle:
            yield self._count(line)

    def flush_progress(self) -> int:
        """Report what is still pending; returns it."""
        pending, self._pending = self._pending, 0
        if pending:
            self._progress(pending)
        return pending

    def __getattr__(self, name: str) -> object:  # seek, tell, close, fileno ... of the wrapped file
        return getattr(self._handle, name)


__all__ = ["PhasedProgress", "ProgressFn", "ProgressReader", "REPORT_EVERY", "Unit", "null_progress", "start_phase"]
