"""Planned steps that are not legacy sources (state-dir relocation, config aliases).

The plan lists them in ``Plan.steps``; :func:`apply_steps` carries them out
after the sources. None are defined yet.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def apply_steps(plan: Any, state_dir: Path, run_id: str, report: Any) -> None:
    for step in plan.steps:
        if step.get("apply"):
            raise NotImplementedError(step.get("kind"))
