"""Device-pair notification state -> ``plugin_state_entries`` (plugin ``device-pair``).

``device-pair-notify.json`` = ``{subscribers: [{to, accountId?, messageThreadId?, mode,
addedAtMs}], notifiedRequestIds: {requestId: notifiedAtMs}}``.

Rows exactly as OpenClaw 2026.9.6's Device Pair doctor writes them
(``device-pair-notify-json-to-plugin-state``): each subscriber with a non-blank
``to`` becomes one ``notify-subscribers`` row, key
``sha256(JSON.stringify([to, accountId or "", thread key]))`` (the thread key
is the integer thread id as text, a numeric string canonicalised, another
string trimmed), value ``{to, accountId?, messageThreadId?, mode, addedAtMs}``
normalised as 9.6 does (``mode`` ``once`` or ``persistent``, numbers
truncated, a missing ``addedAtMs`` = the import time), ``created_at`` the import
time. The first subscriber of a key wins (9.6 registers only absent keys). The
delivered-request markers are not migrated by 9.6 (short-lived dedupe): not
imported either.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Any, BinaryIO

from statekit.documents import load_document
from statekit.legacy_readers.plugins._state import EntryContext, PluginStateReader, StateEntry, sha_hex
from statekit.legacy_readers.base import Source
from statekit.values import finite_number, js_json, trimmed

PLUGIN = "device-pair"
NAMESPACE = "notify-subscribers"
_INTEGER = re.compile(r"^-?\d+$")



def thread_key(thread: Any) -> str:
    if finite_number(thread) is not None:
        return str(math.trunc(thread))
    normalized = trimmed(thread)
    if not normalized:
        return ""
    return str(int(normalized)) if _INTEGER.match(normalized) else normalized


def normalize_subscriber(record: Any, now_ms: int) -> dict[str, Any] | None:
    if not isinstance(record, dict):
        return None
    to = trimmed(record.get("to"))
    if not to:
        return None
    thread_raw = record.get("messageThreadId")
    thread: Any = None
    if isinstance(thread_raw, str):
        thread = trimmed(thread_raw)
    elif (thread_number := finite_number(thread_raw)) is not None:
        thread = math.trunc(thread_number)
    value: dict[str, Any] = {"to": to}
    account = trimmed(record.get("accountId"))
    if account:
        value["accountId"] = account
    if thread is not None:
        value["messageThreadId"] = thread
    value["mode"] = "once" if record.get("mode") == "once" else "persistent"
    added = finite_number(record.get("addedAtMs"))
    value["addedAtMs"] = math.trunc(added) if added is not None else now_ms
    return value


def subscriber_key(value: dict[str, Any]) -> str:
    return sha_hex(js_json([value["to"], value.get("accountId", ""), thread_key(value.get("messageThreadId"))]))


class DevicePairNotifyReader(PluginStateReader):
    kind = "device-pair-notify"
    family = "device-pair"
    description = "Device-pair approval notification subscribers"
    patterns = ("device-pair-notify.json",)
    schema_name = "plugin-json-object"
    plugin_id = PLUGIN
    namespaces = (NAMESPACE,)

    def entries(self, source: Source, handle: BinaryIO, ectx: EntryContext) -> Iterator[StateEntry]:
        document = load_document(source, handle, self.schema_name)
        raw = document.get("subscribers")
        seen: set[str] = set()
        skipped = 0
        for record in raw if isinstance(raw, list) else []:
            value = normalize_subscriber(record, ectx.now_ms)
            if value is None:
                skipped += 1
                continue
            key = subscriber_key(value)
            if key in seen:
                continue  # 9.6 registers only absent keys: the first one stays
            seen.add(key)
            yield StateEntry(NAMESPACE, key, value)
        ectx.skipped_invalid += skipped
        if skipped:
            ectx.notices.append(f"{source.rel}: {skipped} subscriber(s) without a recipient skipped, as OpenClaw does")
