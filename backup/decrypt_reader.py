"""The plaintext of an age-encrypted archive as a readable stream, decrypted on the fly (no copy on disk).

``pyrage.decrypt_io`` pushes plaintext into a writable file object. :func:`decrypting_reader` runs it in a
thread that writes into a pipe and hands the caller the pipe's read end: the caller (verify) pulls the
plaintext as it needs it, while the ciphertext streams in from a local file or an S3 body. Memory stays at
the pipe and two buffers; nothing is written to disk.

age authenticates every 64 KiB chunk before pyrage hands it out, and the end of the stream (a truncated one
fails). The verdict of the decryption is only known when the thread ends: on leaving the ``with`` block the
thread is joined and a decryption failure (:class:`~statekit.errors.VerificationError`, or
:class:`~statekit.backup.encryption.WrongIdentity`) is raised then, whatever the caller concluded from the
plaintext it read. The caller must read to the end of the stream (verify does: every byte is checked).
"""

from __future__ import annotations

import fcntl
import io
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, BinaryIO

from statekit.backup.encryption import Identities, decrypt_stream
from statekit.fsutil import CHUNK

PIPE_BUFFER = CHUNK  # the writer's buffer: pyrage writes 8 KiB pieces, the pipe takes them a MiB at a time


class _Decryption(threading.Thread):
    def __init__(self, source: Any, write_fd: int, identities: Identities, where: str) -> None:
        super().__init__(name="statekit-age-decrypt", daemon=True)
        self._source = source
        self._write_fd = write_fd
        self._identities = identities
        self._where = where
        self.error: BaseException | None = None

    def run(self) -> None:
        sink = io.BufferedWriter(io.FileIO(self._write_fd, "wb", closefd=True), buffer_size=PIPE_BUFFER)
        try:
            with sink:
                decrypt_stream(self._source, sink, self._identities, self._where)
        except BaseException as exc:  # kept for the reader's side: raised when the ``with`` block ends
            self.error = exc


@contextmanager
def decrypting_reader(source: Any, identities: Identities, where: str) -> Iterator[BinaryIO]:
    """A reader of the plaintext of the age stream ``source`` (see module doc); ``where`` names it in errors."""
    read_fd, write_fd = os.pipe()
    try:
        fcntl.fcntl(write_fd, fcntl.F_SETPIPE_SZ, PIPE_BUFFER)  # fewer, larger reads and writes (Linux; else the default)
    except (AttributeError, OSError):
        pass
    reader = io.FileIO(read_fd, "rb", closefd=True)
    worker = _Decryption(source, write_fd, identities, where)
    try:
        worker.start()
    except BaseException:
        os.close(write_fd)
        reader.close()
        raise
    try:
        yield reader
    finally:
        reader.close()  # a writer still running gets EPIPE (the caller stopped early) and ends
        worker.join()
    if worker.error is not None and not isinstance(worker.error, BrokenPipeError):
        raise worker.error
