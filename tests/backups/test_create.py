"""backup create: archive layout, manifest, modes, exclusions, refusals, failures, recording."""

from __future__ import annotations

import errno
import json
import os
import socket
from pathlib import Path

import pytest
from freezegun import freeze_time

from statekit.backup import create_backup, verify_archive
from statekit.backup import archive as archive_mod
from statekit.backup.lock import backup_lock
from statekit.backup.manifest import schema_problems
from statekit.install import read_install_id
from statekit.errors import BusyError, ExitCode, StatekitError, UsageError, VerificationError
from backup_helpers import SECRET, make_db, read_members, tree_state
from helpers import open_db


def _assets(result) -> dict[str, dict]:
    return {a["id"]: a for a in result.manifest["assets"]}


@freeze_time("2026-03-04 05:06:07")
def test_create_writes_one_private_verified_archive(state_tree, tmp_path):
    out = tmp_path / "out"
    result = create_backup(state_tree.root, out)
    assert result.archive_path == out / "openclaw-backup-20260304T050607Z.tar.zst"
    assert result.verified and result.archive_path.is_file()
    assert os.stat(out).st_mode & 0o777 == 0o700
    assert os.stat(result.archive_path).st_mode & 0o777 == 0o600
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == [
        "openclaw-backup-20260304T050607Z.tar.zst",
        "openclaw-backup-20260304T050607Z.tar.zst.verify.json",
    ]
    members = read_members(result.archive_path)
    assert members[0].info.name == "openclaw-backup-20260304T050607Z/manifest.json"
    manifest = json.loads(members[0].data)
    assert schema_problems(manifest) == []
    assert manifest["format"] == "statekit-backup" and manifest["schema_version"] == 1
    assert manifest["created_at"] == "2026-03-04T05:06:07.000Z"
    assert manifest["state_dir"] == str(state_tree.root)
    assert manifest["options"] == {"include_workspaces": False, "level": 3, "verify": True}
    assert manifest["totals"]["assets"] == len(manifest["assets"]) == len(members) - 1
    assert verify_archive(result.archive_path).ok


def test_every_database_found_by_header_and_described(state_tree, tmp_path):
    (state_tree.root / "plugins").mkdir()
    make_db(state_tree.root / "plugins" / "store.bin", role=None, user_version=9)  # no .sqlite name
    result = create_backup(state_tree.root, tmp_path / "out")
    dbs = {a["id"]: a for a in result.manifest["assets"] if a["kind"] == "sqlite"}
    assert set(dbs) == {
        "state/state/openclaw.sqlite",
        "state/agents/main/agent/openclaw-agent.sqlite",
        "state/agents/work/agent/openclaw-agent.sqlite",
        "state/tasks/runs.sqlite",
        "state/plugins/store.bin",
    }
    assert (dbs["state/state/openclaw.sqlite"]["role"], dbs["state/state/openclaw.sqlite"]["schema_version"]) == ("global", 7)
    work = dbs["state/agents/work/agent/openclaw-agent.sqlite"]
    assert (work["role"], work["agent_id"], work["schema_version"]) == ("agent", "work", 4)
    assert (dbs["state/tasks/runs.sqlite"]["role"], dbs["state/tasks/runs.sqlite"]["schema_version"]) == ("sqlite", 3)
    assert dbs["state/plugins/store.bin"]["schema_version"] == 9
    for db in dbs.values():
        assert db["snapshot_method"] == "vacuum-into" and db["integrity"] == "ok"
        assert db["archive_path"].endswith(db["id"].removeprefix("state/"))


def test_wal_only_rows_are_captured_and_sidecars_never_archived(state_tree, tmp_path):
    live = open_db(state_tree.agent_db)
    live.execute("PRAGMA wal_autocheckpoint = 0")
    live.execute("INSERT INTO future_table_0(payload) VALUES ('only in the wal')")
    live.commit()
    assert Path(f"{state_tree.agent_db}-wal").stat().st_size > 0
    result = create_backup(state_tree.root, tmp_path / "out")
    live.close()
    names = [m.info.name for m in read_members(result.archive_path)]
    assert not [n for n in names if n.endswith(("-wal", "-shm", "-journal"))]
    assert any(n.endswith("statekit-like.wal") for n in names)  # only real sidecar names are dropped
    target = tmp_path / "t"
    from statekit.backup import restore_archive

    restore_archive(result.archive_path, target=target)
    conn = open_db(target / "agents/main/agent/openclaw-agent.sqlite")
    assert conn.execute("SELECT count(*) FROM future_table_0 WHERE payload = 'only in the wal'").fetchone()[0] == 1
    conn.close()


def test_excluded_entries_are_listed_with_reasons(state_tree, tmp_path):
    fifo = state_tree.root / "pipe"
    os.mkfifo(fifo)
    sock_path = state_tree.root / "gw.sock"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(sock_path))
    (state_tree.root / ".statekit").mkdir(exist_ok=True)
    (state_tree.root / ".statekit" / "lock").write_text("{}")
    (state_tree.root / ".statekit" / "pre-restore").mkdir()
    (state_tree.root / "x.statekit-tmp-1").write_text("tmp")
    try:
        result = create_backup(state_tree.root, tmp_path / "out")
    finally:
        sock.close()
    reasons = {Path(s["source_path"]).name: s["reason"] for s in result.manifest["skipped"]}
    assert reasons["pipe"] == "FIFO"
    assert reasons["gw.sock"] == "socket"
    assert reasons["lock"] == "statekit lock file"
    assert "s1.jsonl.lock" not in reasons  # not statekit's: backed up (issue 11 item 2)
    assert reasons["x.statekit-tmp-1"] == "statekit temp file"
    assert "pre-restore" in reasons["pre-restore"]
    names = [m.info.name for m in read_members(result.archive_path)]
    assert not [n for n in names if n.endswith(("/pipe", "/gw.sock", ".statekit/lock"))]
    assert [n for n in names if n.endswith("s1.jsonl.lock")]
    warned = "\n".join(result.warnings)
    assert "pipe: not backed up (FIFO)" in warned and "gw.sock: not backed up (socket)" in warned
    assert "statekit-tmp" not in warned and ".statekit/lock" not in warned


def test_symlinks_archived_as_symlinks_never_followed(state_tree, tmp_path):
    result = create_backup(state_tree.root, tmp_path / "out")
    assets = _assets(result)
    outside = assets["state/plugin-skills/outside-skill"]
    inside = assets["state/plugin-skills/inside-link"]
    assert (outside["kind"], outside["link_target"], outside["link_scope"]) == ("symlink", "/nonexistent/outside/skill", "external")
    assert (inside["kind"], inside["link_target"], inside["link_scope"]) == ("symlink", "../workspace/AGENTS.md", "internal")
    members = {m.info.name: m for m in read_members(result.archive_path)}
    assert members[inside["archive_path"]].info.issym()
    assert members[outside["archive_path"]].info.isreg()  # no tar link may point outside the root
    assert members[outside["archive_path"]].data == b"/nonexistent/outside/skill"


def test_manifest_and_output_hold_no_secret(state_tree, tmp_path):
    result = create_backup(state_tree.root, tmp_path / "out")
    members = read_members(result.archive_path)
    assert SECRET not in members[0].data.decode()
    assert SECRET not in json.dumps(result.to_json())
    conn = open_db(state_tree.global_db)
    rows = conn.execute("SELECT status, archive_path, manifest_json FROM backup_runs").fetchall()
    conn.close()
    assert [(r[0], r[1]) for r in rows] == [("ok", str(result.archive_path))]
    assert SECRET not in rows[0][2]
    summary = json.loads(rows[0][2])
    assert summary["kind"] == "archive" and summary["assets"] == result.manifest["totals"]["assets"]


def test_record_never_creates_the_global_db(tmp_path):
    state = tmp_path / ".openclaw"
    state.mkdir()
    (state / "openclaw.json").write_text("{}")
    result = create_backup(state, tmp_path / "out")
    assert result.archive_path.is_file()
    assert not (state / "state").exists()


def test_dry_run_writes_nothing(state_tree, tmp_path):
    before = tree_state(tmp_path)
    result = create_backup(state_tree.root, tmp_path / "out", dry_run=True)
    assert result.archive_path is None and result.dry_run
    assert tree_state(tmp_path) == before
    assert not (tmp_path / "out").exists()
    assert {a["kind"] for a in result.manifest["assets"]} == {"dir", "file", "sqlite", "symlink"}


def test_create_leaves_the_state_tree_untouched(state_tree, tmp_path):
    conn = open_db(state_tree.global_db)
    conn.execute("DELETE FROM backup_runs")  # recording is the one intended write
    conn.close()
    before = tree_state(state_tree.root)
    create_backup(state_tree.root, tmp_path / "out", record=False)
    after = tree_state(state_tree.root)
    # the one entry a backup adds: statekit's state dir lock, held shared while it runs (issue 11 item 3)
    assert after.pop(".statekit/lock")[:2] == ("file", 0o600) and after.pop(".statekit") == ("dir", 0o700)
    before.pop(".statekit", None)  # the fixture's install id lives there already
    assert after == before


def test_output_inside_the_state_dir_is_refused(state_tree):
    with pytest.raises(UsageError, match="inside the backed-up state tree"):
        create_backup(state_tree.root, state_tree.root / "backups")
    assert not (state_tree.root / "backups").exists()


@freeze_time("2026-03-04 05:06:07")
def test_existing_output_file_is_never_overwritten(state_tree, tmp_path, monkeypatch):
    waits: list[float] = []
    monkeypatch.setattr("statekit.backup.create.time.sleep", waits.append)  # the clock is frozen: waiting never frees the name
    out = tmp_path / "out"
    out.mkdir()
    existing = out / "openclaw-backup-20260304T050607Z.tar.zst"
    existing.write_bytes(b"somebody else's bytes")
    with pytest.raises(StatekitError, match="refusing to overwrite"):
        create_backup(state_tree.root, out)
    assert existing.read_bytes() == b"somebody else's bytes"
    assert not list(out.glob("*.partial"))
    assert len(waits) == 2 and all(0 < w <= 1.001 for w in waits)


def test_a_second_create_in_the_same_second_waits_for_the_next_name(state_tree, tmp_path, monkeypatch):
    out = tmp_path / "out"
    with freeze_time("2026-03-04 05:06:07.400") as clock:
        monkeypatch.setattr("statekit.backup.create.time.sleep", lambda seconds: clock.tick(seconds))
        first = create_backup(state_tree.root, out)
        second = create_backup(state_tree.root, out)
    assert first.archive_path.name == "openclaw-backup-20260304T050607Z.tar.zst"
    assert second.archive_path.name == "openclaw-backup-20260304T050608Z.tar.zst"
    assert second.manifest["created_at"].startswith("2026-03-04T05:06:08.")
    assert verify_archive(first.archive_path).ok and verify_archive(second.archive_path).ok


def test_full_disk_leaves_no_archive_and_records_failure(state_tree, tmp_path, monkeypatch):
    real_write = archive_mod.SinkFile.write

    def failing_write(self, data):
        if self.bytes_written > 10_000:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(self, data)

    monkeypatch.setattr(archive_mod.SinkFile, "write", failing_write)
    (state_tree.root / "big.bin").write_bytes(os.urandom(3 << 20))
    out = tmp_path / "out"
    with pytest.raises(StatekitError, match="no space left") as caught:
        create_backup(state_tree.root, out)
    assert caught.value.exit_code == ExitCode.FATAL
    assert [p.name for p in out.iterdir()] == [".statekit-backup.lock"]
    conn = open_db(state_tree.global_db)
    rows = conn.execute("SELECT status, manifest_json FROM backup_runs").fetchall()
    conn.close()
    assert rows[0][0] == "failed" and "no space" in json.loads(rows[0][1])["error"].lower()


def test_corrupt_database_fails_with_exit_5_and_no_archive(state_tree, tmp_path):
    conn = open_db(state_tree.tasks_db)
    root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'future_table_1'").fetchone()[0]
    page = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    data = bytearray(state_tree.tasks_db.read_bytes())
    data[(root - 1) * page : root * page] = b"\x0d" + os.urandom(page - 1)  # smash a table's b-tree page
    state_tree.tasks_db.write_bytes(bytes(data))
    out = tmp_path / "out"
    with pytest.raises(VerificationError) as caught:
        create_backup(state_tree.root, out)
    assert caught.value.exit_code == ExitCode.VERIFY_FAILED
    assert "runs.sqlite" in str(caught.value)
    assert not list(out.glob("openclaw-backup-*"))


def test_two_runs_never_overlap(state_tree, tmp_path):
    out = tmp_path / "out"
    with backup_lock(out):
        with pytest.raises(BusyError) as caught:
            create_backup(state_tree.root, out)
    assert caught.value.exit_code == ExitCode.BUSY
    assert not list(out.glob("openclaw-backup-*"))


def test_stale_partial_and_staging_from_a_killed_run_are_removed(state_tree, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "openclaw-backup-20000101T000000Z.tar.zst.partial").write_bytes(b"half")
    (out / ".statekit-backup-abc").mkdir()
    create_backup(state_tree.root, out)
    assert not (out / "openclaw-backup-20000101T000000Z.tar.zst.partial").exists()
    assert not (out / ".statekit-backup-abc").exists()


def test_default_output_is_beside_the_state_dir(state_tree):
    """One folder per install beside the state dir (issue 12 problem 2: no longer one folder all installs share)."""
    result = create_backup(state_tree.root)
    assert result.archive_path.parent == state_tree.home / "openclaw-backups" / read_install_id(state_tree.root)


def test_external_config_credentials_and_workspaces(state_tree, tmp_path):
    ext = tmp_path / "elsewhere"
    (ext / "creds").mkdir(parents=True)
    (ext / "creds" / "token.json").write_text('{"t": 1}')
    (ext / "ws").mkdir()
    (ext / "ws" / "notes.md").write_text("notes")
    stale_ws = tmp_path / "oldhome" / ".openclaw" / "ws-stale"
    stale_ws.mkdir(parents=True)
    (stale_ws / "never-read.md").write_text("stale")
    config = ext / "openclaw.json"
    config.write_text(json.dumps({"agents": {"defaults": {"workspace": str(ext / "ws")}, "list": [{"id": "old", "workspace": str(stale_ws)}]}}))
    env = {"OPENCLAW_CONFIG_PATH": str(config), "OPENCLAW_OAUTH_DIR": str(ext / "creds"), "HOME": str(state_tree.home)}
    plain = create_backup(state_tree.root, tmp_path / "o1", env=env, record=False)
    roles = {a["id"]: a["role"] for a in plain.manifest["assets"]}
    assert roles["config/openclaw.json"] == "config"
    assert roles["credentials/token.json"] == "credentials"
    assert not any(i.startswith("workspace-") for i in roles)
    full = create_backup(state_tree.root, tmp_path / "o2", include_workspaces=True, env=env, record=False)
    assets = _assets(full)
    notes = assets["workspace-default/notes.md"]
    assert notes["role"] == "workspace" and notes["archive_path"].split("/", 1)[1] == "payload/external/workspace-default/notes.md"
    # the stale absolute path is read relative to where the state dir is now: never at its old location
    assert not any("never-read" in a["source_path"] for a in full.manifest["assets"])
    assert str(state_tree.root / "ws-stale") in {s["source_path"] for s in full.manifest["skipped"]}
    assert verify_archive(full.archive_path).ok


def test_level_option_is_recorded_and_bad_level_refused(state_tree, tmp_path):
    result = create_backup(state_tree.root, tmp_path / "out", level=9, verify=False)
    assert result.manifest["options"] == {"include_workspaces": False, "level": 9, "verify": False}
    assert not result.verified and verify_archive(result.archive_path).ok
    with pytest.raises(StatekitError):
        create_backup(state_tree.root, tmp_path / "out2", level=40)


def test_missing_state_dir_is_refused(tmp_path):
    with pytest.raises(StatekitError, match="does not exist"):
        create_backup(tmp_path / "nope", tmp_path / "out")


class _GrowOnRead:
    """A file handle whose file gets appended to right after the first read (after fstat)."""

    def __init__(self, handle, path: Path, extra: bytes) -> None:
        self._handle, self._path, self._extra, self._grown = handle, path, extra, False

    def read(self, n=-1):
        data = self._handle.read(n)
        if not self._grown:
            self._grown = True
            with open(self._path, "ab") as writer:
                writer.write(self._extra)
        return data

    def __iter__(self):
        return iter(lambda: self.read(1 << 20), b"")

    def __getattr__(self, name):
        return getattr(self._handle, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._handle.close()


def test_file_changing_while_read_is_reread_once(state_tree, tmp_path, monkeypatch):
    from statekit.backup import create as create_mod

    log = state_tree.root / "logs" / "gateway.log"
    real_open = create_mod.open_regular_file
    grown = {"done": False}

    def open_and_grow(path):
        handle = real_open(path)
        if Path(path) == log and not grown["done"]:
            grown["done"] = True
            return _GrowOnRead(handle, log, b"appended during the read\n")  # a gateway appending while we read
        return handle

    monkeypatch.setattr(create_mod, "open_regular_file", open_and_grow)
    result = create_backup(state_tree.root, tmp_path / "out", record=False)
    asset = _assets(result)["state/logs/gateway.log"]
    member = next(m for m in read_members(result.archive_path) if m.info.name == asset["archive_path"])
    assert member.data == log.read_bytes() and member.data.endswith(b"appended during the read\n")
    assert result.warnings == []  # the second read was stable: nothing to report
    assert verify_archive(result.archive_path).ok


def test_file_that_keeps_changing_is_reported(state_tree, tmp_path, monkeypatch):
    from statekit.backup import create as create_mod

    log = state_tree.root / "logs" / "gateway.log"
    real_open, real_copy = create_mod.open_regular_file, create_mod._copy_private

    def open_and_grow(path):
        handle = real_open(path)
        return _GrowOnRead(handle, log, b"more\n") if Path(path) == log else handle

    def copy_changing(path, copy_to):
        size, st, _changed = real_copy(path, copy_to)
        return size, st, path == log

    monkeypatch.setattr(create_mod, "open_regular_file", open_and_grow)
    monkeypatch.setattr(create_mod, "_copy_private", copy_changing)
    result = create_backup(state_tree.root, tmp_path / "out", record=False)
    assert any("gateway.log: changed while being copied" in w for w in result.warnings)
    assert verify_archive(result.archive_path).ok
