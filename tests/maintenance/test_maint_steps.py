"""Planned steps of migrate: state-dir relocation and config aliases (fake HOME in tmp_path)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from helpers import global_db, rows, run_cli, tree_digest, write_files
from maint_helpers import entry, mode
from statekit.migrate.config_aliases import rewrite_aliases
from statekit.errors import StateDirError
from statekit.fsutil import sha256_file
from statekit.layout import resolve_state_dir

SECRET = "gw-Secret-Token-0123456789abcdef"
API_KEY = "sk-live-ABCDEFGHIJKLMNOPQRSTUV"

LEGACY_CONFIG = """// written by clawdbot
{
  session: {
    idleMinutes: 45,
    resetByType: { dm: { mode: "idle", idleMinutes: 20 }, group: { mode: "daily" } },
    writeLock: { timeoutMs: 5000 },
  },
  gateway: { auth: { token: "%s" } },
  models: { providers: { openai: { apiKey: "%s" } } },
  agents: {
    defaults: { workspace: "HOME/.clawdbot/workspace", memorySearch: { enabled: true, store: { path: "~/.clawdbot/memory/{agentId}.sqlite" } } },
    list: [ { id: "work", memorySearch: { store: { path: "/x.sqlite", vector: { enabled: false } } } } ],
  },
}
""" % (SECRET, API_KEY)


def _env(home: Path) -> dict[str, str]:
    return {"HOME": str(home), "OPENCLAW_HOME": str(home), "OPENCLAW_STATE_DIR": "", "CLAWDBOT_STATE_DIR": "",
            "OPENCLAW_CONFIG_PATH": "", "CLAWDBOT_CONFIG_PATH": ""}


def _legacy_home(tmp_path: Path, name: str = ".clawdbot", config_name: str = "clawdbot.json", config: str | None = None) -> Path:
    home = tmp_path / "home"
    legacy = home / name
    write_files(legacy, {
        config_name: (config if config is not None else LEGACY_CONFIG).replace("HOME", str(home)),
        ".env": "OPENAI_API_KEY=x\n",
        "agents/main/sessions/sessions.json": {"agent:main:main": entry("s1")},
        "agents/main/sessions/s1.jsonl": '{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00Z","cwd":"/"}\n',
    })
    return home


def _plan(home: Path):
    import statekit.migrate.plan as plan_mod

    env = _env(home)
    return plan_mod.build_plan(resolve_state_dir(None, env), env)


def _migrate(home: Path):
    import statekit.migrate.apply as apply_mod

    env = _env(home)
    return apply_mod.migrate(resolve_state_dir(None, env), apply_mod.MigrateOptions(backup=False, env=env))


# --- config aliases (pure) ------------------------------------------------------------


def test_aliases_move_and_retire_with_canonical_winning() -> None:
    doc = {
        "session": {"idleMinutes": 10, "reset": {"mode": "idle", "idleMinutes": 99}, "resetByType": {"dm": {"mode": "idle"}, "direct": {"mode": "daily"}},
                    "writeLock": True, "mainKey": "main"},
        "memorySearch": {"store": {"path": "/m.sqlite"}},
        "agents": {"entries": {"ops": {"memorySearch": {"store": {"path": "/o.sqlite", "vector": {}}}}}},
    }
    result = rewrite_aliases(doc)
    assert result.document == {
        "session": {"reset": {"mode": "idle", "idleMinutes": 99}, "resetByType": {"direct": {"mode": "daily"}}, "mainKey": "main"},
        "memorySearch": {},
        "agents": {"entries": {"ops": {"memorySearch": {"store": {"vector": {}}}}}},
    }
    assert result.changes == [
        "session.idleMinutes removed (session.reset.idleMinutes is already set and wins)",
        "session.resetByType.dm removed (session.resetByType.direct is already set and wins)",
        "session.writeLock removed (retired)",
        "memorySearch.store.path removed (retired: the index lives in the agent database)",
        "agents.entries.ops.memorySearch.store.path removed (retired: the index lives in the agent database)",
    ]
    assert doc["session"]["idleMinutes"] == 10  # the input is not modified


def test_alias_under_a_non_object_is_left_with_a_note() -> None:
    result = rewrite_aliases({"session": {"idleMinutes": 5, "reset": "idle"}})
    assert result.document == {"session": {"idleMinutes": 5, "reset": "idle"}} and not result.changed
    assert result.notes == ["session.idleMinutes: not moved, session.reset is not an object; left as it is"]


# --- relocation -------------------------------------------------------------------------


def test_plan_shows_relocation_and_exact_config_change_without_secrets(tmp_path: Path, wired: bool) -> None:
    home = _legacy_home(tmp_path)
    digest = tree_digest(home)
    plan = _plan(home)
    kinds = [(s["kind"], s["apply"]) for s in plan.steps]
    assert kinds == [("relocate-state-dir", True), ("config", True)]
    relocate, config = plan.steps
    assert relocate["from"] == str(home / ".clawdbot") and relocate["to"] == str(home / ".openclaw")
    assert config["changes"] == [
        "rename clawdbot.json → openclaw.json",
        "session.idleMinutes → session.reset.idleMinutes",
        "session.resetByType.dm → session.resetByType.direct",
        "session.writeLock removed (retired)",
        "agents.defaults.memorySearch.store.path removed (retired: the index lives in the agent database)",
        "agents.list[0].memorySearch.store.path removed (retired: the index lives in the agent database)",
        f"agents.defaults.workspace: path rebased from {home / '.clawdbot'} to {home / '.openclaw'}",
        "agents.defaults.memorySearch → memory.search (moved in 9.6 to its canonical memory owner)",
        "agents.list[0].memorySearch → agents.list[0].memory.search (moved in 9.6 to its canonical memory owner)",
    ]
    text = json.dumps(plan.to_json())
    assert SECRET not in text and API_KEY not in text
    assert tree_digest(home) == digest  # the plan wrote nothing
    if wired:
        result = run_cli("plan", "--json", env=_env(home))
        assert result.returncode == 0, result.stderr
        assert SECRET not in result.stdout + result.stderr and API_KEY not in result.stdout + result.stderr
        human = run_cli("plan", env=_env(home))
        assert "Step: move the state dir" in human.stdout and SECRET not in human.stdout


def test_migrate_relocates_renames_and_rewrites_the_config(tmp_path: Path, wired: bool) -> None:
    home = _legacy_home(tmp_path)
    legacy, target = home / ".clawdbot", home / ".openclaw"
    old_config = (legacy / "clawdbot.json").read_bytes()
    inode = os.stat(legacy).st_ino
    report = _migrate(home)
    assert report.status == "completed", report.warnings
    assert not os.path.lexists(legacy)  # moved, no alias left behind
    assert os.stat(target).st_ino == inode  # a rename, not a copy
    assert (target / ".env").read_text() == "OPENAI_API_KEY=x\n"
    assert not (target / "clawdbot.json").exists()
    new_config = target / "openclaw.json"
    assert mode(new_config) == 0o600
    written = json.loads(new_config.read_text())
    assert written["session"] == {"resetByType": {"direct": {"mode": "idle", "idleMinutes": 20}, "group": {"mode": "daily"}},
                                  "reset": {"idleMinutes": 45}}
    assert written["gateway"]["auth"]["token"] == SECRET and written["models"]["providers"]["openai"]["apiKey"] == API_KEY
    assert written["agents"]["defaults"] == {"workspace": str(target / "workspace")}
    assert written["memory"] == {"search": {"enabled": True}}  # OpenClaw 2026.9.6's canonical owner
    assert written["agents"]["list"][0]["memory"] == {"search": {"store": {"vector": {"enabled": False}}}}
    retired = target / ".statekit" / "migrated" / report.run_id / "clawdbot.json"
    assert retired.read_bytes() == old_config and mode(retired) == 0o600
    assert any(c.startswith(f"State dir: {legacy} → {target}") for c in report.changes)
    assert "config: session.idleMinutes → session.reset.idleMinutes" in report.changes
    assert not (target / ".statekit" / "relocated.json").exists()
    (receipt,) = rows(global_db(target), "SELECT status, removed_source, source_sha256, report_json FROM migration_sources WHERE source_path = 'clawdbot.json'")
    assert receipt[:3] == ("completed", 1, sha256_file(retired))
    assert json.loads(receipt[3])["written_sha256"] == sha256_file(new_config)
    assert SECRET not in json.dumps(report.to_json()) and API_KEY not in receipt[3]
    (run_report,) = rows(global_db(target), "SELECT report_json FROM migration_runs WHERE id = ?", (report.run_id,))
    assert SECRET not in run_report[0]
    # a rerun has nothing left to do
    again = _migrate(home)
    assert again.status == "nothing-to-do"


def test_moltbot_dir_and_config_name_are_relocated(tmp_path: Path, wired: bool) -> None:
    home = _legacy_home(tmp_path, ".moltbot", "moltbot.json", config='{"gateway": {"port": 18789}}\n')
    report = _migrate(home)
    assert report.status == "completed"
    target = home / ".openclaw"
    assert (target / "openclaw.json").read_bytes() == b'{"gateway": {"port": 18789}}\n'
    assert not (target / "moltbot.json").exists() and not (home / ".moltbot").exists()


def test_both_dirs_present_refuses_naming_both(tmp_path: Path, wired: bool) -> None:
    home = _legacy_home(tmp_path)
    write_files(home / ".openclaw", {"openclaw.json": "{}\n", "agents/main/sessions/sessions.json": {"agent:main:x": entry("s9")}})
    digest = tree_digest(home)
    plan = _plan(home)
    (step,) = [s for s in plan.steps if s["kind"] == "relocate-state-dir"]
    assert step["status"] == "refused" and not step["apply"]
    assert str(home / ".clawdbot") in step["description"] and str(home / ".openclaw") in step["description"]
    with pytest.raises(StateDirError) as raised:
        _migrate(home)
    assert str(home / ".clawdbot") in str(raised.value) and str(home / ".openclaw") in str(raised.value)
    assert tree_digest(home) == digest
    if wired:
        result = run_cli("migrate", "--yes", "--no-backup", env=_env(home))
        assert result.returncode == 1
        assert str(home / ".clawdbot") in result.stderr and str(home / ".openclaw") in result.stderr
        assert tree_digest(home) == digest


def test_explicit_state_dir_is_never_moved(tmp_path: Path, wired: bool) -> None:
    import statekit.migrate.apply as apply_mod

    home = _legacy_home(tmp_path)
    legacy = home / ".clawdbot"
    env = {**_env(home), "OPENCLAW_STATE_DIR": str(legacy)}
    resolved = resolve_state_dir(None, env)
    assert resolved.origin == "env"
    report = apply_mod.migrate(resolved, apply_mod.MigrateOptions(backup=False, env=env))
    assert report.status == "completed"
    assert legacy.is_dir() and not (home / ".openclaw").exists()
    # aliases are still rewritten in place, under the file's own name
    assert not (legacy / "openclaw.json").exists()
    config = json.loads((legacy / "clawdbot.json").read_text())
    assert config["session"]["reset"] == {"idleMinutes": 45}
    flag = apply_mod.migrate(resolve_state_dir(str(legacy), env), apply_mod.MigrateOptions(backup=False, env=env))
    assert flag.status == "nothing-to-do" and legacy.is_dir()


def test_config_without_alias_is_not_rewritten(tmp_path: Path, wired: bool) -> None:
    home = tmp_path / "home"
    state = home / ".openclaw"
    write_files(state, {"openclaw.json": '{\n  // fine\n  session: {reset: {idleMinutes: 5}},\n}\n',
                        "agents/main/sessions/sessions.json": {"agent:main:main": entry("s1")}})
    before = (state / "openclaw.json").stat()
    plan = _plan(home)
    assert plan.steps == []
    report = _migrate(home)
    assert report.status == "completed"
    after = (state / "openclaw.json").stat()
    assert (after.st_ino, after.st_mtime_ns, after.st_size) == (before.st_ino, before.st_mtime_ns, before.st_size)
    assert not any(c.startswith("config:") for c in report.changes)


def test_config_that_does_not_parse_is_reported_and_left_alone(tmp_path: Path, wired: bool) -> None:
    home = tmp_path / "home"
    state = home / ".openclaw"
    broken = b'{ "session": { "idleMinutes": 5, "gateway": {"token": "' + SECRET.encode() + b'" }\n'
    write_files(state, {"openclaw.json": broken, "agents/main/sessions/sessions.json": {"agent:main:main": entry("s1")}})
    plan = _plan(home)
    (step,) = plan.steps
    assert step["status"] == "unparseable" and not step["apply"] and "openclaw.json" in step["description"]
    report = _migrate(home)
    assert (state / "openclaw.json").read_bytes() == broken
    assert any("openclaw.json" in w and "config left alone" in w for w in report.warnings)
    assert SECRET not in json.dumps(report.to_json()) and SECRET not in json.dumps(plan.to_json())


def test_crash_after_rename_before_the_run_is_recorded_next_time(tmp_path: Path, wired: bool) -> None:
    from statekit.migrate.relocate import relocate_state_dir

    home = _legacy_home(tmp_path, config="{}\n")
    env = _env(home)
    moved = relocate_state_dir(resolve_state_dir(None, env), env)  # the run "crashed" right after the rename
    assert moved.path == home / ".openclaw" and (moved.path / ".statekit" / "relocated.json").exists()
    plan = _plan(home)
    assert [s["kind"] for s in plan.steps][:1] == ["state-dir-relocated"]
    report = _migrate(home)
    assert any(c.startswith("State dir:") for c in report.changes)
    assert not (moved.path / ".statekit" / "relocated.json").exists()


def _renamed_then_old_name_back(tmp_path: Path) -> tuple[Path, Path]:
    """A default state dir whose ``clawdbot.json`` a run renamed; then the old name put back as it was (same bytes,
    same mtime): what a run killed after writing ``openclaw.json`` and before removing the old name leaves."""
    home = _legacy_home(tmp_path, ".openclaw", "clawdbot.json")
    state = home / ".openclaw"
    report = _migrate(home)
    assert report.status == "completed", report.warnings
    retired = state / ".statekit" / "migrated" / report.run_id / "clawdbot.json"
    (state / "clawdbot.json").write_bytes(retired.read_bytes())
    os.utime(state / "clawdbot.json", ns=(retired.stat().st_atime_ns, retired.stat().st_mtime_ns))
    return home, state


def test_a_legacy_config_name_left_by_an_interrupted_rename_is_removed_once_its_receipt_proves_it(tmp_path: Path) -> None:
    home, state = _renamed_then_old_name_back(tmp_path)
    new_config = (state / "openclaw.json").read_bytes()
    (step,) = [s for s in _plan(home).steps if s["kind"] == "config"]
    assert step["apply"] and step["finish_rename"] and step["path"] == "clawdbot.json"
    report = _migrate(home)
    assert report.status == "completed", report.warnings
    assert not (state / "clawdbot.json").exists() and (state / "openclaw.json").read_bytes() == new_config
    assert any(c.startswith("config: renamed clawdbot.json → openclaw.json (finished") for c in report.changes)
    assert _migrate(home).status == "nothing-to-do"


@pytest.mark.parametrize("change", ["openclaw.json edited since", "clawdbot.json edited since", "no receipts"])
def test_a_second_config_name_the_receipts_do_not_account_for_is_left_alone(tmp_path: Path, change: str) -> None:
    """Both names present without the proof (the user's own file, or either one changed after the run): never removed."""
    home, state = _renamed_then_old_name_back(tmp_path)
    if change == "openclaw.json edited since":
        (state / "openclaw.json").write_text((state / "openclaw.json").read_text().replace("{", '{"x": 1,', 1))
    elif change == "clawdbot.json edited since":
        (state / "clawdbot.json").write_text('{"gateway": {"port": 18789}}\n')
    else:
        global_db(state).unlink()
    old = (state / "clawdbot.json").read_bytes()
    assert not [s for s in _plan(home).steps if s.get("finish_rename")]
    _migrate(home)
    assert (state / "clawdbot.json").read_bytes() == old
