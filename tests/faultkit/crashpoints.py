"""Kill points for the reliability suite: SIGKILL the process at a named ``checkpoint``.

statekit's long operations call :func:`statekit.seams.checkpoint` at their
interesting places (the apply loop, retirement, backup create, restore, session
maintenance). :func:`install_crashpoints` installs the hook that acts on them;
a spec holds one or more comma-separated items:

* ``name`` / ``name:N`` -- SIGKILL the process the first / N-th time (1-based)
  ``checkpoint(name)`` is reached;
* ``*:N`` -- SIGKILL at the N-th checkpoint reached, whatever its name (lets a
  test walk every kill point of a run in order);
* ``trace=PATH`` -- append the name of every checkpoint reached to PATH (one a
  line), to learn how many kill points a run has.

:func:`arm_kill_timer` kills the process after a delay instead (a daemon thread).
"""

from __future__ import annotations

import os
import signal
import threading
from collections import Counter
from dataclasses import dataclass, field

from faultkit import iofaults
from statekit import seams

ANY = "*"


@dataclass(frozen=True)
class CrashRule:
    target: str  # a checkpoint name, or ``*`` for any
    nth: int = 1

    def due(self, name: str, hits: Counter[str]) -> bool:
        return self.target in (name, ANY) and hits[self.target] >= self.nth


@dataclass
class CrashPlan:
    rules: tuple[CrashRule, ...] = ()
    traces: tuple[str, ...] = ()
    hits: Counter[str] = field(default_factory=Counter)

    def reached(self, name: str) -> None:
        """The checkpoint hook: count the pass, trace it, SIGKILL when a rule is due."""
        self.hits[ANY] += 1
        self.hits[name] += 1
        for path in self.traces:
            _trace(path, name)
        if any(rule.due(name, self.hits) for rule in self.rules):
            kill_now()


def parse_crash_spec(spec: str) -> CrashPlan:
    rules: list[CrashRule] = []
    traces: list[str] = []
    for item in filter(None, (part.strip() for part in spec.split(","))):
        if item.startswith("trace="):
            traces.append(item[len("trace=") :])
            continue
        target, _, nth = item.partition(":")
        rules.append(CrashRule(target, int(nth) if nth else 1))
    return CrashPlan(tuple(rules), tuple(traces))


def kill_now() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _trace(path: str, name: str) -> None:
    fd = iofaults.real("open")(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        iofaults.real("write")(fd, (name + "\n").encode())
    finally:
        os.close(fd)


def install_crashpoints(spec: str | CrashPlan) -> CrashPlan:
    """Install the checkpoint hook for ``spec`` (counts start from zero); returns the live plan."""
    plan = parse_crash_spec(spec) if isinstance(spec, str) else spec
    seams.install_checkpoint_hook(plan.reached)
    return plan


def uninstall_crashpoints() -> None:
    seams.install_checkpoint_hook(None)


def arm_kill_timer(delay_ms: float) -> threading.Thread:
    """SIGKILL this process ``delay_ms`` milliseconds from now (a daemon thread)."""
    event = threading.Event()

    def _fire() -> None:
        if not event.wait(delay_ms / 1000.0):
            kill_now()

    thread = threading.Thread(target=_fire, name="statekit-kill-timer", daemon=True)
    thread.start()
    return thread


__all__ = [
    "CrashPlan",
    "CrashRule",
    "arm_kill_timer",
    "install_crashpoints",
    "kill_now",
    "parse_crash_spec",
    "uninstall_crashpoints",
]
