"""The seeking frame walk and digest check ``backup verify`` ran before the forward pass (statekit 2ef7472,
``backup/statekit_format.py``), kept as the oracle the streaming walk is compared with."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import BinaryIO

from statekit.backup.archive import DIGEST_MAGIC, DIGEST_TAG, parse_digest_trailer


def _hash_range(fh: BinaryIO, start: int, end: int) -> bytes:
    digest = hashlib.sha256()
    fh.seek(start)
    left = end - start
    while left > 0:
        block = fh.read(min(1 << 20, left))
        if not block:
            break
        digest.update(block)
        left -= len(block)
    return digest.digest()


def seek_structure_problem(path: Path) -> str | None:
    """Walk the zstd frame and block headers: catches truncation and trailing garbage.

    (A zstd stream reader stops quietly at a cut-off frame; content checksums
    are checked by the decompressor while the payload streams.)
    """
    size = os.path.getsize(path)
    with open(path, "rb") as fh:
        pos = 0
        frames = 0
        while pos < size:
            fh.seek(pos)
            magic = fh.read(4)
            if len(magic) < 4:
                return f"archive is truncated (partial zstd frame header at byte {pos})"
            value = int.from_bytes(magic, "little")
            if 0x184D2A50 <= value <= 0x184D2A5F:  # skippable frame
                length = fh.read(4)
                if len(length) < 4:
                    return f"archive is truncated (skippable frame at byte {pos})"
                pos += 8 + int.from_bytes(length, "little")
                if pos > size:
                    return f"archive is truncated (skippable frame runs past the end of the file)"
                continue
            if magic != b"\x28\xb5\x2f\xfd":
                return f"unexpected data after the last zstd frame at byte {pos}" if frames else "not a zstd archive"
            descriptor = fh.read(1)
            if not descriptor:
                return f"archive is truncated (zstd frame header at byte {pos})"
            d = descriptor[0]
            fcs_flag, single, checksum, dict_flag = d >> 6, (d >> 5) & 1, (d >> 2) & 1, d & 3
            header = 1 + (0 if single else 1) + (0, 1, 2, 4)[dict_flag] + ((1 if single else 0), 2, 4, 8)[fcs_flag]
            pos += 4 + header
            while True:
                fh.seek(pos)
                raw = fh.read(3)
                if len(raw) < 3:
                    return f"archive is truncated (zstd block header at byte {pos} of {size})"
                block = int.from_bytes(raw, "little")
                last, btype, bsize = block & 1, (block >> 1) & 3, block >> 3
                if btype == 3:
                    return f"corrupt zstd block header at byte {pos}"
                pos += 3 + (1 if btype == 1 else bsize)
                if pos > size:
                    return f"archive is truncated (zstd block at byte {pos - bsize} runs past the end of the file)"
                if last:
                    break
            pos += 4 if checksum else 0
            if pos > size:
                return "archive is truncated (zstd frame checksum missing)"
            frames += 1
    return None if frames else "archive holds no zstd frame"


def _frame_end(fh: BinaryIO, pos: int, size: int) -> int | None:
    """End offset of the zstd frame starting at ``pos`` (None if its headers do not add up)."""
    fh.seek(pos + 4)
    descriptor = fh.read(1)
    if not descriptor:
        return None
    d = descriptor[0]
    fcs_flag, single, checksum, dict_flag = d >> 6, (d >> 5) & 1, (d >> 2) & 1, d & 3
    pos += 5 + (0 if single else 1) + (0, 1, 2, 4)[dict_flag] + ((1 if single else 0), 2, 4, 8)[fcs_flag]
    while True:
        fh.seek(pos)
        raw = fh.read(3)
        if len(raw) < 3:
            return None
        block = int.from_bytes(raw, "little")
        btype, bsize = (block >> 1) & 3, block >> 3
        pos += 3 + (1 if btype == 1 else bsize)
        if pos > size:
            return None
        if block & 1:
            break
    return pos + (4 if checksum else 0)


def seek_digest_problem(path: Path) -> tuple[str | None, bool]:
    """Check the archive digest trailer: (problem or None, whether a trailer was found).

    Covers every compressed byte, including bits a decoder ignores. Archives
    without a trailer (built by other tools or tests) are checked by their
    frame checksums and member hashes only.
    """
    size = os.path.getsize(path)
    with open(path, "rb") as opened:
        fh: BinaryIO = opened
        if fh.read(4) != b"\x28\xb5\x2f\xfd":
            return None, False
        head_end = _frame_end(fh, 0, size)
        if head_end is None or size < head_end + 8:
            return None, False
        fh.seek(size - 8 - len(DIGEST_TAG) - 64)
        tail = fh.read()
        parsed = parse_digest_trailer(tail[8:])
        magic_ok = int.from_bytes(tail[:4], "little") == DIGEST_MAGIC
        if parsed is None and not magic_ok:
            return None, False
        if parsed is None or not magic_ok or int.from_bytes(tail[4:8], "little") != len(tail) - 8:
            return "archive digest trailer is malformed (altered)", True
        trailer_start = size - len(tail)
        if trailer_start < head_end:
            return "archive digest trailer overlaps the manifest frame", True
        head_sha, payload_sha = parsed
        if _hash_range(fh, 0, head_end) != head_sha:
            return "archive bytes do not match the recorded digest (manifest frame altered)", True
        if _hash_range(fh, head_end, trailer_start) != payload_sha:
            return "archive bytes do not match the recorded digest (payload altered)", True
    return None, True
