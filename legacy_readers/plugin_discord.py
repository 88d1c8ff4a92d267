"""Discord channel plugin files -> ``plugin_state_entries`` (plugin ``discord``).

* ``discord/model-picker-preferences.json`` -> ``model-picker-preferences``: one row per
  (scope, recent model), key ``v1:<sha256(scope)[:32]>:<sha256(modelRef)[:24]>``, value
  ``{scopeKey, modelRef, updatedAt}`` with ``updatedAt`` staggered by recency the way
  OpenClaw's Discord doctor migration does (most recent model = newest timestamp);
* ``discord/thread-bindings.json`` -> ``thread-bindings``: one row per binding (key = the
  binding key in the file); old shapes are upgraded (``sessionKey`` ->
  ``targetSessionKey``, ``expiresAt`` -> ``idleTimeoutMs: 0`` + ``maxAgeMs``);
* ``discord/command-deploy-cache.json``: dropped. It only holds hashes of the slash
  commands last deployed; OpenClaw's own migration deletes it without importing, and the
  next start re-deploys and records fresh ``command-deploy-hashes`` rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, BinaryIO

from legacy_readers._plugin_state import (
    EntryContext,
    NotImportedReader,
    PluginStateReader,
    StateEntry,
    as_ms,
    iso_to_ms,
    load_document,
    ms_to_iso,
    sha_hex,
)
from legacy_readers.base import Source

PLUGIN = "discord"
RECENT_LIMIT = 10
MAX_ISO_MS = 8_640_000_000_000_000


def normalize_model_ref(raw: Any) -> str | None:
    """``provider/model`` with a lower-cased, trimmed provider; None when it has no provider or model."""
    if not isinstance(raw, str):
        return None
    value = raw.strip()
    slash = value.find("/")
    if slash <= 0 or slash >= len(value) - 1:
        return None
    provider = value[:slash].strip().lower()
    model = value[slash + 1:].strip()
    return f"{provider}/{model}" if provider and model else None


def preference_key(scope_key: str, model_ref: str) -> str:
    return f"v1:{sha_hex(scope_key, 32)}:{sha_hex(model_ref, 24)}"


class DiscordModelPickerPreferencesReader(PluginStateReader):
    kind = "discord-model-picker-preferences"
    family = "discord"
    description = "Discord /model picker recent-model preferences per scope"
    patterns = ("discord/model-picker-preferences.json",)
    schema_name = "plugin-discord-model-picker-preferences"
    plugin_id = PLUGIN
    namespaces = ("model-picker-preferences",)

    def entries(self, source: Source, handle: BinaryIO, ectx: EntryContext) -> Iterator[StateEntry]:
        document = load_document(source, handle, self.schema_name)
        for raw_scope, entry in document["entries"].items():
            scope = raw_scope.strip()
            if not scope:
                ectx.skipped_invalid += 1
                continue
            recent: list[str] = []
            for item in entry.get("recent") or []:
                ref = normalize_model_ref(item)
                if ref and ref not in recent:
                    recent.append(ref)
                if len(recent) >= RECENT_LIMIT:
                    break
            base = iso_to_ms(entry.get("updatedAt")) or 0
            for index, ref in enumerate(recent):
                stamp = min(base + len(recent), MAX_ISO_MS) - index
                yield StateEntry(
                    "model-picker-preferences",
                    preference_key(scope, ref),
                    {"scopeKey": scope, "modelRef": ref, "updatedAt": ms_to_iso(max(stamp, 0))},
                    created_at=max(stamp, 0),
                )


def upgrade_binding(entry: dict[str, Any]) -> dict[str, Any]:
    record = dict(entry)
    if "targetSessionKey" not in record and isinstance(record.get("sessionKey"), str):
        record["targetSessionKey"] = record["sessionKey"]
    record.pop("sessionKey", None)
    expires = as_ms(record.pop("expiresAt", None))
    if "idleTimeoutMs" not in record and "maxAgeMs" not in record and expires is not None:
        record["idleTimeoutMs"] = 0
        if expires <= 0:
            record["maxAgeMs"] = 0
        else:
            start = as_ms(record.get("boundAt")) or 0
            if start <= 0:
                start = as_ms(record.get("lastActivityAt")) or 0
            record["maxAgeMs"] = max(1, expires - max(0, start))
    return record


class DiscordThreadBindingsReader(PluginStateReader):
    kind = "discord-thread-bindings"
    family = "discord"
    description = "Discord thread bindings (thread -> subagent/ACP session)"
    patterns = ("discord/thread-bindings.json",)
    schema_name = "plugin-discord-thread-bindings"
    plugin_id = PLUGIN
    namespaces = ("thread-bindings",)

    def entries(self, source: Source, handle: BinaryIO, ectx: EntryContext) -> Iterator[StateEntry]:
        document = load_document(source, handle, self.schema_name)
        for key, entry in document["bindings"].items():
            record = upgrade_binding(entry)
            if not isinstance(record.get("targetSessionKey"), str) or not record["targetSessionKey"].strip():
                ectx.skipped_invalid += 1
                continue
            yield StateEntry("thread-bindings", key, record, created_at=as_ms(record.get("boundAt")))
        if ectx.skipped_invalid:
            ectx.notices.append(f"{source.rel}: {ectx.skipped_invalid} binding(s) without a target session skipped")


class DiscordCommandDeployCache(NotImportedReader):
    kind = "discord-command-deploy-cache"
    family = "discord"
    description = "Discord slash-command deployment hash cache"
    patterns = ("discord/command-deploy-cache.json",)
    plugin_id = PLUGIN
    namespaces = ("command-deploy-hashes",)
    action = "drop"
    reason = "rebuildable cache of deployed slash-command hashes; the next start re-deploys and records fresh hashes"
