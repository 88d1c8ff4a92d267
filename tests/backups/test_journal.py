"""The in-place restore journal on the command line: pending after a kill, then finished or undone.

The restores here are really killed (a child running the test entry point ``faultkit/run_statekit.py`` with
``STATEKIT_CRASHPOINT``); every kill point and every way to settle is walked by
tests/reliability/test_rel_crash_backup.py.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

import faultkit
from statekit.backup import create_backup
from statekit.backup.journal import RestoreJournal, describe_pending, journal_path, pending
from backup_helpers import rows_digest, tree_state
from statekit.cli import main


def cli(*args, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("STATEKIT_")}
    full.update(env or {})
    return subprocess.run([*faultkit.statekit_command(env), *map(str, args)], capture_output=True, text=True, env=full,
                          stdin=subprocess.DEVNULL, timeout=300)


def run(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def killed(state_tree, tmp_path):
    """State B in place, archive A; the restore killed at ``point`` (a factory)."""
    archive = create_backup(state_tree.root, tmp_path / "out", record=False).archive_path
    digest_a = rows_digest(state_tree.work_db)
    config_a = state_tree.config.read_bytes()
    state_tree.work_db.unlink()
    state_tree.config.write_text('{"b": true}')
    (state_tree.root / "workspace" / "AGENTS.md").write_text("B\n")
    b_state = tree_state(state_tree.root)

    def kill(point: str) -> dict:
        r = cli("backup", "restore", archive, "--state-dir", state_tree.root, "--yes", env={"STATEKIT_CRASHPOINT": point})
        assert r.returncode == -9, r
        return {"archive": archive, "a_work": digest_a, "a_config": config_a, "b_state": b_state,
                "journal": json.loads(journal_path(state_tree.root).read_text())}

    return kill


def _without_lock(state: dict) -> dict:
    return {k: v for k, v in state.items() if k != ".statekit/lock"}  # the lock file records its last holder


def _without_statekit(state: dict) -> dict:
    return {k: v for k, v in state.items() if not k.startswith(".statekit")}


def test_inspect_and_read_only_commands_name_it_and_change_nothing(capsys, state_tree, killed):
    k = killed("restore-placed:2")
    assert k["journal"]["phase"] == "swapping"
    before = tree_state(state_tree.root)
    code, out, _err = run(capsys, "inspect", "--state-dir", state_tree.root, "--json")
    assert code == 3
    assert any("interrupted while swapping" in f and "--resume" in f for f in json.loads(out)["findings"])
    for args in (["plan"], ["history"], ["backup", "restore", k["archive"], "--dry-run"]):
        code, out, err = run(capsys, *args, "--state-dir", state_tree.root)
        assert "interrupted while swapping" in err + out, args
    assert tree_state(state_tree.root) == before
    assert pending(state_tree.root) is not None


def test_resume_needs_yes_and_finishes_it(capsys, state_tree, killed):
    k = killed("restore-placed:2")
    code, _out, err = run(capsys, "backup", "restore", "--resume", "--state-dir", state_tree.root)
    assert code == 2 and "--yes" in err and pending(state_tree.root) is not None
    code, out, _err = run(capsys, "backup", "restore", "--resume", "--state-dir", state_tree.root, "--yes", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["recovered"]["direction"] == "forward" and data["restore"] is None
    assert rows_digest(state_tree.work_db) == k["a_work"] and state_tree.config.read_bytes() == k["a_config"]
    assert pending(state_tree.root) is None
    code, out, _err = run(capsys, "backup", "restore", "--resume", "--state-dir", state_tree.root, "--yes")
    assert code == 0 and "No interrupted restore is pending" in out


def test_resume_of_a_restore_killed_while_staging_restores_again(capsys, state_tree, killed):
    k = killed("restore-member-written:2")
    assert k["journal"]["phase"] == "staging"
    code, out, _err = run(capsys, "backup", "restore", "--resume", "--state-dir", state_tree.root, "--yes", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["recovered"]["direction"] == "back" and data["restore"]["mode"] == "in-place"
    assert rows_digest(state_tree.work_db) == k["a_work"] and state_tree.config.read_bytes() == k["a_config"]


def test_abort_puts_b_back_exactly(capsys, state_tree, killed):
    k = killed("restore-placed:3")
    code, out, _err = run(capsys, "backup", "restore", "--abort", "--state-dir", state_tree.root, "--yes")
    assert code == 0 and "rolled back" in out
    assert _without_statekit(tree_state(state_tree.root)) == _without_statekit(k["b_state"])
    assert not (state_tree.root / ".statekit" / "pre-restore").exists()


def test_a_writing_command_of_another_kind_settles_it_first(capsys, state_tree, killed, tmp_path):
    k = killed("restore-placed:1")
    code, _out, err = run(capsys, "backup", "create", "--state-dir", state_tree.root, "--output", tmp_path / "after", "--quiet")
    assert code == 0
    assert "finished the interrupted restore" in err  # a warning line: shown even with --quiet
    assert rows_digest(state_tree.work_db) == k["a_work"]
    assert pending(state_tree.root) is None


def test_resume_and_abort_refuse_an_archive_or_each_other(capsys, state_tree, killed):
    k = killed("restore-placed:1")
    assert run(capsys, "backup", "restore", k["archive"], "--resume", "--state-dir", state_tree.root, "--yes")[0] == 2
    assert run(capsys, "backup", "restore", "--resume", "--abort", "--state-dir", state_tree.root, "--yes")[0] == 2
    assert run(capsys, "backup", "restore", "--state-dir", state_tree.root, "--yes")[0] == 2
    assert pending(state_tree.root) is not None


def test_a_damaged_journal_stops_writing_commands_with_one_line(capsys, state_tree, killed, tmp_path):
    killed("restore-placed:1")
    journal_path(state_tree.root).write_text('{"format": "statekit-restore-journal", "version": 1, "phase": "sw')
    before = tree_state(state_tree.root)
    code, _out, err = run(capsys, "backup", "create", "--state-dir", state_tree.root, "--output", tmp_path / "after")
    assert code == 1 and len(err.splitlines()) == 1 and "restore-journal.json" in err and "unreadable" in err
    unlocked = lambda t: {k: v for k, v in t.items() if k != ".statekit/lock"}  # noqa: E731
    assert unlocked(tree_state(state_tree.root)) == unlocked(before)
    assert not (tmp_path / "after").exists()
    assert "unreadable" in (describe_pending(state_tree.root) or "")


def test_a_journal_never_deletes_what_is_not_a_staged_copy(state_tree, killed):
    killed("restore-placed:1")
    path = journal_path(state_tree.root)
    data = json.loads(path.read_text())
    data["steps"][0]["staged"] = str(state_tree.config)  # pointed at a user file
    path.write_text(json.dumps(data))
    with pytest.raises(Exception, match="not a statekit staged copy"):
        RestoreJournal.load(path)
    assert state_tree.config.exists()


def test_kill_after_the_last_move_leaves_nothing_to_redo(capsys, state_tree, killed):
    k = killed("restore-done")
    code, out, _err = run(capsys, "backup", "restore", "--resume", "--state-dir", state_tree.root, "--yes", "--json")
    assert code == 0 and json.loads(out)["recovered"]["placed"] == 0
    assert rows_digest(state_tree.work_db) == k["a_work"]


def test_a_journal_temp_file_of_a_killed_restore_is_removed_by_the_next_restore(capsys, state_tree, tmp_path):
    """A restore killed between writing its journal's temp file and renaming it left ``.restore-journal.json.statekit-
    tmp-<pid>-<hex>`` in ``.statekit/`` for good (the crash suite's random-delay kills caught it under load).

    Fails before the fix: the temp file of the dead writer is still there after the next restore."""
    from statekit.fsutil import TEMP_MARKER

    archive = create_backup(state_tree.root, tmp_path / "out", record=False).archive_path
    writer = subprocess.Popen(["true"])
    writer.wait()  # a writer that is gone
    leftover = journal_path(state_tree.root).with_name(f".{journal_path(state_tree.root).name}{TEMP_MARKER}{writer.pid}-0badc0de")
    leftover.parent.mkdir(parents=True, exist_ok=True)
    leftover.write_text("{")
    code, _out, err = run(capsys, "backup", "restore", archive, "--state-dir", state_tree.root, "--yes")
    assert code == 0, err
    assert not leftover.exists()
    assert pending(state_tree.root) is None


def test_resume_of_a_killed_restore_of_an_encrypted_archive_opens_it_again(capsys, state_tree, tmp_path):
    """The journal of a restore from an ``.age`` archive named its plaintext scratch copy, which is gone after the kill:
    ``--resume`` could only undo ("the archive of the interrupted restore is gone"). It now keeps the archive the
    operator named and opens it again with ``--identity`` (asked for before anything changes).

    Fails before the fix: exit 1 and state B back instead of the archive's state A."""
    from pyrage import x25519

    from statekit.backup.encryption import load_recipients

    identity = x25519.Identity.generate()
    key = tmp_path / "key.txt"
    key.write_text(f"{identity}\n")
    os.chmod(key, 0o600)
    archive = create_backup(state_tree.root, tmp_path / "out", record=False,
                            recipients=load_recipients([str(identity.to_public())])).archive_path
    digest_a, config_a = rows_digest(state_tree.work_db), state_tree.config.read_bytes()
    state_tree.work_db.unlink()
    state_tree.config.write_text('{"b": true}')
    r = cli("backup", "restore", archive, "--identity", key, "--state-dir", state_tree.root, "--yes",
            env={"STATEKIT_CRASHPOINT": "restore-member-written:2", "TMPDIR": str(tmp_path)})
    assert r.returncode == -9, r
    journal = json.loads(journal_path(state_tree.root).read_text())
    assert journal["phase"] == "staging" and journal["origin"] == str(archive)
    assert not Path(journal["archive"]).is_relative_to(state_tree.root)
    scratch = Path(journal["archive"]).parent
    assert scratch.name.startswith(".statekit-decrypt-") and scratch.is_dir()  # the plaintext copy the kill left
    before = _without_lock(tree_state(state_tree.root))
    code, _out, err = run(capsys, "backup", "restore", "--resume", "--state-dir", state_tree.root, "--yes")
    assert code == 2 and "--identity" in err, err
    assert _without_lock(tree_state(state_tree.root)) == before and pending(state_tree.root) is not None
    code, out, err = run(capsys, "backup", "restore", "--resume", "--identity", key, "--state-dir", state_tree.root, "--yes", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["recovered"]["direction"] == "back" and data["restore"]["mode"] == "in-place"
    assert rows_digest(state_tree.work_db) == digest_a and state_tree.config.read_bytes() == config_a
    assert pending(state_tree.root) is None
    assert not scratch.exists(), "the resume opened the archive again and removed the dead run's plaintext copy"
