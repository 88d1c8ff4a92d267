"""OpenClaw's own ``.tar.gz`` archives (schemaVersion 1, payload/posix/<abs path>): verify and --target restore."""

from __future__ import annotations

import io
import json
import os
import tarfile
from pathlib import Path

import pytest

from backup.restore import restore_archive
from backup.verify import encode_openclaw_path, verify_archive
from backup_helpers import rows_digest
from statekit.errors import UsageError, VerificationError

ROOT = "2026-05-02T09-30-00.000+08-00-openclaw-backup"


def make_openclaw_archive(state, dest: Path, *, snapshots: bool = True, drop: str | None = None, list_links: bool = True) -> Path:
    """An archive laid out like ``openclaw backup create`` (G3/G4) writes it, from a fixture state dir."""
    state_dir = state.root
    links = [p for p in state_dir.rglob("*") if p.is_symlink() and os.readlink(p).startswith("/")]
    manifest = {
        "schemaVersion": 1,
        "createdAt": "2026-05-02T01:30:00.000Z",
        "archiveRoot": ROOT,
        "runtimeVersion": "2026.7.35",
        "platform": "linux",
        "nodeVersion": "v22.14.0",
        "options": {"includeWorkspace": True, "onlyConfig": False},
        "paths": {"stateDir": str(state_dir), "configPath": str(state.config), "oauthDir": str(state_dir / "credentials"), "workspaceDirs": []},
        "assets": [{"kind": "state", "sourcePath": str(state_dir), "archivePath": f"{ROOT}/payload/{encode_openclaw_path(str(state_dir))}"}],
        "skipped": [{"kind": "config", "sourcePath": str(state.config), "reason": "covered", "coveredBy": "~/.openclaw"}],
    }
    if snapshots:
        manifest["sqliteSnapshots"] = [
            {"sourcePath": str(state.global_db), "role": "global"},
            {"sourcePath": str(state.agent_db), "role": "agent", "agentId": "main"},
        ]
    if list_links:
        manifest["externalSymbolicLinks"] = [{"archivePath": f"{ROOT}/payload/{encode_openclaw_path(str(p))}", "target": os.readlink(p)} for p in links]

    def keep(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        if info.name.endswith(("-wal", "-shm", "-journal", ".lock")):
            return None
        if drop and info.name.endswith(drop):
            return None
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        return info

    with tarfile.open(dest, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        data = (json.dumps(manifest, indent=2) + "\n").encode()
        info = tarfile.TarInfo(f"{ROOT}/manifest.json")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
        tar.add(state_dir, arcname=f"{ROOT}/payload/{encode_openclaw_path(str(state_dir))}", filter=keep)
    return dest


def test_verify_openclaw_archive_and_report_what_it_cannot_prove(state_tree, tmp_path):
    archive = make_openclaw_archive(state_tree, tmp_path / "oc.tar.gz")
    report = verify_archive(archive)
    assert report.ok, report.problems
    assert report.format == "openclaw-tar.gz"
    assert any("no per-file size or SHA-256" in n for n in report.notes)
    assert any("listed as external" in n for n in report.notes)


def test_legacy_archive_without_inventory_is_ok_but_completeness_unknown(state_tree, tmp_path):
    report = verify_archive(make_openclaw_archive(state_tree, tmp_path / "oc.tar.gz", snapshots=False))
    assert report.ok
    assert any("completeness unknown" in n for n in report.notes)


def test_missing_snapshot_member_fails(state_tree, tmp_path):
    archive = make_openclaw_archive(state_tree, tmp_path / "oc.tar.gz", drop="agents/main/agent/openclaw-agent.sqlite")
    report = verify_archive(archive)
    assert any("lacks verified canonical SQLite coverage" in p for p in report.problems)


def test_unlisted_absolute_symlink_fails(state_tree, tmp_path):
    report = verify_archive(make_openclaw_archive(state_tree, tmp_path / "oc.tar.gz", list_links=False))
    assert any("points outside the archive root" in p for p in report.problems)


def test_corrupt_gzip_fails(state_tree, tmp_path):
    archive = make_openclaw_archive(state_tree, tmp_path / "oc.tar.gz")
    data = bytearray(archive.read_bytes())
    data[len(data) // 2] ^= 0xFF
    archive.write_bytes(bytes(data))
    assert not verify_archive(archive).ok
    truncated = tmp_path / "cut.tar.gz"
    truncated.write_bytes(bytes(data[: len(data) // 3]))
    assert not verify_archive(truncated).ok


def test_two_manifests_fail(state_tree, tmp_path):
    archive = make_openclaw_archive(state_tree, tmp_path / "oc.tar.gz")
    with tarfile.open(archive) as src, tarfile.open(tmp_path / "two.tar.gz", "w:gz") as dst:
        for member in src:
            dst.addfile(member, src.extractfile(member) if member.isreg() else None)
        info = tarfile.TarInfo(f"{ROOT}/manifest.json")
        info.size = 2
        dst.addfile(info, io.BytesIO(b"{}"))
    report = verify_archive(tmp_path / "two.tar.gz")
    assert any("duplicate entry" in p or "exactly one backup manifest" in p for p in report.problems)


def test_restore_openclaw_archive_into_target_only(state_tree, tmp_path):
    archive = make_openclaw_archive(state_tree, tmp_path / "oc.tar.gz")
    with pytest.raises(UsageError, match="only into a fresh --target"):
        restore_archive(archive, state_dir=state_tree.root)
    target = tmp_path / "restored"
    restore_archive(archive, target=target, dry_run=True)
    assert not target.exists()
    result = restore_archive(archive, target=target)
    base = target / ROOT / "payload" / encode_openclaw_path(str(state_tree.root))
    for db in (state_tree.global_db, state_tree.agent_db, state_tree.work_db):
        restored = base / db.relative_to(state_tree.root)
        assert rows_digest(restored) == rows_digest(db)
        assert os.stat(restored).st_mode & 0o777 == 0o600
    assert (base / "openclaw.json").read_bytes() == state_tree.config.read_bytes()
    assert os.readlink(base / "plugin-skills" / "outside-skill") == "/nonexistent/outside/skill"
    assert (target / ROOT / "manifest.json").is_file()
    assert result.format == "openclaw-tar.gz"


def test_corrupt_openclaw_archive_restores_nothing(state_tree, tmp_path):
    archive = make_openclaw_archive(state_tree, tmp_path / "oc.tar.gz", drop="state/openclaw.sqlite")
    with pytest.raises(VerificationError):
        restore_archive(archive, target=tmp_path / "restored")
    assert not (tmp_path / "restored").exists()
