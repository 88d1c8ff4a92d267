"""Current-conversation bindings ``bindings/current-conversations.json`` -> ``global.current_conversation_bindings``.

Only ``{"version": 1, "bindings": [...]}`` exists; any other version is
refused (the file stays in place). Each binding becomes the row OpenClaw
2026.7.35's own import writes (``normalizeLegacyCurrentConversationBindingRecord``
+ ``currentConversationBindingRow``; 2026.9.6's is the same):

* the conversation ref (``normalizeConversationRef``): its fields kept,
  ``channel`` trimmed and lower-cased, ``accountId`` lower-cased (``default``
  when empty), ``conversationId`` trimmed, ``parentConversationId`` trimmed
  and dropped when empty or equal to the conversation id;
* the record is exactly ``{bindingId, targetSessionKey, targetKind,
  conversation, status, boundAt, expiresAt?, metadata?}``: ``bindingId`` =
  ``generic:<binding_key>``, ``targetKind`` ``subagent`` or ``session``,
  ``status`` ``ending`` / ``ended`` or ``active``, ``boundAt`` / ``expiresAt``
  floored (a missing ``boundAt`` takes the file's mtime where OpenClaw takes
  its clock); other fields of a binding stay in the retired copy (a notice
  names them);
* ``binding_key`` = ``channel␟accountId␟parentConversationId␟conversationId``
  (U+241F separators, empty parent allowed); ``target_agent_id`` from the
  ``agent:<id>:`` prefix of the target session key (else ``main``);
  ``target_session_id`` NULL; ``conversation_kind`` = ``current`` (the kind of
  binding, not of the conversation); ``metadata_json`` and ``record_json`` as
  ``JSON.stringify``; ``updated_at`` is the file's mtime.

A binding without a channel, conversation id or target session key cannot be
addressed: it is skipped with a warning. Rows upsert by ``binding_key``; a
later duplicate in the file wins (reported as a notice).
"""

from __future__ import annotations

import math
from typing import Any, BinaryIO

from statekit.values import file_mtime_ms, js_json
from statekit.legacy_readers._small_stores import agent_id_of_session_key, normalize_account_id
from statekit.documents import load_document
from statekit.values import trimmed as text  # the trimmed non-empty string
from statekit.legacy_readers.base import ImportContext, Inspection, ReadContext, Reader, Source, WriteResult, finite_number

TABLE = "current_conversation_bindings"
SEP = "\u241f"
CONVERSATION_KIND = "current"  # CURRENT_BINDING_CONVERSATION_KIND
RECORD_FIELDS = ("bindingId", "targetSessionKey", "targetKind", "conversation", "status", "boundAt", "expiresAt", "metadata")


def _id_text(value: Any) -> str | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(int(value)) if float(value).is_integer() else str(value)
    return text(value)


def _floor(value: Any) -> int | None:
    number = finite_number(value)
    return None if number is None or abs(number) >= 2**63 else math.floor(number)


def normalize_binding(candidate: dict[str, Any], fallback_ms: int) -> tuple[str, dict[str, Any]] | None:
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
    ref["conversationId"] = conversation_id
    if parent and parent != conversation_id:
        ref["parentConversationId"] = parent
    ref.update({"channel": channel, "accountId": normalize_account_id(conversation.get("accountId"))})
    key = SEP.join([channel, ref["accountId"], ref.get("parentConversationId", ""), conversation_id])
    bound_at = _floor(candidate.get("boundAt"))
    expires_at = _floor(candidate.get("expiresAt"))
    record: dict[str, Any] = {
        "bindingId": f"generic:{key}",
        "targetSessionKey": target,
        "targetKind": "subagent" if candidate.get("targetKind") == "subagent" else "session",
        "conversation": ref,
        "status": candidate["status"] if candidate.get("status") in ("ending", "ended") else "active",
        "boundAt": bound_at if bound_at is not None else fallback_ms,
    }
    if expires_at is not None:
        record["expiresAt"] = expires_at
    if isinstance(candidate.get("metadata"), dict):
        record["metadata"] = candidate["metadata"]
    return key, record


def binding_row(key: str, record: dict[str, Any], mtime: int) -> dict[str, Any]:
    ref = record["conversation"]
    metadata = record.get("metadata")
    return {
        "binding_key": key,
        "binding_id": record["bindingId"],
        "target_agent_id": agent_id_of_session_key(record["targetSessionKey"]),
        "target_session_id": None,
        "target_session_key": record["targetSessionKey"],
        "channel": ref["channel"],
        "account_id": ref["accountId"],
        "conversation_kind": CONVERSATION_KIND,
        "parent_conversation_id": ref.get("parentConversationId"),
        "conversation_id": ref["conversationId"],
        "target_kind": record["targetKind"],
        "status": record["status"],
        "bound_at": record["boundAt"],
        "expires_at": record.get("expiresAt"),
        "metadata_json": None if metadata is None else js_json(metadata),
        "record_json": js_json(record),
        "updated_at": mtime,
    }


def select_bindings(document: dict[str, Any], fallback_ms: int = 0) -> tuple[dict[str, dict[str, Any]], list[str], list[str]]:
    chosen: dict[str, dict[str, Any]] = {}
    notices: list[str] = []
    warnings: list[str] = []
    extra = sorted({name for candidate in document["bindings"] if isinstance(candidate, dict) for name in candidate if name not in RECORD_FIELDS})
    if extra:
        notices.append(f"field(s) OpenClaw's binding record does not keep, kept only in the retired copy: {', '.join(extra)}")
    for index, candidate in enumerate(document["bindings"]):
        normalized = normalize_binding(candidate, fallback_ms)
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

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        document = load_document(source, handle, self.schema_name or "")
        _chosen, _notices, warnings = select_bindings(document)
        return Inspection(record_count=len(document["bindings"]), warnings=[f"{source.rel}: {w}" for w in warnings])

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        document = load_document(source, handle, self.schema_name or "")
        mtime = file_mtime_ms(source, ctx.now_ms)
        chosen, notices, warnings = select_bindings(document, mtime)
        for key, record in chosen.items():
            ctx.writer.state.upsert(TABLE, binding_row(key, record, mtime), ("binding_key",))
        result = WriteResult(
            records=len(chosen),
            notices=[f"{source.rel}: {n}" for n in notices],
            warnings=[f"{source.rel}: {w}" for w in warnings],
        )
        result.report.update({"bindings": len(document["bindings"]), "imported": len(chosen), "skipped": len(warnings)})
        return result
