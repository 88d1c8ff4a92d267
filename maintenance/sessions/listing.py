"""``sessions list`` (live entries with their family) and ``sessions list --archives``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from statekit.maintenance.sessions.archive_format import iter_receipts
from statekit.maintenance.sessions.common import agent_for_key, existing_agent_db
from statekit.legacy_readers.session_family import family_of
from statekit.db import read_only_view, table_names


def agent_ids_on_disk(state_dir: Path) -> list[str]:
    root = state_dir / "agents"
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / "agent" / "openclaw-agent.sqlite").is_file())


def list_sessions(state_dir: Path, agent: str | None = None) -> list[dict[str, Any]]:
    """Session entries per agent with their family and transcript size (read-only)."""
    agents = [agent_for_key("", agent)] if agent else agent_ids_on_disk(state_dir)
    result = []
    for agent_id in agents:
        path = existing_agent_db(state_dir, agent_id)
        sessions: list[dict[str, Any]] = []
        with read_only_view(path) as conn:
            tables = table_names(conn)
            if "session_entries" in tables:
                has_events = "transcript_events" in tables
                for key, sid, text, updated in conn.execute(
                    "SELECT session_key, session_id, entry_json, updated_at FROM session_entries ORDER BY updated_at DESC, session_key"
                ):
                    try:
                        entry = json.loads(text)
                    except (TypeError, ValueError, RecursionError):
                        entry = None
                    family = family_of(entry, sid)
                    events = 0
                    if has_events:
                        events = conn.execute(
                            "SELECT count(*) FROM transcript_events WHERE session_id IN (SELECT value FROM json_each(?))",
                            (json.dumps(family),),
                        ).fetchone()[0]
                    sessions.append({"session_key": key, "session_id": sid, "updated_at": updated, "family": family,
                                     "transcript_events": events})
        result.append({"agent_id": agent_id, "database": path.relative_to(state_dir).as_posix(), "sessions": sessions})
    return result


def list_session_archives(state_dir: Path, agent: str | None = None) -> list[dict[str, Any]]:
    found = []
    for path, receipt in iter_receipts(state_dir, agent_for_key("", agent) if agent else None):
        archive = path.with_name(str(receipt.get("archive", "")))
        found.append({
            "archive": archive.relative_to(state_dir).as_posix(),
            "present": archive.is_file(),
            **{k: receipt.get(k) for k in ("agent_id", "reason", "session_key", "session_id", "new_session_id",
                                           "archived_session_ids", "rows", "created_at", "status", "sha256", "size")},
        })
    return found
