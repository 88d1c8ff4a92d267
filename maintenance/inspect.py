"""``statekit inspect``: a read-only health report for every statekit database of a state dir.

Per database: role and agent id (``schema_meta``), ``user_version``,
``PRAGMA integrity_check``, ``PRAGMA foreign_key_check``, row counts per
table; for agent databases the orphans (transcript events without a
session, identities without an event, routes and entries to missing
sessions, snapshots and trajectory rows without a session) and the sessions
that have no transcript; legacy files still on disk with their plan action
(from :func:`migrate.plan.build_plan`).

Severity:

* ``corruption`` (exit 5): a database cannot be opened or read, is not a
  SQLite file, or ``integrity_check`` is not ``ok``;
* ``finding`` (exit 3): foreign-key violations, orphans, sessions without a
  session key, a version-1 schema that is not the canonical layout OpenClaw
  2026.9.6 upgrades (:func:`statekit.schema.canonical_differences`: missing
  tables, column definitions, STRICT options, unique indexes), a schema version
  newer than statekit's, a ``schema_meta`` that names another role/agent, a
  registered agent database that is missing, legacy files still waiting for
  work (``import``, ``import+archive``, ``drop``, ``already-imported``) or that
  could not be read (``unreadable``, ``conflict``), a config (``openclaw.json``)
  that OpenClaw 2026.9.6 would refuse (its keys named, from
  :func:`migrate.config_openclaw96.config_problems`; no value printed), a legacy
  file that came back after a completed migration (a process still writes the
  old path: one line per file, ``came_back`` in ``--json``);
* ``note`` (exit 0): sessions without a transcript (an entry whose run wrote
  nothing), and legacy files that are ``deferred`` or ``retain`` on purpose.

Nothing is written: databases are read through :func:`statekit.db.read_only_view`
(no lock, no ``-wal``/``-shm`` file created).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from statekit.documents import parse_json5_document
from statekit.migrate.config_openclaw96 import OPENCLAW_RELEASE, config_problems
from statekit.db import Connection, SQLiteError, is_sqlite_file, read_only_view, table_names
from statekit.errors import ExitCode, SourceError, StatekitError
from statekit.fsutil import read_regular_file
from statekit.layout import AGENT_DB_NAME, ResolvedStateDir, agent_db_path, global_db_path, is_valid_agent_id, normalize_agent_id
from statekit.schema import ROLE_AGENT, ROLE_GLOBAL, SCHEMA_VERSION, canonical_differences
from statekit.states import PlanProblem, ReaderAction, SourceOutcome

SAMPLE = 10
PENDING_ACTIONS = (ReaderAction.IMPORT, ReaderAction.IMPORT_ARCHIVE, ReaderAction.DROP, SourceOutcome.ALREADY_IMPORTED)
PROBLEM_ACTIONS: tuple[str, ...] = tuple(problem.value for problem in PlanProblem)

# name -> (tables needed, FROM/WHERE clause selecting the orphan rows as ``e``)
ORPHAN_CHECKS: dict[str, tuple[tuple[str, ...], str]] = {
    "events_without_session": (
        ("transcript_events", "sessions"),
        "FROM transcript_events e WHERE NOT EXISTS (SELECT 1 FROM sessions s WHERE s.session_id = e.session_id)",
    ),
    "identities_without_event": (
        ("transcript_event_identities", "transcript_events"),
        "FROM transcript_event_identities e WHERE NOT EXISTS"
        " (SELECT 1 FROM transcript_events t WHERE t.session_id = e.session_id AND t.seq = e.seq)",
    ),
    "routes_to_missing_sessions": (
        ("session_routes", "sessions"),
        "FROM session_routes e WHERE NOT EXISTS (SELECT 1 FROM sessions s WHERE s.session_id = e.session_id)",
    ),
    "entries_to_missing_sessions": (
        ("session_entries", "sessions"),
        "FROM session_entries e WHERE NOT EXISTS (SELECT 1 FROM sessions s WHERE s.session_id = e.session_id)",
    ),
    "snapshots_without_session": (
        ("transcript_snapshots", "sessions"),
        "FROM transcript_snapshots e WHERE NOT EXISTS (SELECT 1 FROM sessions s WHERE s.session_id = e.session_id)",
    ),
    "trajectory_without_session": (
        ("trajectory_runtime_events", "sessions"),
        "FROM trajectory_runtime_events e WHERE NOT EXISTS (SELECT 1 FROM sessions s WHERE s.session_id = e.session_id)",
    ),
}


@dataclass
class DatabaseReport:
    path: str  # relative to the state dir
    expected_role: str
    expected_agent: str | None
    role: str | None = None
    agent_id: str | None = None
    user_version: int | None = None
    integrity: str | None = None
    foreign_key_violations: dict[str, int] = field(default_factory=dict)
    row_counts: dict[str, int] = field(default_factory=dict)
    orphans: dict[str, dict[str, Any]] = field(default_factory=dict)
    schema_differences: list[str] = field(default_factory=list)  # from the canonical layout (docs/schema.md)
    sessions_without_transcript: dict[str, Any] = field(default_factory=lambda: {"count": 0, "session_ids": []})
    legacy_files: list[dict[str, Any]] = field(default_factory=list)
    corruption: list[str] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def status(self) -> str:
        if self.corruption:
            return "corrupt"
        return "findings" if self.findings else "healthy"

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "role": self.role or self.expected_role,
            "agent_id": self.agent_id if self.agent_id is not None else self.expected_agent,
            "user_version": self.user_version,
            "integrity_check": self.integrity,
            "schema_differences": self.schema_differences,
            "foreign_key_violations": self.foreign_key_violations,
            "row_counts": self.row_counts,
            "orphans": self.orphans,
            "sessions_without_transcript": self.sessions_without_transcript,
            "legacy_files": self.legacy_files,
            "status": self.status,
            "corruption": self.corruption,
            "findings": self.findings,
            "notes": self.notes,
        }


@dataclass
class InspectReport:
    state_dir: Path
    databases: list[DatabaseReport] = field(default_factory=list)
    legacy_unassigned: list[dict[str, Any]] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)  # state-dir level (not one database)
    notes: list[str] = field(default_factory=list)
    config: dict[str, Any] | None = None  # what OpenClaw 2026.9.6 would refuse in the config (paths, reasons)
    came_back: list[str] = field(default_factory=list)  # legacy files written again after their migration

    @property
    def exit_code(self) -> ExitCode:
        if any(d.corruption for d in self.databases):
            return ExitCode.VERIFY_FAILED
        if self.findings or any(d.findings for d in self.databases):
            return ExitCode.WARNINGS
        return ExitCode.OK

    @property
    def status(self) -> str:
        return {ExitCode.OK: "healthy", ExitCode.WARNINGS: "findings", ExitCode.VERIFY_FAILED: "corrupt"}[self.exit_code]

    def to_json(self) -> dict[str, Any]:
        return {
            "format": "statekit-inspect",
            "version": 1,
            "state_dir": str(self.state_dir),
            "status": self.status,
            "databases": [d.to_json() for d in self.databases],
            "legacy_files": self.legacy_unassigned,
            "findings": self.findings,
            "notes": self.notes,
            "config": self.config,
            "came_back": self.came_back,
        }


def _count(conn: Connection, table: str) -> int:
    return conn.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]


def _check(conn: Connection, report: DatabaseReport) -> None:
    report.user_version = conn.execute("PRAGMA user_version").fetchone()[0]
    rows = [r[0] for r in conn.execute("PRAGMA integrity_check")]
    report.integrity = "ok" if rows == ["ok"] else "; ".join(str(r) for r in rows[:SAMPLE])
    if report.integrity != "ok":
        report.corruption.append(f"{report.path}: integrity_check: {report.integrity}")
    tables = sorted(t for t in table_names(conn) if not t.startswith("sqlite_"))
    if "schema_meta" in tables:
        try:
            row = conn.execute("SELECT role, agent_id FROM schema_meta WHERE meta_key = 'primary'").fetchone()
        except SQLiteError:
            row = None
        if row:
            report.role, report.agent_id = row
    if report.user_version > SCHEMA_VERSION:
        report.findings.append(f"{report.path}: schema version {report.user_version} is newer than statekit supports ({SCHEMA_VERSION})")
    if report.role is not None and report.role != report.expected_role:
        report.findings.append(f"{report.path}: schema_meta role is {report.role!r}, expected {report.expected_role!r}")
    if report.expected_agent and report.agent_id not in (None, report.expected_agent):
        report.findings.append(f"{report.path}: schema_meta names agent {report.agent_id!r}, expected {report.expected_agent!r}")
    if report.user_version == SCHEMA_VERSION:
        for difference in canonical_differences(conn, report.expected_role):
            report.schema_differences.append(difference)
            report.findings.append(f"{report.path}: not the canonical schema OpenClaw {OPENCLAW_RELEASE} upgrades: {difference}")
    for table in tables:
        report.row_counts[table] = _count(conn, table)
    if "sessions" in tables:
        keyless = conn.execute("SELECT count(*) FROM sessions WHERE session_key IS NULL OR trim(session_key) = ''").fetchone()[0]
        if keyless:
            ids = [r[0] for r in conn.execute(
                f"SELECT session_id FROM sessions WHERE session_key IS NULL OR trim(session_key) = '' ORDER BY session_id LIMIT {SAMPLE}")]
            report.orphans["sessions_without_key"] = {"count": keyless, "session_ids": ids}
            report.findings.append(f"{report.path}: {keyless} session(s) without a session key (OpenClaw {OPENCLAW_RELEASE}'s upgrade refuses them)")
    for row in conn.execute("PRAGMA foreign_key_check"):
        report.foreign_key_violations[row[0]] = report.foreign_key_violations.get(row[0], 0) + 1
    for table, count in sorted(report.foreign_key_violations.items()):
        report.findings.append(f"{report.path}: {count} row(s) of {table} violate a foreign key")
    present = set(tables)
    for name, (needed, body) in ORPHAN_CHECKS.items():
        if not set(needed) <= present:
            continue
        count = conn.execute(f"SELECT count(*) {body}").fetchone()[0]
        if count:
            ids = [r[0] for r in conn.execute(f"SELECT DISTINCT e.session_id {body} LIMIT {SAMPLE}")]
            report.orphans[name] = {"count": count, "session_ids": ids}
            report.findings.append(f"{report.path}: {count} {name.replace('_', ' ')}")
    if {"sessions", "transcript_events"} <= present:
        body = "FROM sessions s WHERE NOT EXISTS (SELECT 1 FROM transcript_events t WHERE t.session_id = s.session_id)"
        count = conn.execute(f"SELECT count(*) {body}").fetchone()[0]
        ids = [r[0] for r in conn.execute(f"SELECT s.session_id {body} ORDER BY s.session_id LIMIT {SAMPLE}")] if count else []
        report.sessions_without_transcript = {"count": count, "session_ids": ids}
        if count:
            report.notes.append(f"{report.path}: {count} session(s) without transcript rows")


def inspect_database(state_dir: Path, path: Path, role: str, agent_id: str | None) -> DatabaseReport:
    rel = path.relative_to(state_dir).as_posix() if path.is_relative_to(state_dir) else str(path)
    report = DatabaseReport(rel, role, agent_id)
    if not path.exists():
        report.findings.append(f"{rel}: registered but missing on disk")
        return report
    if not is_sqlite_file(path):
        report.corruption.append(f"{rel}: not a SQLite database (bad header)")
        return report
    try:
        with read_only_view(path) as conn:
            _check(conn, report)
    except SQLiteError as exc:
        report.corruption.append(f"{rel}: cannot read: {exc}")
    except OSError as exc:
        report.corruption.append(f"{rel}: cannot read: {exc.strerror or exc}")
    return report


def _registered_agents(state_dir: Path) -> dict[str, Path]:
    path = global_db_path(state_dir)
    found: dict[str, Path] = {}
    if not path.is_file() or not is_sqlite_file(path):
        return found
    try:
        with read_only_view(path) as conn:
            if "agent_databases" in table_names(conn):
                for agent_id, db_path in conn.execute("SELECT agent_id, path FROM agent_databases ORDER BY agent_id, path"):
                    found.setdefault(str(agent_id), Path(str(db_path)))
    except (SQLiteError, OSError):
        pass
    return found


def agent_databases(state_dir: Path) -> dict[str, Path]:
    """Agent databases on disk (``agents/<id>/agent/openclaw-agent.sqlite``) plus registered ones that should be."""
    found: dict[str, Path] = {}
    root = state_dir / "agents"
    if root.is_dir():
        for candidate in sorted(root.iterdir()):
            db = candidate / "agent" / AGENT_DB_NAME
            if db.is_file():
                found[candidate.name] = db
    for agent_id, _registered in _registered_agents(state_dir).items():
        # The registry records absolute paths from where the state dir was: look where it is now.
        found.setdefault(agent_id, agent_db_path(state_dir, agent_id))
    return found


def _inspect_config(report: InspectReport, config: Path | None) -> None:
    """A config OpenClaw 2026.9.6 would refuse makes the install unhealthy: a finding naming every key."""
    if config is None or not config.is_file():
        return
    rel = config.relative_to(report.state_dir).as_posix() if config.is_relative_to(report.state_dir) else str(config)
    try:
        document = parse_json5_document(read_regular_file(config), rel)
    except (OSError, SourceError):
        return  # the plan's config step reports it (unreadable, unparseable)
    problems = config_problems(document)
    report.config = {"path": rel, "openclaw_release": OPENCLAW_RELEASE, "valid": not problems, "problems": [p.to_json() for p in problems]}
    if not problems:
        return
    manual = sum(not p.fixable for p in problems)
    todo = "`statekit migrate` rewrites them" if not manual else f"{manual} of them need `openclaw doctor --fix`; statekit leaves the file alone"
    report.findings.append(f"{rel}: OpenClaw {OPENCLAW_RELEASE} would refuse this config: {', '.join(p.path for p in problems)} ({todo})")


def _came_back(report: InspectReport, sources: list[Any], agent: str | None) -> None:
    """Legacy files a process wrote again after statekit migrated them: one finding each (exit 3), for a cron job to alert on."""
    from statekit.migrate.receipts import came_back_line, earlier_version, load_receipts_readonly

    try:
        receipts = load_receipts_readonly(report.state_dir)
    except (SQLiteError, OSError):
        return  # an unreadable global database is reported as such
    for source in sources:
        if agent is not None and source.agent_id != normalize_agent_id(agent):
            continue
        if source.action not in PENDING_ACTIONS and source.action not in PROBLEM_ACTIONS:
            continue
        earlier = earlier_version(receipts, source.rel, source.sha256)
        if earlier is not None and earlier.removed_source:
            report.came_back.append(source.rel)
            report.findings.append(came_back_line(source.rel, earlier).split(";")[0] + "; stop it, then run `statekit migrate` (it merges)")


def inspect_state(resolved: ResolvedStateDir | Path, agent: str | None = None, env: Any = None) -> InspectReport:
    """Inspect the global database and the agent databases (all, or ``agent``)."""
    from statekit.migrate.plan import build_plan

    if isinstance(resolved, Path):
        resolved = ResolvedStateDir(resolved, "flag")
    state_dir = resolved.path
    plan = build_plan(resolved, env)
    report = InspectReport(state_dir)
    from statekit.backup.journal import describe_pending  # an in-place restore killed half-way

    pending_restore = describe_pending(state_dir) if state_dir.is_dir() else None
    if pending_restore:
        report.findings.append(pending_restore)
    agents = agent_databases(state_dir)
    if agent is not None:
        agent_id = normalize_agent_id(agent)
        if not is_valid_agent_id(agent_id):
            raise StatekitError(f"invalid agent id {agent_id!r}", exit_code=ExitCode.USAGE)
        if agent_id not in agents:
            raise StatekitError(f"{agent_db_path(state_dir, agent_id)}: no database for agent {agent_id!r}")
        agents = {agent_id: agents[agent_id]}
    global_path = global_db_path(state_dir)
    if global_path.exists():
        report.databases.append(inspect_database(state_dir, global_path, ROLE_GLOBAL, None))
    else:
        report.notes.append(f"{global_path.relative_to(state_dir).as_posix()}: no global database yet (run `statekit migrate`)")
    by_agent: dict[str | None, DatabaseReport] = {}
    for agent_id, path in agents.items():
        db_report = inspect_database(state_dir, path, ROLE_AGENT, agent_id)
        report.databases.append(db_report)
        by_agent[agent_id] = db_report
    if report.databases and report.databases[0].expected_role == ROLE_GLOBAL:
        by_agent[None] = report.databases[0]
    for source in plan.sources:
        if agent is not None and source.agent_id != normalize_agent_id(agent):
            continue
        entry = {"path": source.rel, "kind": source.kind, "action": source.action, "reason": source.reason}
        owner = by_agent.get(source.agent_id) if source.agent_id in by_agent else None
        if owner is None and not any(t.startswith("agent.") for t in source.target_tables):
            owner = by_agent.get(None)
        target = owner.legacy_files if owner is not None else report.legacy_unassigned
        target.append(entry)
        if source.action in PROBLEM_ACTIONS:
            (owner if owner is not None else report).findings.append(source.reason or f"{source.rel}: {source.action}")
    _came_back(report, plan.sources, agent)
    for sink, items in [(d, d.legacy_files) for d in report.databases] + [(report, report.legacy_unassigned)]:
        pending: dict[str, int] = {}
        for item in items:
            if item["action"] in PENDING_ACTIONS:
                pending[item["action"]] = pending.get(item["action"], 0) + 1
        if pending:
            what = ", ".join(f"{action} {n}" for action, n in sorted(pending.items()))
            where = f"{sink.path}: " if isinstance(sink, DatabaseReport) else ""
            sink.findings.append(f"{where}{sum(pending.values())} legacy file(s) still waiting for `statekit migrate` ({what})")
    for step in plan.steps:
        if step.get("kind") == "config" and step.get("status") == "refused":
            continue  # named key by key by _inspect_config
        if step.get("apply") or step.get("status") in ("refused", "unparseable", "unreadable"):
            report.findings.append(f"planned step: {step.get('description')}")
    _inspect_config(report, plan.config_path)
    counts: dict[str, int] = {}
    for items in [d.legacy_files for d in report.databases] + [report.legacy_unassigned]:
        for item in items:
            if item["action"] in (ReaderAction.DEFERRED, ReaderAction.RETAIN):
                counts[item["action"]] = counts.get(item["action"], 0) + 1
    for action, count in sorted(counts.items()):
        report.notes.append(f"{count} legacy file(s) left on disk on purpose ({action})")
    return report


__all__ = ["inspect_state", "inspect_database", "InspectReport", "DatabaseReport", "agent_databases"]
