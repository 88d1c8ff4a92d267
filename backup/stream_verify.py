"""One forward pass over a statekit archive's compressed bytes, from any non-seekable stream.

:class:`ForwardPass` is a pass-through reader: the zstd decompressor (and through it the tar reader and the
member checks of ``statekit_format``) reads the archive through it, and as each byte passes it

* walks the zstd frame and block headers (:class:`ZstdWalk`): truncation, trailing garbage and corrupt block
  headers are judged with the messages the seeking walk gave, at the end of the stream (a walk needs the size
  only to word a truncation, and a truncation is only known there);
* hashes every compressed byte once for the digest trailer: the bytes of the first frame into one SHA-256, the
  bytes after it into another, holding back the last :data:`TRAILER_LEN` bytes (a small tail buffer) so that
  at the end of the stream the trailer is parsed from the tail and the payload digest covers exactly
  ``[end of the first frame, start of the trailer)``, as the trailer claims.

Nothing is seeked and nothing is kept but the tail: a local file, an S3 ``GetObject`` body or the plaintext
of an age decryption all verify the same way, in one read of each byte.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from enum import Enum
from typing import BinaryIO, Protocol

from statekit.backup.archive import DIGEST_MAGIC, DIGEST_TAG, ZSTD_MAGIC, parse_digest_trailer
from statekit.fsutil import CHUNK

TRAILER_LEN = 8 + len(DIGEST_TAG) + 64  # a skippable frame header, the tag, two SHA-256 digests
SKIPPABLE = range(0x184D2A50, 0x184D2A60)
NO_TRAILER_NOTE = "archive has no digest trailer: checked by zstd frame checksums and member hashes only"


class Readable(Protocol):
    def read(self, n: int = -1, /) -> bytes: ...


class _State(Enum):
    FRAME = "frame magic"  # 4 bytes at ``mark``
    SKIP_LEN = "skippable frame length"  # 4 bytes after a skippable magic
    DESCRIPTOR = "frame descriptor"  # 1 byte after the zstd magic
    BLOCK = "block header"  # 3 bytes at ``mark``
    SKIP = "skipping"  # content nobody walks: up to ``skip_to``
    FRAME_END = "frame end"  # after the last block: the content checksum, if the frame has one
    FRAME_DONE = "frame done"


_NEEDS = {_State.FRAME: 4, _State.SKIP_LEN: 4, _State.DESCRIPTOR: 1, _State.BLOCK: 3}


class _Skip(Enum):
    SKIPPABLE = "skippable"
    HEADER = "header"
    BLOCK = "block"
    CHECKSUM = "checksum"


class ZstdWalk:
    """The zstd frame/block walk, fed the stream chunk by chunk (``feed``), judged at its end (``finish``)."""

    def __init__(self) -> None:
        self.state = _State.FRAME
        self.cursor = 0  # absolute offset of the next byte the walk looks at
        self.mark = 0  # where the element being read (frame, block) starts
        self.frame_start = 0
        self.frames = 0
        self.problem: str | None = None
        self.first_is_zstd: bool | None = None  # the archive starts with a zstd frame (a digest trailer needs it)
        self.head_end: int | None = None  # end of that first frame: the manifest frame the trailer's first digest covers
        self._buf = bytearray()
        self._skip_to = 0
        self._skip_kind = _Skip.HEADER
        self._after_skip = _State.BLOCK
        self._block_size = 0
        self._checksum = False

    def _skip(self, to: int, kind: _Skip, after: _State, block_size: int = 0) -> None:
        self._skip_to, self._skip_kind, self._after_skip, self._block_size = to, kind, after, block_size
        self.state = _State.SKIP

    def feed(self, chunk: bytes | memoryview, base: int) -> None:
        """Walk the headers inside ``chunk``, whose first byte is at offset ``base`` (chunks come in order)."""
        end = base + len(chunk)
        while self.problem is None:
            state = self.state
            if state is _State.SKIP:
                if self._skip_to > end:
                    return
                self.cursor, self.state = self._skip_to, self._after_skip
                continue
            if state is _State.FRAME_END:
                if self._checksum:
                    self._skip(self.cursor + 4, _Skip.CHECKSUM, _State.FRAME_DONE)
                else:
                    self.state = _State.FRAME_DONE
                continue
            if state is _State.FRAME_DONE:
                self.frames += 1
                if self.frames == 1 and self.frame_start == 0 and self.first_is_zstd:
                    self.head_end = self.cursor
                self.state = _State.FRAME
                continue
            need = _NEEDS[state]
            if not self._buf:
                self.mark = self.cursor if state in (_State.FRAME, _State.BLOCK) else self.mark
            take = min(need - len(self._buf), end - self.cursor)
            if take <= 0:
                return
            start = self.cursor - base
            self._buf += chunk[start : start + take]
            self.cursor += take
            if len(self._buf) < need:
                return
            header, self._buf = bytes(self._buf), bytearray()
            self._header(state, header)

    def _header(self, state: _State, raw: bytes) -> None:
        if state is _State.FRAME:
            self.frame_start = self.mark
            value = int.from_bytes(raw, "little")
            if self.mark == 0:
                self.first_is_zstd = raw == ZSTD_MAGIC
            if value in SKIPPABLE:
                self.state = _State.SKIP_LEN
            elif raw != ZSTD_MAGIC:
                self.problem = f"unexpected data after the last zstd frame at byte {self.mark}" if self.frames else "not a zstd archive"
            else:
                self.state = _State.DESCRIPTOR
        elif state is _State.SKIP_LEN:
            self._skip(self.frame_start + 8 + int.from_bytes(raw, "little"), _Skip.SKIPPABLE, _State.FRAME)
        elif state is _State.DESCRIPTOR:
            d = raw[0]
            fcs_flag, single, dict_flag = d >> 6, (d >> 5) & 1, d & 3
            self._checksum = bool((d >> 2) & 1)
            header = 1 + (0 if single else 1) + (0, 1, 2, 4)[dict_flag] + ((1 if single else 0), 2, 4, 8)[fcs_flag]
            self._skip(self.frame_start + 4 + header, _Skip.HEADER, _State.BLOCK)
        else:  # a block header
            block = int.from_bytes(raw, "little")
            last, btype, bsize = block & 1, (block >> 1) & 3, block >> 3
            if btype == 3:
                self.problem = f"corrupt zstd block header at byte {self.mark}"
                return
            self._skip(self.mark + 3 + (1 if btype == 1 else bsize), _Skip.BLOCK,
                       _State.FRAME_END if last else _State.BLOCK, block_size=bsize)

    def finish(self, size: int) -> str | None:
        """The structure problem of a stream of ``size`` bytes that has been fed whole, or None."""
        if self.problem is not None:
            return self.problem
        state = self.state
        if state is _State.SKIP:
            if self._skip_kind is _Skip.SKIPPABLE:
                return "archive is truncated (skippable frame runs past the end of the file)"
            if self._skip_kind is _Skip.HEADER:  # the first block header would start past the end
                return f"archive is truncated (zstd block header at byte {self._skip_to} of {size})"
            if self._skip_kind is _Skip.BLOCK:
                return f"archive is truncated (zstd block at byte {self._skip_to - self._block_size} runs past the end of the file)"
            return "archive is truncated (zstd frame checksum missing)"
        if state is _State.FRAME and not self._buf:
            return None if self.frames else "archive holds no zstd frame"
        if state is _State.FRAME:
            return f"archive is truncated (partial zstd frame header at byte {self.mark})"
        if state is _State.SKIP_LEN:
            return f"archive is truncated (skippable frame at byte {self.frame_start})"
        if state is _State.DESCRIPTOR:
            return f"archive is truncated (zstd frame header at byte {self.frame_start})"
        return f"archive is truncated (zstd block header at byte {self.mark} of {size})"


@dataclass(frozen=True)
class PassVerdict:
    """What the forward pass found about the compressed bytes (the tar stream is judged by its reader)."""

    structure: str | None  # a zstd structure problem (then the digest is not judged)
    digest: str | None  # a digest trailer problem
    has_trailer: bool
    size: int  # compressed bytes read


class ForwardPass:
    """A pass-through reader over ``source`` that walks and hashes every byte it hands out (see module doc).

    Errors of ``source`` itself (a disk, a network) are kept in :attr:`error` and raised again by every later
    read: they say nothing about the archive, and the caller raises them instead of judging it."""

    def __init__(self, source: Readable) -> None:
        self._source = source
        self.walk = ZstdWalk()
        self.size = 0
        self.eof = False
        self.error: BaseException | None = None
        self._head = hashlib.sha256()
        self._payload = hashlib.sha256()
        self._held = b""  # bytes after the first frame not hashed yet: at most TRAILER_LEN, the possible trailer
        self._tail = b""  # the last TRAILER_LEN bytes seen

    def read(self, n: int = -1) -> bytes:
        if self.error is not None:
            raise self.error
        if self.eof:
            return b""
        try:
            data = self._source.read(CHUNK if n is None or n < 0 else n)
        except Exception as exc:
            self.error = exc
            raise
        if not data:
            self.eof = True
            return b""
        self._observe(data)
        return data

    def readinto(self, buffer: bytearray | memoryview) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def _observe(self, data: bytes) -> None:
        base = self.size
        self.size += len(data)
        self._tail = data[-TRAILER_LEN:] if len(data) >= TRAILER_LEN else (self._tail + data)[-TRAILER_LEN:]
        walk = self.walk
        if walk.problem is not None:
            return
        walk.feed(data, base)
        if walk.problem is not None or walk.first_is_zstd is False:
            return  # a broken structure or an archive not starting with a zstd frame: no digest is judged
        split = walk.head_end
        if split is None or split >= self.size:
            self._head.update(data)
        elif split <= base:
            self._to_payload(memoryview(data))
        else:
            view = memoryview(data)
            self._head.update(view[: split - base])
            self._to_payload(view[split - base :])

    def _to_payload(self, view: memoryview) -> None:
        if len(view) >= TRAILER_LEN:
            if self._held:
                self._payload.update(self._held)
            self._payload.update(view[:-TRAILER_LEN])
            self._held = bytes(view[-TRAILER_LEN:])
            return
        combined = self._held + bytes(view)
        if len(combined) > TRAILER_LEN:
            self._payload.update(combined[:-TRAILER_LEN])
        self._held = combined[-TRAILER_LEN:]

    def drain(self) -> None:
        """Read the rest of the stream (whatever the decompressor left): the walk and the digests need every byte."""
        try:
            while self.read(CHUNK):
                pass
        except Exception:
            if self.error is None:
                raise

    def finish(self) -> PassVerdict:
        """Judge the structure and the digest trailer; call after :meth:`drain`."""
        structure = self.walk.finish(self.size)
        if structure:
            return PassVerdict(structure, None, False, self.size)
        problem, has_trailer = self._digest_problem()
        return PassVerdict(None, problem, has_trailer, self.size)

    def _digest_problem(self) -> tuple[str | None, bool]:
        head_end = self.walk.head_end
        if not self.walk.first_is_zstd or head_end is None or self.size < head_end + 8:
            return None, False
        tail = self._tail
        parsed = parse_digest_trailer(tail[8:])
        magic_ok = int.from_bytes(tail[:4], "little") == DIGEST_MAGIC
        if parsed is None and not magic_ok:
            return None, False
        if parsed is None or not magic_ok or int.from_bytes(tail[4:8], "little") != len(tail) - 8:
            return "archive digest trailer is malformed (altered)", True
        if self.size - len(tail) < head_end:
            return "archive digest trailer overlaps the manifest frame", True
        head_sha, payload_sha = parsed
        if self._head.digest() != head_sha:
            return "archive bytes do not match the recorded digest (manifest frame altered)", True
        if self._payload.digest() != payload_sha:
            return "archive bytes do not match the recorded digest (payload altered)", True
        return None, True


def forward_verdict(source: BinaryIO) -> PassVerdict:
    """The structure and digest verdict of a whole stream, without decompressing it."""
    forward = ForwardPass(source)
    forward.drain()
    if forward.error is not None:
        raise forward.error
    return forward.finish()
