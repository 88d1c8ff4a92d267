"""Reliability suite fixtures: warm imports before forking, and the figures docs/reliability.md reports.

Every test adds what it tried and what held to ``rel_harness.FIGURES``; the
terminal summary prints them, and ``STATEKIT_RELIABILITY_FIGURES=path.json``
writes them to a file.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

_HERE = str(Path(__file__).resolve().parent)
_REPO = str(Path(__file__).resolve().parents[2])
for entry in (_REPO, _HERE):
    if entry not in sys.path:
        sys.path.append(entry)

import rel_harness  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def _warm_imports() -> None:
    """Import every reader and command once, so each forked child starts warm."""
    from statekit import legacy_readers
    import typer.main

    from statekit.cli import build_app

    legacy_readers.all_readers()
    dict(typer.main.get_command(build_app()).commands)  # the root loads its commands lazily: load them all


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:  # noqa: ARG001
    figures = rel_harness.FIGURES
    if not figures:
        return
    terminalreporter.section("reliability figures")
    for name in sorted(figures):
        counts = ", ".join(f"{k}={v}" for k, v in sorted(figures[name].items()))
        terminalreporter.write_line(f"{name}: {counts}")
    target = os.environ.get("STATEKIT_RELIABILITY_FIGURES")
    if target:
        Path(target).write_text(json.dumps({k: dict(v) for k, v in figures.items()}, indent=1, sort_keys=True) + "\n")
