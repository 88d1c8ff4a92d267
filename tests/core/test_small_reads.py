"""Reads of small regular files ask for what the file holds, not a 1 MiB block (``statekit.fsutil.SMALL_READ``).

A read of n bytes allocates n bytes first, and above glibc's mmap threshold that is an mmap and a munmap per
read: for a 5 KB transcript it cost more than reading and hashing it. What is pinned here is the size asked of
the file and that the bytes and digests stay exact when the file is exactly, less than, or more than what its
stat said (it grew or shrank after it was opened).
"""

from __future__ import annotations

import hashlib
import io
import os
from pathlib import Path
from typing import BinaryIO

import pytest

from statekit.fsutil import CHUNK, SMALL_READ, HashingReader, _sha256_rest, open_regular_file, protect_and_hash, sha256_file


class AskedSizes:
    """An open file that records the size of every ``read`` asked of it."""

    def __init__(self, handle: BinaryIO) -> None:
        self.handle = handle
        self.asked: list[int] = []

    def read(self, n: int = -1) -> bytes:
        self.asked.append(n)
        return self.handle.read(n)

    def fileno(self) -> int:
        return self.handle.fileno()


def _file(tmp_path: Path, size: int) -> tuple[Path, bytes]:
    data = os.urandom(size)
    path = tmp_path / f"f-{size}"
    path.write_bytes(data)
    return path, data


@pytest.mark.parametrize("size", [0, 1, 5_508, SMALL_READ - 1, SMALL_READ, SMALL_READ + 1, 200_000])
def test_the_first_read_asks_for_the_file_not_the_block(tmp_path: Path, size: int) -> None:
    path, data = _file(tmp_path, size)
    with open_regular_file(path) as raw:
        asked = AskedSizes(raw)
        reader = HashingReader(asked)  # type: ignore[arg-type]
        assert reader.read(CHUNK) == data
        assert reader.finish() == hashlib.sha256(data).hexdigest() and reader.size == size
    assert asked.asked == [max(size + 1, SMALL_READ)]  # the short read was the end: nothing more asked


def test_a_big_file_is_read_in_whole_blocks_and_its_tail_as_small(tmp_path: Path) -> None:
    path, data = _file(tmp_path, 3 * CHUNK + 17)
    with open_regular_file(path) as raw:
        asked = AskedSizes(raw)
        reader = HashingReader(asked)  # type: ignore[arg-type]
        got = b"".join(iter(lambda: reader.read(CHUNK), b""))
    assert got == data and asked.asked == [CHUNK, CHUNK, CHUNK, SMALL_READ]


def test_a_file_that_grew_after_it_was_opened_is_read_to_its_new_end(tmp_path: Path) -> None:
    """The read one byte past the stat'ed end comes back full: reads go on, uncapped, and the digest covers it all."""
    path = tmp_path / "grows.jsonl"
    path.write_bytes(b'{"a":1}\n')
    more = os.urandom(3 * SMALL_READ)
    with open_regular_file(path) as raw:
        asked = AskedSizes(raw)
        reader = HashingReader(asked)  # type: ignore[arg-type]
        with path.open("ab") as writer:
            writer.write(more)
        got = b"".join(iter(lambda: reader.read(CHUNK), b""))
        digest = reader.finish()
    assert got == b'{"a":1}\n' + more
    assert digest == hashlib.sha256(got).hexdigest() and reader.size == len(got)
    assert asked.asked[:2] == [SMALL_READ, CHUNK]


def test_a_file_that_shrank_after_it_was_opened_ends_where_it_ends(tmp_path: Path) -> None:
    path, data = _file(tmp_path, 100_000)
    with open_regular_file(path) as raw:
        reader = HashingReader(raw)
        os.truncate(path, 1_000)
        assert reader.read(CHUNK) == data[:1_000]
        assert reader.finish() == hashlib.sha256(data[:1_000]).hexdigest() and reader.size == 1_000


def test_a_stream_is_read_as_asked() -> None:
    """No regular file under it (a pipe, a wrapper, bytes in memory): the size asked goes through unchanged."""
    asked = AskedSizes(io.BytesIO(b"x" * 10))  # type: ignore[arg-type]
    reader = HashingReader(asked)  # type: ignore[arg-type]
    assert reader.read(CHUNK) == b"x" * 10 and asked.asked == [CHUNK]


@pytest.mark.parametrize("size", [0, 1, 5_508, SMALL_READ - 1, SMALL_READ, SMALL_READ + 1, CHUNK - 1, CHUNK, CHUNK + 5])
def test_file_digests_are_exact_at_every_size(tmp_path: Path, size: int) -> None:
    path, data = _file(tmp_path, size)
    expected = hashlib.sha256(data).hexdigest()
    assert sha256_file(path) == expected
    assert protect_and_hash(path, 0o600) == expected and path.stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize(("stat_size", "real_size"), [(10, SMALL_READ + 10), (SMALL_READ, 2 * SMALL_READ), (100_000, 50_000)])
def test_a_digest_covers_what_the_file_holds_when_it_is_read_not_its_stat(tmp_path: Path, stat_size: int, real_size: int) -> None:
    """Between the stat and the read a file may have grown or shrunk: the digest is of the bytes read to the end."""
    path, data = _file(tmp_path, real_size)
    with open_regular_file(path) as handle:
        assert _sha256_rest(handle, stat_size) == hashlib.sha256(data).hexdigest()
