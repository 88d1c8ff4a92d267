"""Device-pair notification state -> ``plugin_state_entries`` (plugin ``device-pair``).

``device-pair-notify.json`` = ``{subscribers: [{to, accountId?, messageThreadId?, mode,
addedAtMs}], notifiedRequestIds: {requestId: notifiedAtMs}}``:

* each subscriber -> ``notify-subscribers``, key ``sha256(to NUL accountId NUL thread)[:32]``;
* each delivered-request marker -> ``notify-delivered``, key = request id, value
  ``{requestId, notifiedAtMs}``, expiring 24 h after delivery like OpenClaw's seen-age
  limit (already expired markers are skipped).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

from legacy_readers._plugin_state import EntryContext, PluginStateReader, StateEntry, as_ms, load_document, short_hash
from legacy_readers.base import Source

PLUGIN = "device-pair"
SEEN_TTL_MS = 24 * 60 * 60 * 1000


class DevicePairNotifyReader(PluginStateReader):
    kind = "device-pair-notify"
    family = "device-pair-notify"
    description = "Device pairing notification subscribers and delivered-request markers"
    patterns = ("device-pair-notify.json",)
    schema_name = "plugin-device-pair-notify"
    plugin_id = PLUGIN
    namespaces = ("notify-subscribers", "notify-delivered")

    def entries(self, source: Source, handle: BinaryIO, ectx: EntryContext) -> Iterator[StateEntry]:
        document = load_document(source, handle, self.schema_name)
        for subscriber in document.get("subscribers") or []:
            thread = subscriber.get("messageThreadId")
            key = short_hash(subscriber["to"], subscriber.get("accountId") or "", "" if thread is None else thread)
            yield StateEntry("notify-subscribers", key, subscriber, created_at=as_ms(subscriber.get("addedAtMs")))
        for request_id, notified_at in (document.get("notifiedRequestIds") or {}).items():
            stamp = as_ms(notified_at)
            if stamp is None:
                ectx.skipped_invalid += 1
                continue
            yield StateEntry("notify-delivered", request_id, {"requestId": request_id, "notifiedAtMs": stamp},
                             created_at=stamp, expires_at=stamp + SEEN_TTL_MS)
