"""``tui/last-session.json``: TUI restore pointers -> global ``config_machine_state``.

Shape: ``{<scopeKey>: {sessionKey, updatedAt}}`` where the scope key is
OpenClaw's hash of (session scope, agent id, connection URL).

Written where OpenClaw 2026.9.6 keeps them and as its own doctor imports the
file: one ``config_machine_state`` row per scope, ``state_key``
``tui.lastSession.<scopeKey>``, ``value_json`` the session key as
``JSON.stringify`` writes a string, ``updated_at_ms`` the record's
``updatedAt``. Version 1's ``tui_last_sessions`` is not used: 9.6's upgrade
(the v12 fold-in) drops that table without carrying its rows over.

Validation is 9.6's: every scope key non-empty and trimmed, every record an
object with only ``sessionKey`` and ``updatedAt``, the session key a trimmed
non-empty string other than ``unknown``, ``updatedAt`` a non-negative safe
integer; anything else and the whole file stays in place (9.6 refuses it
too). Pointers to heartbeat sessions (key ending ``:heartbeat``) are
discarded, as 9.6 does. Against a row already in the database: the newer
``updatedAt`` wins; the same ``updatedAt`` with a different session key is a
conflict that leaves the file in place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, BinaryIO

from statekit.values import js_json, js_loads
from statekit.legacy_readers.base import ImportContext, Inspection, ReadContext, Reader, Source, WriteResult
from statekit.documents import load_object
from statekit.legacy_readers.writer import Json
from statekit.errors import SourceError

FAMILY = "tui"
TABLE = "config_machine_state"
KEY_PREFIX = "tui.lastSession."
RECORD_FIELDS = frozenset({"sessionKey", "updatedAt"})
MAX_SAFE_INTEGER = 2**53 - 1


@dataclass(frozen=True)
class Pointer:
    scope_key: str
    session_key: str
    updated_at: int

    @property
    def state_key(self) -> str:
        return KEY_PREFIX + self.scope_key


def _safe_integer(value: Any) -> int | None:
    """``value`` when JavaScript's ``Number.isSafeInteger`` holds for it (``2.0`` does), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and abs(value) <= MAX_SAFE_INTEGER:
        return value
    return None


def parse_pointers(store: dict[str, Any], rel: str) -> list[Pointer]:
    pointers = []
    for scope_key, record in store.items():
        where = f"$[{js_json(scope_key)}]"
        if not scope_key or scope_key.strip() != scope_key:
            raise SourceError(rel, "scope key is empty or has surrounding whitespace (OpenClaw refuses the file)", json_path=where)
        if not isinstance(record, dict):
            raise SourceError(rel, "record is not an object", json_path=where)
        extra = sorted(set(record) - RECORD_FIELDS)
        if extra:
            raise SourceError(rel, f"record has field(s) OpenClaw does not allow: {', '.join(extra)}", json_path=where)
        session_key = record.get("sessionKey")
        if not isinstance(session_key, str) or not session_key or session_key.strip() != session_key or session_key == "unknown":
            raise SourceError(rel, "sessionKey is not a trimmed non-empty session key", json_path=f"{where}.sessionKey")
        updated_at = _safe_integer(record.get("updatedAt"))
        if updated_at is None or updated_at < 0:
            raise SourceError(rel, "updatedAt is not a non-negative integer timestamp", json_path=f"{where}.updatedAt")
        pointers.append(Pointer(scope_key, session_key, updated_at))
    return pointers


def is_heartbeat(session_key: str) -> bool:
    return session_key.lower().endswith(":heartbeat")


class TuiLastSessionReader(Reader):
    kind = "tui-last-session"
    family = FAMILY
    description = "TUI last-session restore pointers (tui/last-session.json)"
    patterns = ("tui/last-session.json",)
    schema_name = "tui-last-session"
    target_tables = ("global.config_machine_state",)
    action = "import"

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        pointers = parse_pointers(load_object(handle, source.rel, self.schema_name), source.rel)
        return Inspection(record_count=len(pointers))

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        pointers = parse_pointers(load_object(handle, source.rel, self.schema_name), source.rel)
        active = [p for p in pointers if not is_heartbeat(p.session_key)]
        db = ctx.writer.state
        kept = 0
        for pointer in active:
            existing = db.first_row(TABLE, {"state_key": pointer.state_key})
            if existing is not None:
                held_at = int(existing["updated_at_ms"])
                if held_at > pointer.updated_at:
                    kept += 1
                    continue
                if held_at == pointer.updated_at and _held_key(existing) != pointer.session_key:
                    raise SourceError(
                        source.rel,
                        f"scope {pointer.scope_key} points elsewhere in the database at the same timestamp; left in place",
                    )
            db.upsert(TABLE, {
                "state_key": pointer.state_key,
                "value_json": Json(pointer.session_key),
                "updated_at_ms": pointer.updated_at,
            }, ("state_key",))
        result = WriteResult(records=len(active))
        discarded = len(pointers) - len(active)
        if discarded:
            result.notices.append(f"{source.rel}: discarded {discarded} heartbeat restore pointer(s), as OpenClaw does")
        if kept:
            result.notices.append(f"{source.rel}: kept {kept} newer pointer(s) already in the database")
        db.expect_rows(TABLE, {"state_key": [p.state_key for p in active]}, len({p.state_key for p in active}))  # kept newer rows too
        result.report.update({"scopes": len(active), "discarded_heartbeat": discarded, "kept_newer_database_rows": kept})
        return result


def _held_key(row: dict[str, Any]) -> Any:
    try:
        return js_loads(row["value_json"])
    except ValueError:
        return None
