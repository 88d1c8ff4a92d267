"""What every session command shares: the change record, the agent a key belongs to, the lock, the clock."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from statekit.errors import StatekitError, UsageError
from statekit.layout import DEFAULT_AGENT_ID, agent_db_path, is_valid_agent_id, lock_path, normalize_agent_id
from statekit.locking import exclusive_lock, refuse_if_gateway_running
from statekit.states import SessionAction


REASONS: dict[str, str] = {SessionAction.DELETE: "deleted", SessionAction.RESET: "reset"}


@dataclass
class SessionChange:
    """What ``sessions delete|reset KEY`` does (or did) to one agent database."""

    action: str  # a SessionAction: delete | reset
    agent_id: str
    session_key: str
    session_id: str | None
    family: list[str]
    archived: list[str] = field(default_factory=list)  # unreferenced family ids with rows: archived then deleted
    kept: list[str] = field(default_factory=list)  # family ids still referenced elsewhere: untouched
    absent: list[str] = field(default_factory=list)  # family ids without any row in this database
    new_session_id: str | None = None
    rows: dict[str, int] = field(default_factory=dict)  # archived row counts per table
    archive_path: Path | None = None
    receipt_path: Path | None = None
    archive_sha256: str | None = None
    dry_run: bool = False
    notices: list[str] = field(default_factory=list)

    @property
    def reason(self) -> str:
        return REASONS[self.action]

    def to_json(self, state_dir: Path | None = None) -> dict[str, Any]:
        def rel(path: Path | None) -> str | None:
            if path is None:
                return None
            if state_dir is not None:
                try:
                    return path.relative_to(state_dir).as_posix()
                except ValueError:
                    pass
            return str(path)

        return {
            "action": self.action,
            "reason": self.reason,
            "dry_run": self.dry_run,
            "agent_id": self.agent_id,
            "session_key": self.session_key,
            "session_id": self.session_id,
            "new_session_id": self.new_session_id,
            "family": self.family,
            "archived_session_ids": self.archived,
            "kept_session_ids": self.kept,
            "absent_session_ids": self.absent,
            "rows": self.rows,
            "archive": rel(self.archive_path),
            "receipt": rel(self.receipt_path),
            "archive_sha256": self.archive_sha256,
            "notices": self.notices,
        }


def agent_for_key(key: str, agent: str | None) -> str:
    """``--agent`` if given, else the ``agent:<id>:`` prefix of the key, else the default agent."""
    if agent:
        agent_id = normalize_agent_id(agent)
    else:
        parts = key.split(":")
        agent_id = normalize_agent_id(parts[1]) if len(parts) > 2 and parts[0].lower() == "agent" and parts[1] else DEFAULT_AGENT_ID
    if not is_valid_agent_id(agent_id):
        raise UsageError(f"invalid agent id {agent_id!r}")
    return agent_id


def existing_agent_db(state_dir: Path, agent_id: str) -> Path:
    path = agent_db_path(state_dir, agent_id)
    if not path.is_file():
        raise StatekitError(f"{path}: no database for agent {agent_id!r} (run `statekit migrate` first, or pass --agent)")
    return path


@contextmanager
def maintenance_lock(state_dir: Path) -> Iterator[None]:
    """The state-dir lock, and no gateway running on the state dir."""
    with exclusive_lock(lock_path(state_dir), f"state dir {state_dir}"):
        refuse_if_gateway_running(state_dir)
        yield


def epoch_ms() -> int:
    return int(time.time() * 1000)
