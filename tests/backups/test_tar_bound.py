"""The verifier's decompressed-size bound is what tar really writes (issue 16, "Correct bounds").

Every member whose path is longer than 100 characters gets a PAX extended header; the old bound allowed
3 x 512 bytes of overhead per member, so installs of ~15,000+ files failed ``backup create`` with
"decompression bomb". The bound is now computed per declared member and checked against tarfile itself.
"""

from __future__ import annotations

import ast
import io
import random
import tarfile
from pathlib import Path

import pytest
import zstandard

from statekit.backup import verify_archive
from statekit.backup import manifest as mf
from statekit.backup import statekit_format
from statekit.backup.checks import BOUND_SLACK, RECORD, tar_archive_size, tar_member_size
from statekit.backup.create import create_backup
from statekit.backup.restore import restore_archive
from backup_helpers import Member, rewrite, tree_state


def _tarfile_bytes(infos: list[tuple[tarfile.TarInfo, bytes]]) -> tuple[int, int]:
    """What Python's tarfile writes (PAX_FORMAT, plain "w" mode, as ArchiveWriter does) for these members:
    (bytes of the members, bytes of the finished archive)."""
    buffer = io.BytesIO()
    with tarfile.TarFile(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for info, data in infos:
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
        members = len(buffer.getvalue())
    return members, len(buffer.getvalue())


def _info(name: str, kind: bytes, size: int = 0, linkname: str = "", mtime: int = 0) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.size, info.mtime, info.linkname = kind, size, mtime, linkname
    info.mode, info.uid, info.gid, info.uname, info.gname = 0o600, 0, 0, "", ""
    return info


ALPHABET = "abcdefghij/_-.0123456789" + "éü漢" + "\udcff"  # ASCII, UTF-8 and a surrogate (undecodable byte)


def _name(rng: random.Random, length: int, ascii_only: bool) -> str:
    chars = ALPHABET[:24] if ascii_only else ALPHABET
    return "r/" + "".join(rng.choice(chars) for _ in range(length)).strip("/") + "x"


@pytest.mark.parametrize("seed", range(6))
def test_member_size_is_exactly_what_tarfile_writes(seed):
    rng = random.Random(seed)
    for _ in range(300):
        length = rng.choice([1, 50, 97, 98, 99, 100, 101, 102, rng.randint(1, 400), rng.randint(400, 3000)])
        name = _name(rng, length, ascii_only=rng.random() < 0.7)
        kind = rng.choice([tarfile.REGTYPE, tarfile.REGTYPE, tarfile.DIRTYPE, tarfile.SYMTYPE])
        size = rng.choice([0, 1, 511, 512, 513, rng.randint(0, 5000)]) if kind == tarfile.REGTYPE else 0
        link = _name(rng, rng.choice([5, 99, 100, 101, rng.randint(1, 300)]), ascii_only=rng.random() < 0.7) if kind == tarfile.SYMTYPE else ""
        mtime = rng.choice([0, 1_700_000_000, 8**11 - 1, 8**11, -5])
        info = _info(name, kind, size, link, mtime)
        actual, _ = _tarfile_bytes([(info, bytes(size))])
        assert tar_member_size(name, size=size, linkname=link, mtime=mtime, directory=kind == tarfile.DIRTYPE) == actual, (name, kind, size, link, mtime)


def test_member_size_for_a_size_past_the_ustar_field():
    info = _info("big.bin", tarfile.REGTYPE, 8**11)
    header = info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")
    assert tar_member_size("big.bin", size=8**11) == len(header) + 8**11  # 8 GiB: a multiple of 512, no padding


@pytest.mark.parametrize("seed", range(3))
def test_archive_size_is_exact_for_random_members(seed):
    rng = random.Random(100 + seed)
    members = []
    for _ in range(rng.randint(1, 400)):
        name = _name(rng, rng.randint(1, 250), ascii_only=rng.random() < 0.8)
        members.append((_info(name, tarfile.REGTYPE, rng.randint(0, 3000)), b""))
    members = [(info, bytes(info.size)) for info, _ in members]
    member_bytes, actual = _tarfile_bytes(members)
    computed = sum(tar_member_size(i.name, size=i.size) for i, _ in members)
    assert computed == member_bytes and tar_archive_size(computed) == actual and actual % RECORD == 0


def test_no_fixed_per_member_allowance_is_left_in_the_bound():
    """The per-member 3 x 512 guess is gone from statekit's verifier (its source no longer names it)."""
    tree = ast.parse(Path(statekit_format.__file__).read_text())
    names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    assert "HEADER_ALLOWANCE" not in names and "tar_member_size" in names


# --------------------------------------------------------------------------- thousands of files under long paths

# The old bound's fixed 1 MiB slack absorbed 512 bytes per tiny long-path member for ~2,000 members:
# 3,000 already failed (the CI case); 20,000 is the install of the issue (under -m slow: ~1 minute).
SHAPES = [pytest.param(3_000, id="3000-files"), pytest.param(20_000, id="20000-files", marks=pytest.mark.slow)]


def _wide_state(root: Path, files: int) -> Path:
    """A state dir of ``files`` tiny files, each under a path of 110+ characters inside the archive."""
    state = root / "home" / ".openclaw"
    sessions = state / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True, mode=0o700)
    state.chmod(0o700)
    for index in range(files):
        name = f"session-{index:06d}-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0-transcript-archive.jsonl"
        (sessions / name).write_bytes(b'{"type":"session"}\n')
    return state


@pytest.mark.parametrize("files", SHAPES)
def test_thousands_of_long_paths_back_up_verify_and_restore(files, tmp_path):
    wide_state = _wide_state(tmp_path, files)
    result = create_backup(wide_state, tmp_path / "out")  # includes its verify pass
    assert result.verified
    manifest = mf.Manifest.parse(_manifest_bytes(result.archive_path))
    long_paths = [a for a in manifest.assets if len(a.archive_path) > 100]
    assert len(long_paths) >= files  # every file needs a PAX header

    report = verify_archive(result.archive_path)
    assert report.ok, report.problems[:5]
    assert report.assets_verified == len(manifest.assets)
    head = _head_info(result.archive_path)
    bound = statekit_format._declared_bound(manifest, head)
    assert report.decompressed_bytes <= bound <= report.decompressed_bytes + BOUND_SLACK + RECORD
    old_bound = (head.size + manifest.declared_totals["bytes"] + (len(manifest.assets) + 2) * 3 * 512
                 + manifest.declared_totals["bytes"] // 100 + (1 << 20))
    assert report.decompressed_bytes > old_bound  # what made `backup create` fail with "decompression bomb"

    target = tmp_path / "restored"
    restore_archive(result.archive_path, target=target)
    assert tree_state(target / "agents") == tree_state(wide_state / "agents")


def _head_info(archive: Path) -> tarfile.TarInfo:
    with open(archive, "rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True) as stream:
        with tarfile.open(fileobj=stream, mode="r|") as tar:
            return tar.next()


def _manifest_bytes(archive: Path) -> bytes:
    with open(archive, "rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True) as stream:
        with tarfile.open(fileobj=stream, mode="r|") as tar:
            member = tar.next()
            handle = tar.extractfile(member)
            return handle.read()


def test_a_little_more_than_the_slack_is_already_a_bomb(state_tree, tmp_path):
    """The bound is tight: an undeclared member only 1 MiB + 2 records over the exact size is cut off."""
    good = create_backup(state_tree.root, tmp_path / "out", record=False).archive_path
    extra = BOUND_SLACK + 2 * RECORD

    def change(members):
        root = members[0].info.name.split("/")[0]
        info = tarfile.TarInfo(f"{root}/payload/state/extra.bin")
        info.size = extra
        members.append(Member(info, bytes(extra)))

    repacked = verify_archive(rewrite(good, tmp_path / "same.tar.zst", lambda members: None))
    assert repacked.ok, repacked.problems  # one tar stream written by another producer: within the bound
    report = verify_archive(rewrite(good, tmp_path / "extra.tar.zst", change))
    assert any("decompression bomb" in p for p in report.problems), report.problems
