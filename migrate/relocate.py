"""State-dir relocation: a legacy ``~/.clawdbot`` / ``~/.moldbot`` / ``~/.moltbot`` becomes ``~/.openclaw``.

Only a state dir that was *found* in the home directory is moved (origin
``legacy``); one named with ``--state-dir`` or ``OPENCLAW_STATE_DIR`` is never
moved. The move is one ``rename(2)`` on the same filesystem (never a copy):
``.env``, the config, the databases and everything else go with it, and no
alias is left behind at the old path. When both a legacy dir and
``~/.openclaw`` exist, statekit refuses and names both: reconcile them by
hand, or migrate one of them explicitly with ``--state-dir``.

``migrate`` calls :func:`relocate_state_dir` first, before it takes the lock
on (and plans) the new path. A small marker, ``.statekit/relocated.json``,
is written inside the dir just before the rename and so moves with it; the
next plan turns it into a ``state-dir-relocated`` step that the run records
in its report (and uses to rebase config paths), then removes.
"""

from __future__ import annotations

import errno
import json
import os
import time
from pathlib import Path
from typing import Any

from statekit.errors import StateDirError
from statekit.fsutil import atomic_write_bytes, ensure_private_dir, fsync_dir
from statekit.layout import CANONICAL_DIR_NAME, LEGACY_DIR_NAMES, ResolvedStateDir, lock_path, statekit_dir
from statekit.locking import exclusive_lock, refuse_if_gateway_running

MARKER_NAME = "relocated.json"


def marker_path(state_dir: Path) -> Path:
    return statekit_dir(state_dir) / MARKER_NAME


def _points_to(path: Path, target: Path) -> bool:
    try:
        return path.is_symlink() and os.path.realpath(path) == os.path.realpath(target)
    except OSError:
        return False


def _has_entries(path: Path) -> bool:
    try:
        with os.scandir(path) as entries:
            return any(True for _ in entries)
    except OSError:
        return True  # unreadable: treat as present, never guess it away


def conflicting_legacy_dirs(canonical: Path) -> list[Path]:
    """Legacy dirs beside ``canonical`` that hold something (a symlink into canonical does not count)."""
    found = []
    for name in LEGACY_DIR_NAMES:
        candidate = canonical.parent / name
        if not os.path.lexists(candidate) or _points_to(candidate, canonical):
            continue
        if candidate.is_dir() and not _has_entries(candidate):
            continue
        found.append(candidate)
    return found


def both_present_message(legacy: Path, canonical: Path) -> str:
    return (
        f"both {legacy} and {canonical} exist; statekit will not merge or move them. Reconcile them by hand "
        f"(keep one, move the other aside), or migrate one explicitly with --state-dir"
    )


def read_marker(state_dir: Path) -> dict[str, Any] | None:
    """The relocation marker when it describes a move *into* this state dir, else None."""
    try:
        data = json.loads(marker_path(state_dir).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("from"), str) or not isinstance(data.get("to"), str):
        return None
    if os.path.abspath(data["to"]) != os.path.abspath(state_dir):
        return None
    return data


def relocation_steps(resolved: ResolvedStateDir) -> list[dict[str, Any]]:
    """What the plan shows about the state dir's location (read-only)."""
    steps: list[dict[str, Any]] = []
    state_dir = resolved.path
    if resolved.origin == "legacy":
        target = state_dir.parent / CANONICAL_DIR_NAME
        if os.path.lexists(target):
            steps.append({
                "kind": "relocate-state-dir", "apply": False, "status": "refused",
                "from": str(state_dir), "to": str(target),
                "description": f"relocation refused: {both_present_message(state_dir, target)}",
            })
        else:
            steps.append({
                "kind": "relocate-state-dir", "apply": True, "status": "planned",
                "from": str(state_dir), "to": str(target),
                "description": f"move the state dir {state_dir} → {target} (one atomic rename on the same filesystem)",
            })
    elif resolved.origin == "default":
        for legacy in conflicting_legacy_dirs(state_dir):
            steps.append({
                "kind": "relocate-state-dir", "apply": False, "status": "refused",
                "from": str(legacy), "to": str(state_dir),
                "description": f"relocation refused: {both_present_message(legacy, state_dir)}",
            })
    marker = read_marker(state_dir)
    if marker is not None:
        steps.append({
            "kind": "state-dir-relocated", "apply": True, "status": "done",
            "from": marker["from"], "to": marker["to"], "at": marker.get("at"),
            "description": f"state dir moved {marker['from']} → {marker['to']} (recorded by this run)",
        })
    return steps


def relocate_state_dir(resolved: ResolvedStateDir | Path, env: Any = None) -> ResolvedStateDir:
    """Move a legacy-found state dir to ``~/.openclaw`` before a migration; refuse when both exist.

    Returns the state dir to migrate. Explicit state dirs (flag/env) are
    returned unchanged.
    """
    if isinstance(resolved, Path):
        return ResolvedStateDir(resolved, "flag")
    if resolved.origin == "default":
        conflicts = conflicting_legacy_dirs(resolved.path)
        if conflicts:
            raise StateDirError(both_present_message(conflicts[0], resolved.path) + "; nothing was changed")
        return resolved
    if resolved.origin != "legacy":
        return resolved
    legacy = resolved.path
    target = legacy.parent / CANONICAL_DIR_NAME
    if os.path.lexists(target):
        raise StateDirError(both_present_message(legacy, target) + "; nothing was changed")
    if not os.access(legacy.parent, os.W_OK):
        raise StateDirError(f"{legacy.parent}: not writable; cannot move {legacy} to {target}; nothing was changed")
    with exclusive_lock(lock_path(legacy), f"state dir {legacy}"):
        refuse_if_gateway_running(legacy)
        marker = {"from": str(legacy), "to": str(target), "at": int(time.time() * 1000)}
        ensure_private_dir(statekit_dir(legacy))
        atomic_write_bytes(marker_path(legacy), (json.dumps(marker, indent=2) + "\n").encode("utf-8"))
        try:
            os.rename(legacy, target)
        except OSError as exc:
            marker_path(legacy).unlink(missing_ok=True)
            if exc.errno == errno.EXDEV:
                raise StateDirError(
                    f"{legacy} and {target} are on different filesystems; statekit only renames, never copies. "
                    f"Move it by hand, or migrate it in place with --state-dir {legacy}"
                ) from None
            raise StateDirError(f"cannot move {legacy} to {target}: {exc.strerror or exc}; nothing was changed") from None
        fsync_dir(legacy.parent)
    return ResolvedStateDir(target, "default")


__all__ = ["relocate_state_dir", "relocation_steps", "conflicting_legacy_dirs", "read_marker", "marker_path"]
