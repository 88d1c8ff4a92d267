"""Issue 10's "Done when", per tree: OpenClaw 2026.9.6 on what ``statekit migrate`` produced (B).

Each check is one test; the heavy work (A, B, the gateway run, the doctor pass) is done once per tree
by the fixtures in conftest.py. With ``--interop-control`` the same checks run on OpenClaw's own
migration (A) and must all pass. Every failure names the log file to open.
"""

from __future__ import annotations

import pytest

from interop_db import compare
from interop_flow import (ConfigChecks, Doctored, GatewayOutcome, Reference, SessionLists, Subject, TreeRun, Validation,
                          run_lint_after_doctor)
from interop_reports import (config_issues, doctor_imports, doctor_refusal, lint_findings_above_warning,
                             session_list_problems)
from interop_setup import shorten

pytestmark = pytest.mark.interop
SHOWN = 12  # problems listed in one failure message (the rest are in the logs)


def _check(ok: object, message: str) -> None:
    """Fail with ``message`` alone (it names the log to open): no assertion introspection to wade through."""
    if not ok:
        pytest.fail(message, pytrace=False)


def _listing(problems: list[str]) -> str:
    more = f"\n  ... {len(problems) - SHOWN} more" if len(problems) > SHOWN else ""
    return "\n  " + "\n  ".join(problems[:SHOWN]) + more


# ------------------------------------------------------------------------------------------ config
def test_config_validates(config_checks: ConfigChecks, subject: Subject) -> None:
    issues = config_issues(config_checks.validate)
    _check(not issues, f"`openclaw config validate --json` on {subject.name} does not say valid "
                       f"(log {config_checks.validate.log}):{_listing(issues)}")


@pytest.mark.xfail(
    strict=True,
    reason="known gap (docs/openclaw.md, 'After statekit migrate'): 9.6's lint reads its own current tables and reports any "
           "version-1 database as pending ('legacy agent database registry schema', 'no such table: cron_job_scratch') "
           "until 9.6 has upgraded it once (gateway start or one doctor --fix); test_lint_after_one_doctor_pass checks that",
)
def test_lint_has_nothing_above_warning(config_checks: ConfigChecks, subject: Subject) -> None:
    findings, above = lint_findings_above_warning(config_checks.lint)
    _check(findings is not None and not above, f"`openclaw doctor --lint --json` on {subject.name} reports findings "
                                               f"above warning (log {config_checks.lint.log}):{_listing(above)}")


def test_lint_after_one_doctor_pass(doctored: Doctored, interop_tree: TreeRun, subject: Subject) -> None:
    _check(doctored.doctor.ok, f"the doctor pass on {subject.name} failed: {doctor_refusal(doctored.doctor)}")
    lint = run_lint_after_doctor(interop_tree, subject, doctored)
    findings, above = lint_findings_above_warning(lint)
    _check(findings is not None and not above, f"`openclaw doctor --lint --json` on {subject.name} after one doctor pass "
                                               f"reports findings above warning (log {lint.log}):{_listing(above)}")


# ------------------------------------------------------------------------------------------ gateway
def _require_ready(outcome: GatewayOutcome) -> None:
    if not outcome.readiness.ready:
        pytest.fail(f"the gateway did not become ready: {outcome.readiness.detail}", pytrace=False)


def test_gateway_becomes_ready(gateway_outcome: GatewayOutcome, subject: Subject) -> None:
    _check(gateway_outcome.readiness.ready, f"`openclaw gateway run` on {subject.name} (no doctor pass first): "
                                            f"{gateway_outcome.readiness.detail}")


def test_history_serves_every_legacy_message(gateway_outcome: GatewayOutcome, subject: Subject) -> None:
    _require_ready(gateway_outcome)
    histories = gateway_outcome.histories
    _check(histories, f"no sessions found in {subject.name}'s databases to ask the gateway about")
    problems = [f"{h.agent} {h.key}: {h.problem}" for h in histories if h.problem]
    _check(not problems, f"{len(problems)} of {len(histories)} sessions: `gateway call chat.history` does not serve "
                         f"every message of the legacy JSONL transcript:{_listing(problems)}")


def test_new_turn_appends(gateway_outcome: GatewayOutcome) -> None:
    if gateway_outcome.turn_unavailable:
        pytest.skip(gateway_outcome.turn_unavailable)
    _require_ready(gateway_outcome)
    _check(gateway_outcome.turn_problem is None, f"no new turn could be tried: {gateway_outcome.turn_problem}")
    turn = gateway_outcome.turn
    _check(turn is not None and turn.appended, f"the new turn did not append: {turn.detail if turn else 'not run'}")


# ------------------------------------------------------------------------------------------ doctor
def test_doctor_first_pass_exits_0(doctored: Doctored, subject: Subject) -> None:
    _check(doctored.doctor.ok, f"`openclaw doctor --fix --non-interactive --yes` on a fresh copy of {subject.name} "
                               f"failed on the first pass: {doctor_refusal(doctored.doctor)}")


def test_doctor_imports_nothing(doctored: Doctored, subject: Subject, interop_tree: TreeRun) -> None:
    _check(doctored.doctor.ok, f"the doctor pass on {subject.name} failed, so it cannot show that nothing was left to "
                               f"import: {doctor_refusal(doctored.doctor)}")
    imports = doctor_imports(doctored.doctor.stdout + "\n" + doctored.doctor.stderr,
                             interop_tree.allow.not_import_patterns)
    _check(not imports, f"doctor --fix on {subject.name} still imported or migrated legacy state "
                        f"(log {doctored.doctor.log}):{_listing(imports)}")


def test_session_sqlite_validate(validation: Validation, subject: Subject) -> None:
    result = validation.session_sqlite
    _check(result.ok, f"`openclaw doctor --session-sqlite validate --session-sqlite-all-agents` on {subject.name} "
                      f"after the doctor pass: {result.why()}")


def test_preflight_exact(validation: Validation, subject: Subject) -> None:
    problems = [f"{tag}: database missing" for tag in validation.missing]
    for tag, result in sorted(validation.preflight.items()):
        doc = result.json()
        if not isinstance(doc, dict):
            problems.append(f"{tag}: {result.why()}")
        elif doc.get("status") != "exact" or doc.get("issues"):
            problems.append(f"{tag}: status {doc.get('status')}, version {doc.get('foundVersion')}/"
                            f"{doc.get('targetVersion')}, issues {shorten(str(doc.get('issues')), 200)} (log {result.log})")
    _check(validation.preflight and not problems, f"`openclaw database preflight` / `preflight-agent` on copies of "
                                                  f"{subject.name}'s databases after the doctor pass:{_listing(problems)}")


# ------------------------------------------------------------------------------------------ same as OpenClaw's own
def test_sessions_equal_reference(listed_sessions: SessionLists, reference: Reference, subject: Subject) -> None:
    problems = session_list_problems(reference.sessions, listed_sessions)
    _check(not problems, f"`openclaw sessions --json --agent <id> --limit all` on {subject.name} after the doctor "
                         f"pass differs from OpenClaw's own migration:{_listing(problems)}")


def test_rows_equal_reference(doctored: Doctored, reference: Reference, subject: Subject, interop_tree: TreeRun) -> None:
    result = compare(reference.dump, doctored.dump, interop_tree.allow, doctored.doctor.stdout + doctored.doctor.stderr)
    diff_file = interop_tree.work / f"{subject.name}-rows-diff.txt"
    diff_file.write_text(f"# {subject.name} after one doctor pass vs A (OpenClaw's own migration)\n" + result.report(),
                         encoding="utf-8")
    tables = sum(len(db.tables) for db in reference.dump.values())
    _check(reference.dump, "OpenClaw's own migration left no database to compare with")
    _check(not result.failures, f"{len(result.failures)} differences from OpenClaw's own migration over "
                                f"{len(reference.dump)} databases / {tables} tables ({len(result.extras)} EXTRA "
                                f"tables, {len(result.allowed)} allowed; all in {diff_file}):"
                                f"{_listing([d.line() for d in result.failures])}")
