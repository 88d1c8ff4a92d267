"""Named points in the long-running operations where a test may observe or interrupt a run.

``checkpoint(name)`` sits at the interesting places of the apply loop, retirement,
backup create, restore and session maintenance. It does nothing unless code
installed a hook with :func:`install_checkpoint_hook`; statekit itself never
installs one and never reads the environment here. The reliability suite's
entry point (under ``tests/``) installs the hook that kills the process at a
chosen point.
"""

from __future__ import annotations

from collections.abc import Callable

CheckpointHook = Callable[[str], None]

_hook: CheckpointHook | None = None


def checkpoint(name: str) -> None:
    """Tell the installed hook (if any) that the run reached the point ``name``."""
    hook = _hook
    if hook is not None:
        hook(name)


def install_checkpoint_hook(hook: CheckpointHook | None) -> CheckpointHook | None:
    """Install ``hook`` (``None`` removes it); returns the hook it replaced."""
    global _hook
    previous, _hook = _hook, hook
    return previous


__all__ = ["CheckpointHook", "checkpoint", "install_checkpoint_hook"]
