"""The config step makes ``openclaw.json`` valid for OpenClaw 2026.9.6 (renames, retirements, manual items).

Unit tests of each rewrite of :mod:`migrate.config_openclaw96` (the rule each
satisfies is in its docstring and in docs/upgrade.md), then ``statekit migrate``
/ ``recover`` / ``inspect`` on real state dirs: the original comes back byte for
byte, a rerun changes nothing, a config statekit cannot make valid is left
alone with exit 3, no value is ever printed. The real ``openclaw config
validate`` on every corpus tree is tests/interop/test_config_validate.py.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from helpers import CORPUS, FIXTURES, corpus_or_skip, global_db, make_state, rows, run_cli, tree_digest
from statekit.migrate.config_aliases import rewrite_aliases
from statekit.migrate.config_openclaw96 import config_problems, format_path, rewrite_for_openclaw96

SECRET = "gw-Secret-Token-0123456789abcdef"
API_KEY = "sk-live-ABCDEFGHIJKLMNOPQRSTUV"
ENTRY = {"sessionId": "s1", "updatedAt": 1795000000000, "chatType": "direct"}
TRANSCRIPT = '{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00Z","cwd":"/"}\n'


def legacy_735(secret: str = SECRET, api_key: str = API_KEY) -> dict[str, Any]:
    """The shape of the openclaw.json 2026.5.28 and 2026.7.35 leave behind (corpus trees), with secrets."""
    return {
        "agents": {
            "defaults": {"workspace": "/home/u/.openclaw/workspace", "model": {"primary": "fakellm/fake-model"},
                         "models": {"fakellm/fake-model": {}}},
            "list": [{"id": "main"}, {"id": "work", "name": "work", "workspace": "/home/u/.openclaw/workspace-work",
                                      "agentDir": "/home/u/.openclaw/agents/work/agent", "model": "fakellm/fake-model"}],
        },
        "gateway": {"mode": "local", "auth": {"mode": "token", "token": secret}, "port": 18793, "bind": "loopback",
                    "tailscale": {"mode": "off", "resetOnExit": False}},
        "session": {"dmScope": "per-channel-peer", "reset": {"mode": "idle"}},
        "models": {"mode": "merge", "providers": {"fakellm": {"baseUrl": "http://127.0.0.1:18563/v1", "apiKey": api_key, "models": []}}},
        "wizard": {"lastRunAt": "2026-11-30T00:06:50.302Z", "lastRunVersion": "2026.7.35"},
        "meta": {"lastTouchedVersion": "2026.7.35", "lastTouchedAt": "2026-11-30T00:07:55.242Z"},
    }


def fixed(doc: dict[str, Any]) -> tuple[Any, list[str], list[str]]:
    """(rewritten document, problem paths, change lines) — asserting every problem was fixable."""
    result = rewrite_for_openclaw96(doc)
    assert result.unfixable == [], result.unfixable
    return result.document, [p.path for p in result.problems], result.changes


# --- each rewrite (pure) -------------------------------------------------------------------------------------


def test_the_735_config_gets_exactly_the_three_rewrites_and_nothing_else() -> None:
    doc = legacy_735()
    out, paths, changes = fixed(doc)
    expected = copy.deepcopy(doc)
    expected["agents"]["list"][0]["default"] = True
    del expected["meta"]["lastTouchedAt"]
    del expected["gateway"]["tailscale"]["resetOnExit"]
    assert out == expected  # agents.list stays, ids and settings identical; no 9.6 default is added
    assert paths == ["agents.ownership", "meta.lastTouchedAt", "gateway.tailscale.resetOnExit"]
    assert changes[0].startswith("agents.list[0].default set (")
    assert doc["meta"]["lastTouchedAt"]  # the input is not modified


def test_a_roster_that_already_has_one_marker_or_one_agent_is_left_alone() -> None:
    marked = {"agents": {"list": [{"id": "main"}, {"id": "ops", "default": True}]}}
    single = {"agents": {"list": [{"id": "main", "workspace": "/w"}]}}
    for doc in (marked, single, {"agents": {"defaults": {"workspace": "/w"}}}):
        assert config_problems(doc) == [] and rewrite_for_openclaw96(doc).document == doc


def test_later_default_markers_are_dropped_the_first_one_wins_as_before() -> None:
    doc = {"agents": {"list": [{"id": "a"}, {"id": "b", "default": True}, {"id": "c", "default": True}]}}
    out, paths, _ = fixed(doc)
    assert out == {"agents": {"list": [{"id": "a"}, {"id": "b", "default": True}, {"id": "c"}]}}
    assert paths == ["agents.list[2].default"]


def test_a_keyed_roster_without_marker_gets_explicit_ownership_as_9_6_doctor_sets_it() -> None:
    out, paths, _ = fixed({"agents": {"entries": {"main": {}, "work": {"workspace": "/w"}}}})
    assert out == {"agents": {"entries": {"main": {}, "work": {"workspace": "/w"}}, "ownership": "explicit"}}
    assert paths == ["agents.ownership"]


def test_an_agent_id_is_written_in_the_canonical_form_every_release_derives() -> None:
    """9.6 reads agents.list only with canonical ids; 2026.2–2026.9 all turn "Ops" into the agent id "ops"."""
    out, paths, changes = fixed({"agents": {"list": [{"id": "main"}, {"id": " Ops ", "default": True}, {"id": "my agent"}]}})
    assert out == {"agents": {"list": [{"id": "main"}, {"id": "ops", "default": True}, {"id": "my-agent"}]}}
    assert paths == ["agents.list[1].id", "agents.list[2].id"] and "Ops" not in " ".join(changes)


@pytest.mark.parametrize("agents, path", [
    ({"list": [{"id": "Work"}, {"id": "work"}]}, "agents.list[1].id"),  # one agent to the old releases: 9.6's doctor renames one
    ({"list": [{"id": "main"}, {"id": "***"}]}, "agents.list[1].id"),
    ({"list": [{"id": "a", "default": "yes"}, {"id": "b"}]}, "agents.list[0].default"),
    ({"list": [{"id": "a"}], "entries": {"a": {}}}, "agents.list"),
    ({"ownership": "explicit", "list": [{"id": "a", "default": True}, {"id": "b"}]}, "agents.ownership"),
])
def test_a_roster_statekit_would_have_to_rename_is_refused(agents: dict[str, Any], path: str) -> None:
    result = rewrite_for_openclaw96({"agents": agents})
    assert [p.path for p in result.unfixable] == [path]
    assert "openclaw doctor --fix" in result.unfixable[0].reason


@pytest.mark.parametrize("before, after, path", [
    ({"commands": {"native": "auto", "nativeSkills": "auto", "restart": True, "ownerDisplay": "raw"}},  # what 2026.2.x wrote
     {"commands": {"native": "auto", "nativeSkills": "auto", "restart": True}}, "commands.ownerDisplay"),
    ({"commands": {"native": "auto", "ownerDisplaySecret": "x"}}, {"commands": {"native": "auto"}}, "commands.ownerDisplaySecret"),
    ({"gateway": {"port": 1, "controlUi": {"allowInsecureAuth": True}}}, {"gateway": {"port": 1}}, "gateway.controlUi.allowInsecureAuth"),
    ({"gateway": {"tailscale": {"mode": "funnel", "serviceName": "s"}}}, {"gateway": {"tailscale": {"mode": "funnel"}}},
     "gateway.tailscale.serviceName"),
    ({"session": {"agentToAgent": {"maxPingPongTurns": 3}, "dmScope": "main"}}, {"session": {"dmScope": "main"}}, "session.agentToAgent"),
    ({"cron": {"enabled": True, "store": "/x.json"}}, {"cron": {"enabled": True}}, "cron.store"),
    ({"tools": {"loopDetection": {"enabled": True, "historySize": 4}}}, {"tools": {"loopDetection": {"enabled": True}}},
     "tools.loopDetection.historySize"),
    ({"agents": {"list": [{"id": "w", "heartbeat": {"every": "1h", "ackMaxChars": 2}}]}},
     {"agents": {"list": [{"id": "w", "heartbeat": {"every": "1h"}}]}}, "agents.list[0].heartbeat.ackMaxChars"),
    ({"agents": {"defaults": {"compaction": {"mode": "safeguard", "reserveTokensFloor": 1}}}},
     {"agents": {"defaults": {"compaction": {"mode": "safeguard"}}}}, "agents.defaults.compaction.reserveTokensFloor"),
    ({"tui": {"footer": "x"}, "canvasHost": {"enabled": True}, "meta": {}}, {"meta": {}}, "tui"),
])
def test_retired_keys_are_removed_with_what_they_emptied(before: dict[str, Any], after: dict[str, Any], path: str) -> None:
    out, paths, changes = fixed(before)
    assert out == after and paths[0] == path
    assert changes[0].startswith(f"{path} removed (")


@pytest.mark.parametrize("before, after, path", [
    ({"session": {"maintenance": {"pruneDays": 7}}}, {"session": {"maintenance": {"pruneAfter": 7}}}, "session.maintenance.pruneDays"),
    ({"session": {"maintenance": {"pruneDays": 7, "pruneAfter": "30d"}}}, {"session": {"maintenance": {"pruneAfter": "30d"}}},
     "session.maintenance.pruneDays"),  # the canonical key wins
    ({"tools": {"exec": {"timeoutSec": 60}}}, {"tools": {"exec": {"timeoutSeconds": 60}}}, "tools.exec.timeoutSec"),
    ({"session": {"typingMode": "never"}, "agents": {"defaults": {"typingMode": "instant"}}},
     {"session": {}, "agents": {"defaults": {"typingMode": "never"}}}, "session.typingMode"),  # the session value shadowed it
    ({"agents": {"defaults": {"imageGenerationModel": {"primary": "p/m"}}}},
     {"agents": {"defaults": {"mediaModels": {"image": {"primary": "p/m"}}}}}, "agents.defaults.imageGenerationModel"),
    ({"agents": {"defaults": {"sandbox": {"perSession": True}}}}, {"agents": {"defaults": {"sandbox": {"scope": "session"}}}},
     "agents.defaults.sandbox.perSession"),
    ({"gateway": {"nodes": {"allowCommands": ["a"]}}}, {"gateway": {"nodes": {"commands": {"allow": ["a"]}}}}, "gateway.nodes.allowCommands"),
    ({"media": {"maxBytes": 5}, "attachments": {"maxBytes": 9, "dir": "/d"}}, {"attachments": {"maxBytes": 9, "dir": "/d"}}, "media"),
    ({"tools": {"experimental": {"planTool": True}}}, {"tools": {"updatePlan": True}}, "tools.experimental"),
    ({"skills": {"workshop": {"autonomous": {"enabled": False}}}}, {"skills": {"workshop": {"autonomous": {"mode": "off"}}}},
     "skills.workshop.autonomous.enabled"),
    ({"discovery": {"wideArea": {"enabled": False, "domain": "example.org"}}}, {"discovery": {"wideArea": {}}},
     "discovery.wideArea.enabled"),  # a domain alone would turn it on in 9.6
    ({"memorySearch": {"provider": "openai", "maxResults": 5, "sync": {"watch": True}}},
     {"memory": {"search": {"provider": "openai", "query": {"maxResults": 5}}}}, "memorySearch"),
    ({"agents": {"list": [{"id": "w", "memorySearch": {"enabled": False}}]}},
     {"agents": {"list": [{"id": "w", "memory": {"search": {"enabled": False}}}]}}, "agents.list[0].memorySearch"),
])
def test_renamed_and_moved_keys_keep_their_value(before: dict[str, Any], after: dict[str, Any], path: str) -> None:
    out, paths, _ = fixed(before)
    assert out == after and paths[0] == path


@pytest.mark.parametrize("before, after, path", [
    ({"bindings": [{"agentId": "w", "match": {"channel": "telegram", "peer": {"kind": "dm", "id": "1"}}}]},
     {"bindings": [{"agentId": "w", "match": {"channel": "telegram", "peer": {"kind": "direct", "id": "1"}}}]},
     "bindings[0].match.peer.kind"),
    ({"messages": {"queue": {"mode": "queue", "byChannel": {"slack": "steer-backlog", "irc": "collect"}}}},
     {"messages": {"queue": {"mode": "steer", "byChannel": {"slack": "followup", "irc": "collect"}}}}, "messages.queue.mode"),
    ({"gateway": {"reload": {"mode": "hot"}}}, {"gateway": {"reload": {"mode": "hybrid"}}}, "gateway.reload.mode"),
    ({"logging": {"consoleStyle": "compact"}}, {"logging": {"consoleStyle": "pretty"}}, "logging.consoleStyle"),
    ({"gateway": {"port": 70000, "bind": "lan"}}, {"gateway": {"bind": "lan"}}, "gateway.port"),
])
def test_retired_values_get_their_9_6_equivalent(before: dict[str, Any], after: dict[str, Any], path: str) -> None:
    out, paths, changes = fixed(before)
    assert out == after and paths[0] == path
    assert "dm" not in changes[0].split(":", 1)[-1].split("(")[0]  # the line names the path, not the value


@pytest.mark.parametrize("doc, path", [
    ({"plugins": {"installs": {"x": {"source": "npm"}}}}, "plugins.installs"),
    ({"messages": {"tts": {"provider": "openai"}}}, "messages.tts"),
    ({"cron": {"webhook": "https://example.org/h"}}, "cron.webhook"),
    ({"hooks": {"internal": {"handlers": [{"event": "x", "module": "./h.js"}]}}}, "hooks.internal.handlers"),
    ({"tools": {"media": {"audio": {"models": [{"provider": "openai"}]}}}}, "tools.media.audio.models"),
    ({"gateway": {"tailscale": {"mode": "serve", "serviceName": "s"}}}, "gateway.tailscale.serviceName"),
    ({"web": {"enabled": True}}, "web"),
    ({"talk": {"voiceId": "v"}}, "talk.voiceId"),
])
def test_keys_only_9_6_doctor_can_convert_make_the_config_refused(doc: dict[str, Any], path: str) -> None:
    result = rewrite_for_openclaw96(doc)
    assert [p.path for p in result.unfixable] == [path]
    assert config_problems(doc)[0].fixable is False


def test_config_problems_lists_aliases_and_catalog_with_paths_and_reasons_never_values() -> None:
    doc = legacy_735()
    doc["session"]["idleMinutes"] = 30
    doc["plugins"] = {"installs": {"p": {"source": "npm", "spec": SECRET}}}
    problems = config_problems(doc)
    assert [(p.path, p.fixable) for p in problems] == [
        ("session.idleMinutes", True), ("agents.ownership", True), ("plugins.installs", False),
        ("meta.lastTouchedAt", True), ("gateway.tailscale.resetOnExit", True)]
    text = json.dumps([p.to_json() for p in problems])
    assert SECRET not in text and API_KEY not in text and "2026-11-30T00:07:55" not in text
    assert config_problems(rewrite_aliases(fixed(legacy_735())[0]).document) == []


def test_a_bare_idle_minutes_keeps_its_idle_mode() -> None:
    """Releases before 2026.9 read a bare session.idleMinutes as idle resets; 9.6 resets a mode-less session.reset daily."""
    assert rewrite_aliases({"session": {"idleMinutes": 30}}).document == {"session": {"reset": {"mode": "idle", "idleMinutes": 30}}}
    with_types = rewrite_aliases({"session": {"idleMinutes": 30, "resetByType": {"group": {"mode": "daily"}}}}).document
    assert with_types["session"]["reset"] == {"idleMinutes": 30}  # an explicit resetByType meant the default base mode


def test_format_path() -> None:
    assert format_path(["agents", "list", 1, "heartbeat"]) == "agents.list[1].heartbeat" and format_path([]) == "<root>"


# --- statekit migrate / recover / inspect on state dirs ------------------------------------------------------


def _state(tmp_path: Path, config: dict[str, Any] | bytes) -> Path:
    data = config if isinstance(config, bytes) else (json.dumps(config, indent=4) + "\n").encode()
    return make_state(tmp_path, {"openclaw.json": data, "agents/main/sessions/sessions.json": {"agent:main:main": ENTRY},
                                 "agents/main/sessions/s1.jsonl": TRANSCRIPT})


def _run_id(state: Path) -> str:
    ((run_id,),) = rows(global_db(state), "SELECT id FROM migration_runs ORDER BY started_at DESC LIMIT 1")
    return run_id


def test_migrate_then_recover_gives_the_original_bytes_back(tmp_path: Path) -> None:
    original = (json.dumps(legacy_735(), indent=4) + "\n").encode()  # 4-space: statekit writes 2-space, so bytes must come back
    state = _state(tmp_path, original)
    migrated = run_cli("migrate", "--state-dir", state, "--yes", "--no-backup", "--json")
    assert migrated.returncode == 0, migrated.stderr
    written = json.loads((state / "openclaw.json").read_text())
    assert config_problems(written) == []
    assert written["agents"]["list"][0] == {"id": "main", "default": True} and "lastTouchedAt" not in written["meta"]
    assert written["gateway"]["auth"]["token"] == SECRET and written["models"]["providers"]["fakellm"]["apiKey"] == API_KEY
    assert (state / "openclaw.json").stat().st_mode & 0o777 == 0o600
    run_id = _run_id(state)
    assert (state / ".statekit" / "migrated" / run_id / "openclaw.json").read_bytes() == original
    (receipt,) = rows(global_db(state), "SELECT report_json FROM migration_sources WHERE source_path = 'openclaw.json'")
    assert "gateway.tailscale.resetOnExit removed" in " ".join(json.loads(receipt[0])["changes"])
    for output in (migrated.stdout + migrated.stderr, receipt[0]):
        assert SECRET not in output and API_KEY not in output and "2026-11-30T00:07:55" not in output
    recovered = run_cli("recover", run_id, "--state-dir", state, "--yes")
    assert recovered.returncode == 0, recovered.stdout + recovered.stderr
    assert (state / "openclaw.json").read_bytes() == original


def test_rerun_converges_config_untouched_and_no_new_receipt(tmp_path: Path) -> None:
    state = _state(tmp_path, legacy_735())
    assert run_cli("migrate", "--state-dir", state, "--yes", "--no-backup").returncode == 0
    after_first = (state / "openclaw.json").read_bytes()
    receipts = rows(global_db(state), "SELECT count(*) FROM migration_sources WHERE source_path = 'openclaw.json'")
    plan = run_cli("plan", "--state-dir", state, "--json")
    assert plan.returncode == 0 and [s for s in json.loads(plan.stdout)["steps"] if s["kind"] == "config"] == []
    again = run_cli("migrate", "--state-dir", state, "--yes", "--no-backup", "--json")
    assert again.returncode == 0, again.stderr
    assert (state / "openclaw.json").read_bytes() == after_first
    assert rows(global_db(state), "SELECT count(*) FROM migration_sources WHERE source_path = 'openclaw.json'") == receipts
    assert not [c for c in json.loads(again.stdout)["changes"] if c.startswith("config:")]


def test_a_config_statekit_cannot_make_valid_is_left_alone_with_exit_3(tmp_path: Path) -> None:
    doc = legacy_735()
    doc["messages"] = {"tts": {"provider": "elevenlabs", "elevenlabs": {"apiKey": API_KEY}}}
    original = (json.dumps(doc, indent=2) + "\n").encode()
    state = _state(tmp_path, original)
    plan = run_cli("plan", "--state-dir", state, "--json")
    assert plan.returncode == 3
    (step,) = [s for s in json.loads(plan.stdout)["steps"] if s["kind"] == "config"]
    assert step["status"] == "refused" and step["apply"] is False and step["problems"][0].startswith("messages.tts: ")
    migrated = run_cli("migrate", "--state-dir", state, "--yes", "--no-backup")
    assert migrated.returncode == 3
    assert "messages.tts" in migrated.stderr and "openclaw doctor --fix" in migrated.stderr and "config left unchanged" in migrated.stderr
    assert (state / "openclaw.json").read_bytes() == original  # not half-rewritten: lastTouchedAt etc. are still there
    assert not (state / ".statekit" / "migrated" / _run_id(state) / "openclaw.json").exists()
    assert rows(global_db(state), "SELECT count(*) FROM migration_sources WHERE source_path = 'openclaw.json'") == [(0,)]
    for output in (plan.stdout, migrated.stdout + migrated.stderr):
        assert SECRET not in output and API_KEY not in output


def test_a_refused_config_is_reported_even_when_no_source_is_left(tmp_path: Path) -> None:
    state = make_state(tmp_path, {"openclaw.json": {"meta": {"lastTouchedAt": "x"}, "plugins": {"installs": {"a": {}}},
                                                    "gateway": {"auth": {"token": SECRET}}}})
    for _ in range(2):  # the first run and every rerun: 9.6 would still refuse it, so the run is not "done"
        result = run_cli("migrate", "--state-dir", state, "--yes", "--no-backup")
        assert result.returncode == 3 and "plugins.installs" in result.stderr and SECRET not in result.stdout + result.stderr
    assert "none of the 1 rewrite(s) statekit could do is applied either" in result.stderr
    assert (state / "openclaw.json").read_bytes() == json.dumps({"meta": {"lastTouchedAt": "x"}, "plugins": {"installs": {"a": {}}},
                                                                 "gateway": {"auth": {"token": SECRET}}}, indent=2).encode()


def test_inspect_reports_a_config_9_6_would_refuse_naming_the_keys(tmp_path: Path) -> None:
    state = _state(tmp_path, legacy_735())
    assert run_cli("migrate", "--state-dir", state, "--yes", "--no-backup").returncode == 0
    healthy = run_cli("inspect", "--state-dir", state, "--json")
    config = json.loads(healthy.stdout)["config"]
    assert config == {"path": "openclaw.json", "openclaw_release": "2026.9.6", "valid": True, "problems": []}
    # the user (or an old release still running somewhere) writes the retired keys again
    written = json.loads((state / "openclaw.json").read_text())
    written["meta"]["lastTouchedAt"] = "2026-12-01T00:00:00.000Z"
    written["commands"] = {"ownerDisplay": "raw"}
    written["plugins"] = {"installs": {"p": {"spec": SECRET}}}
    (state / "openclaw.json").write_text(json.dumps(written))
    digest = tree_digest(state)
    result = run_cli("inspect", "--state-dir", state, "--json")
    assert result.returncode == 3
    report = json.loads(result.stdout)
    assert report["status"] == "findings" and report["config"]["valid"] is False
    assert [(p["path"], p["fixable"]) for p in report["config"]["problems"]] == [
        ("plugins.installs", False), ("meta.lastTouchedAt", True), ("commands.ownerDisplay", True)]
    (finding,) = [f for f in report["findings"] if f.startswith("openclaw.json: OpenClaw 2026.9.6 would refuse")]
    assert "plugins.installs, meta.lastTouchedAt, commands.ownerDisplay" in finding and "openclaw doctor --fix" in finding
    human = run_cli("inspect", "--state-dir", state)
    assert human.returncode == 3 and "would refuse this config: plugins.installs" in human.stdout
    for output in (result.stdout, human.stdout + human.stderr):
        assert SECRET not in output and API_KEY not in output and "2026-12-01T00:00:00" not in output
    assert tree_digest(state) == digest  # inspect wrote nothing


def test_a_legacy_named_config_is_renamed_and_made_valid(tmp_path: Path) -> None:
    """moltbot.json from a public repository: relocated ~/.moltbot, renamed, and valid for 9.6."""
    source = corpus_or_skip() / "public-repos" / "42naodia__moltbot-config" / "moltbot.json"
    home = tmp_path / "home"
    (home / ".moltbot").mkdir(parents=True)
    original = source.read_bytes()
    (home / ".moltbot" / "moltbot.json").write_bytes(original)
    env = {"HOME": str(home), "OPENCLAW_HOME": str(home), "OPENCLAW_STATE_DIR": "", "CLAWDBOT_STATE_DIR": "",
           "OPENCLAW_CONFIG_PATH": "", "CLAWDBOT_CONFIG_PATH": ""}
    result = run_cli("migrate", "--yes", "--no-backup", env=env)
    assert result.returncode == 0, result.stderr
    written = json.loads((home / ".openclaw" / "openclaw.json").read_text())
    assert config_problems(written) == []
    assert "controlUi" not in written["gateway"] and written["gateway"]["tailscale"] == {"mode": "off"}
    assert (home / ".openclaw" / ".statekit" / "migrated" / _run_id(home / ".openclaw") / "moltbot.json").read_bytes() == original


@pytest.mark.parametrize("fixture", ["demo-install", "every-family"])
def test_bundled_fixtures_have_no_problem_left_after_the_rewrites(fixture: str) -> None:
    doc = json.loads((FIXTURES / fixture / ".openclaw" / "openclaw.json").read_text())
    out = rewrite_for_openclaw96(rewrite_aliases(doc).document)
    assert out.unfixable == [] and config_problems(out.document) == []


def test_corpus_configs_have_no_problem_left_after_the_rewrites(tmp_path: Path) -> None:
    import tarfile

    corpus_or_skip()
    seen = 0
    for tar in sorted((CORPUS / "generated").glob("*.tar")):
        with tarfile.open(tar) as archive:
            member = archive.extractfile("home/.openclaw/openclaw.json")
            assert member is not None
            doc = json.loads(member.read())
        assert {p.path for p in config_problems(doc)} >= {"meta.lastTouchedAt", "gateway.tailscale.resetOnExit", "agents.ownership"}
        out = rewrite_for_openclaw96(rewrite_aliases(doc).document)
        assert out.unfixable == [] and config_problems(out.document) == []
        seen += 1
    assert seen >= 1
