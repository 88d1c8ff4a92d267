"""The real ``openclaw config validate --json`` (OpenClaw 2026.9.6) on the config statekit leaves behind.

For every corpus tree, the demo install, the every-family fixture and the
published ``moltbot.json``: 9.6 refuses the legacy config exactly where
:func:`migrate.config_openclaw96.config_problems` says it would (every issue 9.6
names is one statekit names), ``statekit migrate`` makes it valid, and 9.6's
``agents list --json`` on the result (the config alone, without the
databases) shows the agents the old release used:
same ids in the same order, the same default agent, the same workspace and
agent dir for each.

Skipped with one reason when OpenClaw 2026.9.6 is not available (the
``openclaw`` fixture of conftest.py: ``STATEKIT_OPENCLAW_BIN``, else the cache,
else npm); the corpus cases also skip without ``../shared/corpus``.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers import CORPUS, FIXTURES, run_cli  # noqa: E402
from statekit.migrate.config_openclaw96 import config_problems, legacy_agent_id  # noqa: E402

pytestmark = pytest.mark.interop

MOLTBOT = CORPUS / "public-repos" / "42naodia__moltbot-config" / "moltbot.json"


@dataclass(frozen=True)
class Case:
    label: str
    make: Callable[[Path], tuple[Path, Path]]  # (work dir) -> (home, legacy config file)
    flag_state_dir: bool = True  # migrate --state-dir <home>/.openclaw; else HOME only (statekit finds and relocates it)


def _corpus_tree(tar: Path) -> Callable[[Path], tuple[Path, Path]]:
    def make(work: Path) -> tuple[Path, Path]:
        with tarfile.open(tar) as archive:
            archive.extractall(work, filter="tar")
        return work / "home", work / "home" / ".openclaw" / "openclaw.json"
    return make


def _fixture(name: str) -> Callable[[Path], tuple[Path, Path]]:
    def make(work: Path) -> tuple[Path, Path]:
        shutil.copytree(FIXTURES / name, work / "home", symlinks=True)
        return work / "home", work / "home" / ".openclaw" / "openclaw.json"
    return make


def _moltbot(work: Path) -> tuple[Path, Path]:
    legacy = work / "home" / ".moltbot"
    legacy.mkdir(parents=True)
    shutil.copyfile(MOLTBOT, legacy / "moltbot.json")
    return work / "home", legacy / "moltbot.json"


ROSTER_EDGES = {  # what a hand-edited legacy config can hold: mixed-case ids, two markers, a bare idleMinutes
    "agents": {"defaults": {"workspace": "~/ws"}, "list": [
        {"id": "Main"}, {"id": "Ops", "default": True, "workspace": "~/ops"}, {"id": "work", "default": True}]},
    "session": {"idleMinutes": 30, "typingMode": "never"},
    "meta": {"lastTouchedVersion": "2026.6.35", "lastTouchedAt": "2026-06-01T00:00:00.000Z"},
    "commands": {"native": "auto", "ownerDisplay": "raw"},
    "messages": {"queue": {"mode": "steer-backlog"}},
    "bindings": [{"agentId": "ops", "match": {"channel": "telegram", "peer": {"kind": "dm", "id": "1"}}}],
}


def _inline(doc: dict[str, Any]) -> Callable[[Path], tuple[Path, Path]]:
    def make(work: Path) -> tuple[Path, Path]:
        state = work / "home" / ".openclaw"
        state.mkdir(parents=True)
        (state / "openclaw.json").write_text(json.dumps(doc, indent=2) + "\n")
        return work / "home", state / "openclaw.json"
    return make


def _cases() -> list[Any]:
    no_corpus = pytest.mark.skip(reason="../shared/corpus is not available")
    trees = sorted((CORPUS / "generated").glob("*.tar")) if CORPUS.is_dir() else []
    cases: list[Any] = [pytest.param(Case(t.stem, _corpus_tree(t)), id=t.stem) for t in trees]
    if not trees:
        cases.append(pytest.param(None, id="corpus", marks=no_corpus))
    cases.append(pytest.param(Case("demo-install", _fixture("demo-install")), id="demo-install"))
    cases.append(pytest.param(Case("every-family", _fixture("every-family")), id="every-family"))
    cases.append(pytest.param(Case("roster-edges", _inline(ROSTER_EDGES)), id="roster-edges"))
    cases.append(pytest.param(Case("moltbot.json", _moltbot, flag_state_dir=False), id="moltbot.json",
                              marks=[] if MOLTBOT.is_file() else [no_corpus]))
    return cases


def issue_paths(validated: dict[str, Any]) -> set[str]:
    """9.6's issues as JSON paths: ``meta`` + ``Unrecognized keys: "a", "b"`` → ``meta.a``, ``meta.b``."""
    paths: set[str] = set()
    for issue in validated.get("issues") or []:
        path, message = issue["path"], issue["message"]
        keys = re.findall(r'"([^"]+)"', message.split(":", 1)[1]) if message.startswith("Unrecognized key") else []
        if keys:
            paths |= {k if path == "<root>" else f"{path}.{k}" for k in keys}
        else:
            paths.add(path)
    return paths


def _comparable(path: str, doc: dict[str, Any]) -> str:
    """statekit names list items (``agents.list[1]``, ``bindings[0]``); 9.6 names them ``agents.entries.<id>``, ``bindings.0``."""
    listed = (doc.get("agents") or {}).get("list") if isinstance(doc.get("agents"), dict) else None
    ids = [item.get("id") for item in listed if isinstance(item, dict)] if isinstance(listed, list) else []
    projects = bool(ids) and len(set(ids)) == len(ids) and all(isinstance(i, str) and legacy_agent_id(i) == i for i in ids)
    if isinstance(listed, list) and projects:  # 9.6 reads a clean list as agents.entries (else it names agents.list)
        for index, item in enumerate(listed):
            if isinstance(item, dict) and isinstance(item.get("id"), str):
                path = path.replace(f"agents.list[{index}]", f"agents.entries.{item['id']}")
    return re.sub(r"\[(\d+)\]", r".\1", path)


def expected_agents(doc: dict[str, Any], state: Path, home: Path) -> list[dict[str, Any]]:
    """The agents a release before 2026.9 ran for this config: the default is the first marked, else the first
    entry; an agent without a workspace gets agents.defaults.workspace (the default agent) or
    ``<defaults.workspace>/<id>`` (the others)."""
    agents = doc.get("agents") if isinstance(doc.get("agents"), dict) else {}
    listed = [e for e in agents.get("list") or [] if isinstance(e, dict)] or [{"id": "main"}]
    defaults_ws = (agents.get("defaults") or {}).get("workspace")
    marked = [e for e in listed if e.get("default")]
    default_id = (marked[0] if marked else listed[0])["id"]

    def user_path(value: str) -> str:
        return str(home / value[2:]) if value.startswith("~/") else value

    default_id = legacy_agent_id(default_id) or "main"
    out = []
    for item in listed:
        agent_id = legacy_agent_id(item["id"]) or "main"
        if item.get("workspace"):
            workspace = user_path(item["workspace"])
        elif agent_id == default_id:
            workspace = user_path(defaults_ws) if defaults_ws else str(state / "workspace")
        else:
            workspace = str(Path(user_path(defaults_ws)) / agent_id) if defaults_ws else str(state / f"workspace-{agent_id}")
        agent_dir = user_path(item["agentDir"]) if item.get("agentDir") else str(state / "agents" / agent_id / "agent")
        out.append({"id": agent_id, "workspace": workspace, "agentDir": agent_dir, "isDefault": agent_id == default_id})
    return out


@pytest.mark.parametrize("case", _cases())
def test_openclaw_validates_the_migrated_config(case: Case, openclaw: Any, tmp_path: Path) -> None:
    home, legacy_config = case.make(tmp_path / "tree")
    state = home / ".openclaw"
    legacy_doc = json.loads(legacy_config.read_text())
    problems = config_problems(legacy_doc)
    # before: 9.6 refuses the legacy config exactly where statekit says it would
    pristine_home, _ = case.make(tmp_path / "pristine")
    if legacy_config.name != "openclaw.json":  # 9.6 reads only openclaw.json: show it the legacy bytes under that name
        target = pristine_home / ".openclaw" / "openclaw.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(legacy_config, target)
    before = openclaw.run(f"{case.label}-validate-legacy", ["config", "validate", "--json"], home=pristine_home,
                          state=pristine_home / ".openclaw", timeout=120)
    verdict = before.json()
    assert isinstance(verdict, dict), before.why()
    assert verdict.get("valid") is (not problems), (verdict.get("issues"), [p.path for p in problems])
    named = {_comparable(p.path, legacy_doc) for p in problems}
    if any(n.startswith("agents.list.") for n in named):
        named.add("agents.entries")  # an unread list also leaves 9.6 with "agents.entries must contain at least one agent"
    for path in issue_paths(verdict):
        assert any(path == n or path.startswith(n + ".") or n.startswith(path + ".") for n in named), \
            f"9.6 refuses {path}, which statekit does not name ({sorted(named)})"

    # statekit migrate: the config step makes it valid (never refused on these trees)
    args = ["migrate", "--yes", "--no-backup", "--json"] + (["--state-dir", state] if case.flag_state_dir else [])
    env = {"HOME": str(home), "OPENCLAW_HOME": str(home), "OPENCLAW_STATE_DIR": "", "CLAWDBOT_STATE_DIR": "",
           "OPENCLAW_CONFIG_PATH": "", "CLAWDBOT_CONFIG_PATH": ""}
    migrated = run_cli(*args, env=env)
    assert migrated.returncode in (0, 3), migrated.stderr[-2000:]
    assert "would refuse it" not in migrated.stdout + migrated.stderr, migrated.stderr[-2000:]
    assert (state / "openclaw.json").is_file()

    after = openclaw.run(f"{case.label}-validate-migrated", ["config", "validate", "--json"], home=home, state=state, timeout=120)
    result = after.json()
    assert isinstance(result, dict) and result.get("valid") is True and not result.get("issues"), after.why()
    assert config_problems(json.loads((state / "openclaw.json").read_text())) == []

    # the same agents as the release that wrote the config. On the migrated config alone: `agents list` also opens
    # the state database, whose canonical schema is another part of issue 10 (tests/interop/test_interop_checks.py)
    config_home = tmp_path / "config-only" / "home"
    (config_home / ".openclaw").mkdir(parents=True)
    shutil.copyfile(state / "openclaw.json", config_home / ".openclaw" / "openclaw.json")
    listed = openclaw.run(f"{case.label}-agents-list", ["agents", "list", "--json"], home=config_home,
                          state=config_home / ".openclaw", timeout=120)
    agents = listed.json()
    assert isinstance(agents, list), listed.why()
    seen = [{k: a.get(k) for k in ("id", "workspace", "agentDir", "isDefault")} for a in agents]
    assert seen == expected_agents(legacy_doc, config_home / ".openclaw", config_home)
