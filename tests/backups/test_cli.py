"""The ``statekit backup`` CLI: exit codes, --quiet, --json, one-line errors, help examples."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from statekit.backup.lock import backup_lock
from backup_helpers import SECRET, tree_state
from statekit.cli import main


def cli(*args) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "STATEKIT_DEBUG"}
    return subprocess.run([sys.executable, "-m", "statekit", *map(str, args)], capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL, timeout=300)


def run(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_cron_style_round_trip_in_subprocesses(state_tree, tmp_path):
    out = tmp_path / "out"
    r = cli("backup", "create", "--state-dir", state_tree.root, "--output", out, "--quiet")
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    (archive,) = out.glob("*.tar.zst")
    r = cli("backup", "verify", archive)
    assert r.returncode == 0 and "OK" in r.stdout
    bad = tmp_path / "bad.tar.zst"
    data = bytearray(archive.read_bytes())
    data[len(data) // 2] ^= 0xFF
    bad.write_bytes(bytes(data))
    r = cli("backup", "verify", bad)
    assert r.returncode == 5
    assert r.stderr and all(line.startswith("statekit: error: ") for line in r.stderr.splitlines())
    assert "Traceback" not in r.stderr + r.stdout
    target = tmp_path / "restored"
    r = cli("backup", "restore", archive, "--target", target)
    assert r.returncode == 2 and "--yes" in r.stderr and not target.exists()
    r = cli("backup", "restore", archive, "--target", target, "--yes", "--quiet")
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    assert (target / "state" / "openclaw.sqlite").is_file()


def test_busy_lock_exits_4_with_one_line(state_tree, tmp_path):
    out = tmp_path / "out"
    with backup_lock(out):
        r = cli("backup", "create", "--state-dir", state_tree.root, "--output", out, "--quiet")
    assert r.returncode == 4
    assert len(r.stderr.splitlines()) == 1 and "busy" in r.stderr
    assert r.stdout == ""


def test_output_inside_state_dir_exits_2(capsys, state_tree):
    code, out, err = run(capsys, "backup", "create", "--state-dir", state_tree.root, "--output", state_tree.root / "bk", "--quiet")
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and "inside the backed-up" in err


def test_create_json_and_human_output_hold_no_secret(capsys, state_tree, tmp_path):
    code, out, err = run(capsys, "backup", "create", "--state-dir", state_tree.root, "--output", tmp_path / "o", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["ok"] and data["verified"] and Path(data["archive"]).is_file()
    assert {d["role"] for d in data["databases"]} == {"global", "agent", "sqlite"}
    code, out, err = run(capsys, "backup", "create", "--state-dir", state_tree.root, "--output", tmp_path / "o2")
    assert code == 0 and "Backup archive:" in out and "Verification: passed" in out
    assert SECRET not in out + err


def test_create_dry_run_writes_nothing(capsys, state_tree, tmp_path):
    before = tree_state(tmp_path)
    code, out, _ = run(capsys, "backup", "create", "--state-dir", state_tree.root, "--output", tmp_path / "o", "--dry-run")
    assert code == 0 and "Dry run only" in out
    assert tree_state(tmp_path) == before


def test_verify_json_failure(capsys, tmp_path):
    junk = tmp_path / "junk.tar.zst"
    junk.write_bytes(b"junk")
    code, out, _ = run(capsys, "backup", "verify", junk, "--json")
    assert code == 5
    data = json.loads(out)
    assert data["ok"] is False and data["problems"]


def test_restore_dry_run_prints_plan(capsys, state_tree, tmp_path):
    run(capsys, "backup", "create", "--state-dir", state_tree.root, "--output", tmp_path / "o", "--quiet")
    (archive,) = (tmp_path / "o").glob("*.tar.zst")
    target = tmp_path / "t"
    code, out, _ = run(capsys, "backup", "restore", archive, "--target", target, "--dry-run", "--verbose")  # every file
    assert code == 0 and not target.exists()
    assert f"create    {archive.name.removesuffix('.tar.zst')}/payload/state/state/openclaw.sqlite -> {target}/state/openclaw.sqlite" in out
    code, out, _ = run(capsys, "backup", "restore", archive, "--target", target, "--dry-run", "--json")
    assert json.loads(out)["counts"]["create"] > 10


def test_list_and_prune(capsys, state_tree, tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # the table fits the terminal; at 80 columns its headers wrap
    out_dir = tmp_path / "o"
    run(capsys, "backup", "create", "--state-dir", state_tree.root, "--output", out_dir, "--quiet")
    mine = ("--state-dir", state_tree.root)  # list and prune act on the state dir's install
    code, out, _ = run(capsys, "backup", "list", *mine, "--output", out_dir, "--json")
    assert code == 0 and json.loads(out)["archives"][0]["verified"] is True
    code, out, _ = run(capsys, "backup", "list", *mine, "--output", out_dir)
    assert "VERIFIED" in out and " ok " in out
    code, out, _ = run(capsys, "backup", "prune", *mine, "--output", out_dir, "--keep-last", "1", "--dry-run")
    assert code == 0 and "keep-last 1/1" in out
    code, _, err = run(capsys, "backup", "prune", "--output", out_dir)
    assert code == 2 and "retention rule" in err


@pytest.mark.parametrize("command", ["create", "verify", "restore", "list", "prune"])
def test_help_has_a_runnable_example(capsys, command):
    assert main(["backup", command, "--help"]) == 0
    out = capsys.readouterr().out
    assert "Example" in out
    example = next(line.strip() for line in out.splitlines() if line.strip().startswith(f"statekit backup {command}"))
    assert len(example) > len(f"statekit backup {command}")  # one unwrapped, copy-pasteable line


def test_openclaw_runtime_locks_are_a_note_not_a_warning(capsys, state_tree, tmp_path):
    """OpenClaw's runtime lock coordinators are left out by design (as OpenClaw's own archives do): one note line,
    exit 0 (a warning, exit 3, made every backup of a state dir a 9.6 gateway had run in look incomplete)."""
    locks = state_tree.root / "tmp" / "openclaw-0"
    locks.mkdir(parents=True)
    (locks / "gateway.state.lock.sqlite").write_bytes(b"SQLite format 3\x00" + b"\x00" * 100)
    code, _out, err = run(capsys, "backup", "create", "--state-dir", state_tree.root, "--output", tmp_path / "o")
    assert code == 0, err
    assert "statekit: note: " in err and "gateway.state.lock.sqlite: not backed up (OpenClaw runtime lock" in err
    assert "statekit: warning:" not in err
    code, _out, err = run(capsys, "backup", "create", "--state-dir", state_tree.root, "--output", tmp_path / "o2", "--quiet")
    assert (code, err) == (0, "")
