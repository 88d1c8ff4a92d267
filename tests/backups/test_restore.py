"""backup restore: fresh target, dry run, in place with pre-restore copies, rollback, refusals."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from statekit.backup import restore as restore_mod
from statekit.backup.create import create_backup
from statekit.backup.restore import restore_archive
from backup_helpers import SECRET, make_db, rewrite, rows_digest, tree_state
from statekit.errors import BusyError, ExitCode, UsageError, VerificationError
from statekit.layout import lock_path
from statekit.locking import exclusive_lock
from helpers import open_db


@pytest.fixture
def archive(state_tree, tmp_path) -> Path:
    return create_backup(state_tree.root, tmp_path / "out", record=False).archive_path


def _non_db_state(root: Path) -> dict[str, tuple]:
    return {k: v for k, v in tree_state(root).items() if not k.endswith(".sqlite") and "sqlite" not in k}


def test_restore_into_fresh_target_reproduces_the_tree(state_tree, archive, tmp_path):
    target = tmp_path / "restored"
    result = restore_archive(archive, target=target)
    assert result.mode == "target" and result.counts()["create"] == len(result.steps)
    for db in (state_tree.global_db, state_tree.agent_db, state_tree.work_db, state_tree.tasks_db):
        rel = db.relative_to(state_tree.root)
        assert rows_digest(target / rel) == rows_digest(db)
        assert os.stat(target / rel).st_mode & 0o777 == 0o600
        assert not Path(f"{target / rel}-wal").exists()
    expected = {k: v for k, v in _non_db_state(state_tree.root).items() if k != ".statekit/lock"}  # other lock files are backed up
    assert _non_db_state(target) == expected  # bytes, modes, dirs and symlinks
    assert os.readlink(target / "plugin-skills" / "outside-skill") == "/nonexistent/outside/skill"
    assert os.stat(target / "credentials" / "oauth.json").st_mode & 0o777 == 0o600
    assert (target / "empty-dir").is_dir()


def test_dry_run_writes_nothing_not_even_the_target(archive, tmp_path):
    target = tmp_path / "restored"
    result = restore_archive(archive, target=target, dry_run=True)
    assert not target.exists()
    assert {s.action for s in result.steps} == {"create"}
    step = next(s for s in result.steps if s.archive_path.endswith("state/openclaw.sqlite"))
    assert step.destination == target / "state" / "openclaw.sqlite"


def test_non_empty_target_is_refused(archive, tmp_path):
    target = tmp_path / "busy"
    target.mkdir()
    (target / "keep.txt").write_text("mine")
    with pytest.raises(UsageError, match="not empty"):
        restore_archive(archive, target=target)
    assert [p.name for p in target.iterdir()] == ["keep.txt"]


def test_target_inside_the_live_state_dir_is_refused(state_tree, archive):
    with pytest.raises(UsageError, match="inside the live state dir"):
        restore_archive(archive, target=state_tree.root / "restore-here", state_dir=state_tree.root)
    assert not (state_tree.root / "restore-here").exists()


def test_failing_archive_restores_nothing(archive, tmp_path):
    def change(members):
        member = next(m for m in members if m.info.name.endswith("AGENTS.md"))
        member.data = b"tampered"

    bad = rewrite(archive, tmp_path / "bad.tar.zst", change)
    target = tmp_path / "restored"
    with pytest.raises(VerificationError) as caught:
        restore_archive(bad, target=target)
    assert caught.value.exit_code == ExitCode.VERIFY_FAILED
    assert not target.exists()


def test_archive_swapped_after_its_plan_is_refused_and_nothing_is_published(archive, tmp_path, monkeypatch):
    """A statekit archive is verified in the pass that writes it (there is no "after verification" any more): the
    plan comes from the manifest read first, and the pass refuses an archive whose manifest or bytes differ."""
    def change(members):
        member = next(m for m in members if m.info.name.endswith("AGENTS.md"))
        member.data = b"# evil!!\n"  # same length, other bytes

    bad = rewrite(archive, tmp_path / "bad.tar.zst", change)
    target = tmp_path / "restored"
    with pytest.raises(VerificationError, match="nothing was restored: member .*AGENTS.md: sha256 mismatch"):
        restore_archive(bad, target=target)
    assert not target.exists()
    good = restore_mod.skf.peek_manifest(archive)
    assert good is not None
    elsewhere = dataclasses.replace(good, sha256="0" * 64)  # planned from a manifest the archive no longer holds
    monkeypatch.setattr(restore_mod.skf, "peek_manifest", lambda path: elsewhere)
    with pytest.raises(VerificationError, match="the archive changed after its manifest was read"):
        restore_archive(archive, target=target)
    assert not target.exists()


def test_in_place_restore_brings_back_a_deleted_agent_db(state_tree, archive):
    before = rows_digest(state_tree.work_db)
    state_tree.work_db.unlink()
    (state_tree.root / "agents/main/sessions/s1.jsonl").write_text("changed\n")
    live = open_db(state_tree.agent_db)  # leaves a -wal/-shm pair behind
    live.execute("PRAGMA wal_autocheckpoint = 0")
    live.execute("INSERT INTO future_table_0(payload) VALUES ('after the backup')")
    live.commit()
    live.close()
    Path(f"{state_tree.agent_db}-wal").write_bytes(b"stale wal from another generation")
    result = restore_archive(archive, state_dir=state_tree.root)
    assert result.mode == "in-place"
    assert rows_digest(state_tree.work_db) == before
    assert (state_tree.root / "agents/main/sessions/s1.jsonl").read_text().startswith('{"type":"session"')
    assert not Path(f"{state_tree.agent_db}-wal").exists()
    assert str(state_tree.agent_db) + "-wal" in result.removed_sidecars
    conn = open_db(state_tree.agent_db)
    assert conn.execute("SELECT count(*) FROM future_table_0 WHERE payload = 'after the backup'").fetchone()[0] == 0
    conn.close()
    aside = result.pre_restore_dir
    assert aside is not None and aside.parent == state_tree.root / ".statekit" / "pre-restore"
    assert (aside / "state/agents/main/sessions/s1.jsonl").read_text() == "changed\n"
    assert (aside / "state/agents/main/agent/openclaw-agent.sqlite-wal").read_bytes() == b"stale wal from another generation"
    counts = result.counts()
    assert counts["create"] == 1 and counts["replace"] >= 2 and counts["unchanged"] > 10
    assert os.stat(state_tree.work_db).st_mode & 0o777 == 0o600


def test_in_place_dry_run_plans_and_writes_nothing(state_tree, archive):
    state_tree.work_db.unlink()
    before = tree_state(state_tree.root)
    result = restore_archive(archive, state_dir=state_tree.root, dry_run=True)
    assert tree_state(state_tree.root) == before
    actions = {s.destination: s.action for s in result.steps}
    assert actions[state_tree.work_db] == "create"
    assert actions[state_tree.root / "openclaw.json"] == "unchanged"


@pytest.mark.parametrize("fail_at", [1, 3, "last"])
def test_injected_failure_mid_restore_leaves_the_state_dir_exactly_as_before(state_tree, archive, monkeypatch, fail_at):
    state_tree.work_db.unlink()
    (state_tree.root / "agents/main/sessions/s1.jsonl").write_text("changed\n")
    (state_tree.root / "openclaw.json").write_text('{"changed": true}')
    (state_tree.root / "workspace" / "AGENTS.md").unlink()
    (state_tree.root / "workspace" / "AGENTS.md").mkdir()  # a dir where a file was
    Path(f"{state_tree.agent_db}-wal").write_bytes(b"stale")
    make_db(state_tree.root / "state" / "openclaw.sqlite-journal", role=None)
    before = {k: v for k, v in tree_state(state_tree.root).items() if not k.startswith(".statekit")}  # the backup made .statekit/lock
    plan = restore_archive(archive, state_dir=state_tree.root, dry_run=True)
    changes = sum(1 for s in plan.steps if s.action != "unchanged" and s.kind != "dir")
    limit = changes if fail_at == "last" else fail_at
    calls = {"n": 0}
    real_place = restore_mod._place

    def flaky_place(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == limit:
            raise OSError(5, "Input/output error (injected)")
        return real_place(*args, **kwargs)

    monkeypatch.setattr(restore_mod, "_place", flaky_place)
    with pytest.raises(OSError, match="injected"):
        restore_archive(archive, state_dir=state_tree.root)
    # the lock file is the one thing a run leaves (statekit's own, never archived)
    after = {k: v for k, v in tree_state(state_tree.root).items() if not k.startswith(".statekit")}
    assert after == before


def test_failure_while_staging_also_rolls_back(state_tree, archive, monkeypatch):
    state_tree.work_db.unlink()
    (state_tree.root / "openclaw.json").write_text('{"changed": true}')
    before = {k: v for k, v in tree_state(state_tree.root).items() if not k.startswith(".statekit")}  # the backup made .statekit/lock
    calls = {"n": 0}
    real_write = restore_mod.skf.write_all  # the one pass writes staged members through it

    def flaky_write(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError(28, "No space left on device (injected)")
        return real_write(*args, **kwargs)

    monkeypatch.setattr(restore_mod.skf, "write_all", flaky_write)
    with pytest.raises(OSError, match="injected"):
        restore_archive(archive, state_dir=state_tree.root)
    assert calls["n"] >= 2
    after = {k: v for k, v in tree_state(state_tree.root).items() if not k.startswith(".statekit")}
    assert after == before


def test_in_place_refused_while_another_statekit_run_holds_the_lock(state_tree, archive):
    state_tree.work_db.unlink()
    with exclusive_lock(lock_path(state_tree.root), "state dir"):
        with pytest.raises(BusyError) as caught:
            restore_archive(archive, state_dir=state_tree.root)
    assert caught.value.exit_code == ExitCode.BUSY
    assert not state_tree.work_db.exists()


def test_in_place_refused_while_a_gateway_runs(state_tree, archive):
    state_tree.work_db.unlink()
    (state_tree.root / "gateway.lock").write_text(json.dumps({"pid": os.getppid()}))
    with pytest.raises(BusyError, match="gateway is running"):
        restore_archive(archive, state_dir=state_tree.root)
    assert not state_tree.work_db.exists()


def test_restore_output_names_no_secret(archive, tmp_path):
    result = restore_archive(archive, target=tmp_path / "t", dry_run=True)
    assert SECRET not in json.dumps(result.to_json())


def test_external_assets_go_below_statekit_external_in_a_target(state_tree, tmp_path):
    creds = tmp_path / "ext-creds"
    creds.mkdir()
    (creds / "token.json").write_text('{"a": 1}')
    env = {"OPENCLAW_OAUTH_DIR": str(creds), "HOME": str(state_tree.home)}
    archive = create_backup(state_tree.root, tmp_path / "out", env=env, record=False).archive_path
    target = tmp_path / "t"
    restore_archive(archive, target=target)
    restored = target / ".statekit" / "external" / "credentials" / "token.json"
    assert restored.read_text() == '{"a": 1}' and os.stat(restored).st_mode & 0o777 == 0o600
    (creds / "token.json").write_text("changed")
    # in place, assets kept outside the state dir are restored only when asked, to the operator's path (issue 11 item 4)
    plain = restore_archive(archive, state_dir=state_tree.root, env={"HOME": str(state_tree.home)})
    assert (creds / "token.json").read_text() == "changed"
    assert [x["archive_path"].split("/payload/")[1] for x in plain.external_left_out if x["kind"] != "dir"] == [
        "external/credentials/token.json"]
    result = restore_archive(archive, state_dir=state_tree.root, restore_external=True, env=env)
    assert (creds / "token.json").read_text() == '{"a": 1}'
    replaced = [s.destination for s in result.steps if s.action == "replace" and s.kind != "sqlite"]
    assert replaced == [creds / "token.json"]  # live databases always differ from their snapshots
