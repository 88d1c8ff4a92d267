"""Verify in one forward pass (issues 14 and 16): the archive is read once, front to back, from any stream.

* The streaming walk of :mod:`statekit.backup.stream_verify` gives exactly the verdicts (same messages) of the
  seeking walk and digest check verify ran before (the oracle in ``seek_walk_reference.py``), over truncations
  at and around every frame and block boundary, corrupt block headers, trailing data, skippable frames, with
  the bytes arriving in pieces of every size.
* ``verify_stream`` over a pipe (nothing to seek) gives the report ``verify_archive`` gives for the file.
* A local verify reads each byte of the archive once (the kernel's read counter), where it read it twice.
* An age-encrypted archive is verified without a plaintext copy on disk: under a file-size limit smaller than
  the archive, where the decrypted scratch copy failed.

All of these fail on 2ef7472: ``stream_verify`` and ``verify_stream`` did not exist, verify read the file twice
and decrypted into a scratch copy of the whole archive.
"""

from __future__ import annotations

import io
import os
import random
import resource
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import zstandard
from pyrage import x25519

from seek_walk_reference import seek_digest_problem, seek_structure_problem
from statekit.backup.archive import DIGEST_MAGIC, digest_trailer
from statekit.backup.create import create_backup
from statekit.backup.encryption import Recipients
from statekit.backup.stream_verify import ForwardPass, ZstdWalk
from statekit.backup.verify import verify_archive, verify_stream

REPO = Path(__file__).resolve().parents[2]


class Dribble:
    """A non-seekable reader handing out the bytes in pieces of random sizes (a pipe, a socket)."""

    def __init__(self, data: bytes, rng: random.Random, most: int) -> None:
        self._data = memoryview(data)
        self._at = 0
        self._rng = rng
        self._most = most

    def read(self, n: int = -1) -> bytes:
        n = len(self._data) if n is None or n < 0 else n
        take = min(n, self._rng.randint(1, self._most))
        block = bytes(self._data[self._at : self._at + take])
        self._at += len(block)
        return block


def stream_verdict(data: bytes, rng: random.Random, most: int) -> tuple[str | None, tuple[str | None, bool]]:
    forward = ForwardPass(Dribble(data, rng, most))
    forward.drain()
    verdict = forward.finish()
    return verdict.structure, (verdict.digest, verdict.has_trailer)


def seek_verdict(path: Path) -> tuple[str | None, tuple[str | None, bool]]:
    structure = seek_structure_problem(path)
    return structure, ((None, False) if structure else seek_digest_problem(path))


def boundaries(data: bytes) -> list[int]:
    """Every frame start, header end, block header and block end of a sound archive (walked with the streaming walk)."""
    marks: list[int] = []
    walk = ZstdWalk()
    for at in range(len(data)):
        before = (walk.state, walk.cursor)
        walk.feed(data[at : at + 1], at)
        if (walk.state, walk.cursor) != before:
            marks.append(walk.cursor)
    return sorted(set(marks))


@pytest.fixture
def archive(state_tree, tmp_path) -> Path:
    (state_tree.root / "media").mkdir()
    (state_tree.root / "media" / "noise.bin").write_bytes(random.Random(3).randbytes(300_000))  # several blocks
    return create_backup(state_tree.root, tmp_path / "out", record=False).archive_path


def _variants(data: bytes, rng: random.Random) -> Iterator[tuple[str, bytes]]:
    marks = boundaries(data)
    assert len(marks) > 20, "the archive has several frames and blocks"
    cuts = {c for m in marks for c in range(m - 3, m + 4) if 0 <= c < len(data)}
    cuts |= set(range(0, 64)) | set(range(len(data) - 120, len(data))) | set(rng.sample(range(len(data)), 100))
    for cut in sorted(cuts):
        yield f"cut at {cut}", data[:cut]
    for mark in marks[:-1]:
        for offset in range(3):  # a block header (or what follows a frame header) altered
            for value in (0x06, 0xFF, 0x00):
                mutated = bytearray(data)
                mutated[mark + offset] = value
                yield f"byte {mark + offset} = {value:#x}", bytes(mutated)
    yield "trailing junk", data + b"junk"
    yield "trailing zstd magic", data + b"\x28\xb5\x2f\xfd"
    yield "a second trailer", data + data[-96:]
    yield "skippable frame first", DIGEST_MAGIC.to_bytes(4, "little") + (5).to_bytes(4, "little") + b"12345" + data
    yield "skippable frame only", DIGEST_MAGIC.to_bytes(4, "little") + (5).to_bytes(4, "little") + b"12345"
    yield "skippable frame cut", DIGEST_MAGIC.to_bytes(4, "little") + (500).to_bytes(4, "little") + b"12345"
    yield "no trailer", data[:-96]
    yield "trailer with a wrong length", data[:-92] + (87).to_bytes(4, "little") + data[-88:]
    yield "trailer of other bytes", data[:-96] + digest_trailer(bytes(32), bytes(32))
    yield "an empty frame", zstandard.ZstdCompressor().compress(b"")
    yield "two frames, trailer overlapping", zstandard.ZstdCompressor().compress(b"x") + digest_trailer(bytes(32), bytes(32))


def test_streaming_walk_gives_the_seeking_walks_verdicts(archive, tmp_path):
    data = archive.read_bytes()
    rng = random.Random(14)
    probe = tmp_path / "probe.tar.zst"
    checked = 0
    for number, (label, variant) in enumerate(_variants(data, rng)):
        if len(variant) < 96 and len(variant) >= 8 and variant.startswith(b"\x28\xb5\x2f\xfd"):
            continue  # the seeking check seeked before the start of such a file (an OSError): no verdict to match
        probe.write_bytes(variant)
        expected = seek_verdict(probe)
        # pieces of 1..4096 and 1..1 MiB bytes for every variant; of 1..7 bytes (every header split) for a sample
        for most in (4096, 1 << 20, *((7,) if number % 400 == 0 or len(variant) < 8_000 else ())):
            assert stream_verdict(variant, rng, most) == expected, (label, most)
        checked += 1
    assert checked > 500


def test_a_sound_archive_has_a_sound_trailer_and_every_flip_of_it_is_seen(archive):
    data = archive.read_bytes()
    assert stream_verdict(data, random.Random(1), 1 << 20) == (None, (None, True))
    for position in (0, 40, len(data) // 2, len(data) - 50, len(data) - 1):
        mutated = bytearray(data)
        mutated[position] ^= 0x01
        structure, (digest, _trailer) = stream_verdict(bytes(mutated), random.Random(position), 1 << 16)
        assert structure or digest, position


def _pipe(data: bytes) -> tuple[io.FileIO, threading.Thread]:
    read_fd, write_fd = os.pipe()

    def feed() -> None:
        with io.FileIO(write_fd, "wb") as out:
            try:
                out.write(data)
            except BrokenPipeError:
                pass

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    return io.FileIO(read_fd, "rb"), writer


def _same_report(path: Path) -> None:
    expected = verify_archive(path).to_json()
    reader, writer = _pipe(path.read_bytes())
    with reader:
        got = verify_stream(path, reader).to_json()
    writer.join()
    assert got == expected


def test_verify_from_a_pipe_reports_what_verify_of_the_file_reports(archive, tmp_path):
    data = archive.read_bytes()
    _same_report(archive)
    assert verify_archive(archive).ok
    hostile = {
        "cut.tar.zst": data[: len(data) // 2],
        "flip.tar.zst": data[:5000] + bytes([data[5000] ^ 0x10]) + data[5001:],
        "junk.tar.zst": data + b"junk",
        "no-trailer.tar.zst": data[:-96],
        "bomb.tar.zst": data + zstandard.ZstdCompressor().compress(bytes(64 << 20)),
    }
    for name, variant in hostile.items():
        bad = tmp_path / name
        bad.write_bytes(variant)
        assert not verify_archive(bad).ok or name == "no-trailer.tar.zst", name
        _same_report(bad)


def _read_bytes_counter() -> int:
    """Bytes this process has read through read(2) and the like (``rchar`` of /proc/self/io)."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar in /proc/self/io")


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="needs Linux /proc/<pid>/io")
def test_a_local_verify_reads_each_archive_byte_once(state_tree, tmp_path):
    (state_tree.root / "media").mkdir()
    (state_tree.root / "media" / "big.bin").write_bytes(os.urandom(24 << 20))  # a large member that is no database
    archive = create_backup(state_tree.root, tmp_path / "out", record=False, verify=False).archive_path
    size = archive.stat().st_size
    verify_archive(archive)  # imports and caches warmed
    before = _read_bytes_counter()
    report = verify_archive(archive)
    read = _read_bytes_counter() - before
    assert report.ok, report.problems
    assert size <= read < size * 1.25, (read, size)  # the databases' scratch copies are read by integrity_check: small


def _run_under_file_size_limit(limit: int, *args: object) -> subprocess.CompletedProcess[str]:
    """``statekit ARGS`` in a child that cannot write any file larger than ``limit`` bytes (RLIMIT_FSIZE: EFBIG)."""

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.run([sys.executable, "-m", "statekit", *map(str, args)], capture_output=True, text=True,
                          preexec_fn=cap, timeout=300, cwd=REPO, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})


def test_an_encrypted_archive_is_verified_without_a_plaintext_copy(state_tree, tmp_path):
    (state_tree.root / "media").mkdir()
    (state_tree.root / "media" / "big.bin").write_bytes(os.urandom(6 << 20))
    identity = x25519.Identity.generate()
    key = tmp_path / "key.txt"
    key.write_text(f"{identity}\n")
    result = create_backup(state_tree.root, tmp_path / "out", record=False, recipients=Recipients((identity.to_public(),)))
    archive = result.archive_path
    assert archive.name.endswith(".tar.zst.age") and archive.stat().st_size > 6 << 20
    largest_db = max(p.stat().st_size for p in state_tree.root.rglob("*.sqlite"))
    limit = 2 << 20
    assert largest_db < limit < archive.stat().st_size
    proc = _run_under_file_size_limit(limit, "backup", "verify", archive, "--identity", key)
    assert proc.returncode == 0, proc.stderr
    assert "OK" in proc.stdout
    mutated = bytearray(archive.read_bytes())
    mutated[len(mutated) // 2] ^= 0x01
    bad = tmp_path / "bad.tar.zst.age"
    bad.write_bytes(bytes(mutated))
    proc = _run_under_file_size_limit(limit, "backup", "verify", bad, "--identity", key)
    assert proc.returncode == 5 and "failed authentication" in proc.stderr and "Traceback" not in proc.stderr
