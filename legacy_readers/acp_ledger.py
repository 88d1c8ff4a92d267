"""ACP replay ledger ``acp/event-ledger.json`` -> ``global.acp_replay_sessions`` + ``global.acp_replay_events``.

``{"version": 1, "sessions": {"<sessionId>": {sessionId, sessionKey, cwd,
complete, createdAt, updatedAt, nextSeq, events: [{seq, at, sessionId,
sessionKey, runId?, update}]}}}``.

statekit's tables are keyed by **session key** (docs/target-schema.md), the
ledger by session id: several ledger sessions (resets of one ACP session key)
can share a key. OpenClaw replays by session key from the most recently
updated *complete* session, so that is the one kept per key (ties: the later
``updatedAt``, then the larger session id); the others are reported in
notices and stay in the retired copy of the file.

Per kept session: one ``acp_replay_sessions`` row (``session_id``, ``cwd``,
``complete`` 0/1, ``next_seq`` = max(``nextSeq``, last seq + 1),
``created_at``, ``updated_at``) and one ``acp_replay_events`` row per event
(``seq``, ``at``, ``run_id``, ``update_json`` = the ``update`` object).
Re-import converges: the key's session row (and through the foreign key its
events) is deleted and written again in the same transaction. A repeated seq
inside one session keeps the later event (notice).

Sessions or events that do not have the ledger's shape (OpenClaw's loader
drops them) are skipped with a warning naming the session.

OpenClaw 2026.7 databases key these tables by ``session_id`` instead
(``acp_replay_events`` then also needs ``session_id``): the reader detects
that shape, also clears the session id's old rows, and fills ``session_id``
in the events.
"""

from __future__ import annotations

from typing import Any, BinaryIO

from legacy_readers._jsjson import js_stringify
from legacy_readers._small_stores import integer, load_document, primary_key, table_info, text
from legacy_readers.base import ImportContext, Inspection, Reader, Source, WriteResult, insert_many, require_columns, validate
from statekit.errors import SourceError

SESSIONS = "acp_replay_sessions"
EVENTS = "acp_replay_events"


def _sort_key(session: dict[str, Any]) -> tuple[int, float, str]:
    return (1 if session.get("complete") is True else 0, float(session["updatedAt"]), session["sessionId"])


def select_sessions(source: Source, document: dict[str, Any]) -> tuple[dict[str, dict[str, Any]], list[str], list[str]]:
    """session_key -> chosen session (events validated), plus notices and warnings."""
    by_key: dict[str, list[dict[str, Any]]] = {}
    warnings: list[str] = []
    for session_id, session in document["sessions"].items():
        try:
            validate(session, "acp-ledger-session", source.rel)
        except SourceError as exc:
            warnings.append(f"session {session_id!r} skipped: {exc.problem}")
            continue
        if session["sessionId"] != session_id:
            warnings.append(f"session {session_id!r} skipped: its sessionId differs from its key")
            continue
        events: dict[int, dict[str, Any]] = {}
        bad = repeated = 0
        for event in session.get("events") or []:
            try:
                validate(event, "acp-ledger-event", source.rel)
            except SourceError:
                bad += 1
                continue
            if event["seq"] in events:
                repeated += 1
            events[event["seq"]] = event
        if bad:
            warnings.append(f"session {session_id!r}: {bad} malformed event(s) skipped")
        chosen = dict(session, events=[events[seq] for seq in sorted(events)], _repeated=repeated)
        by_key.setdefault(session["sessionKey"], []).append(chosen)
    selected: dict[str, dict[str, Any]] = {}
    notices: list[str] = []
    for key, candidates in by_key.items():
        candidates.sort(key=_sort_key, reverse=True)
        selected[key] = candidates[0]
        for other in candidates[1:]:
            notices.append(
                f"session {other['sessionId']!r} shares its session key with the newer {candidates[0]['sessionId']!r}; only the newer one is imported"
            )
        if candidates[0]["_repeated"]:
            notices.append(f"session {candidates[0]['sessionId']!r}: {candidates[0]['_repeated']} repeated seq(s); the later event kept")
    return selected, notices, warnings


class AcpEventLedgerReader(Reader):
    kind = "acp-event-ledger"
    family = "acp"
    description = "ACP replay ledger acp/event-ledger.json"
    patterns = ("acp/event-ledger.json",)
    schema_name = "acp-event-ledger"
    target_tables = ("global.acp_replay_sessions", "global.acp_replay_events")
    action = "import"
    order = 70

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO) -> Inspection:
        document = load_document(source, handle, self.schema_name or "")
        selected, _notices, warnings = select_sessions(source, document)
        events = sum(len(s["events"]) for s in selected.values())
        return Inspection(record_count=len(document["sessions"]), warnings=[f"{source.rel}: {w}" for w in warnings], details={"events": events})

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        document = load_document(source, handle, self.schema_name or "")
        selected, notices, warnings = select_sessions(source, document)
        conn = ctx.global_db
        session_columns = ["session_key", "session_id", "cwd", "complete", "next_seq", "created_at", "updated_at"]
        event_columns = ["session_key", "seq", "at", "run_id", "update_json"]
        require_columns(conn, SESSIONS, session_columns)
        require_columns(conn, EVENTS, event_columns)
        keyed_by_id = primary_key(conn, SESSIONS) == ("session_id",)
        if "session_id" in table_info(conn, EVENTS):
            event_columns.append("session_id")
        total_events = 0
        for key, session in sorted(selected.items()):
            conn.execute(f"DELETE FROM {SESSIONS} WHERE session_key = ?", (key,))
            conn.execute(f"DELETE FROM {EVENTS} WHERE session_key = ?", (key,))
            if keyed_by_id:
                conn.execute(f"DELETE FROM {SESSIONS} WHERE session_id = ?", (session["sessionId"],))
            events = session["events"]
            last_seq = events[-1]["seq"] if events else 0
            insert_many(
                conn,
                SESSIONS,
                session_columns,
                [[
                    key,
                    session["sessionId"],
                    session["cwd"],
                    1 if session.get("complete") is True else 0,
                    max(int(session["nextSeq"]), last_seq + 1),
                    integer(session["createdAt"]),
                    integer(session["updatedAt"]),
                ]],
            )
            rows = []
            for event in events:
                row = [key, event["seq"], integer(event["at"]), text(event.get("runId")), js_stringify(event["update"])]
                if len(event_columns) == 6:
                    row.append(session["sessionId"])
                rows.append(row)
            if rows:
                insert_many(conn, EVENTS, event_columns, rows)
            total_events += len(rows)
        result = WriteResult(
            records=len(selected) + total_events,
            notices=[f"{source.rel}: {n}" for n in notices],
            warnings=[f"{source.rel}: {w}" for w in warnings],
        )
        keys = js_stringify(sorted(selected))
        result.expect("global", SESSIONS, "session_key IN (SELECT value FROM json_each(?))", (keys,), len(selected))
        result.expect("global", EVENTS, "session_key IN (SELECT value FROM json_each(?))", (keys,), total_events)
        result.report.update({"ledger_sessions": len(document["sessions"]), "session_keys": len(selected), "events": total_events})
        return result
