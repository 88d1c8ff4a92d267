"""A second process that parses large transcripts while this one writes their rows: both cores in use.

SQLite has one writer, and Python threads share one core (every row bound is a hand-off of the GIL),
so the parse runs in a child process. For one transcript:

* this process reads the opened file in 1 MiB blocks through the apply loop's hashing reader (so the
  digest covers exactly the bytes read, once, as in one process) and writes them to the child while it
  waits for the child's replies (one thread: ``select`` on both pipes);
* the child splits, parses and checks the lines and builds the rows (:class:`TranscriptPass`, the
  same code as in one process) and sends them back a batch at a time, in file order;
* this process writes each batch while the child parses the next.

What reaches the caller is what one process gives, in the same order: the head, the batches, then the
tail, or the same :class:`SourceError` (its file, line and problem) after the batches before it. The
child stays up for the run's next large transcript; :meth:`TranscriptWorker.close` ends it. A child
that cannot be started leaves the file to be parsed here. A child that dies mid-file stops the run
(:class:`ParseWorkerLost`, an environmental error: nothing of the file is committed, the rerun imports it).
An interrupt or any error here kills the child before it propagates.

The child is forked (it needs no interpreter start and no imports), keeps only its two pipes, runs in
its own session (a Ctrl-C at the terminal reaches the run, which ends the child) and never runs an
inherited clean-up (``os._exit``). Frames, both ways: one kind byte, an 8-byte length, the payload.
"""

from __future__ import annotations

import builtins
import contextlib
import errno
import fcntl
import gc
import json
import os
import pickle
import struct
import select
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, BinaryIO, cast

from statekit.errors import SourceError
from statekit.legacy_readers.base import Source
from statekit.legacy_readers.transcripts import READ_BLOCK, EventMerge, TranscriptHead, TranscriptPass, TranscriptRun, TranscriptTail, local_pass

OFFLOAD_BYTES = 256 << 10
"""Transcripts from this size on are parsed by the child (smaller ones are imported in batches, in this process)."""

FIRST_BATCH_LINES = 16
BATCH_LINES = 256
BATCH_BYTES = 256 << 10
"""The child's batches: small, so that this process writes one while the child parses the next; the first
smaller still (they grow from 16 lines), so that this process waits little for a file's first rows."""

_FRAME = struct.Struct("<BQ")
_PIPE_READ = 1 << 20
_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
# this process -> the child
_JOB, _DATA, _END = 1, 2, 3
# the child -> this process
_HEAD, _ROWS, _TAIL, _ERROR, _CRASH = 11, 12, 13, 14, 15


class ParseWorkerLost(OSError):
    """The parse process ended in the middle of a transcript (killed, out of memory): the run stops.

    ``filename`` is the transcript (relative to the state dir); nothing of it was committed.
    """

    def __init__(self, rel: str, what: str = "ended mid-file (killed, or out of memory)") -> None:
        super().__init__(errno.ECHILD, f"the transcript parse process {what}", rel)


def _write_frame(out: IO[bytes], kind: int, payload: bytes = b"") -> None:
    out.write(_FRAME.pack(kind, len(payload)))
    if payload:
        out.write(payload)


def _read_exact(stream: IO[bytes], size: int) -> bytes:
    data = stream.read(size)
    if len(data) != size:
        raise EOFError
    return data


def _read_frame(stream: IO[bytes]) -> tuple[int, bytes]:
    kind, size = _FRAME.unpack(_read_exact(stream, _FRAME.size))
    return kind, _read_exact(stream, size) if size else b""


# --------------------------------------------------------------------------- the child


class _Frames:
    """The child's view of one file: ``read`` hands out the data frames until the file's end frame."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream
        self.ended = False

    def read(self, _size: int = -1) -> bytes:
        while not self.ended:
            kind, payload = _read_frame(self.stream)
            if kind == _END:
                self.ended = True
            elif payload:
                return payload
        return b""

    def drain(self) -> None:
        while self.read():
            pass


def _parse_one(job: dict[str, Any], stream: BinaryIO, out: BinaryIO) -> None:
    frames = _Frames(stream)
    source = Source(Path("/"), job["rel"], job["agent_id"])
    try:
        run = TranscriptPass(source, cast(BinaryIO, frames), job["abs_path"], job["fallback_ms"], BATCH_LINES, BATCH_BYTES,
                              FIRST_BATCH_LINES)
        _write_frame(out, _HEAD, pickle.dumps(run.head, pickle.HIGHEST_PROTOCOL))
        for batch in run.batches(EventMerge()):
            _write_frame(out, _ROWS, pickle.dumps(batch, pickle.HIGHEST_PROTOCOL))
            out.flush()
        _write_frame(out, _TAIL, pickle.dumps(run.tail, pickle.HIGHEST_PROTOCOL))
    except SourceError as exc:
        _write_frame(out, _ERROR, pickle.dumps((exc.path, exc.problem, exc.line, exc.json_path), pickle.HIGHEST_PROTOCOL))
    except Exception as exc:  # what one process would raise from the same bytes: the caller names it
        _write_frame(out, _CRASH, pickle.dumps((type(exc).__name__, str(exc)), pickle.HIGHEST_PROTOCOL))
    out.flush()
    frames.drain()  # the rest of the file's bytes (after an error): the next job starts at its own frame


def serve(stream: BinaryIO, out: BinaryIO) -> None:
    """The child's loop: one job frame, then the file's data frames, per transcript, until its input ends."""
    while True:
        try:
            kind, payload = _read_frame(stream)
        except EOFError:
            return
        if kind == _JOB:
            _parse_one(json.loads(payload), stream, out)


# --------------------------------------------------------------------------- this process

@dataclass
class _Child:
    """The parse process: its pid and this process's ends of its two pipes."""

    pid: int
    to_child: int
    from_child: int

    def alive(self) -> bool:
        try:
            return os.waitpid(self.pid, os.WNOHANG) == (0, 0)
        except ChildProcessError:
            return False


def _fork_child() -> _Child:
    """Fork the parse process. It has every module this one has (no interpreter start, no imports), keeps only its
    two pipes (every other inherited descriptor, the databases' and the lock's among them, is closed), leaves the
    terminal's session and ignores SIGINT, and ends with ``os._exit`` (no inherited clean-up ever runs in it)."""
    job_r, job_w = os.pipe()
    reply_r, reply_w = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        for fd in (job_r, job_w, reply_r, reply_w):
            os.close(fd)
        raise
    if pid == 0:  # the child
        code = 1
        try:
            gc.freeze()  # the inherited objects: never scanned here, so their pages stay shared (no copy on write)
            os.setsid()
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.dup2(job_r, 0)
            os.dup2(reply_w, 1)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 2)
            os.closerange(3, _max_fd())
            with os.fdopen(0, "rb") as stream, os.fdopen(1, "wb") as out:
                serve(stream, out)
            code = 0
        finally:
            os._exit(code)
    os.close(job_r)
    os.close(reply_w)
    for fd in (job_w, reply_r):
        with contextlib.suppress(OSError):  # Linux: room for a whole block, fewer wake-ups
            fcntl.fcntl(fd, _F_SETPIPE_SZ, _PIPE_READ)
    os.set_blocking(job_w, False)  # _Offloaded writes what the pipe takes, and reads the replies meanwhile
    return _Child(pid, job_w, reply_r)


def _max_fd() -> int:
    try:
        return max(os.sysconf("SC_OPEN_MAX"), 256)
    except (OSError, ValueError):
        return 65536


class TranscriptWorker:
    """The run's parse process, started by :meth:`start` (or the first large transcript), reused after."""

    def __init__(self) -> None:
        self._child: _Child | None = None
        self._unavailable = False

    def transcript(self, source: Source, handle: BinaryIO, fallback_ms: int) -> contextlib.AbstractContextManager[TranscriptRun]:
        """A :class:`TranscriptPass`-like run of ``source`` (``head``, ``batches(merge)``, ``tail``), parsed by the child.

        Parsed here when the child cannot be started.
        """
        child = self._started()
        if child is None:
            return local_pass(source, handle, fallback_ms)
        return _offloaded(self, child, source, handle, fallback_ms)

    def start(self) -> None:
        """Start the child now, before the run opens its files; a no-op when it runs."""
        self._started()

    def _started(self) -> _Child | None:
        if self._child is not None:
            if self._child.alive():
                return self._child
            _close_pipes(self._child)  # it ended between files and ``alive`` reaped it: its pid is no longer ours to signal
            self._child = None
        if self._unavailable:
            return None
        try:
            self._child = _fork_child()
        except OSError:
            self._unavailable = True
            return None
        return self._child

    def kill(self) -> None:
        """End the child at once (an error or an interrupt mid-file): the next large file starts a new one."""
        child, self._child = self._child, None
        if child is None:
            return
        with contextlib.suppress(OSError):
            os.kill(child.pid, signal.SIGKILL)
        _reap(child)

    def close(self) -> None:
        """End the child: its input closes, it returns, it is reaped."""
        child, self._child = self._child, None
        if child is not None:
            _reap(child)


def _close_pipes(child: _Child) -> None:
    for fd in (child.to_child, child.from_child):
        with contextlib.suppress(OSError):
            os.close(fd)


def _reap(child: _Child) -> None:
    _close_pipes(child)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(child.pid, 0)


class _Offloaded:
    """This process's side of one transcript the child parses (the shape of :class:`TranscriptPass`).

    One thread, no GIL hand-offs: while it waits for the child's next reply it reads the file's next
    block through the caller's hashing reader and writes it to the child (``select`` on both pipes;
    the child's input is non-blocking). A read error of the source is raised here as it happens (the
    child, mid-file, is then ended). ``settled`` once the child has replied for the whole file (its
    tail, or an error) and has the file's end frame: it then waits for its next job.
    """

    def __init__(self, child: _Child, source: Source, handle: BinaryIO, fallback_ms: int) -> None:
        self.rel = source.rel
        self.handle = handle
        self.to_child = child.to_child
        self.from_child = child.from_child
        job = {"rel": source.rel, "agent_id": source.agent_id, "abs_path": os.path.abspath(source.path), "fallback_ms": fallback_ms}
        payload = json.dumps(job).encode("utf-8")
        self.outgoing = bytearray(_FRAME.pack(_JOB, len(payload)) + payload)  # queued: written as the child takes it
        self.incoming = bytearray()
        self.file_done = False  # the end frame is queued: nothing more of the file is read
        self.tail: TranscriptTail | None = None
        self.settled = False
        self.head: TranscriptHead  # the child's first reply (start)

    def start(self) -> None:
        kind, value = self._next()
        if kind != _HEAD:
            raise ParseWorkerLost(self.rel, f"sent frame {kind} before the header")
        self.head = value

    def batches(self, merge: EventMerge) -> Iterator[tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]]:
        assert not merge.merging, "a merge runs in this process"
        while True:
            kind, value = self._next()
            if kind == _TAIL:
                self.tail = value
                self.settled = True
                return
            if kind != _ROWS:
                raise ParseWorkerLost(self.rel, f"sent frame {kind} among the rows")
            yield value

    def _next(self) -> tuple[int, Any]:
        """The child's next reply, feeding it the file meanwhile."""
        while True:
            frame = self._frame()
            if frame is not None:
                break
            writing = [self.to_child] if self.outgoing or not self.file_done else []
            readable, writable, _ = select.select([self.from_child], writing, [])
            if writable:
                self._feed()
            if readable:
                self._receive()
        kind, payload = frame
        value = pickle.loads(payload)
        if kind in (_ERROR, _CRASH):
            self._end_file()  # the child drains to the file's end frame and waits for its next job
            self.settled = True
            if kind == _ERROR:
                path, problem, line, json_path = value
                raise SourceError(path, problem, line=line, json_path=json_path)
            raise _as_raised_here(*value)
        return kind, value

    def _frame(self) -> tuple[int, bytes] | None:
        if len(self.incoming) < _FRAME.size:
            return None
        kind, size = _FRAME.unpack_from(self.incoming)
        end = _FRAME.size + size
        if len(self.incoming) < end:
            return None
        payload = bytes(self.incoming[_FRAME.size:end])
        del self.incoming[:end]
        return kind, payload

    def _receive(self) -> None:
        try:
            data = os.read(self.from_child, _PIPE_READ)
        except OSError:
            data = b""
        if not data:
            raise ParseWorkerLost(self.rel)
        self.incoming += data

    def _feed(self) -> None:
        """Write what is queued (as much as the pipe takes); when nothing is, queue the file's next block."""
        if not self.outgoing:
            block = self.handle.read(READ_BLOCK)  # hashed (and counted) by the caller's reader, here, once
            self.outgoing += _FRAME.pack(_DATA if block else _END, len(block))
            self.outgoing += block
            self.file_done = not block
        try:
            written = os.write(self.to_child, self.outgoing)
        except BlockingIOError:
            return
        except OSError:  # the child is gone: its end is read next
            written = len(self.outgoing)
            self.file_done = True
        del self.outgoing[:written]

    def _end_file(self) -> None:
        """After an error reply: the rest of the queued frame, then the file's end frame (the rest is not read)."""
        if not self.file_done:
            self.outgoing += _FRAME.pack(_END, 0)
            self.file_done = True
        os.set_blocking(self.to_child, True)
        try:
            while self.outgoing:
                del self.outgoing[:os.write(self.to_child, self.outgoing)]
        finally:
            os.set_blocking(self.to_child, False)


def _as_raised_here(name: str, text: str) -> Exception:
    """The child's unexpected exception as this process would have raised it (a built-in type keeps its type, so
    a ``RecursionError`` is still "input too deeply nested"); anything else a ``RuntimeError`` naming it."""
    found = getattr(builtins, name, None)
    if isinstance(found, type) and issubclass(found, Exception):
        with contextlib.suppress(Exception):
            return found(text)
    return RuntimeError(f"{name}: {text}" if text else name)


@contextlib.contextmanager
def _offloaded(worker: TranscriptWorker, child: _Child, source: Source, handle: BinaryIO,
               fallback_ms: int) -> Iterator[_Offloaded]:
    run = _Offloaded(child, source, handle, fallback_ms)
    try:
        run.start()
        yield run
    finally:
        if not run.settled:  # mid-file (an error or an interrupt here, the child gone): end the child
            worker.kill()


__all__ = ["OFFLOAD_BYTES", "ParseWorkerLost", "TranscriptWorker", "serve"]
