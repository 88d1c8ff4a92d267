"""Named crash points for the reliability suite (tests only).

``STATEKIT_CRASHPOINT=name`` (or ``name:N`` for the N-th time the point is
reached, 1-based) makes the process SIGKILL itself at that point. Unset, a
checkpoint costs one dictionary lookup.
"""

from __future__ import annotations

import os
import signal

_hits: dict[str, int] = {}


def checkpoint(name: str) -> None:
    spec = os.environ.get("STATEKIT_CRASHPOINT")
    if not spec:
        return
    target, _, nth = spec.partition(":")
    if target != name:
        return
    _hits[name] = _hits.get(name, 0) + 1
    if _hits[name] >= (int(nth) if nth else 1):
        os.kill(os.getpid(), signal.SIGKILL)
