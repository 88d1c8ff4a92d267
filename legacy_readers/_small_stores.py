"""Shared helpers for the small global stores (queues, settings, registries, plugin state).

Plugin-state rows, legacy line keys and identifier
normalisation for the readers of the small global stores (delivery queues,
media, audit logs, bindings, approvals, commitments, sandbox, ACP ledger,
plugin index, settings, Crestodian, phone control, workspace state, ClawHub,
MCP OAuth, channel pairing, misc logs). Nothing here writes outside the
transaction the apply loop hands a reader.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Any

from statekit.legacy_readers.base import Source
from statekit.legacy_readers.writer import DatabaseWriter
from statekit.values import js_json
from statekit.values import trimmed as text  # "text" here has always meant the trimmed non-empty string

# --- rows (through the writer) ---------------------------------------------------------

PLUGIN_STATE = "plugin_state_entries"
PLUGIN_STATE_KEY = ("plugin_id", "namespace", "entry_key")


def put_plugin_state(
    db: DatabaseWriter,
    plugin_id: str,
    namespace: str,
    entry_key: str,
    value: Any,
    created_at: int,
    expires_at: int | None = None,
) -> None:
    """Upsert one ``plugin_state_entries`` row (value stored as ``JSON.stringify`` would write it)."""
    db.upsert(
        PLUGIN_STATE,
        {
            "plugin_id": plugin_id,
            "namespace": namespace,
            "entry_key": entry_key,
            "value_json": js_json(value),
            "created_at": int(created_at),
            "expires_at": expires_at,
        },
        PLUGIN_STATE_KEY,
    )


def line_key(number: int, raw: bytes) -> str:
    """OpenClaw's legacy JSONL key: ``legacy:<line>:<sha256(line)[0:16]>`` (line 1-based, trimmed line hashed)."""
    return f"legacy:{number}:{hashlib.sha256(raw).hexdigest()[:16]}"


# --- identifiers -----------------------------------------------------------------------


def normalize_account_id(value: Any) -> str:
    """OpenClaw's account id normalisation: trimmed, lower-case, ``default`` when empty."""
    raw = text(value) if not isinstance(value, (int, float)) or isinstance(value, bool) else str(value)
    return raw.lower() if raw else "default"


_AGENT_KEY = re.compile(r"^agent:([^:]+):", re.IGNORECASE)


def agent_id_of_session_key(session_key: str, default: str = "main") -> str:
    from statekit.layout import normalize_agent_id

    match = _AGENT_KEY.match(session_key.strip())
    return normalize_agent_id(match.group(1)) if match else default


def workspace_path(source: Source, workspace_rel: str) -> str:
    """The absolute path of a workspace dir, as OpenClaw's ``path.resolve`` gives it (symlinks not resolved)."""
    return str(Path(os.path.abspath(source.state_dir / workspace_rel)))
