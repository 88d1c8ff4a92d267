"""Active Memory plugin session toggles -> ``plugin_state_entries`` (plugin ``active-memory``).

``plugins/active-memory/session-toggles.json`` mapped session keys to the user's
memory on/off choice. OpenClaw now keeps one row per session under
``active-memory/session-toggles``. Accepted shapes: ``{toggles: {sessionKey: value}}``,
``{sessions: {...}}`` or the bare map (a ``version`` field is ignored). Key = session key,
value = the stored toggle as written.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

from legacy_readers._plugin_state import EntryContext, PluginStateReader, StateEntry, as_ms, load_document
from legacy_readers.base import Source

PLUGIN = "active-memory"


class ActiveMemorySessionTogglesReader(PluginStateReader):
    kind = "active-memory-session-toggles"
    family = "active-memory"
    description = "Active Memory per-session on/off toggles"
    patterns = ("plugins/active-memory/session-toggles.json",)
    schema_name = "plugin-json-object"
    plugin_id = PLUGIN
    namespaces = ("session-toggles",)

    def entries(self, source: Source, handle: BinaryIO, ectx: EntryContext) -> Iterator[StateEntry]:
        document = load_document(source, handle, self.schema_name)
        container = next((document[n] for n in ("toggles", "sessions") if isinstance(document.get(n), dict)), None)
        if container is None:
            container = {k: v for k, v in document.items() if k not in ("version", "updatedAt")}
        for session_key, value in container.items():
            stamp = as_ms(value.get("updatedAt")) if isinstance(value, dict) else None
            yield StateEntry("session-toggles", session_key, value, created_at=stamp)
