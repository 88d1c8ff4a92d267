"""Voice-call plugin call log -> ``plugin_state_entries`` (plugin ``voice-call``, namespace ``calls``).

``voice-calls/calls.jsonl`` (the default store below the state dir) held one call record
per line; a call can appear on several lines as it progresses, and the last line for a
call wins. Key = ``callId`` (or ``id``/``providerCallId``; a line without any id is keyed
``legacy:<line>:<sha256(line)[:16]>``). Streamed line by line; a torn last line is
reported and skipped.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import BinaryIO

from legacy_readers._plugin_state import EntryContext, PluginStateReader, StateEntry, as_ms, iter_jsonl
from legacy_readers.base import Source

PLUGIN = "voice-call"


class VoiceCallCallsReader(PluginStateReader):
    kind = "voice-call-calls"
    family = "voice-call"
    description = "Voice-call call records (JSONL)"
    patterns = ("voice-calls/calls.jsonl",)
    schema_name = "plugin-voice-call-line"
    plugin_id = PLUGIN
    namespaces = ("calls",)

    def entries(self, source: Source, handle: BinaryIO, ectx: EntryContext) -> Iterator[StateEntry]:
        for number, line, value in iter_jsonl(source, handle, self.schema_name, ectx):
            ident = next((value[n] for n in ("callId", "id", "providerCallId") if isinstance(value.get(n), str) and value[n]), None)
            if ident is None:
                ident = f"legacy:{number}:{hashlib.sha256(line).hexdigest()[:16]}"
            stamp = next((as_ms(value.get(n)) for n in ("updatedAt", "endedAt", "startedAt", "createdAt", "ts", "timestamp") if as_ms(value.get(n)) is not None), None)
            yield StateEntry("calls", ident, value, created_at=stamp)
