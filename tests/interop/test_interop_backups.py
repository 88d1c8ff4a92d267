"""Backups across the two tools (issue 15; more in test_backup_96.py).

Both run on A, OpenClaw 9.6's own migration of the tree: a statekit backup of it restored by statekit,
and an ``openclaw backup create`` archive restored by statekit; 9.6 must then list A's sessions on the
restored dir. Not run with ``--interop-control`` (they are not checks of statekit's migration).
"""

from __future__ import annotations

import pytest

from interop_flow import Reference, RestoreOutcome, TreeRun, run_openclaw_archive_restore, run_statekit_backup_of_reference
from interop_reports import session_list_problems

pytestmark = pytest.mark.interop


def _assert_lists_reference(outcome: RestoreOutcome, reference: Reference, what: str) -> None:
    assert not outcome.problems, f"{what}: " + "; ".join(outcome.problems)
    problems = session_list_problems(reference.sessions, outcome.sessions)
    assert not problems, f"{what}: 9.6 `sessions --json` on the restored dir {outcome.target}: " + "; ".join(problems)


def test_statekit_backup_of_openclaw_state(interop_tree: TreeRun, reference: Reference) -> None:
    if interop_tree.control:
        pytest.skip("a backup check, not a check of statekit's migration: not run in control mode")
    _assert_lists_reference(run_statekit_backup_of_reference(interop_tree, reference), reference,
                            "statekit backup create / verify / restore --target of OpenClaw's own 9.6 state")


def test_statekit_restores_openclaw_archive(interop_tree: TreeRun, reference: Reference) -> None:
    if interop_tree.control:
        pytest.skip("a backup check, not a check of statekit's migration: not run in control mode")
    _assert_lists_reference(run_openclaw_archive_restore(interop_tree, reference), reference,
                            "`openclaw backup create` of A restored with `statekit backup restore --target`")
