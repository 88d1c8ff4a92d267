"""backup verify: every bad input of the issue is reported (exit 5 at the CLI), one line per problem."""

from __future__ import annotations

import hashlib
import json
import tarfile
from pathlib import Path

import pytest
import zstandard

from statekit.backup.create import create_backup
from statekit.backup.verify import link_escapes, member_path_problem, verify_archive
from backup_helpers import Member, add_asset, manifest_of, rewrite, set_manifest, tar_info, write_members
from helpers import open_db


@pytest.fixture
def good(state_tree, tmp_path) -> Path:
    return create_backup(state_tree.root, tmp_path / "out", record=False).archive_path


def _problems(path: Path) -> list[str]:
    report = verify_archive(path)
    assert not report.ok
    assert report.problems
    return report.problems


def _file_member(members: list[Member], suffix: str) -> Member:
    return next(m for m in members if m.info.name.endswith(suffix))


def test_fresh_archive_verifies_and_is_not_modified(good):
    before = hashlib.sha256(good.read_bytes()).hexdigest()
    report = verify_archive(good)
    assert report.ok, report.problems
    assert report.format == "statekit"
    assert report.manifest is not None and report.assets_verified == report.manifest.declared_totals["assets"]
    assert hashlib.sha256(good.read_bytes()).hexdigest() == before


def test_truncated_archive(good, tmp_path):
    data = good.read_bytes()
    for cut in (len(data) - 3, len(data) // 2, 100):
        bad = tmp_path / f"cut{cut}.tar.zst"
        bad.write_bytes(data[:cut])
        assert any("truncated" in p or "unreadable" in p for p in _problems(bad))


def test_flipped_compressed_byte(good, tmp_path):
    data = bytearray(good.read_bytes())
    data[len(data) // 2] ^= 0xFF
    bad = tmp_path / "flip.tar.zst"
    bad.write_bytes(bytes(data))
    assert _problems(bad)


def test_flipped_byte_in_a_payload_member(good, tmp_path):
    def change(members):
        member = _file_member(members, "gateway.log")
        member.data = member.data[:10] + b"X" + member.data[11:]

    problems = _problems(rewrite(good, tmp_path / "bad.tar.zst", change))
    assert problems == [next(p for p in problems if "gateway.log" in p and "sha256 mismatch" in p)]


def test_member_not_in_the_manifest(good, tmp_path):
    def change(members):
        members.append(Member(tar_info(members[1].info.name + "/smuggled.txt"), b"hello"))

    assert any("smuggled.txt is not declared" in p for p in _problems(rewrite(good, tmp_path / "bad.tar.zst", change)))


def test_manifest_asset_missing_from_payload(good, tmp_path):
    def change(members):
        members[:] = [m for m in members if not m.info.name.endswith("agents/work/agent/openclaw-agent.sqlite")]

    problems = _problems(rewrite(good, tmp_path / "bad.tar.zst", change))
    assert any("agents/work/agent/openclaw-agent.sqlite" in p and "missing from the payload" in p for p in problems)


def test_wrong_sha256_in_manifest(good, tmp_path):
    def change(members):
        manifest = manifest_of(members)
        asset = next(a for a in manifest["assets"] if a["id"].endswith("AGENTS.md"))
        asset["sha256"] = "0" * 64
        set_manifest(members, manifest)

    assert any("AGENTS.md: sha256 mismatch" in p for p in _problems(rewrite(good, tmp_path / "bad.tar.zst", change)))


def test_wrong_size_in_manifest(good, tmp_path):
    def change(members):
        manifest = manifest_of(members)
        asset = next(a for a in manifest["assets"] if a["id"].endswith("AGENTS.md"))
        asset["size"] += 1
        manifest["totals"]["bytes"] += 1
        set_manifest(members, manifest)

    assert any("AGENTS.md: size" in p for p in _problems(rewrite(good, tmp_path / "bad.tar.zst", change)))


@pytest.mark.parametrize(
    ("name", "expect"),
    [
        ("{root}/payload/state/../../escape.txt", "traversal"),
        ("/etc/evil", "absolute"),
        ("{root}\\payload\\x", "backslashes"),
        ("other-root/payload/state/x", "outside the archive root"),
    ],
)
def test_bad_member_paths(good, tmp_path, name, expect):
    def change(members):
        root = members[0].info.name.split("/")[0]
        members.append(Member(tar_info(name.format(root=root)), b"x"))

    assert any(expect in p for p in _problems(rewrite(good, tmp_path / "bad.tar.zst", change)))


def test_symlink_pointing_outside_the_root(good, tmp_path):
    def change(members):
        root = members[0].info.name.split("/")[0]
        info = tar_info(f"{root}/payload/state/evil-link", tarfile.SYMTYPE, "../../../../etc/passwd")
        add_asset(members, info, kind="symlink", size=0, sha256=hashlib.sha256(b"../../../../etc/passwd").hexdigest(),
                  link_target="../../../../etc/passwd", link_scope="internal")

    assert any("points outside the archive root" in p for p in _problems(rewrite(good, tmp_path / "bad.tar.zst", change)))


def test_absolute_symlink_member(good, tmp_path):
    def change(members):
        root = members[0].info.name.split("/")[0]
        members.append(Member(tar_info(f"{root}/payload/state/abs-link", tarfile.SYMTYPE, "/etc/shadow"), b""))

    assert any("points outside the archive root" in p for p in _problems(rewrite(good, tmp_path / "bad.tar.zst", change)))


def test_hardlinks_inside_and_outside(good, tmp_path):
    def change(members):
        root = members[0].info.name.split("/")[0]
        members.append(Member(tar_info(f"{root}/payload/state/h1", tarfile.LNKTYPE, "/etc/passwd"), b""))
        members.append(Member(tar_info(f"{root}/payload/state/h2", tarfile.LNKTYPE, f"{root}/payload/state/openclaw.json"), b""))

    problems = _problems(rewrite(good, tmp_path / "bad.tar.zst", change))
    assert any("hard link" in p and "h1" in p and "outside" in p for p in problems)
    assert any("hard link" in p and "h2" in p for p in problems)


def test_member_nested_beneath_a_symlink(good, tmp_path):
    def change(members):
        link = next(m for m in members if m.info.issym())
        members.append(Member(tar_info(link.info.name + "/child.txt"), b"x"))

    assert any("nested beneath the symlink" in p for p in _problems(rewrite(good, tmp_path / "bad.tar.zst", change)))


@pytest.mark.parametrize("kind", [tarfile.CHRTYPE, tarfile.BLKTYPE, tarfile.FIFOTYPE])
def test_device_and_fifo_members(good, tmp_path, kind):
    def change(members):
        root = members[0].info.name.split("/")[0]
        info = tar_info(f"{root}/payload/state/dev-null", kind)
        info.devmajor, info.devminor = 1, 3
        members.append(Member(info, b""))

    assert any("dev-null" in p and ("device" in p or "FIFO" in p) for p in _problems(rewrite(good, tmp_path / "bad.tar.zst", change)))


def test_decompression_bomb_is_cut_off(good, tmp_path):
    def change(members):
        root = members[0].info.name.split("/")[0]
        members.append(Member(tar_info(f"{root}/payload/state/zeros.bin"), b"\0" * (24 << 20)))

    bad = rewrite(good, tmp_path / "bomb.tar.zst", change)
    assert bad.stat().st_size < 200_000  # tiny on disk, 24 MiB when decompressed
    report = verify_archive(bad)
    assert any("decompression bomb" in p for p in report.problems)
    assert report.decompressed_bytes == 0  # stopped before the end


def test_absolute_cap_applies_too(good):
    report = verify_archive(good, max_bytes=50_000)
    assert any("decompression bomb" in p for p in report.problems)


def test_corrupt_sqlite_snapshot_with_matching_hash(good, tmp_path):
    def change(members):
        member = _file_member(members, "tasks/runs.sqlite")
        scratch = tmp_path / "x.sqlite"
        scratch.write_bytes(member.data)
        conn = open_db(scratch)
        root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'idx_future_1'").fetchone()[0]
        size = conn.execute("PRAGMA page_size").fetchone()[0]
        conn.close()
        data = bytearray(member.data)
        data[(root - 1) * size + 8 : root * size] = bytes(size - 8)  # an index page that lost its cells
        member.data = bytes(data)
        manifest = manifest_of(members)
        asset = next(a for a in manifest["assets"] if a["archive_path"] == member.info.name)
        asset["sha256"] = hashlib.sha256(member.data).hexdigest()
        set_manifest(members, manifest)

    problems = _problems(rewrite(good, tmp_path / "bad.tar.zst", change))
    assert any("runs.sqlite fails integrity_check" in p for p in problems)


def test_sqlite_user_version_and_role_must_match(good, tmp_path):
    def change(members):
        manifest = manifest_of(members)
        for asset in manifest["assets"]:
            if asset["id"] == "state/state/openclaw.sqlite":
                asset["schema_version"] = 99
            if asset["id"] == "state/agents/main/agent/openclaw-agent.sqlite":
                asset["role"] = "global"
        set_manifest(members, manifest)

    problems = _problems(rewrite(good, tmp_path / "bad.tar.zst", change))
    assert any("user_version is 7, manifest records 99" in p for p in problems)
    assert any("schema_meta role is 'agent', manifest records 'global'" in p for p in problems)


@pytest.mark.parametrize(
    "mutate",
    [
        lambda m: m.pop("assets"),
        lambda m: m.update(format="something-else"),
        lambda m: m.update(schema_version=2),
        lambda m: m["assets"][1].update(kind="socket"),
        lambda m: m["assets"][1].update(sha256="not-a-hash"),
        lambda m: m.update(extra_field=1),
    ],
)
def test_manifest_failing_its_schema(good, tmp_path, mutate):
    def change(members):
        manifest = manifest_of(members)
        mutate(manifest)
        set_manifest(members, manifest)

    assert any("schema" in p for p in _problems(rewrite(good, tmp_path / "bad.tar.zst", change)))


def test_manifest_not_json_or_not_utf8(good, tmp_path):
    def not_json(members):
        members[0].data = b"{ nope"

    def not_utf8(members):
        members[0].data = b'{"format": "\xff\xfe"}'

    assert any("not valid JSON" in p for p in _problems(rewrite(good, tmp_path / "a.tar.zst", not_json)))
    assert any("UTF-8" in p for p in _problems(rewrite(good, tmp_path / "b.tar.zst", not_utf8)))


def test_manifest_must_be_first(good, tmp_path):
    def change(members):
        members.append(members.pop(0))

    assert any("first member" in p for p in _problems(rewrite(good, tmp_path / "bad.tar.zst", change)))


def test_duplicate_member(good, tmp_path):
    def change(members):
        members.append(Member(members[-1].info, members[-1].data))

    assert any("duplicate member" in p for p in _problems(rewrite(good, tmp_path / "bad.tar.zst", change)))


def test_garbage_missing_and_directory_inputs(tmp_path):
    garbage = tmp_path / "garbage.tar.zst"
    garbage.write_bytes(b"this is not an archive at all")
    assert "not a statekit .tar.zst or OpenClaw .tar.gz" in _problems(garbage)[0]
    assert "does not exist" in _problems(tmp_path / "missing.tar.zst")[0]
    assert "not a regular file" in _problems(tmp_path)[0]
    empty = tmp_path / "empty.tar.zst"
    empty.write_bytes(zstandard.ZstdCompressor().compress(b""))
    assert _problems(empty)


def test_trailing_garbage_after_the_frame(good, tmp_path):
    bad = tmp_path / "trail.tar.zst"
    bad.write_bytes(good.read_bytes() + b"junk")
    assert any("after the last zstd frame" in p for p in _problems(bad))


def test_path_rules_unit():
    assert member_path_problem("r/a/b", "r") is None
    assert "absolute" in member_path_problem("C:/x", "r")
    assert "empty path segment" in member_path_problem("r//x", "r")
    assert link_escapes("r/payload/state/a/l", "../../../../x", "r")
    assert not link_escapes("r/payload/state/a/l", "../b", "r")
    assert link_escapes("r/payload/state/l", "/abs", "r")


def test_manifest_tiny_archive_written_by_hand_is_judged_on_content(tmp_path):
    """A hand-made archive with a valid manifest and payload passes: verify is about content, not origin."""
    root = "openclaw-backup-20260101T000000Z"
    data = b"hello"
    manifest = {
        "format": "statekit-backup", "schema_version": 1, "created_at": "2026-01-01T00:00:00.000Z",
        "statekit_version": "0.0.0", "state_dir": "/s", "options": {"include_workspaces": False, "level": 3, "verify": True},
        "assets": [{
            "id": "state/a.txt", "kind": "file", "role": "state", "agent_id": None, "schema_version": None,
            "source_path": "/s/a.txt", "archive_path": f"{root}/payload/state/a.txt", "size": 5,
            "sha256": hashlib.sha256(data).hexdigest(), "mode": 384, "mtime": 0,
        }],
        "skipped": [], "totals": {"assets": 1, "bytes": 5},
    }
    members = [Member(tar_info(f"{root}/manifest.json"), json.dumps(manifest).encode()), Member(tar_info(f"{root}/payload/state/a.txt"), data)]
    path = write_members(members, tmp_path / "hand.tar.zst")
    assert verify_archive(path).ok
