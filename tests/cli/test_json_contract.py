"""Issue 12 (7, 10): with --json every command writes exactly one JSON document on stdout, on success and on failure.

A failure is ``{"ok": false, "error": "<the one stderr line>", "exit_code": N}``; a path that does not
exist is one line and exit 2 (not found) for every command. Fails on 308a7ed: errors printed nothing
on stdout (only `backup verify` emitted a JSON failure), `history`, `sessions list`, `backup list`
and `backup prune --output /nonexistent` exited 0, `backup verify` of a missing file exited 5.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cli_helpers import T0, transcript
from helpers import make_state, run_cli
from test_cli_contract import COMMANDS

MISSING = "/nonexistent/statekit-test"


def one_document(stdout: str) -> Any:
    """stdout holds exactly one JSON document (json.loads refuses trailing data)."""
    return json.loads(stdout)


@pytest.fixture(scope="module")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A migrated install with one session, a backup archive and a session archive."""
    root = tmp_path_factory.mktemp("json")
    state = make_state(root, {
        "openclaw.json": {"agents": {}},
        "agents/main/sessions/sessions.json": {"agent:main:main": {"sessionId": "s1", "updatedAt": T0},
                                                "agent:main:other": {"sessionId": "s2", "updatedAt": T0}},
        "agents/main/sessions/s1.jsonl": transcript("s1", 3),
        "agents/main/sessions/s2.jsonl": transcript("s2", 3),
    })
    result = run_cli("migrate", "--state-dir", state, "--yes", "--no-backup", "--json")
    assert result.returncode == 0, result.stderr
    run_id = one_document(result.stdout)["run_id"]
    out = root / "backups"
    out.mkdir()
    created = run_cli("backup", "create", "--state-dir", state, "--output", out, "--json")
    assert created.returncode == 0, created.stderr
    deleted = run_cli("sessions", "delete", "agent:main:other", "--state-dir", state, "--yes", "--json")
    assert deleted.returncode == 0, deleted.stderr
    archive = one_document(deleted.stdout)["archive"]  # relative to the state dir
    fresh = make_state(root / "undoable", {  # a run nothing came after: `undo --dry-run` says it can be undone
        "openclaw.json": {"agents": {}},
        "agents/main/sessions/sessions.json": {"agent:main:main": {"sessionId": "s1", "updatedAt": T0}},
        "agents/main/sessions/s1.jsonl": transcript("s1", 3),
    })
    undoable = run_cli("migrate", "--state-dir", fresh, "--yes", "--backup-output", out, "--json")
    assert undoable.returncode == 0, undoable.stderr
    return {"state": state, "run_id": run_id, "out": out, "archive": one_document(created.stdout)["archive"],
            "session_archive": state / archive, "root": root, "undoable": fresh, "undoable_run": one_document(undoable.stdout)["run_id"]}


def success_args(name: str, m: dict[str, Any]) -> list[Any]:
    s = ["--state-dir", m["state"]]
    return {
        "plan": ["plan", *s],
        "migrate": ["migrate", *s, "--yes", "--no-backup"],
        "inspect": ["inspect", *s],
        "history": ["history", *s],
        "recover": ["recover", m["run_id"], *s, "--dry-run"],
        "undo": ["undo", m["undoable_run"], "--state-dir", m["undoable"], "--dry-run"],
        "sessions delete": ["sessions", "delete", "agent:main:main", *s, "--dry-run"],
        "sessions reset": ["sessions", "reset", "agent:main:main", *s, "--dry-run"],
        "sessions list": ["sessions", "list", *s],
        "sessions restore-archive": ["sessions", "restore-archive", m["session_archive"], *s, "--dry-run"],
        "backup create": ["backup", "create", *s, "--output", m["out"], "--dry-run"],
        "backup verify": ["backup", "verify", m["archive"]],
        "backup restore": ["backup", "restore", m["archive"], "--target", m["root"] / "restored", "--dry-run"],
        "backup list": ["backup", "list", "--output", m["out"]],
        "backup prune": ["backup", "prune", "--output", m["out"], "--keep-last", "1", "--dry-run"],
    }[name]


def missing_path_args(name: str, m: dict[str, Any]) -> list[Any]:
    s = ["--state-dir", MISSING]
    return {
        "plan": ["plan", *s],
        "migrate": ["migrate", *s, "--yes"],
        "inspect": ["inspect", *s],
        "history": ["history", *s],
        "recover": ["recover", m["run_id"], *s, "--dry-run"],
        "undo": ["undo", m["run_id"], *s, "--dry-run"],
        "sessions delete": ["sessions", "delete", "agent:main:main", *s, "--dry-run"],
        "sessions reset": ["sessions", "reset", "agent:main:main", *s, "--dry-run"],
        "sessions list": ["sessions", "list", *s],
        "sessions restore-archive": ["sessions", "restore-archive", MISSING + ".json.zst", "--state-dir", m["state"], "--dry-run"],
        "backup create": ["backup", "create", *s],
        "backup verify": ["backup", "verify", MISSING + ".tar.zst"],
        "backup restore": ["backup", "restore", MISSING + ".tar.zst", "--target", m["root"] / "never", "--dry-run"],
        "backup list": ["backup", "list", "--output", MISSING],
        "backup prune": ["backup", "prune", "--output", MISSING, "--keep-last", "1"],
    }[name]


NAMES = [name for name, _ in COMMANDS]


def test_every_command_is_covered() -> None:
    covered = {"plan", "migrate", "inspect", "history", "recover", "undo", "sessions delete", "sessions reset", "sessions list",
               "sessions restore-archive", "backup create", "backup verify", "backup restore", "backup list", "backup prune"}
    assert set(NAMES) <= covered, f"add {sorted(set(NAMES) - covered)} to this file"


@pytest.mark.parametrize("name", NAMES)
def test_json_success_is_one_document(name: str, migrated: dict[str, Any]) -> None:
    result = run_cli(*success_args(name, migrated), "--json")
    assert result.returncode in (0, 3), (name, result.returncode, result.stderr)
    data = one_document(result.stdout)
    assert isinstance(data, dict) and "error" not in data, name


@pytest.mark.parametrize("name", NAMES)
def test_missing_path_is_one_line_exit_2_and_one_json_document(name: str, migrated: dict[str, Any]) -> None:
    args = missing_path_args(name, migrated)
    human = run_cli(*args)
    assert human.returncode == 2, (name, human.returncode, human.stdout, human.stderr)
    assert human.stdout == "" and len(human.stderr.splitlines()) == 1 and "not found" in human.stderr, (name, human.stderr)
    result = run_cli(*args, "--json")
    assert result.returncode == 2, (name, result.stderr)
    assert one_document(result.stdout) == {"ok": False, "error": human.stderr.strip().removeprefix("statekit: error: "), "exit_code": 2}


@pytest.mark.parametrize("name", NAMES)
def test_usage_error_with_json_is_one_document(name: str) -> None:
    result = run_cli(*name.split(), "--no-such-option", "--json")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    data = one_document(result.stdout)
    assert data["exit_code"] == 2 and "--no-such-option" in data["error"]
