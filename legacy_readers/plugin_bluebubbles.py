"""BlueBubbles channel plugin files -> ``plugin_state_entries`` (plugin ``bluebubbles``).

* ``bluebubbles/catchup/<safe-account>__<hash>.json`` -> ``catchup-cursors``, key =
  ``accountId`` in the file, else the file's stem; value ``{lastSeenMs, updatedAt?,
  failureRetries?}``;
* ``bluebubbles/inbound-dedupe/<account>.json`` -> ``inbound-dedupe``, one row per file
  (key = the file's stem), value = the marker map as written.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

from legacy_readers._plugin_state import EntryContext, PluginStateReader, StateEntry, file_stem, load_document
from legacy_readers.base import Source
from legacy_readers.plugin_imessage import catchup_entries

PLUGIN = "bluebubbles"


class BlueBubblesCatchupCursorReader(PluginStateReader):
    kind = "bluebubbles-catchup-cursor"
    family = "bluebubbles"
    description = "BlueBubbles catch-up cursor per account"
    patterns = ("bluebubbles/catchup/*.json",)
    schema_name = "plugin-catchup-cursor"
    plugin_id = PLUGIN
    namespaces = ("catchup-cursors",)

    def entries(self, source: Source, handle: BinaryIO, ectx: EntryContext) -> Iterator[StateEntry]:
        yield from catchup_entries(source, handle, self.schema_name or "")


class BlueBubblesInboundDedupeReader(PluginStateReader):
    kind = "bluebubbles-inbound-dedupe"
    family = "bluebubbles"
    description = "BlueBubbles inbound message dedupe markers per account"
    patterns = ("bluebubbles/inbound-dedupe/*.json",)
    schema_name = "plugin-json-object"
    plugin_id = PLUGIN
    namespaces = ("inbound-dedupe",)

    def entries(self, source: Source, handle: BinaryIO, ectx: EntryContext) -> Iterator[StateEntry]:
        document = load_document(source, handle, self.schema_name)
        yield StateEntry("inbound-dedupe", file_stem(source.rel), document)
