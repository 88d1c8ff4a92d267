from __future__ import annotations

from pathlib import Path

from statekit.layout import rebase_stale_path, resolve_state_dir


def test_flag_wins_over_env(tmp_path: Path) -> None:
    env = {"OPENCLAW_STATE_DIR": str(tmp_path / "env"), "HOME": str(tmp_path)}
    resolved = resolve_state_dir(tmp_path / "flag", env)
    assert resolved.path == tmp_path / "flag" and resolved.origin == "flag"


def test_env_and_legacy_alias(tmp_path: Path) -> None:
    assert resolve_state_dir(None, {"OPENCLAW_STATE_DIR": str(tmp_path / "a"), "HOME": str(tmp_path)}).path == tmp_path / "a"
    resolved = resolve_state_dir(None, {"CLAWDBOT_STATE_DIR": str(tmp_path / "b"), "HOME": str(tmp_path)})
    assert resolved.path == tmp_path / "b" and resolved.env_var == "CLAWDBOT_STATE_DIR"


def test_undefined_and_null_env_values_are_unset(tmp_path: Path) -> None:
    for value in ("undefined", "null", "  "):
        resolved = resolve_state_dir(None, {"OPENCLAW_STATE_DIR": value, "HOME": str(tmp_path)})
        assert resolved.path == tmp_path / ".openclaw"


def test_default_prefers_openclaw_then_legacy_in_order(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path)}
    assert resolve_state_dir(None, env).path == tmp_path / ".openclaw"
    (tmp_path / ".moltbot").mkdir()
    assert resolve_state_dir(None, env).path == tmp_path / ".moltbot"
    (tmp_path / ".clawdbot").mkdir()
    resolved = resolve_state_dir(None, env)
    assert resolved.path == tmp_path / ".clawdbot" and resolved.legacy and resolved.origin == "legacy"
    (tmp_path / ".openclaw").mkdir()
    assert resolve_state_dir(None, env).path == tmp_path / ".openclaw"


def test_openclaw_home_replaces_home(tmp_path: Path) -> None:
    resolved = resolve_state_dir(None, {"HOME": str(tmp_path / "nope"), "OPENCLAW_HOME": str(tmp_path / "oc")})
    assert resolved.path == tmp_path / "oc" / ".openclaw"


def test_stale_absolute_paths_are_read_relative_to_the_current_state_dir(tmp_path: Path) -> None:
    state = tmp_path / ".openclaw"
    assert rebase_stale_path("/home/admin/.clawdbot/workspace", state) == state / "workspace"
    assert rebase_stale_path("/tmp/gen/home/.openclaw/agents/work/agent", state) == state / "agents/work/agent"
    assert rebase_stale_path("workspace-x", state) == state / "workspace-x"
    assert rebase_stale_path("/srv/projects/site", state) == Path("/srv/projects/site")
    assert rebase_stale_path(str(state / "workspace"), state) == state / "workspace"
