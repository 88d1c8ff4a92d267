"""Active Memory plugin session toggles -> ``plugin_state_entries`` (plugin ``active-memory``).

``plugins/active-memory/session-toggles.json`` = ``{sessions: {<sessionKey>: {disabled,
updatedAt}}}`` (the file era before the plugin kept its toggles in plugin state).

Rows exactly as OpenClaw 2026.9.6's Active Memory doctor writes them
(``active-memory-session-toggles-json-to-plugin-state``): only sessions whose
``disabled`` is ``true`` are kept (enabled is the default and needs no row);
namespace ``session-toggles``, key ``sha256(sessionKey)``, value
``{sessionKey, disabled: true, updatedAt}`` (``updatedAt`` the record's finite
number, else the import time), ``created_at`` the import time. A file without a
``sessions`` object has nothing 9.6 would import: it is ``retain``ed (9.6
leaves it in place too).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any, BinaryIO

from statekit.documents import load_document
from statekit.legacy_readers.plugins._state import EntryContext, PluginStateReader, StateEntry, sha_hex
from statekit.legacy_readers.base import Inspection, ReadContext, Source

PLUGIN = "active-memory"
NAMESPACE = "session-toggles"
NOTHING_REASON = "no 'sessions' object with a disabled session: OpenClaw 2026.9.6's Active Memory doctor imports nothing from it and leaves it in place"


def toggle_entries(document: Any, now_ms: int) -> list[tuple[str, dict[str, Any]]] | None:
    sessions = document.get("sessions") if isinstance(document, dict) else None
    if not isinstance(sessions, dict):
        return None
    out = []
    for session_key, value in sessions.items():
        if not session_key.strip() or not isinstance(value, dict) or value.get("disabled") is not True:
            continue
        updated = value.get("updatedAt")
        finite = isinstance(updated, (int, float)) and not isinstance(updated, bool) and math.isfinite(updated)
        out.append((sha_hex(session_key), {"sessionKey": session_key, "disabled": True, "updatedAt": updated if finite else now_ms}))
    return out


class ActiveMemorySessionTogglesReader(PluginStateReader):
    kind = "active-memory-session-toggles"
    family = "active-memory"
    description = "Active Memory per-session on/off toggles"
    patterns = ("plugins/active-memory/session-toggles.json",)
    schema_name = "plugin-json-object"
    plugin_id = PLUGIN
    namespaces = (NAMESPACE,)

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        inspection = super().inspect(source, handle, ctx)
        if inspection.record_count == 0:
            return Inspection(record_count=0, action="retain", reason=NOTHING_REASON)
        return inspection

    def entries(self, source: Source, handle: BinaryIO, ectx: EntryContext) -> Iterator[StateEntry]:
        document = load_document(source, handle, self.schema_name)
        for key, value in toggle_entries(document, ectx.now_ms) or []:
            yield StateEntry(NAMESPACE, key, value)
