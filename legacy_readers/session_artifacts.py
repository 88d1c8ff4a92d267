"""Session-directory artifacts that are recognised but not imported by this step (action ``deferred``).

Trajectory sidecars, compaction checkpoint copies, ACP stream logs,
reset/deleted/bak transcript archives and lock files. The plan lists them so
no file in a sessions dir is left unexplained; their import lands separately.
"""

from __future__ import annotations

from legacy_readers.base import Reader

_DIRS = ("agents/*/sessions/", "sessions/")


def _in_session_dirs(*names: str) -> tuple[str, ...]:
    return tuple(d + n for d in _DIRS for n in names)


class TrajectoryDeferred(Reader):
    kind = "trajectory-jsonl"
    family = "sessions"
    description = "Trajectory runtime-event sidecar and its path pointer"
    patterns = _in_session_dirs("*.trajectory.jsonl", "*.trajectory-path.json")
    target_tables = ("agent.trajectory_runtime_events",)
    action = "deferred"
    reason = "trajectory sidecar: imported by the session-artifacts step"
    order = 40


class CheckpointDeferred(Reader):
    kind = "transcript-checkpoint"
    family = "sessions"
    description = "Pre-compaction checkpoint copy of a transcript"
    patterns = _in_session_dirs("*.checkpoint.*.jsonl")
    target_tables = ("agent.transcript_events", "agent.transcript_snapshots")
    action = "deferred"
    reason = "compaction checkpoint: imported by the session-artifacts step"
    order = 41


class AcpStreamDeferred(Reader):
    kind = "acp-stream-jsonl"
    family = "sessions"
    description = "ACP parent stream log"
    patterns = _in_session_dirs("*.acp-stream.jsonl")
    action = "deferred"
    reason = "ACP stream log: handled by the session-artifacts step"
    order = 42


class TranscriptArchiveDeferred(Reader):
    kind = "transcript-archive"
    family = "sessions"
    description = "Reset/deleted/backup transcript archives and session index backups"
    patterns = _in_session_dirs("*.jsonl.reset.*", "*.jsonl.deleted.*", "*.jsonl.bak*", "sessions.json.bak*")
    action = "deferred"
    reason = "transcript archive: handled by the session-artifacts step"
    order = 43


class SessionLockDeferred(Reader):
    kind = "session-lock"
    family = "sessions"
    description = "Transcript and session index lock files"
    patterns = _in_session_dirs("*.jsonl.lock", "sessions.json.lock")
    action = "deferred"
    reason = "lock file: dropped by the session-artifacts step"
    order = 44
