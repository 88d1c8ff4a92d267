"""Fixtures of the OpenClaw 2026.9.6 interop suite (issue 10): the real release on statekit's output.

Every test here is marked ``interop``. The suite runs per tree (every corpus tree of
``../shared/corpus/generated`` and the bundled demo install): the tree fixture ``interop_tree`` is
session-scoped and parametrized, and the phases (``reference`` = A, ``subject`` = B, ``config_checks``,
``gateway_outcome``, ``doctored``, ``validation``, ``listed_sessions``) are session-scoped fixtures on top
of it, so each runs once per tree and only when a selected test needs it.

Options (also as environment variables, which work from any directory):
  --interop-control  / STATEKIT_INTEROP_CONTROL=1   run the checks on A instead of B (all must pass)
  --interop-keep     / STATEKIT_INTEROP_KEEP=1      keep every state copy (logs and dumps are always kept)
  STATEKIT_INTEROP_WORKDIR=DIR                      work dir (default: a new temp dir, printed at the end)
  STATEKIT_INTEROP_GATEWAY_TIMEOUT=SECONDS          gateway readiness limit (default 240)
  STATEKIT_OPENCLAW_BIN / STATEKIT_NODE_BIN / STATEKIT_INTEROP_CACHE   where OpenClaw comes from
                                                    (interop_setup.py)
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from interop_db import AllowList, load_allow_list
from interop_flow import (ConfigChecks, Doctored, GatewayOutcome, Reference, SessionLists, Subject, TreeRun,
                          Validation, agents_in, run_config_checks, run_doctor, run_gateway, run_reference,
                          run_session_lists, run_subject, run_validation)
from interop_gateway import read_gateway_config
from interop_reports import doctor_refusal
from interop_setup import (OPENCLAW_VERSION, CommandLog, InteropSetupError, InteropUnavailable, OpenClaw,
                           OpenClawInstall, Statekit, find_or_install)
from interop_trees import HomeSlot, SlotBusy, TreeSource, corpus_trees, demo_tree, legacy_facts

DEFAULT_GATEWAY_TIMEOUT_S = 240.0
SLOT_WAIT_S = 900.0
_WORKDIR: list[Path] = []  # the run's work dir once made (printed in the summary)


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("interop", f"OpenClaw {OPENCLAW_VERSION} interop suite (tests/interop)")
    group.addoption("--interop-control", action="store_true", default=False,
                    help="run the checks on OpenClaw's own migration (A) instead of statekit's (B): a positive "
                         "control, every check must pass (env STATEKIT_INTEROP_CONTROL=1)")
    group.addoption("--interop-keep", action="store_true", default=False,
                    help="keep every state copy in the work dir (env STATEKIT_INTEROP_KEEP=1)")


@dataclass(frozen=True)
class Settings:
    control: bool
    keep: bool
    workdir: Path
    gateway_timeout_s: float


@pytest.fixture(scope="session")
def interop_settings(pytestconfig: pytest.Config) -> Settings:
    given = os.environ.get("STATEKIT_INTEROP_WORKDIR")
    workdir = Path(given).resolve() if given else Path(tempfile.mkdtemp(prefix="statekit-interop-"))
    workdir.mkdir(parents=True, exist_ok=True)
    _WORKDIR.append(workdir)
    return Settings(
        control=bool(pytestconfig.getoption("--interop-control", default=False)) or _env_flag("STATEKIT_INTEROP_CONTROL"),
        keep=bool(pytestconfig.getoption("--interop-keep", default=False)) or _env_flag("STATEKIT_INTEROP_KEEP"),
        workdir=workdir,
        gateway_timeout_s=float(os.environ.get("STATEKIT_INTEROP_GATEWAY_TIMEOUT", DEFAULT_GATEWAY_TIMEOUT_S)),
    )


@pytest.fixture(scope="session")
def openclaw_install() -> OpenClawInstall:
    """OpenClaw 2026.9.6 found or installed; every interop test skips with one reason when npm is unreachable."""
    try:
        return find_or_install()
    except InteropUnavailable as exc:
        pytest.skip(f"OpenClaw {OPENCLAW_VERSION} is not available here: {exc}")
    except InteropSetupError as exc:
        pytest.fail(f"OpenClaw {OPENCLAW_VERSION} setup failed: {exc}", pytrace=False)


@pytest.fixture(scope="session")
def openclaw(openclaw_install: OpenClawInstall, interop_settings: Settings) -> OpenClaw:
    """The OpenClaw CLI with the interop env (HOME, OPENCLAW_STATE_DIR, NO_COLOR, CI, no update check, no
    API keys), logging to <work dir>/commands; ``.with_log(CommandLog(dir))`` logs elsewhere."""
    return OpenClaw(openclaw_install, CommandLog(interop_settings.workdir / "commands"))


@pytest.fixture(scope="session")
def allow_list() -> AllowList:
    return load_allow_list()


def _tree_params() -> list[object]:
    corpus = corpus_trees()
    params: list[object] = [pytest.param(t, id=t.label) for t in corpus]
    if not corpus:
        params.append(pytest.param(None, id="corpus", marks=pytest.mark.skip(
            reason="../shared/corpus is not available: the corpus trees are not run")))
    params.append(pytest.param(demo_tree(), id="demo-install"))
    return params


@pytest.fixture(scope="session", params=_tree_params())
def interop_tree(request: pytest.FixtureRequest, openclaw: OpenClaw, interop_settings: Settings,
                 allow_list: AllowList) -> Iterator[TreeRun]:
    """One tree: its HOME claimed, a pristine copy, its legacy facts, tools logging to <work>/<tree>/logs."""
    source: TreeSource = request.param
    work = interop_settings.workdir / source.label
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    recorded = source.recorded_home()
    slot = HomeSlot(recorded, claim_marker=True, wait_s=SLOT_WAIT_S) if recorded else \
        HomeSlot(work / "home", claim_marker=False, wait_s=0)
    try:
        slot.claim()
    except SlotBusy as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        pristine = source.extract_home(work / "pristine" / "home")
        log = CommandLog(work / "logs")
        yield TreeRun(source=source, work=work, slot=slot, openclaw=openclaw.with_log(log), statekit=Statekit(log),
                      pristine=pristine, legacy=legacy_facts(pristine / ".openclaw"),
                      legacy_config=read_gateway_config(pristine / ".openclaw"), agents=agents_in(pristine / ".openclaw"),
                      allow=allow_list, control=interop_settings.control,
                      gateway_timeout_s=interop_settings.gateway_timeout_s)
    finally:
        slot.release()
        if not interop_settings.keep:
            for copy in work.iterdir():
                if copy.is_dir() and copy.name != "logs":
                    shutil.rmtree(copy, ignore_errors=True)


@pytest.fixture(scope="session")
def reference(interop_tree: TreeRun) -> Reference:
    """A: OpenClaw 9.6's own migration of the tree (doctor --fix, twice when needed), dumped and listed."""
    ref = run_reference(interop_tree)
    if not ref.migrated:
        pytest.fail(f"OpenClaw {OPENCLAW_VERSION} could not migrate {interop_tree.source.label} itself, so there is no "
                    f"reference: doctor --fix rc {' then '.join(str(r.rc) for r in ref.doctor)}; "
                    f"{doctor_refusal(ref.doctor[-1])}", pytrace=False)
    return ref


@pytest.fixture(scope="session")
def subject(interop_tree: TreeRun, request: pytest.FixtureRequest) -> Subject:
    """B: a fresh copy migrated by ``statekit migrate --yes`` (A itself with --interop-control)."""
    ref = request.getfixturevalue("reference") if interop_tree.control else None
    result = run_subject(interop_tree, ref)  # type: ignore[arg-type]
    if not result.usable:
        assert result.migrate is not None
        pytest.fail(f"statekit migrate failed, so OpenClaw is not run on its output: {result.migrate.why()}",
                    pytrace=False)
    return result


@pytest.fixture(scope="session")
def config_checks(interop_tree: TreeRun, subject: Subject) -> ConfigChecks:
    return run_config_checks(interop_tree, subject)


@pytest.fixture(scope="session")
def gateway_outcome(interop_tree: TreeRun, subject: Subject, interop_settings: Settings) -> GatewayOutcome:
    return run_gateway(interop_tree, subject, keep=interop_settings.keep)


@pytest.fixture(scope="session")
def doctored(interop_tree: TreeRun, subject: Subject) -> Doctored:
    return run_doctor(interop_tree, subject)


@pytest.fixture(scope="session")
def validation(interop_tree: TreeRun, subject: Subject, doctored: Doctored) -> Validation:
    return run_validation(interop_tree, subject, doctored)


@pytest.fixture(scope="session")
def listed_sessions(interop_tree: TreeRun, subject: Subject, doctored: Doctored) -> SessionLists:
    return run_session_lists(interop_tree, subject, doctored)


# ------------------------------------------------------------------------------------------ reporting
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if report.failed and _WORKDIR:
        tree = getattr(item, "funcargs", {}).get("interop_tree")
        where = tree.work / "logs" if isinstance(tree, TreeRun) else _WORKDIR[0]
        report.sections.append(("interop logs", f"every command's log (and commands.tsv): {where}"))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _WORKDIR:
        terminalreporter.write_line(f"interop work dir: {_WORKDIR[0]} (per tree: <tree>/logs/commands.tsv, "
                                    f"<tree>/*-db*.json, <tree>/*-rows-diff.txt)")
