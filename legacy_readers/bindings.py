"""Current-conversation bindings ``bindings/current-conversations.json`` -> ``global.current_conversation_bindings``.

Only ``{"version": 1, "bindings": [...]}`` exists; any other version is
refused (the file stays in place). Each binding is normalised like OpenClaw's
importer does it:

* the conversation ref: ``channel`` lower-cased, ``accountId`` lower-cased
  (``default`` when empty), ``conversationId`` trimmed, ``parentConversationId``
  trimmed and dropped when empty or equal to the conversation id;
* ``binding_key`` = ``channel␟accountId␟parentConversationId␟conversationId``
  (U+241F separators, empty parent allowed), ``binding_id`` =
  ``generic:<binding_key>``; ``targetSessionKey`` trimmed;
* ``target_agent_id`` from the ``agent:<id>:`` prefix of the target session
  key (else ``main``), ``target_session_id`` from ``metadata.targetSessionId``,
  ``conversation_kind`` = ``conversation.conversationKind`` when it is
  ``direct`` / ``group`` / ``channel``, else ``direct``;
* ``target_kind`` / ``status`` / ``bound_at`` default to ``session`` /
  ``active`` / the file's mtime when missing (OpenClaw's wider table marks
  them NOT NULL); ``metadata_json`` and the whole normalised record
  (``record_json``) are kept; ``updated_at`` is the file's mtime.

A binding without a channel, conversation id or target session key cannot be
addressed: it is skipped with a warning. Rows upsert by ``binding_key``; a
later duplicate in the file wins (reported as a notice).
"""

from __future__ import annotations

from typing import Any, BinaryIO

from legacy_readers._jsjson import js_stringify
from legacy_readers._small_stores import (
    agent_id_of_session_key,
    file_mtime_ms,
    fit_row,
    integer,
    load_document,
    normalize_account_id,
    text,
)
from legacy_readers.base import ImportContext, Inspection, Reader, Source, WriteResult, upsert

TABLE = "current_conversation_bindings"
SEP = "\u241f"
KINDS = ("direct", "group", "channel")


def _id_text(value: Any) -> str | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(int(value)) if float(value).is_integer() else str(value)
    return text(value)


def normalize_binding(candidate: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    conversation = candidate.get("conversation") if isinstance(candidate.get("conversation"), dict) else None
    target = text(candidate.get("targetSessionKey"))
    if conversation is None or target is None:
        return None
    channel = (text(conversation.get("channel")) or "").lower()
    conversation_id = _id_text(conversation.get("conversationId"))
    if not channel or not conversation_id:
        return None
    parent = _id_text(conversation.get("parentConversationId"))
    ref = {k: v for k, v in conversation.items() if k != "parentConversationId"}
    ref.update({"channel": channel, "accountId": normalize_account_id(conversation.get("accountId")), "conversationId": conversation_id})
    if parent and parent != conversation_id:
        ref["parentConversationId"] = parent
    key = SEP.join([channel, ref["accountId"], ref.get("parentConversationId", ""), conversation_id])
    normalized = {**candidate, "bindingId": f"generic:{key}", "targetSessionKey": target, "conversation": ref}
    return key, normalized


def binding_row(key: str, binding: dict[str, Any], mtime: int) -> dict[str, Any]:
    ref = binding["conversation"]
    metadata = binding.get("metadata")
    kind = ref.get("conversationKind")
    return {
        "binding_key": key,
        "binding_id": binding["bindingId"],
        "target_agent_id": agent_id_of_session_key(binding["targetSessionKey"]),
        "target_session_id": text(metadata.get("targetSessionId")) if isinstance(metadata, dict) else None,
        "target_session_key": binding["targetSessionKey"],
        "channel": ref["channel"],
        "account_id": ref["accountId"],
        "conversation_kind": kind if kind in KINDS else "direct",
        "parent_conversation_id": ref.get("parentConversationId"),
        "conversation_id": ref["conversationId"],
        "target_kind": text(binding.get("targetKind")) or "session",
        "status": text(binding.get("status")) or "active",
        "bound_at": integer(binding.get("boundAt")) if integer(binding.get("boundAt")) is not None else mtime,
        "expires_at": integer(binding.get("expiresAt")),
        "metadata_json": None if metadata is None else js_stringify(metadata),
        "record_json": js_stringify(binding),
        "updated_at": mtime,
    }


def select_bindings(document: dict[str, Any]) -> tuple[dict[str, dict[str, Any]], list[str], list[str]]:
    chosen: dict[str, dict[str, Any]] = {}
    notices: list[str] = []
    warnings: list[str] = []
    for index, candidate in enumerate(document["bindings"]):
        normalized = normalize_binding(candidate)
        if normalized is None:
            warnings.append(f"bindings[{index}] has no channel, conversation id or target session key; skipped")
            continue
        key, binding = normalized
        if key in chosen:
            notices.append(f"bindings[{index}] repeats an earlier conversation; the later binding wins")
        chosen[key] = binding
    return chosen, notices, warnings


class CurrentConversationBindingsReader(Reader):
    kind = "current-conversation-bindings"
    family = "bindings"
    description = "Generic current-conversation bindings bindings/current-conversations.json"
    patterns = ("bindings/current-conversations.json",)
    schema_name = "current-conversation-bindings"
    target_tables = ("global.current_conversation_bindings",)
    action = "import"
    order = 65

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO) -> Inspection:
        document = load_document(source, handle, self.schema_name or "")
        _chosen, _notices, warnings = select_bindings(document)
        return Inspection(record_count=len(document["bindings"]), warnings=[f"{source.rel}: {w}" for w in warnings])

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        document = load_document(source, handle, self.schema_name or "")
        chosen, notices, warnings = select_bindings(document)
        mtime = file_mtime_ms(source, ctx.now_ms)
        conn = ctx.global_db
        for key, binding in chosen.items():
            upsert(conn, TABLE, fit_row(conn, TABLE, binding_row(key, binding, mtime)), ("binding_key",))
        result = WriteResult(
            records=len(chosen),
            notices=[f"{source.rel}: {n}" for n in notices],
            warnings=[f"{source.rel}: {w}" for w in warnings],
        )
        result.expect("global", TABLE, "binding_key IN (SELECT value FROM json_each(?))", (js_stringify(sorted(chosen)),), len(chosen))
        result.report.update({"bindings": len(document["bindings"]), "imported": len(chosen), "skipped": len(warnings)})
        return result
