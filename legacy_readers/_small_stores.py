"""Shared helpers for the small global stores (queues, settings, registries, plugin state).

Foreign-table fitting, plugin-state rows, legacy line keys and identifier
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
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from statekit.legacy_readers.base import Source
from statekit.legacy_readers.writer import DatabaseWriter, as_database_writer
from statekit.db import Connection
from statekit.documents import load_document
from statekit.values import file_mtime_ms, integer, iso_to_ms, js_json, ms_to_iso, nested_text, record
from statekit.values import trimmed as text  # "text" here has always meant the trimmed non-empty string

# file_mtime_ms ... text are defined in statekit.values / statekit.documents; importable from here for the readers
# that still import them from this module.
__all__ = [
    "PLUGIN_STATE", "PLUGIN_STATE_KEY", "agent_id_of_session_key", "fit_row", "line_key", "normalize_account_id",
    "put_plugin_state", "workspace_path",
    "file_mtime_ms", "integer", "iso_to_ms", "load_document", "ms_to_iso", "nested_text", "record", "text",
]

# --- rows (through the writer) ---------------------------------------------------------


def fit_row(db: DatabaseWriter | Connection, table: str, row: Mapping[str, Any], extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``row`` (statekit's columns, all required) plus the ``extra`` columns the existing table happens to have.

    OpenClaw's own 2026.6-2026.7 tables are wider and mark more columns NOT
    NULL; filling the ones we can derive lets the row satisfy them. A table
    lacking one of ``row``'s columns is refused (SchemaError). The writer's
    ``fit`` does it; this is its name for the readers that call it directly.
    """
    return as_database_writer(db).fit(table, row, extra=extra)


PLUGIN_STATE = "plugin_state_entries"
PLUGIN_STATE_KEY = ("plugin_id", "namespace", "entry_key")


def put_plugin_state(
    db: DatabaseWriter | Connection,
    plugin_id: str,
    namespace: str,
    entry_key: str,
    value: Any,
    created_at: int,
    expires_at: int | None = None,
) -> None:
    """Upsert one ``plugin_state_entries`` row (value stored as ``JSON.stringify`` would write it)."""
    as_database_writer(db).upsert(
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
