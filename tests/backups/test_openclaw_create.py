"""``backup create --format openclaw``: an archive in OpenClaw 2026.9.6's own format, with statekit's digests inside.

The contract (from 9.6's dist: ``parseBackupManifest``, ``verifyBackupManifestEntries``, the SQLite snapshot
checks): one root ``<UTC ms>+00-00-openclaw-backup/``, ``manifest.json`` with ``schemaVersion: 1``,
``archiveRoot``, ``createdAt`` and the assets, every entry inside the root, each asset present, an
``externalSymbolicLinks`` list naming exactly the links that leave the state dir, databases as consistent
snapshots without sidecars. statekit's own record (``statekit-manifest.json``: size and SHA-256 of every
entry) sits beside it. tests/interop has the real 9.6 verify and restore these archives.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import re
import tarfile
import zlib
from pathlib import Path

import pytest

from statekit.backup import create_backup, restore_archive, verify_archive
from statekit.backup.archive import GZIP_TRAILER_LEN, gzip_trailer
from statekit.backup.openclaw_format import encode_openclaw_path
from backup_helpers import SECRET, rows_digest, tree_state
from statekit.cli import main


def members(archive: Path) -> list[tuple[tarfile.TarInfo, bytes]]:
    with tarfile.open(archive) as tar:
        return [(m, tar.extractfile(m).read() if m.isreg() else b"") for m in tar.getmembers()]


def repack(archive: Path, dest: Path, change) -> Path:
    """Rewrite the archive with ``change`` applied, then a valid digest trailer: only the changed property is wrong."""
    entries = members(archive)
    change(entries)
    with tarfile.open(dest, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for info, data in entries:
            if info.isreg():
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            else:
                tar.addfile(info)
    dest.write_bytes(dest.read_bytes() + gzip_trailer(hashlib.sha256(dest.read_bytes()).digest()))
    return dest


@pytest.fixture
def oc_archive(state_tree, tmp_path) -> Path:
    return create_backup(state_tree.root, tmp_path / "out", record=False, fmt="openclaw", level=6).archive_path


def test_layout_and_manifest_follow_openclaws_contract(state_tree, oc_archive):
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{3}\+00-00-openclaw-backup\.tar\.gz", oc_archive.name)
    root = oc_archive.name.removesuffix(".tar.gz")
    entries = members(oc_archive)
    names = [info.name for info, _ in entries]
    assert names[-1] == f"{root}/manifest.json" and names[-2] == f"{root}/statekit-manifest.json"
    assert all(n == root or n.startswith(root + "/") for n in names)
    manifest = json.loads(entries[-1][1])
    state_path = f"{root}/payload/{encode_openclaw_path(str(state_tree.root))}"
    assert manifest["schemaVersion"] == 1 and manifest["archiveRoot"] == root
    assert manifest["paths"]["stateDir"] == str(state_tree.root)
    assert manifest["assets"] == [{"kind": "state", "sourcePath": str(state_tree.root), "archivePath": state_path}]
    assert manifest["externalSymbolicLinks"] == [
        {"entryPath": f"{state_path}/plugin-skills/outside-skill", "linkpath": "/nonexistent/outside/skill"}]
    by_name = {info.name: info for info, _ in entries}
    assert by_name[f"{state_path}/plugin-skills/inside-link"].issym()
    assert not any(n.endswith(("-wal", "-shm", "-journal")) for n in names)
    assert any(n.endswith("s1.jsonl.lock") for n in names)  # not statekit's own: backed up
    assert SECRET not in entries[-1][1].decode() and SECRET not in entries[-2][1].decode()


def test_statekit_verifies_it_entry_by_entry(oc_archive):
    report = verify_archive(oc_archive)
    assert report.ok, report.problems
    assert report.digests and report.to_json()["statekit_digests"] is True
    assert any(n.startswith("statekit digests:") for n in report.notes)
    assert not any("no per-file size" in n for n in report.notes)


def test_every_byte_is_covered_by_the_digest_trailer(oc_archive):
    """A flipped bit that gzip decodes to the same bytes (deflate has redundant encodings) is caught by the trailer."""
    data = oc_archive.read_bytes()
    assert verify_archive(oc_archive).ok and data[-GZIP_TRAILER_LEN:] == gzip_trailer(hashlib.sha256(data[:-GZIP_TRAILER_LEN]).digest())
    same = None
    for position in range(10, len(data) - GZIP_TRAILER_LEN - 8, 7):
        flipped = bytearray(data)
        flipped[position] ^= 0x01
        try:
            if gzip.decompress(bytes(flipped)) == gzip.decompress(data):
                same = bytes(flipped)
                break
        except (OSError, EOFError, ValueError, zlib.error):
            continue
    assert same is not None, "no flip decodes to the same bytes in this archive"
    oc_archive.write_bytes(same)
    assert any("do not match the recorded digest" in p for p in verify_archive(oc_archive).problems)
    oc_archive.write_bytes(data[:-GZIP_TRAILER_LEN])
    assert any("trailer is not" in p for p in verify_archive(oc_archive).problems)


def test_a_changed_entry_fails_the_digests_even_when_gzip_is_intact(oc_archive, tmp_path):
    def change(entries):
        for info, data in entries:
            if info.name.endswith("workspace/AGENTS.md"):
                entries[entries.index((info, data))] = (info, b"# evil!!\n"[: len(data)].ljust(len(data), b"!"))

    report = verify_archive(repack(oc_archive, tmp_path / "changed.tar.gz", change))
    assert any("differs from the digest record" in p for p in report.problems), report.problems


def test_a_changed_openclaw_manifest_fails_the_digests(oc_archive, tmp_path):
    def change(entries):
        info, data = entries[-1]
        manifest = json.loads(data)
        manifest["createdAt"] = "2020-01-01T00:00:00.000Z"
        entries[-1] = (info, json.dumps(manifest).encode())

    report = verify_archive(repack(oc_archive, tmp_path / "changed.tar.gz", change))
    assert any("does not match the digest statekit recorded" in p for p in report.problems), report.problems


def test_an_entry_added_behind_the_digests_fails(oc_archive, tmp_path):
    def change(entries):
        info, _ = entries[0]
        extra = tarfile.TarInfo(info.name.rstrip("/") + "/smuggled.txt")
        entries.insert(1, (extra, b"not in the digest record"))

    report = verify_archive(repack(oc_archive, tmp_path / "changed.tar.gz", change))
    assert any("smuggled.txt is not in" in p for p in report.problems), report.problems


def test_restores_to_the_same_state(state_tree, oc_archive, tmp_path):
    target = tmp_path / "restored"
    restore_archive(oc_archive, target=target)
    for db in (state_tree.global_db, state_tree.agent_db, state_tree.work_db, state_tree.tasks_db):
        assert rows_digest(target / db.relative_to(state_tree.root)) == rows_digest(db)
    keep = lambda t: {k: v for k, v in t.items() if "sqlite" not in k and k != ".statekit/lock"}  # noqa: E731
    assert keep(tree_state(target)) == keep(tree_state(state_tree.root))


def test_in_place_restore_of_statekits_openclaw_archive(state_tree, oc_archive):
    config = state_tree.config.read_bytes()
    state_tree.config.write_text("{}")
    (state_tree.root / "workspace" / "AGENTS.md").unlink()
    result = restore_archive(oc_archive, state_dir=state_tree.root)
    assert state_tree.config.read_bytes() == config
    assert (state_tree.root / "workspace" / "AGENTS.md").read_text() == "# agents\n"
    assert result.counts()["replace"] >= 1 and result.counts()["create"] >= 1


def test_cli_format_and_level(capsys, state_tree, tmp_path):
    base = ["backup", "create", "--state-dir", str(state_tree.root), "--output", str(tmp_path / "o")]
    assert main([*base, "--format", "openclaw", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["format"] == "openclaw" and data["archive"].endswith("-openclaw-backup.tar.gz") and data["verified"]
    assert main([*base, "--format", "openclaw", "--level", "12"]) == 2
    err = capsys.readouterr().err
    assert "outside 1..9" in err and len(err.splitlines()) == 1
    assert main([*base, "--format", "zip"]) == 2
    assert "--format must be statekit or openclaw" in capsys.readouterr().err


def test_the_default_format_stays_statekits(state_tree, tmp_path):
    result = create_backup(state_tree.root, tmp_path / "out", record=False)
    assert result.archive_path.name.endswith(".tar.zst") and result.format == "statekit"
    assert os.path.getsize(result.archive_path) > 0
