"""OpenClaw's own ``.tar.gz`` archives (schemaVersion 1, payload/posix/<abs path>): verify, and restore as a state dir.

The archives here are laid out the way OpenClaw 2026.9.6's ``backup create`` writes them (learned from its
dist and from real archives: entries first, ``manifest.json`` last, ``externalSymbolicLinks`` as
``{entryPath, linkpath}``, no per-file digests, the canonical databases found as ``state/openclaw.sqlite``
plus the agent databases its ``agent_databases`` registry names). tests/interop checks the same against
archives the real release made.
"""

from __future__ import annotations

import io
import json
import os
import tarfile
from pathlib import Path

import pytest

from statekit.backup import restore as restore_mod
from statekit.backup.openclaw_format import encode_openclaw_path
from statekit.backup.restore import restore_archive
from statekit.backup.verify import verify_archive
from backup_helpers import make_db, rows_digest, tree_state
from helpers import open_db
from statekit.errors import VerificationError

ROOT = "2026-05-02T09-30-00.000+08-00-openclaw-backup"


def _payload(path: Path | str) -> str:
    return f"{ROOT}/payload/{encode_openclaw_path(str(path))}"


def register_agents(state) -> None:
    """The 9.6 global database's agent registry (relative paths, as 9.6 writes them)."""
    conn = open_db(state.global_db)
    conn.execute("CREATE TABLE agent_databases (agent_id TEXT PRIMARY KEY, path TEXT NOT NULL, schema_version INTEGER,"
                 " last_seen_at INTEGER, size_bytes INTEGER)")
    conn.execute("INSERT INTO agent_databases VALUES ('main', 'agents/main/agent/openclaw-agent.sqlite', 4, 1, 1)")
    conn.execute("INSERT INTO agent_databases VALUES ('work', 'agents/work/agent/openclaw-agent.sqlite', 4, 1, 1)")
    conn.commit()
    conn.close()


def make_openclaw_archive(state, dest: Path, *, drop: str | None = None, list_links: bool = True,
                          extra: list[tuple[str, Path]] = (), hard_link: bool = False, stray: bool = False,
                          manifest_edit=None) -> Path:
    """An archive laid out like ``openclaw backup create`` (2026.9.6) writes it, from a fixture state dir.

    ``extra``: more assets [(kind, source dir or file)] outside the state dir (config, credentials, workspace).
    """
    state_dir = state.root
    assets = [("state", state_dir), *extra]
    links = []
    for kind, source in assets:
        if Path(source).is_dir():
            links += [p for p in Path(source).rglob("*") if p.is_symlink() and os.readlink(p).startswith("/")]
    manifest = {
        "schemaVersion": 1,
        "createdAt": "2026-05-02T01:30:00.000Z",
        "archiveRoot": ROOT,
        "runtimeVersion": "2026.9.6",
        "platform": "linux",
        "nodeVersion": "v26.10.0",
        "options": {"includeWorkspace": True, "onlyConfig": False},
        "paths": {"stateDir": str(state_dir), "configPath": str(next((s for k, s in extra if k == "config"), state.config)),
                  "oauthDir": str(next((s for k, s in extra if k == "credentials"), state_dir / "credentials")),
                  "workspaceDirs": [str(s) for k, s in extra if k == "workspace"]},
        "assets": [{"kind": kind, "sourcePath": str(source), "archivePath": _payload(source)} for kind, source in assets],
        "skipped": [],
    }
    if list_links:
        manifest["externalSymbolicLinks"] = [{"entryPath": _payload(p), "linkpath": os.readlink(p)} for p in links]
    if manifest_edit:
        manifest_edit(manifest)

    def keep(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        if info.name.endswith(("-wal", "-shm", "-journal", ".lock")):
            return None
        if drop and info.name.endswith(drop):
            return None
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        return info

    with tarfile.open(dest, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for _kind, source in assets:
            tar.add(source, arcname=_payload(source), filter=keep)
        if hard_link:
            info = tarfile.TarInfo(_payload(state_dir / "hard-copy-of-agents.md"))
            info.type, info.linkname = tarfile.LNKTYPE, _payload(state_dir / "workspace" / "AGENTS.md")
            tar.addfile(info)
        if stray:
            info = tarfile.TarInfo(f"{ROOT}/payload/posix/etc/stray.txt")
            info.size = 3
            tar.addfile(info, io.BytesIO(b"bad"))
        data = (json.dumps(manifest, indent=2) + "\n").encode()
        info = tarfile.TarInfo(f"{ROOT}/manifest.json")
        info.size, info.mode = len(data), 0o644
        tar.addfile(info, io.BytesIO(data))
    return dest


def archive_files(archive: Path) -> set[str]:
    with tarfile.open(archive) as tar:
        return {m.name for m in tar.getmembers() if m.isfile() or m.issym() or m.islnk()}


def files_below(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() or p.is_symlink()}


# --------------------------------------------------------------------------- verify


def test_verify_a_96_shaped_archive_and_say_what_it_cannot_prove(state_tree, tmp_path):
    register_agents(state_tree)
    report = verify_archive(make_openclaw_archive(state_tree, tmp_path / "oc.tar.gz"))
    assert report.ok, report.problems
    assert report.format == "openclaw-tar.gz"
    assert any("no per-file size or SHA-256" in n for n in report.notes)
    assert any("listed as external" in n for n in report.notes)
    assert report.to_json()["statekit_digests"] is False


def test_names_that_collide_on_a_case_insensitive_filesystem_fail(state_tree, tmp_path):
    """Entries whose names differ only in case or Unicode normalisation (NFC) would overwrite each other on macOS
    or Windows: each pair is named once; names that merely look alike do not collide."""
    register_agents(state_tree)
    notes = state_tree.root / "workspace"
    for name in ("Notes.md", "notes.md", "caf\u00e9.md", "cafe\u0301.md", "cafe.md", "NOTES-2.md"):
        (notes / name).write_text(name)
    report = verify_archive(make_openclaw_archive(state_tree, tmp_path / "oc.tar.gz"))
    collisions = sorted(p for p in report.problems if "collide on case-insensitive filesystems" in p)
    assert len(collisions) == 2, report.problems
    assert any("/Notes.md and " in p and p.endswith("/notes.md collide on case-insensitive filesystems") for p in collisions), collisions
    assert any("caf\u00e9.md" in p and "cafe\u0301.md" in p for p in collisions), collisions
    assert not any("cafe.md " in p or "NOTES-2" in p for p in collisions), collisions


def test_global_database_without_its_role_fails(state_tree, tmp_path):
    conn = open_db(state_tree.global_db)
    conn.execute("UPDATE schema_meta SET role = 'agent'")
    conn.commit()
    conn.close()
    report = verify_archive(make_openclaw_archive(state_tree, tmp_path / "oc.tar.gz"))
    assert any("schema_meta role is 'agent', expected 'global'" in p for p in report.problems), report.problems


def test_registered_agent_database_owned_by_another_agent_fails(state_tree, tmp_path):
    register_agents(state_tree)
    conn = open_db(state_tree.global_db)
    conn.execute("UPDATE agent_databases SET agent_id = 'other' WHERE agent_id = 'work'")
    conn.commit()
    conn.close()
    report = verify_archive(make_openclaw_archive(state_tree, tmp_path / "oc.tar.gz"))
    assert any("agent id 'work' != 'other'" in p for p in report.problems), report.problems


def test_corrupt_canonical_database_fails(state_tree, tmp_path):
    register_agents(state_tree)
    archive = make_openclaw_archive(state_tree, tmp_path / "oc.tar.gz")
    with tarfile.open(archive) as src, tarfile.open(tmp_path / "bad.tar.gz", "w:gz") as dst:
        for member in src:
            data = src.extractfile(member).read() if member.isreg() else None
            if member.name.endswith("agents/work/agent/openclaw-agent.sqlite"):
                data = data[:4096] + b"\x55" * (len(data) - 4096)
            dst.addfile(member, io.BytesIO(data) if data is not None else None)
    report = verify_archive(tmp_path / "bad.tar.gz")
    assert any("openclaw-agent.sqlite" in p and ("integrity" in p or "SQLite" in p) for p in report.problems), report.problems


def test_unlisted_external_symlink_fails(state_tree, tmp_path):
    def unlist(manifest):
        manifest["externalSymbolicLinks"] = []

    report = verify_archive(make_openclaw_archive(state_tree, tmp_path / "oc.tar.gz", manifest_edit=unlist))
    assert any("does not list it" in p for p in report.problems), report.problems


def test_no_link_report_means_no_link_may_leave_the_archive(state_tree, tmp_path):
    report = verify_archive(make_openclaw_archive(state_tree, tmp_path / "oc.tar.gz", list_links=False))
    assert any("points outside the archive's assets" in p for p in report.problems)


def test_entry_outside_every_asset_fails(state_tree, tmp_path):
    report = verify_archive(make_openclaw_archive(state_tree, tmp_path / "oc.tar.gz", stray=True))
    assert any("outside every manifest asset" in p for p in report.problems), report.problems


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


# --------------------------------------------------------------------------- restore into a target


def test_restore_makes_the_target_the_state_dir(state_tree, tmp_path):
    register_agents(state_tree)
    archive = make_openclaw_archive(state_tree, tmp_path / "oc.tar.gz")
    target = tmp_path / "restored" / ".openclaw"
    plan = restore_archive(archive, target=target, dry_run=True)
    assert not target.exists() and not target.parent.exists()
    assert {s.destination for s in plan.steps} >= {target / "openclaw.json", target / "state" / "openclaw.sqlite"}
    result = restore_archive(archive, target=target)
    assert result.format == "openclaw-tar.gz" and result.mode == "target"
    # right after the restore: exactly the archive's files, at their places: no manifest, no -wal/-shm, no .statekit/
    prefix = _payload(state_tree.root) + "/"
    expected = {name[len(prefix):] for name in archive_files(archive) if name.startswith(prefix)}
    assert files_below(target) == expected
    for db in (state_tree.global_db, state_tree.agent_db, state_tree.work_db, state_tree.tasks_db):
        restored = target / db.relative_to(state_tree.root)
        assert rows_digest(restored) == rows_digest(db)
        assert os.stat(restored).st_mode & 0o777 == 0o600
    assert (target / "openclaw.json").read_bytes() == state_tree.config.read_bytes()
    assert os.readlink(target / "plugin-skills" / "outside-skill") == "/nonexistent/outside/skill"
    assert os.readlink(target / "plugin-skills" / "inside-link") == "../workspace/AGENTS.md"
    assert os.stat(target / "credentials" / "oauth.json").st_mode & 0o777 == 0o600
    assert (target / "empty-dir").is_dir()


def test_assets_outside_the_state_dir_are_placed_inside_the_target_only(state_tree, tmp_path):
    outside = tmp_path / "elsewhere"
    (outside / "config").mkdir(parents=True)
    config = outside / "config" / "openclaw.json"
    config.write_text('{"the": "active config"}')
    creds = outside / "oauth"
    creds.mkdir()
    (creds / "token.json").write_text('{"t": 1}')
    workspace = outside / "projects" / "ws"
    workspace.mkdir(parents=True)
    (workspace / "NOTES.md").write_text("notes\n")
    state_tree.config.unlink()
    import shutil
    shutil.rmtree(state_tree.root / "credentials")
    archive = make_openclaw_archive(state_tree, tmp_path / "oc.tar.gz",
                                    extra=[("config", config), ("credentials", creds), ("workspace", workspace)])
    shutil.rmtree(outside)  # the recorded absolute paths must never be written
    target = tmp_path / "restored"
    result = restore_archive(archive, target=target)
    assert not outside.exists()
    assert (target / "openclaw.json").read_text() == '{"the": "active config"}'
    assert (target / "credentials" / "token.json").read_text() == '{"t": 1}'
    assert os.stat(target / "credentials" / "token.json").st_mode & 0o777 == 0o600
    moved = target / ".statekit" / "external" / "workspace-ws"
    assert (moved / "NOTES.md").read_text() == "notes\n"
    assert result.relocated == [{"kind": "workspace", "source_path": str(workspace), "destination": str(moved)}]
    assert any(str(workspace) in n and "outside the state dir" in n for n in result.notes)


def test_hard_link_entry_is_restored_as_a_copy(state_tree, tmp_path):
    archive = make_openclaw_archive(state_tree, tmp_path / "oc.tar.gz", hard_link=True)
    assert verify_archive(archive).ok
    target = tmp_path / "restored"
    restore_archive(archive, target=target)
    assert (target / "hard-copy-of-agents.md").read_bytes() == (state_tree.root / "workspace" / "AGENTS.md").read_bytes()


def test_corrupt_openclaw_archive_restores_nothing(state_tree, tmp_path):
    archive = make_openclaw_archive(state_tree, tmp_path / "oc.tar.gz")
    data = bytearray(archive.read_bytes())
    data[len(data) // 2] ^= 0xFF
    archive.write_bytes(bytes(data))
    with pytest.raises(VerificationError):
        restore_archive(archive, target=tmp_path / "restored")
    assert not (tmp_path / "restored").exists()


# --------------------------------------------------------------------------- restore in place


def _make_b(state) -> None:
    """State B: changed config, a deleted agent database, a changed database, a file the archive does not know."""
    state.config.write_text('{"changed": true}')
    state.work_db.unlink()
    conn = open_db(state.agent_db)
    conn.execute("INSERT INTO future_table_0(payload) VALUES ('after the backup')")
    conn.commit()
    conn.close()
    (state.root / "notes-after-backup.txt").write_text("mine\n")


def test_in_place_restore_of_an_openclaw_archive(state_tree, tmp_path):
    register_agents(state_tree)
    digests = {db: rows_digest(db) for db in (state_tree.global_db, state_tree.agent_db, state_tree.work_db)}
    config = state_tree.config.read_bytes()
    archive = make_openclaw_archive(state_tree, tmp_path / "oc.tar.gz")
    _make_b(state_tree)
    plan = restore_archive(archive, state_dir=state_tree.root, dry_run=True)
    actions = {s.destination: s.action for s in plan.steps}
    assert actions[state_tree.config] == "replace" and actions[state_tree.work_db] == "create"
    assert actions[state_tree.root / "workspace" / "AGENTS.md"] == "unchanged"
    result = restore_archive(archive, state_dir=state_tree.root)
    assert result.mode == "in-place"
    assert state_tree.config.read_bytes() == config
    for db, digest in digests.items():
        assert rows_digest(db) == digest
    assert (state_tree.root / "notes-after-backup.txt").read_text() == "mine\n"  # unknown to the archive: left alone
    aside = result.pre_restore_dir
    assert aside is not None and (aside / "state" / "openclaw.json").read_text() == '{"changed": true}'
    assert not (state_tree.root / ".statekit" / "restore-journal.json").exists()


def test_in_place_failure_rolls_back_an_openclaw_restore(state_tree, tmp_path, monkeypatch):
    archive = make_openclaw_archive(state_tree, tmp_path / "oc.tar.gz")
    _make_b(state_tree)
    before = tree_state(state_tree.root)
    calls = {"n": 0}
    real_place = restore_mod._place

    def flaky_place(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError(5, "Input/output error (injected)")
        return real_place(*args, **kwargs)

    monkeypatch.setattr(restore_mod, "_place", flaky_place)
    with pytest.raises(OSError, match="injected"):
        restore_archive(archive, state_dir=state_tree.root)
    after = {k: v for k, v in tree_state(state_tree.root).items() if not k.startswith(".statekit")}
    assert after == {k: v for k, v in before.items() if not k.startswith(".statekit")}


def test_in_place_verifies_first(state_tree, tmp_path):
    archive = make_openclaw_archive(state_tree, tmp_path / "oc.tar.gz", drop="state/openclaw.sqlite", stray=True)
    _make_b(state_tree)
    before = tree_state(state_tree.root)
    with pytest.raises(VerificationError):
        restore_archive(archive, state_dir=state_tree.root)
    assert tree_state(state_tree.root) == before


def test_in_place_goes_to_the_given_state_dir_never_to_the_recorded_one(state_tree, tmp_path):
    """The manifest records where the install was; an in-place restore goes where the operator says."""
    archive = make_openclaw_archive(state_tree, tmp_path / "oc.tar.gz")
    import shutil
    other = tmp_path / "other" / ".openclaw"
    shutil.copytree(state_tree.root, other, symlinks=True)
    (other / "openclaw.json").write_text('{"other": true}')
    recorded_before = tree_state(state_tree.root)
    restore_archive(archive, state_dir=other)
    assert (other / "openclaw.json").read_bytes() == state_tree.config.read_bytes()
    assert tree_state(state_tree.root) == recorded_before


def test_missing_member_of_a_database_in_the_registry_is_not_required(state_tree, tmp_path):
    """OpenClaw 9.6 checks the registered agent databases that are in the archive; one left out is not an error."""
    register_agents(state_tree)
    make_db(state_tree.root / "agents" / "gone" / "agent" / "openclaw-agent.sqlite", role="agent", agent_id="gone")
    archive = make_openclaw_archive(state_tree, tmp_path / "oc.tar.gz", drop="agents/gone/agent/openclaw-agent.sqlite")
    assert verify_archive(archive).ok


def test_foreign_key_violation_in_a_canonical_database_fails_as_in_96(state_tree, tmp_path):
    """9.6's verifier runs foreign_key_check on the canonical snapshots (assertSqliteIntegrity)."""
    conn = open_db(state_tree.global_db)
    conn.execute("PRAGMA foreign_keys = OFF")
    conn.execute("CREATE TABLE parent (id INTEGER PRIMARY KEY)")
    conn.execute("CREATE TABLE child (id INTEGER PRIMARY KEY, parent_id INTEGER REFERENCES parent(id))")
    conn.execute("INSERT INTO child VALUES (1, 42)")
    conn.commit()
    conn.close()
    report = verify_archive(make_openclaw_archive(state_tree, tmp_path / "oc.tar.gz"))
    assert any("foreign_key_check violation" in p for p in report.problems), report.problems
