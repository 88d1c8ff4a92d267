"""Microsoft Teams channel plugin files -> ``plugin_state_entries`` (plugin ``msteams``).

All at the state-dir root, as the Teams plugin wrote them:

* ``msteams-conversations.json`` -> ``conversations``: one row per conversation reference,
  key ``sha256(conversationId)`` (hex; Teams ids are long and contain ``:``/``@``), value =
  the stored reference with ``conversationId`` added;
* ``msteams-polls.json`` -> ``polls``, key = poll id;
* ``msteams-sso-tokens.json`` -> ``sso-tokens`` and ``msteams-delegated.json`` ->
  ``delegated-tokens``, key = the store's key (secrets: fingerprints only in receipts);
* ``<session store dir>/*.learnings.json`` -> ``feedback-learnings``, key = the file's
  stem (one row per learnings file);
* ``msteams-pending-uploads.json``: dropped. Pending uploads are a short-lived cache
  (OpenClaw keeps them in ``plugin_blob_entries`` for minutes); old JSON caches are not
  migrated.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, BinaryIO

from legacy_readers._plugin_state import (
    BlobEntry,
    EntryContext,
    NotImportedReader,
    PluginStateReader,
    StateEntry,
    as_ms,
    file_stem,
    in_session_dirs,
    load_document,
    sha_hex,
)
from legacy_readers.base import Source, json_type
from statekit.errors import SourceError

PLUGIN = "msteams"


def _stamp(value: dict[str, Any]) -> int | None:
    for name in ("lastSeenAt", "updatedAt", "createdAt", "updatedAtMs", "createdAtMs"):
        stamp = as_ms(value.get(name))
        if stamp is not None:
            return stamp
    return None


class MSTeamsConversationsReader(PluginStateReader):
    kind = "msteams-conversations"
    family = "msteams"
    description = "Microsoft Teams conversation references for proactive messages"
    patterns = ("msteams-conversations.json",)
    schema_name = "plugin-msteams-conversations"
    plugin_id = PLUGIN
    namespaces = ("conversations",)

    def entries(self, source: Source, handle: BinaryIO, ectx: EntryContext) -> Iterator[StateEntry]:
        document = load_document(source, handle, self.schema_name)
        for conversation_id, reference in document["conversations"].items():
            if not conversation_id.strip():
                ectx.skipped_invalid += 1
                continue
            value = {"conversationId": conversation_id, **reference}
            yield StateEntry("conversations", sha_hex(conversation_id), value, created_at=_stamp(reference))


class _MSTeamsMapReader(PluginStateReader):
    family = "msteams"
    schema_name = "plugin-msteams-map-store"
    plugin_id = PLUGIN
    container = ""
    namespace = ""

    def entries(self, source: Source, handle: BinaryIO, ectx: EntryContext) -> Iterator[StateEntry]:
        document = load_document(source, handle, self.schema_name)
        if self.container in document:
            store = document[self.container]
        else:
            store = {k: v for k, v in document.items() if k != "version"}
        for key, value in store.items():
            if not isinstance(value, dict):
                raise SourceError(source.rel, f"expected object, found {json_type(value)}", json_path=f"$.{self.container or key}")
            yield StateEntry(self.namespace, key, value, created_at=_stamp(value))


def _token_strings(value: Any) -> list[str]:
    found: list[str] = []
    if isinstance(value, dict):
        for name, item in value.items():
            if isinstance(item, str) and "token" in name.lower():
                found.append(item)
            elif isinstance(item, (dict, list)):
                found.extend(_token_strings(item))
    elif isinstance(value, list):
        for item in value:
            found.extend(_token_strings(item))
    return found


class MSTeamsPollsReader(_MSTeamsMapReader):
    kind = "msteams-polls"
    description = "Microsoft Teams polls created by the agent"
    patterns = ("msteams-polls.json",)
    namespaces = ("polls",)
    container = "polls"
    namespace = "polls"


class MSTeamsSsoTokensReader(_MSTeamsMapReader):
    kind = "msteams-sso-tokens"
    description = "Microsoft Teams SSO tokens per user (secret)"
    patterns = ("msteams-sso-tokens.json",)
    namespaces = ("sso-tokens",)
    container = "tokens"
    namespace = "sso-tokens"
    secret = True

    def secret_values(self, entry: StateEntry | BlobEntry) -> list[str]:
        return _token_strings(entry.value) if isinstance(entry, StateEntry) else []


class MSTeamsDelegatedTokensReader(MSTeamsSsoTokensReader):
    kind = "msteams-delegated-tokens"
    description = "Microsoft Teams delegated (on-behalf-of) tokens (secret)"
    patterns = ("msteams-delegated.json",)
    namespaces = ("delegated-tokens",)
    namespace = "delegated-tokens"


class MSTeamsFeedbackLearningsReader(PluginStateReader):
    kind = "msteams-feedback-learnings"
    family = "msteams"
    description = "Microsoft Teams feedback learnings next to a session index"
    patterns = in_session_dirs("*.learnings.json")
    schema_name = "plugin-msteams-learnings"
    plugin_id = PLUGIN
    namespaces = ("feedback-learnings",)
    order = 290

    def entries(self, source: Source, handle: BinaryIO, ectx: EntryContext) -> Iterator[StateEntry]:
        document = load_document(source, handle, self.schema_name)
        key = file_stem(source.rel, suffix=".learnings.json")
        if source.agent_id and source.agent_id != "main":
            key = f"{source.agent_id}:{key}"
        yield StateEntry("feedback-learnings", key, document, created_at=_stamp(document) if isinstance(document, dict) else None)


class MSTeamsPendingUploads(NotImportedReader):
    kind = "msteams-pending-uploads"
    family = "msteams"
    description = "Microsoft Teams pending file-upload buffers"
    patterns = ("msteams-pending-uploads.json",)
    plugin_id = PLUGIN
    namespaces = ("pending-uploads",)
    action = "drop"
    reason = "short-lived upload cache (minutes); OpenClaw keeps new ones as plugin blobs and does not migrate old JSON caches"
