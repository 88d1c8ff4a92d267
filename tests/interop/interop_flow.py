"""The per-tree work of the interop suite, one function per phase; conftest.py makes each a fixture.

A (the reference): a copy of the legacy tree migrated by OpenClaw 2026.9.6 itself (``doctor --fix``,
once more when the first pass fails, as hybrid 2026.6/2026.7 trees need), its databases dumped and its
sessions listed. B (the subject): a fresh copy migrated by ``statekit migrate --yes``. With the control
option the subject is A itself: every check must then pass, or the check is wrong. Each phase runs on
its own copy of the subject placed at the tree's HOME, and leaves every command's log in the tree's
work dir.
"""

from __future__ import annotations

import shutil
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from interop_db import AllowList, StateDump, dump_state, sessions_by_agent, write_dump
from interop_gateway import (Gateway, GatewayConfig, Readiness, SessionHistory, TurnResult, new_turn, port_free,
                             read_gateway_config, served_history, turn_candidate)
from interop_model import stand_in_model
from interop_reports import session_pairs
from interop_setup import CommandResult, OpenClaw, Statekit
from interop_trees import HomeSlot, LegacyFacts, TreeSource

DOCTOR_TIMEOUT_S = 900
COMMAND_TIMEOUT_S = 300
MIGRATE_OK = (0, 3)  # statekit: success, or finished with warnings
SessionLists = dict[str, list[tuple[str, str]] | str]  # agent -> sorted (key, sessionId), or why not listed


@dataclass
class TreeRun:
    """One tree's run: where it lives, its pristine legacy copy, and the tools bound to its log dir."""

    source: TreeSource
    work: Path
    slot: HomeSlot
    openclaw: OpenClaw
    statekit: Statekit
    pristine: Path            # the legacy home, untouched
    legacy: LegacyFacts
    legacy_config: GatewayConfig
    agents: list[str]
    allow: AllowList
    control: bool
    gateway_timeout_s: float

    @property
    def state(self) -> Path:
        """The state dir at the tree's HOME (valid while a copy occupies the slot)."""
        return self.slot.home / ".openclaw"

    @property
    def subject_name(self) -> str:
        return "A" if self.control else "B"

    def kept(self, name: str) -> Path:
        return self.work / name / "home"


def agents_in(state: Path) -> list[str]:
    agents = state / "agents"
    return sorted(p.name for p in agents.iterdir() if p.is_dir()) if agents.is_dir() else []


def list_sessions(run: TreeRun, tag: str, home: Path, state: Path | None = None) -> SessionLists:
    """``openclaw sessions --json --agent <id> --limit all`` for every agent of the tree."""
    return {agent: session_pairs(run.openclaw.run(f"{tag}-sessions-{agent}",
                                                  ["sessions", "--json", "--agent", agent, "--limit", "all"],
                                                  home=home, state=state, timeout=COMMAND_TIMEOUT_S))
            for agent in run.agents}


def doctor_fix(run: TreeRun, name: str) -> CommandResult:
    return run.openclaw.run(name, ["doctor", "--fix", "--non-interactive", "--yes"], home=run.slot.home,
                            timeout=DOCTOR_TIMEOUT_S)


# ------------------------------------------------------------------------------------------ A and B
@dataclass(frozen=True)
class Reference:
    home: Path
    doctor: tuple[CommandResult, ...]
    dump: StateDump
    sessions: SessionLists

    @property
    def migrated(self) -> bool:
        return self.doctor[-1].ok


def run_reference(run: TreeRun) -> Reference:
    """OpenClaw's own migration of the tree: doctor --fix, a second pass when the first fails."""
    home = run.kept("A")
    with run.slot.occupy(run.pristine, keep_as=home):
        passes = [doctor_fix(run, "A-doctor-fix-pass1")]
        if not passes[0].ok:
            passes.append(doctor_fix(run, "A-doctor-fix-pass2"))
        if not passes[-1].ok:
            return Reference(home, tuple(passes), {}, {})
        run.agents = sorted(set(run.agents) | set(agents_in(run.state)))
        sessions = list_sessions(run, "A", run.slot.home)
        dump = dump_state(run.state, run.allow)
    write_dump(dump, run.work / "A-db.json")
    return Reference(home, tuple(passes), dump, sessions)


@dataclass(frozen=True)
class Subject:
    name: str                      # "B" (statekit's result) or "A" (control)
    home: Path
    dump: StateDump                # its databases before any OpenClaw command touched them
    migrate: CommandResult | None  # statekit migrate (None in control mode)

    @property
    def usable(self) -> bool:
        return self.migrate is None or self.migrate.rc in MIGRATE_OK


def run_subject(run: TreeRun, reference: Reference) -> Subject:
    if run.control:
        return Subject("A", reference.home, reference.dump, None)
    home = run.kept("B")
    with run.slot.occupy(run.pristine, keep_as=home):
        migrate = run.statekit.run("B-statekit-migrate", ["migrate", "--state-dir", str(run.state), "--yes", "--json"],
                                   home=run.slot.home)
        dump = dump_state(run.state, run.allow) if migrate.rc in MIGRATE_OK else {}
    write_dump(dump, run.work / "B-statekit-db.json")
    return Subject("B", home, dump, migrate)


# ------------------------------------------------------------------------------------------ config
@dataclass(frozen=True)
class ConfigChecks:
    validate: CommandResult
    lint: CommandResult


def run_config_checks(run: TreeRun, subject: Subject) -> ConfigChecks:
    """``config validate --json`` and ``doctor --lint --json`` on the subject as it was left."""
    with run.slot.occupy(subject.home):
        validate = run.openclaw.run(f"{subject.name}-config-validate", ["config", "validate", "--json"],
                                    home=run.slot.home, timeout=COMMAND_TIMEOUT_S)
        lint = run.openclaw.run(f"{subject.name}-doctor-lint", ["doctor", "--lint", "--json"], home=run.slot.home,
                                timeout=DOCTOR_TIMEOUT_S)
    return ConfigChecks(validate, lint)


# ------------------------------------------------------------------------------------------ gateway
@dataclass
class GatewayOutcome:
    readiness: Readiness
    histories: list[SessionHistory] = field(default_factory=list)
    turn: TurnResult | None = None
    turn_unavailable: str | None = None  # why no turn could be tried on this tree (then the check skips)
    turn_problem: str | None = None      # why the turn could not be tried on this subject (the check fails)


def run_gateway(run: TreeRun, subject: Subject, keep: bool) -> GatewayOutcome:
    """The gateway on the subject as it was left (no doctor pass first): ready, history, one new turn."""
    keys, keyless = sessions_by_agent(subject.dump)
    with run.slot.occupy(subject.home, keep_as=run.kept(f"{subject.name}-gateway") if keep else None):
        config = read_gateway_config(run.state)
        # a tree whose own config never set a gateway up runs the way 9.6 itself advises for that
        allow_unconfigured = run.legacy_config.mode is None
        model_log = run.openclaw.log.next_path("stand-in-model", ".jsonl")
        unavailable: str | None = None  # no turn possible on this tree at all: the check skips
        problem: str | None = None      # no turn possible on this subject: the check fails
        if run.legacy_config.model_port is None:
            unavailable = ("the tree's own config has no local model provider (models.providers.*.baseUrl on "
                           "127.0.0.1:<port>), so no turn can be answered")
        elif config.model_port is None:
            problem = (f"{subject.name}'s openclaw.json has no local model provider, though the legacy config had one "
                       f"on port {run.legacy_config.model_port}")
        elif not port_free(config.model_port):
            problem = f"the model provider's port {config.model_port} is taken on 127.0.0.1: no stand-in model there"
        model_port = config.model_port if unavailable is None and problem is None else 0  # 0: any port, unused
        with stand_in_model(model_port or 0, model_log) as model, \
                Gateway(run.openclaw, run.slot.home, config.token, allow_unconfigured) as gateway:
            readiness = gateway.wait_ready(run.gateway_timeout_s)
            outcome = GatewayOutcome(readiness, turn_unavailable=unavailable, turn_problem=problem)
            if not readiness.ready:
                return outcome
            outcome.histories = served_history(gateway, keys, keyless, run.legacy)
            if unavailable or problem:
                return outcome
            candidate = turn_candidate(keys, run.legacy)
            if candidate is None:
                outcome.turn_problem = ("no imported session (from a legacy sessions.json, with messages) is keyed in "
                                        f"{subject.name}'s databases")
            else:
                agent, key, session_id, messages = candidate
                try:
                    outcome.turn = new_turn(gateway, run.state, config, agent, key, session_id, messages, model)
                except sqlite3.Error as exc:
                    outcome.turn_problem = f"cannot read {agent}'s transcript events: {exc}"
    return outcome


# ------------------------------------------------------------------------------------------ doctor
@dataclass(frozen=True)
class Doctored:
    home: Path
    doctor: CommandResult
    dump: StateDump


def run_doctor(run: TreeRun, subject: Subject) -> Doctored:
    """One ``doctor --fix`` pass on a fresh copy of the subject; its databases right after."""
    home = run.kept(f"{subject.name}-doctor")
    with run.slot.occupy(subject.home, keep_as=home):
        doctor = doctor_fix(run, f"{subject.name}-doctor-fix")
        dump = dump_state(run.state, run.allow)
    write_dump(dump, run.work / f"{subject.name}-db-after-doctor.json")
    return Doctored(home, doctor, dump)


@dataclass(frozen=True)
class Validation:
    session_sqlite: CommandResult
    preflight: dict[str, CommandResult]      # "state" / "agent-<id>" -> result
    missing: list[str]                       # databases that are not there


def run_validation(run: TreeRun, subject: Subject, doctored: Doctored) -> Validation:
    """``doctor --session-sqlite validate`` on the doctored copy; ``database preflight`` on copies of its dbs."""
    preflight_dir = run.work / f"{subject.name}-preflight"
    shutil.rmtree(preflight_dir, ignore_errors=True)
    preflight_dir.mkdir(parents=True)
    with run.slot.occupy(doctored.home):
        validate = run.openclaw.run(f"{subject.name}-session-sqlite-validate",
                                    ["doctor", "--session-sqlite", "validate", "--session-sqlite-all-agents"],
                                    home=run.slot.home, timeout=DOCTOR_TIMEOUT_S)
        targets: list[tuple[str, Path, str | None]] = [("state", run.state / "state" / "openclaw.sqlite", None)]
        targets += [(f"agent-{a}", run.state / "agents" / a / "agent" / "openclaw-agent.sqlite", a)
                    for a in agents_in(run.state)]
        results, missing = {}, []
        for tag, db, agent in targets:
            if not db.exists():
                missing.append(f"{tag} ({db})")
                continue
            copy = preflight_dir / f"{tag}.sqlite"
            _copy_database(db, copy)
            args = ["database", "preflight", "--json", str(copy)] if agent is None else \
                ["database", "preflight-agent", "--json", "--agent-id", agent, str(copy)]
            results[tag] = run.openclaw.run(f"{subject.name}-preflight-{tag}", args, home=run.slot.home,
                                            timeout=COMMAND_TIMEOUT_S)
    return Validation(validate, results, missing)


def _copy_database(src: Path, dest: Path) -> None:
    source = sqlite3.connect(f"file:{src}?mode=ro", uri=True, timeout=30)
    target = sqlite3.connect(dest)
    try:
        source.backup(target)
    finally:
        target.close()
        source.close()


def run_session_lists(run: TreeRun, subject: Subject, doctored: Doctored) -> SessionLists:
    with run.slot.occupy(doctored.home):
        return list_sessions(run, f"{subject.name}-after-doctor", run.slot.home)


# ------------------------------------------------------------------------------------------ backups (issue 15)
@dataclass
class RestoreOutcome:
    """A backup of A restored by statekit into a fresh target, then listed by 9.6 there."""

    problems: list[str] = field(default_factory=list)
    target: Path | None = None
    sessions: SessionLists = field(default_factory=dict)


def _single_file(directory: Path) -> Path | None:
    files = sorted(p for p in directory.iterdir() if p.is_file() and not p.name.startswith("."))  # not the run lock
    return files[0] if files else None


def _restore_and_list(run: TreeRun, tag: str, archive: Path, outcome: RestoreOutcome) -> RestoreOutcome:
    """``statekit backup restore <archive> --target <fresh> --yes``; then 9.6 lists the sessions there.

    The tree's HOME is empty by now, so OpenClaw can read only the restored dir."""
    home = run.work / f"restore-{tag}" / "home"
    shutil.rmtree(home.parent, ignore_errors=True)
    home.mkdir(parents=True)
    target = home / ".openclaw"
    restore = run.statekit.run(f"{tag}-statekit-backup-restore", ["backup", "restore", str(archive), "--target",
                                                                  str(target), "--yes", "--json"], home=home)
    if not restore.ok:
        outcome.problems.append(f"statekit backup restore {restore.why()}")
        return outcome
    if not (target / "openclaw.json").is_file():
        top = sorted(p.name for p in target.iterdir())[:6] if target.is_dir() else []
        outcome.problems.append(f"the restored target {target} is not a state dir: no openclaw.json at its top "
                                f"(top entries {top}; log {restore.log})")
        return outcome
    outcome.target = target
    outcome.sessions = list_sessions(run, f"restore-{tag}", home, target)
    return outcome


def run_statekit_backup_of_reference(run: TreeRun, reference: Reference) -> RestoreOutcome:
    """statekit backup create / verify / restore --target of A's 9.6 state."""
    outcome = RestoreOutcome()
    out = run.work / "backup-statekit"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    with run.slot.occupy(reference.home):
        create = run.statekit.run("A-statekit-backup-create", ["backup", "create", "--state-dir", str(run.state),
                                                               "--output", str(out), "--json"], home=run.slot.home)
    archive = _single_file(out)
    if not create.ok or archive is None:
        outcome.problems.append(f"statekit backup create of OpenClaw's own 9.6 state: "
                                f"{create.why() if not create.ok else f'rc 0 but no archive in {out}'}")
        return outcome
    verify = run.statekit.run("A-statekit-backup-verify", ["backup", "verify", str(archive), "--json"], home=run.work)
    if not verify.ok:
        outcome.problems.append(f"statekit backup verify {verify.why()}")
        return outcome
    return _restore_and_list(run, "statekit", archive, outcome)


def run_openclaw_archive_restore(run: TreeRun, reference: Reference) -> RestoreOutcome:
    """``openclaw backup create`` of A, restored by statekit into a fresh target."""
    outcome = RestoreOutcome()
    out = run.work / "backup-openclaw"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    with run.slot.occupy(reference.home):
        create = run.openclaw.run("A-openclaw-backup-create", ["backup", "create", "--output", str(out), "--verify",
                                                               "--json"], home=run.slot.home, timeout=DOCTOR_TIMEOUT_S)
    archive = _single_file(out)
    if not create.ok or archive is None:
        outcome.problems.append(f"openclaw backup create: {create.why() if not create.ok else f'no archive in {out}'}")
        return outcome
    return _restore_and_list(run, "openclaw", archive, outcome)
