"""``sessions.json``: the legacy session index (JSON5 map sessionKey -> SessionEntry).

Paths: ``agents/<id>/sessions/sessions.json`` and the flat pre-multi-agent
``sessions/sessions.json`` (imported into the default agent). Writes
``sessions`` (typed projection), ``session_entries`` (the whole normalised
entry), ``session_routes``, ``conversations`` and ``session_conversations``
in that agent's database.

Rules (upstream-legacy-formats.md §2.1):
* keys are canonicalised per agent; colliding keys keep the larger
  ``updatedAt`` (non-finite = 0), ties keep the key that was already
  canonical; when no main key exists the newest plain direct-chat entry
  becomes ``agent:<id>:<mainKey>``;
* ``room`` becomes ``groupChannel`` (when that is not a string) and is
  always dropped; ``skillsSnapshot.resolvedSkills`` and every file-era
  field (``sessionFile`` and friends, also inside compaction checkpoints)
  are stripped from ``entry_json``;
* entries without a string ``sessionId`` are skipped with a warning;
  a non-finite ``updatedAt`` becomes the file's mtime (deterministic);
* merge, never truncate: newer ``updatedAt`` wins, the agent-dir store wins
  ties over the flat store.
* an entry's transcript is looked for inside its own agent's sessions dir
  (basename of ``sessionFile``, else ``<sessionId>.jsonl``); an absolute
  path outside the state dir is never followed.
"""

from __future__ import annotations

import copy
import hashlib
import math
import os
from collections.abc import Callable
from pathlib import Path, PureWindowsPath
from typing import Any, BinaryIO

from statekit.legacy_readers.base import ImportContext, Inspection, ReadContext, Reader, Source, WriteResult
from statekit.documents import parse_json5_document, validate
from statekit.values import finite_number, integer
from statekit.legacy_readers.session_family import recovered_key
from statekit.legacy_readers.transcripts import claim_recovered
from statekit.legacy_readers.writer import DatabaseWriter, Json
from statekit.values import file_mtime_ms
from statekit.errors import SourceError

FILE_ERA_FIELDS = ("sessionFile", "sessionFilePath", "transcriptPath", "transcriptLocator", "transcriptFile", "lockPath")
CHAT_TYPES = ("direct", "group", "channel")
DEFAULT_MAIN_KEY = "main"
ID_SEP = "\u241f"


# Parsed, an index takes about 3.6 times its size in memory (and the import keeps its rows until commit):
# bigger ones are refused, left in place, named in one line (docs/performance.md, "Limits").
MAX_INDEX_BYTES = 24 << 20


def too_big_message(source: Source) -> str:
    try:
        size = f"{source.path.stat().st_size / (1 << 20):.0f} MiB"
    except OSError:
        size = "too big"
    return (f"session index is {size}, larger than the {MAX_INDEX_BYTES >> 20} MiB statekit imports within its 200 MB memory bound;"
            " left in place (split it or prune old sessions with OpenClaw, then migrate again)")


def main_key(config: dict[str, Any]) -> str:
    session = config.get("session") if isinstance(config, dict) else None
    value = session.get("mainKey") if isinstance(session, dict) else None
    return value.strip().lower() if isinstance(value, str) and value.strip() else DEFAULT_MAIN_KEY


def canonicalize_key(raw: str, agent_id: str, mkey: str = DEFAULT_MAIN_KEY) -> str:
    """Canonical ``agent:<id>:<rest>`` form of a legacy session key (formats doc §2.1 rules 1-8)."""
    key = raw.strip()
    lowered = key.lower()
    if lowered in ("global", "unknown"):
        return lowered
    canonical_main = f"agent:{agent_id}:{mkey}"
    if lowered in ("main", mkey, f"agent:{agent_id}:main", canonical_main):
        return canonical_main
    if agent_id != "main" and lowered in ("agent:main:main", f"agent:main:{mkey}"):
        return canonical_main
    if lowered.startswith("agent:"):
        return lowered
    if lowered.startswith("subagent:"):
        return f"agent:{agent_id}:{lowered}"
    if lowered.startswith(("group:", "channel:")):
        return f"agent:{agent_id}:unknown:{lowered}"
    return f"agent:{agent_id}:{lowered}"


def _is_plain_direct(raw: str, entry: dict[str, Any]) -> bool:
    lowered = raw.strip().lower()
    if lowered in ("global", "unknown") or lowered.startswith(("agent:", "subagent:", "group:", "channel:")):
        return False
    if ":group:" in lowered or ":channel:" in lowered:
        return False
    chat = entry.get("chatType")
    return chat in (None, "direct", "dm")


def updated_at_of(entry: dict[str, Any]) -> float:
    value = finite_number(entry.get("updatedAt"))
    return 0 if value is None else value


def select_entries(
    store: dict[str, Any], agent_id: str, mkey: str, promote_main: bool = True
) -> tuple[dict[str, tuple[str, dict[str, Any]]], list[str], list[str]]:
    """Canonicalise keys and resolve collisions. Returns (canonical -> (raw, entry), notices, warnings)."""
    notices: list[str] = []
    warnings: list[str] = []
    chosen: dict[str, tuple[str, dict[str, Any]]] = {}
    for raw, entry in store.items():
        if not isinstance(entry, dict):
            continue
        if not isinstance(entry.get("sessionId"), str) or not entry["sessionId"].strip():
            warnings.append(f"entry {raw!r} has no sessionId; skipped (kept in the retired copy)")
            continue
        canonical = canonicalize_key(raw, agent_id, mkey)
        current = chosen.get(canonical)
        if current is None:
            chosen[canonical] = (raw, entry)
            continue
        mine, theirs = updated_at_of(entry), updated_at_of(current[1])
        if mine > theirs or (mine == theirs and raw == canonical and current[0] != canonical):
            notices.append(f"key {current[0]!r} collides with {raw!r} as {canonical!r}; kept the newer {raw!r}")
            chosen[canonical] = (raw, entry)
        else:
            notices.append(f"key {raw!r} collides with {current[0]!r} as {canonical!r}; kept the newer {current[0]!r}")
    canonical_main = f"agent:{agent_id}:{mkey}"
    if canonical_main not in chosen and promote_main:
        direct = [(updated_at_of(e), raw) for raw, e in store.items() if isinstance(e, dict) and _is_plain_direct(raw, e)
                  and isinstance(e.get("sessionId"), str) and e["sessionId"].strip()]
        if direct:
            _, raw = max(direct)
            old_key = canonicalize_key(raw, agent_id, mkey)
            chosen[canonical_main] = chosen.pop(old_key, (raw, store[raw]))
            notices.append(f"no main session key: migrated latest direct-chat session {raw!r} to {canonical_main!r}")
    return chosen, notices, warnings


def _strip_file_era(record: dict[str, Any]) -> None:
    for name in FILE_ERA_FIELDS:
        record.pop(name, None)


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _json_copy(value: Any) -> Any:
    """``copy.deepcopy`` of a parsed JSON document (dicts, lists and scalars: no value shared twice, no cycle),
    without deepcopy's memo and dispatch per value; a value of any other type goes through ``copy.deepcopy``."""
    kind = type(value)
    if kind is dict:
        return {key: item if type(item) in _SCALARS else _json_copy(item) for key, item in value.items()}
    if kind is list:
        return [item if type(item) in _SCALARS else _json_copy(item) for item in value]
    if kind in _SCALARS:
        return value
    return copy.deepcopy(value)


def normalise_entry(entry: dict[str, Any]) -> dict[str, Any]:
    """The entry as stored in ``entry_json``: room→groupChannel, runtime and file-era fields stripped."""
    result = _json_copy(entry)
    if not isinstance(result.get("groupChannel"), str) and isinstance(result.get("room"), str):
        result["groupChannel"] = result["room"]
    result.pop("room", None)
    if "lastChannel" not in result and isinstance(result.get("lastProvider"), str):
        result["lastChannel"] = result["lastProvider"]
    result.pop("lastProvider", None)
    if "channel" not in result and isinstance(result.get("provider"), str):
        result["channel"] = result["provider"]
    result.pop("provider", None)
    _strip_file_era(result)
    snapshot = result.get("skillsSnapshot")
    if isinstance(snapshot, dict):
        snapshot.pop("resolvedSkills", None)
    checkpoints = result.get("compactionCheckpoints")
    if isinstance(checkpoints, list):
        for checkpoint in checkpoints:
            if isinstance(checkpoint, dict):
                _strip_file_era(checkpoint)
                for side in ("preCompaction", "postCompaction"):
                    if isinstance(checkpoint.get(side), dict):
                        _strip_file_era(checkpoint[side])
    return result


def replace_non_finite(value: Any) -> int:
    """Replace NaN/Infinity (JSON5 allows them, JSON does not) by None in place; return how many."""
    count = 0
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in list(items):
        if isinstance(item, float) and not math.isfinite(item):
            value[key] = None
            count += 1
        elif isinstance(item, (dict, list)):
            count += replace_non_finite(item)
    return count


def _text_or_number(value: Any) -> str | None:
    """A trimmed non-empty string, or a number in its string form: these index fields (channel, peer, account,
    thread, label, status) may hold a number in a legacy file, and the row keeps it as text. Not ``values.trimmed``."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return str(int(value)) if isinstance(value, int) or float(value).is_integer() else str(value)
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def _first(*values: Any) -> str | None:
    for value in values:
        text = _text_or_number(value)
        if text is not None:
            return text
    return None


def derive_chat_type(key: str, entry: dict[str, Any]) -> str | None:
    chat = entry.get("chatType")
    if chat == "dm":
        return "direct"
    if chat in CHAT_TYPES:
        return chat
    tokens = set(key.split(":"))
    if "group" in tokens:
        return "group"
    if "channel" in tokens:
        return "channel"
    if "direct" in tokens or "dm" in tokens:
        return "direct"
    return None


def session_scope(key: str, chat_type: str | None, mkey: str) -> str:
    if chat_type in ("group", "channel"):
        return chat_type
    if chat_type in (None, "direct") and (key.endswith(f":{mkey}") or key.endswith(":main")) and key.count(":") == 2:
        return "shared-main"
    return "conversation"


def conversation_of(key: str, entry: dict[str, Any], chat_type: str | None) -> dict[str, Any] | None:
    """The conversation a session talks in, from its delivery fields; None when there is not enough to name it."""
    delivery = entry["deliveryContext"] if isinstance(entry.get("deliveryContext"), dict) else {}
    origin = entry["origin"] if isinstance(entry.get("origin"), dict) else {}
    channel = _first(delivery.get("channel"), entry.get("lastChannel"), entry.get("channel"), origin.get("provider"))
    kind = chat_type or (origin.get("chatType") if origin.get("chatType") in CHAT_TYPES else None)
    if kind in ("group", "channel"):
        peer = _first(entry.get("groupId"), delivery.get("to"), entry.get("lastTo"), origin.get("to"))
    else:
        peer = _first(delivery.get("to"), entry.get("lastTo"), origin.get("from"), origin.get("to"))
    if not channel or not peer or channel == "last":
        return None
    kind = kind or "direct"
    account = _first(delivery.get("accountId"), entry.get("lastAccountId"), origin.get("accountId")) or ""
    thread = _first(delivery.get("threadId"), entry.get("lastThreadId"), origin.get("threadId"))
    identity = ID_SEP.join([channel, account, kind, peer, "", thread or ""])
    return {
        "conversation_id": "conv:" + hashlib.sha256(identity.encode("utf-8")).hexdigest()[:24],
        "channel": channel,
        "account_id": account,
        "kind": kind,
        "peer_id": peer,
        "parent_conversation_id": None,
        "thread_id": thread,
        "native_channel_id": _first(origin.get("nativeChannelId")),
        "native_direct_user_id": _first(origin.get("nativeDirectUserId")),
        "label": _first(origin.get("label"), entry.get("subject"), entry.get("displayName")),
    }


def session_row(key: str, entry: dict[str, Any], updated_at: int, mkey: str, conversation: dict[str, Any] | None) -> dict[str, Any]:
    chat_type = derive_chat_type(key, entry)
    origin = entry["origin"] if isinstance(entry.get("origin"), dict) else {}
    delivery = entry["deliveryContext"] if isinstance(entry.get("deliveryContext"), dict) else {}
    created = next((v for v in (integer(entry.get("sessionStartedAt")), integer(entry.get("startedAt"))) if v is not None), updated_at)
    return {
        "session_id": entry["sessionId"].strip(),
        "session_key": key,
        "session_scope": session_scope(key, chat_type, mkey),
        "created_at": created,
        "updated_at": updated_at,
        "started_at": integer(entry.get("startedAt")) or integer(entry.get("sessionStartedAt")),
        "ended_at": integer(entry.get("endedAt")),
        "status": _first(entry.get("status")),
        "chat_type": chat_type,
        "channel": _first(entry.get("channel"), entry.get("lastChannel"), delivery.get("channel")),
        "account_id": (conversation or {}).get("account_id") or _first(entry.get("lastAccountId"), delivery.get("accountId"), origin.get("accountId")),
        "primary_conversation_id": conversation["conversation_id"] if conversation else None,
        "model_provider": _first(entry.get("modelProvider")),
        "model": _first(entry.get("model")),
        "agent_harness_id": _first(entry.get("agentHarnessId")),
        "parent_session_key": _first(entry.get("parentSessionKey")),
        "spawned_by": _first(entry.get("spawnedBy")),
        "display_name": _first(entry.get("displayName"), entry.get("label")),
    }


def _posix_name(path: str) -> str:
    """``PurePosixPath(path).name`` without the path object: the last part that is neither empty nor ``.``."""
    for part in reversed(path.split("/")):
        if part and part != ".":
            return part
    return ""


def transcript_name(entry: dict[str, Any]) -> str:
    """The transcript's file name inside its own agent's sessions dir (never an absolute path elsewhere)."""
    raw = entry.get("sessionFile")
    if isinstance(raw, str) and raw.strip():
        name = PureWindowsPath(raw.strip()).name if "\\" in raw else _posix_name(raw.strip())
        if name and name not in (".", ".."):
            return name
    return f"{entry['sessionId'].strip()}.jsonl"


def main_already_imported(db: DatabaseWriter, ctx: ImportContext, agent_id: str, mkey: str) -> bool:
    """An index that came back after its import (a stale writer's store) never takes over the imported main session."""
    return ctx.merging and db.exists("session_entries", {"session_key": f"agent:{agent_id}:{mkey}"})


def recovered_rows_exist(db: DatabaseWriter, prefix: str) -> bool:
    """Whether the agent database holds any recovered-history entry or route (keys starting with ``prefix``)."""
    upper = prefix[:-1] + chr(ord(prefix[-1]) + 1)
    return any(
        next(db.query(f"SELECT 1 FROM {table} WHERE session_key >= ? AND session_key < ? LIMIT 1", (prefix, upper)), None) is not None
        for table in ("session_entries", "session_routes")
    )


def names_present(directory: Path) -> Callable[[str], bool]:
    """``lambda name: (directory / name).exists()``, with the directory listed once: a name listed as no symlink
    exists; a symlink (exists only when its target does) or a name not listed is looked at on its own."""
    try:
        with os.scandir(directory) as entries:
            plain = frozenset(entry.name for entry in entries if not entry.is_symlink())
    except OSError:
        plain = frozenset()
    return lambda name: name in plain or (directory / name).exists()


class SessionIndexReader(Reader):
    kind = "session-index"
    family = "sessions"
    description = "Legacy session index sessions.json (JSON5 map sessionKey -> SessionEntry)"
    patterns = ("agents/*/sessions/sessions.json", "sessions/sessions.json")
    schema_name = "session-index"
    target_tables = (
        "agent.sessions",
        "agent.session_entries",
        "agent.session_routes",
        "agent.conversations",
        "agent.session_conversations",
    )
    action = "import"

    def _load(self, source: Source, handle: BinaryIO) -> dict[str, Any]:
        data = handle.read(MAX_INDEX_BYTES + 1)  # bounded: a bigger index is refused before it is parsed
        if len(data) > MAX_INDEX_BYTES:
            raise SourceError(source.rel, too_big_message(source))
        document = parse_json5_document(data, source.rel)
        validate(document, self.schema_name or "", source.rel)
        return document

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        store = self._load(source, handle)
        return Inspection(record_count=len(store))

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        agent_id = source.agent_id
        if agent_id is None:
            raise SourceError(source.rel, "cannot tell which agent owns this session index")
        store = self._load(source, handle)
        mkey = main_key(dict(ctx.config))
        db = ctx.writer.agent(agent_id)
        chosen, notices, warnings = select_entries(store, agent_id, mkey, promote_main=not main_already_imported(db, ctx, agent_id, mkey))
        sessions_dir = source.path.parent
        present = names_present(sessions_dir)
        file_mtime = file_mtime_ms(source, ctx.now_ms)
        from_agent_dir = source.rel.startswith("agents/")
        newer = ">=" if from_agent_dir else ">"  # a per-agent index wins ties over the flat legacy one
        missing_transcripts = 0
        # Recovered rows to claim exist only when an earlier import made them or this index names one itself:
        # otherwise claim_recovered deletes nothing, and skipping it keeps the write linear in entries.
        recovered_prefix = recovered_key(agent_id, "")
        claims_recovered = any(key.startswith(recovered_prefix) for key in chosen) or recovered_rows_exist(db, recovered_prefix)
        # A newer entry, or the recovered row an earlier import made for this session id, is taken over. One SQL
        # text for every entry (the recovered key built from excluded.session_id, not spliced in per entry): one
        # prepared statement, not one per entry.
        prefix_sql = recovered_prefix.replace("'", "''")
        takeover = f"excluded.updated_at {newer} sessions.updated_at OR sessions.session_key = '{prefix_sql}' || excluded.session_id"
        for key, (raw, entry) in sorted(chosen.items()):
            updated = finite_number(entry.get("updatedAt"))
            if updated is None:
                updated = file_mtime
                if "updatedAt" in entry:
                    notices.append(f"entry {raw!r}: updatedAt is not a finite number; used the file's mtime")
            updated_at = int(updated) if not math.isnan(updated) else file_mtime
            if not present(transcript_name(entry)):
                missing_transcripts += 1
            normalised = normalise_entry(entry)
            normalised["updatedAt"] = updated_at
            replaced = replace_non_finite(normalised)
            if replaced:
                notices.append(f"entry {raw!r}: {replaced} non-finite number(s) stored as null")
            conversation = conversation_of(key, normalised, derive_chat_type(key, normalised))
            row = session_row(key, normalised, updated_at, mkey, conversation)
            session_id = row["session_id"]
            recovered = recovered_key(agent_id, session_id)
            db.upsert(
                "sessions",
                row,
                ("session_id",),
                where=takeover,
            )
            if key != recovered and claims_recovered:
                claim_recovered(db, agent_id, session_id)
            if conversation is not None:
                existing = next(db.query(
                    "SELECT conversation_id FROM conversations WHERE channel = ? AND account_id = ? AND kind = ? AND peer_id = ?"
                    " AND IFNULL(parent_conversation_id, '') = '' AND IFNULL(thread_id, '') = IFNULL(?, '') LIMIT 1",
                    (conversation["channel"], conversation["account_id"], conversation["kind"], conversation["peer_id"], conversation["thread_id"]),
                ), None)
                if existing:
                    conversation["conversation_id"] = existing[0]
                    db.update("sessions", {"primary_conversation_id": existing[0]}, {"session_id": session_id, "session_key": key})
                db.newer_wins(
                    "conversations",
                    {**conversation, "metadata_json": None, "created_at": row["created_at"], "updated_at": updated_at},
                    ("conversation_id",),
                    "updated_at",
                    update=("updated_at",),
                )
                db.newer_wins(
                    "session_conversations",
                    {
                        "session_id": session_id,
                        "conversation_id": conversation["conversation_id"],
                        "role": "primary",
                        "first_seen_at": row["created_at"],
                        "last_seen_at": updated_at,
                    },
                    ("session_id", "conversation_id", "role"),
                    "last_seen_at",
                    update=("last_seen_at",),
                )
            db.newer_wins(
                "session_entries",
                {"session_key": key, "session_id": session_id, "entry_json": Json(normalised), "updated_at": updated_at},
                ("session_key",),
                "updated_at",
                ties=from_agent_dir,
            )
            db.newer_wins(
                "session_routes",
                {"session_key": key, "session_id": session_id, "updated_at": updated_at},
                ("session_key",),
                "updated_at",
                ties=from_agent_dir,
            )
        result = WriteResult(records=len(chosen), notices=[f"{source.rel}: {n}" for n in notices],
                             warnings=[f"{source.rel}: {w}" for w in warnings])
        result.report.update({
            "entries": len(store),
            "canonical_keys": len(chosen),
            "skipped_entries": len(warnings),
            "entries_without_transcript_file": missing_transcripts,
        })
        return result
