"""The reliability suite's fault layer: kill points, kill timers and I/O faults, for tests only.

Nothing here is imported by statekit. The product keeps one no-op seam,
:func:`statekit.seams.checkpoint`; this package installs the hook behind it
(:mod:`faultkit.crashpoints`) and patches ``os`` / ``io`` calls
(:mod:`faultkit.iofaults`), and only when test code asks: the forked children
of ``rel_harness.fork_cli`` and the test entry point :mod:`faultkit.run_statekit`,
which reads the environment variables below and then runs ``statekit.cli.main``.

* ``STATEKIT_CRASHPOINT``: a kill-point spec (:mod:`faultkit.crashpoints`);
* ``STATEKIT_KILL_AFTER_MS``: SIGKILL the process that many milliseconds after
  statekit's code is loaded;
* ``STATEKIT_IOFAULT``: an I/O fault spec (:mod:`faultkit.iofaults`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from faultkit.crashpoints import CrashPlan, arm_kill_timer, install_crashpoints, uninstall_crashpoints
from faultkit.iofaults import FaultPlan, install_io_faults, io_faults_fired, uninstall_io_faults

CRASHPOINT_ENV = "STATEKIT_CRASHPOINT"
KILL_AFTER_MS_ENV = "STATEKIT_KILL_AFTER_MS"
IOFAULT_ENV = "STATEKIT_IOFAULT"
FAULT_ENV = (CRASHPOINT_ENV, KILL_AFTER_MS_ENV, IOFAULT_ENV)
ENTRY_POINT = Path(__file__).resolve().parent / "run_statekit.py"


@dataclass
class Armed:
    """What :func:`arm_from_env` installed."""

    crash: CrashPlan | None = None
    io: FaultPlan | None = None
    kill_after_ms: float | None = None


def arm_from_env(environ: Mapping[str, str]) -> Armed:
    """Install every fault the three environment variables ask for."""
    armed = Armed()
    if spec := environ.get(CRASHPOINT_ENV):
        armed.crash = install_crashpoints(spec)
    if delay := environ.get(KILL_AFTER_MS_ENV):
        armed.kill_after_ms = float(delay)
        arm_kill_timer(armed.kill_after_ms)
    if spec := environ.get(IOFAULT_ENV):
        armed.io = install_io_faults(spec)
    return armed


def disarm() -> None:
    """Remove the checkpoint hook and the I/O patches (a kill timer already running cannot be stopped)."""
    uninstall_crashpoints()
    uninstall_io_faults()


def wants_faults(env: Mapping[str, str] | None) -> bool:
    return any(name in (env or {}) for name in FAULT_ENV)


def statekit_command(env: Mapping[str, str] | None = None) -> list[str]:
    """The command that runs ``statekit`` in a new interpreter: the test entry point when ``env`` asks for
    faults (only it reads the fault variables), else the real ``python -m statekit``."""
    if wants_faults(env):
        return [sys.executable, str(ENTRY_POINT)]
    return [sys.executable, "-m", "statekit"]


def without_fault_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    return {k: v for k, v in (os.environ if environ is None else environ).items() if k not in FAULT_ENV}


__all__ = [
    "CRASHPOINT_ENV",
    "ENTRY_POINT",
    "FAULT_ENV",
    "IOFAULT_ENV",
    "KILL_AFTER_MS_ENV",
    "Armed",
    "arm_from_env",
    "arm_kill_timer",
    "disarm",
    "install_crashpoints",
    "install_io_faults",
    "io_faults_fired",
    "statekit_command",
    "uninstall_crashpoints",
    "uninstall_io_faults",
    "wants_faults",
    "without_fault_env",
]
