"""ACP replay ledger ``acp/event-ledger.json`` -> ``global.acp_replay_sessions`` + ``global.acp_replay_events``.

``{"version": 1, "sessions": {"<sessionId>": {sessionId, sessionKey, cwd,
complete, createdAt, updatedAt, nextSeq, events: [{seq, at, sessionId,
sessionKey, runId?, update}]}}}``.

The release's tables are keyed by session id, and OpenClaw 2026.7.35 imported
this file that way: every ledger session becomes one ``acp_replay_sessions``
row (``session_key``, ``cwd``, ``complete`` 0/1, ``created_at``,
``updated_at``, ``next_seq`` = ``nextSeq``, numbers as the file has them) and
each of its events one ``acp_replay_events`` row (``session_id``, ``seq``,
``at``, the event's own ``session_key``, ``run_id`` (a non-empty string or
NULL), ``update_json`` = ``JSON.stringify(update)``). A repeated seq keeps the
first event (the release inserts with OR IGNORE). A session already in the
database is kept as it is (the release skips it too), with a notice.

Sessions or events without the ledger's shape are skipped with a warning
naming the session (the release drops them silently): a session needs string
``sessionId`` (equal to its key) / ``sessionKey`` / ``cwd``, finite
``createdAt`` / ``updatedAt`` and an integer ``nextSeq`` >= 1; an event an
integer ``seq`` >= 0, a finite ``at``, string ``sessionId`` / ``sessionKey``
and an ``update`` with a string ``sessionUpdate``. An event whose
``sessionId`` names another session cannot be stored under this one (the
release's foreign key refuses it; 9.6 refuses the whole ledger): skipped with
a warning.
"""

from __future__ import annotations

from typing import Any, BinaryIO

from statekit.values import js_json
from statekit.documents import load_document
from statekit.legacy_readers.base import ImportContext, Inspection, ReadContext, Reader, Source, WriteResult, validate
from statekit.errors import SourceError

SESSIONS = "acp_replay_sessions"
EVENTS = "acp_replay_events"
SESSION_COLUMNS = ("session_id", "session_key", "cwd", "complete", "created_at", "updated_at", "next_seq")
EVENT_COLUMNS = ("session_id", "seq", "at", "session_key", "run_id", "update_json")


def _number(value: Any) -> Any:
    """A JSON number as SQLite should get it from JavaScript (integral floats as integers)."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def select_sessions(source: Source, document: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str], list[str]]:
    """The sessions to import (events validated, first of a repeated seq kept), plus notices and warnings."""
    selected: list[dict[str, Any]] = []
    notices: list[str] = []
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
        bad = foreign = repeated = 0
        for event in session.get("events") or []:
            try:
                validate(event, "acp-ledger-event", source.rel)
            except SourceError:
                bad += 1
                continue
            if not isinstance(event.get("sessionId"), str) or not isinstance(event.get("sessionKey"), str):
                bad += 1
                continue
            if event["sessionId"] != session_id:
                foreign += 1
                continue
            if event["seq"] in events:
                repeated += 1
                continue
            events[event["seq"]] = event
        if bad:
            warnings.append(f"session {session_id!r}: {bad} malformed event(s) skipped")
        if foreign:
            warnings.append(f"session {session_id!r}: {foreign} event(s) naming another session skipped")
        if repeated:
            notices.append(f"session {session_id!r}: {repeated} repeated seq(s); the first event kept")
        selected.append(dict(session, events=list(events.values())))
    return selected, notices, warnings


class AcpEventLedgerReader(Reader):
    kind = "acp-event-ledger"
    family = "acp"
    description = "ACP replay ledger acp/event-ledger.json"
    patterns = ("acp/event-ledger.json",)
    schema_name = "acp-event-ledger"
    target_tables = ("global.acp_replay_sessions", "global.acp_replay_events")
    action = "import"

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        document = load_document(source, handle, self.schema_name or "")
        selected, _notices, warnings = select_sessions(source, document)
        events = sum(len(s["events"]) for s in selected)
        return Inspection(record_count=len(document["sessions"]), warnings=[f"{source.rel}: {w}" for w in warnings], details={"events": events})

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        document = load_document(source, handle, self.schema_name or "")
        selected, notices, warnings = select_sessions(source, document)
        db = ctx.writer.state
        imported: list[str] = []
        total_events = 0
        for session in selected:
            session_id = session["sessionId"]
            if db.exists(SESSIONS, {"session_id": session_id}):
                notices.append(f"session {session_id!r} is already in the database; kept as it is")
                continue
            db.insert_many(SESSIONS, SESSION_COLUMNS, [[
                session_id,
                session["sessionKey"],
                session["cwd"],
                1 if session.get("complete") is True else 0,
                _number(session["createdAt"]),
                _number(session["updatedAt"]),
                session["nextSeq"],
            ]], owner={"session_id": session_id})  # fmt: skip
            rows = [
                [session_id, e["seq"], _number(e["at"]), e["sessionKey"], e["runId"] if isinstance(e.get("runId"), str) and e["runId"] else None,
                 js_json(e["update"])]
                for e in session["events"]
            ]  # fmt: skip
            if rows:
                db.insert_many(EVENTS, EVENT_COLUMNS, rows, owner={"session_id": session_id})
            imported.append(session_id)
            total_events += len(rows)
        result = WriteResult(
            records=len(imported) + total_events,
            notices=[f"{source.rel}: {n}" for n in notices],
            warnings=[f"{source.rel}: {w}" for w in warnings],
        )
        result.report.update({"ledger_sessions": len(document["sessions"]), "imported_sessions": len(imported), "events": total_events})
        return result
