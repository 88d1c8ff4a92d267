"""Which session key owns a session id: lineage of session entries, recovered history.

OpenClaw's own migration gives every transcript a logical owner (its session
key). A session id listed by an entry of a session index (``sessions.json``)
belongs to that entry's key: its current ``sessionId``, ``previousSessionId``,
``usageFamilySessionIds`` and the sessions of its compaction checkpoints
(the entry's *family*). A transcript no entry claims is recovered history:
key ``agent:<agentId>:recovered:<sessionId>``.

Pure functions plus one read query; the maintenance commands (``statekit
sessions``) use the same family.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from statekit.legacy_readers.writer import DatabaseWriter


def recovered_key(agent_id: str, session_id: str) -> str:
    """The key OpenClaw gives history no session index claims."""
    return f"agent:{agent_id}:recovered:{session_id}"


def _text_id(value: Any) -> str | None:
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def family_of(entry: Any, session_id: str | None = None) -> list[str]:
    """The session ids one entry owns, deduplicated in a stable order (current session first)."""
    ids: list[str] = []

    def add(value: Any) -> None:
        text = _text_id(value)
        if text is not None and text not in ids:
            ids.append(text)

    add(session_id)
    if not isinstance(entry, dict):
        return ids
    add(entry.get("sessionId"))
    add(entry.get("previousSessionId"))
    checkpoints = entry.get("compactionCheckpoints")
    if isinstance(checkpoints, list):
        for checkpoint in checkpoints:
            if not isinstance(checkpoint, dict):
                continue
            add(checkpoint.get("sessionId"))
            for side in ("preCompaction", "postCompaction"):
                part = checkpoint.get(side)
                if isinstance(part, dict):
                    add(part.get("sessionId"))
    usage = entry.get("usageFamilySessionIds")
    if isinstance(usage, list):
        for value in usage:
            add(value)
    return ids


def lineage_owners(db: DatabaseWriter) -> dict[str, str]:
    """session id -> the key whose entry family lists it.

    Read from the agent database's ``session_entries`` (the session indexes
    are imported before any transcript, in plan order). A session two entries
    share (a pre-compaction transcript both continue) goes to the smallest key:
    the row needs one key, and both entries keep referencing it, so neither
    ``sessions delete`` of one of them removes it. (OpenClaw's own migration
    leaves such a file unimported; statekit imports it.)
    """
    owners: dict[str, str] = {}
    for key, session_id, text in db.select("session_entries", ("session_key", "session_id", "entry_json")):
        try:
            entry = json.loads(text) if isinstance(text, str) else None
        except ValueError:
            entry = None
        for member in family_of(entry, session_id):
            if member not in owners or key < owners[member]:
                owners[member] = key
    return owners
