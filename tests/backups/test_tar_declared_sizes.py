"""Issue 11 item 7 (archives): tar members with absurd declared sizes are rejected from their header, before reading.

tarfile reads a PAX or GNU long-name header's data into memory in one piece, so a header declaring 2^60
bytes in front of a zstd bomb made ``verify`` read (and hold) hundreds of MB before the decompression bound
stopped it; a member whose header disagrees with the manifest was read up to the bound. Now each header is
checked against the manifest and the remaining bound first.
"""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from pathlib import Path

import pytest
import zstandard

from helpers import run_cli_peak_rss
from statekit.backup import create_backup, verify_archive
from statekit.backup.archive import EXTENDED_HEADER_MAX

HUGE = 1 << 60


def _members(archive: Path) -> list[tuple[tarfile.TarInfo, bytes]]:
    raw = zstandard.ZstdDecompressor().stream_reader(open(archive, "rb"), read_across_frames=True).read()
    with tarfile.open(fileobj=io.BytesIO(raw), mode="r:") as tar:
        return [(info, tar.extractfile(info).read() if info.isreg() else b"") for info in tar]  # type: ignore[union-attr]


def _header(name: str, kind: bytes, size: int) -> bytes:
    """One raw 512-byte header declaring ``size`` (base-256 when it does not fit octal), no data after it."""
    info = tarfile.TarInfo(name)
    info.type, info.size, info.mode = kind, size, 0o600
    return info.tobuf(tarfile.GNU_FORMAT, "utf-8", "surrogateescape")


def _tar_bytes(members: list[tuple[tarfile.TarInfo, bytes]]) -> bytes:
    buffer = io.BytesIO()
    tar = tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT)
    for info, data in members:
        tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return buffer.getvalue()[: tar.offset]  # no end blocks: more follows


def _zero_bomb(path: Path, head: bytes, zeros: int) -> Path:
    """``head`` then ``zeros`` zero bytes, zstd-compressed (a few KB on disk)."""
    with open(path, "wb") as raw:
        with zstandard.ZstdCompressor(level=1, write_checksum=True).stream_writer(raw) as out:
            out.write(head)
            chunk = b"\0" * (1 << 20)
            for _ in range(zeros >> 20):
                out.write(chunk)
    return path


def _small_archive(tmp_path: Path) -> Path:
    state = tmp_path / ".openclaw"
    (state / "agents" / "main" / "sessions").mkdir(parents=True)
    (state / "openclaw.json").write_text("{}")
    (state / "agents" / "main" / "sessions" / "s1.jsonl").write_text('{"type":"session"}\n')
    result = create_backup(state, tmp_path / "out", record=False)
    assert result.archive_path is not None
    return result.archive_path


def _verify_in_child(archive: Path) -> tuple[int, str, int]:
    """``statekit backup verify`` in a new interpreter: exit code, output, and its own peak RSS in MB."""
    proc, peak_mb = run_cli_peak_rss("backup", "verify", archive)
    return proc.returncode, proc.stdout + proc.stderr, int(peak_mb)


def test_a_pax_header_declaring_2_to_the_60_is_refused_unread(tmp_path: Path) -> None:
    """Fails on 308a7ed: the header made tarfile read 256 MB of the bomb behind it into memory before the bound hit."""
    head = _header("././@PaxHeader", tarfile.XHDTYPE, HUGE)
    bomb = _zero_bomb(tmp_path / "pax-bomb.tar.zst", head, 400 << 20)
    assert bomb.stat().st_size < 1 << 20
    code, output, peak_mb = _verify_in_child(bomb)
    assert code == 5, output
    assert f"declares {HUGE} bytes" in output and "rejected before reading" in output, output
    assert peak_mb < 200, f"verify held {peak_mb} MB"
    assert "Traceback" not in output


@pytest.mark.parametrize("size", [HUGE, 4096])
def test_a_member_whose_header_disagrees_with_the_manifest_is_refused_unread(tmp_path: Path, size: int) -> None:
    """The 2^60 case fails on 308a7ed (read up to the decompression bound, not refused from its header); the 4096 case
    pins that a size within the bound is named from the header against the manifest, its data unread."""
    archive = _small_archive(tmp_path)
    members = _members(archive)
    manifest = json.loads(members[0][1])
    target = next(a for a in manifest["assets"] if a["archive_path"].endswith("s1.jsonl"))
    kept = [(i, d) for i, d in members if i.name != target["archive_path"]]
    head = _tar_bytes(kept) + _header(target["archive_path"], tarfile.REGTYPE, size)
    bomb = _zero_bomb(tmp_path / "member-bomb.tar.zst", head, 64 << 20)
    report = verify_archive(bomb)
    assert not report.ok
    if size == HUGE:
        assert any(f"declares {size} bytes" in p and "rejected before reading" in p for p in report.problems), report.problems
    else:  # within the bound: named by its header against the manifest; its data is never read
        assert any(f"size {size}, manifest records" in p for p in report.problems), report.problems


def test_an_undeclared_member_with_a_huge_size_is_refused_unread(tmp_path: Path) -> None:
    archive = _small_archive(tmp_path)
    members = _members(archive)
    root = members[0][0].name.split("/", 1)[0]
    head = _tar_bytes(members) + _header(f"{root}/payload/state/extra.bin", tarfile.REGTYPE, HUGE)
    bomb = _zero_bomb(tmp_path / "undeclared.tar.zst", head, 8 << 20)
    report = verify_archive(bomb)
    assert not report.ok
    assert any("rejected before reading" in p for p in report.problems), report.problems


def test_a_long_name_header_past_the_limit_is_refused(tmp_path: Path) -> None:
    head = _header("././@LongLink", tarfile.GNUTYPE_LONGNAME, EXTENDED_HEADER_MAX + 1)
    bomb = _zero_bomb(tmp_path / "longname.tar.zst", head, 4 << 20)
    report = verify_archive(bomb)
    assert not report.ok and any("rejected before reading" in p for p in report.problems), report.problems


def test_an_openclaw_archive_member_past_the_bound_is_refused_unread(tmp_path: Path) -> None:
    """The OpenClaw ``.tar.gz`` format declares its sizes at the end: a member past the ratio bound is refused from its header."""
    raw = _header("2026-01-01T00-00-00.000Z-openclaw-backup/payload/posix/x", tarfile.REGTYPE, HUGE) + b"\0" * 4096
    archive = tmp_path / "2026-01-01T00-00-00.000+00-00-openclaw-backup.tar.gz"
    archive.write_bytes(gzip.compress(raw))
    report = verify_archive(archive)
    assert not report.ok
    assert any(f"declares {HUGE} bytes" in p and "rejected before reading" in p for p in report.problems), report.problems
