"""SQLite sidecar databases of older releases: the ones OpenClaw imports, and the ones it does not.

Discovery files any SQLite file under "databases" unless a reader claims it; these
readers claim the sidecars so they are planned with a reason, together with their
``-wal``/``-shm``/``-journal`` siblings.

Imported the way OpenClaw 2026.9.6's doctor imports them (its ``task-state-sidecars``,
``plugin-state-sidecar`` and ``debug-proxy-capture`` steps; 2026.7.35 had the same
importers), then retired byte-exact by the apply loop like every other source:

* ``tasks/runs.sqlite`` (written by 2026.5.28 and earlier): its ``task_runs`` rows
  become global ``task_runs`` rows, its ``task_delivery_state`` rows global
  ``task_delivery_state`` rows, with exactly the values 9.6 produces
  (``task_run_row``: owner key and scope recovered, requester/executor agent ids of
  spawned runs taken from the session keys, ``not-requested`` delivery becomes
  ``not_applicable``, run id and child session key trimmed). A row whose task id is
  already stored with other values is a conflict: the sidecar is left in place with
  one line naming the first conflicting key, as 9.6 does. A delivery row of a task
  the sidecar does not have is skipped with a warning.
* ``flows/registry.sqlite``: its ``flow_runs`` rows become global ``flow_runs``
  rows (``flow_run_row``: ``owner_session_key`` of older files as the owner key,
  ``single_task`` flows mirrored, managed flows without a controller
  ``core/legacy-restored``).
* ``plugin-state/state.sqlite``: its ``plugin_state_entries`` rows are copied into
  the global table; rows already expired are dropped (counted in the receipt), a
  stored row with a newer ``created_at`` wins, any other differing stored row is a
  conflict (left in place).
* ``debug-proxy/capture.sqlite`` with its payload blobs ``debug-proxy/blobs/<id>.bin.gz``:
  sessions, events and blobs become global ``capture_sessions``, ``capture_events`` and
  ``capture_blobs`` rows (``import_capture``: a session only named by events is
  created as ``implicit``; a blob is read from the session's blob dir or
  ``debug-proxy/blobs``, checked against its id -- the first 24 hex digits of the
  SHA-256 of its uncompressed bytes -- and stored gzip-compressed as on disk; an event
  already stored as many times as the file has it is not added again). The blob files
  are retired after the database; without a capture database beside them they stay.

A sibling (``-wal``, ``-shm``, ``-journal``) is read together with its database (the
copy statekit opens includes the WAL and a hot journal, so committed rows in the WAL
are imported) and retired after it; while the database itself is not imported the
sibling waits in place.

Not imported:

* ``tasks/flows/registry.sqlite``: 9.6 imports only ``flows/registry.sqlite``; this
  path was never read by a shipped importer. ``retain``: left where it is, listed in
  every plan, so nothing is lost.
* ``memory/<agentId>.sqlite``: the builtin memory-search index, regenerable from the
  workspace memory files (OpenClaw reindexes into the agent database). ``drop``:
  moved byte-exact into the run's retired folder, not imported.
* the debug proxy's CA material under ``debug-proxy/``: the user's trust setup, left
  intact.
"""

from __future__ import annotations

import gzip
import hashlib
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, BinaryIO, ClassVar

from statekit.legacy_readers._sqlite_source import columns_of, count_rows as _count, open_sidecar_copy, select_rows
from statekit.legacy_readers.base import ImportContext, Inspection, ReadContext, Reader, Source, WriteResult
from statekit.legacy_readers.writer import DatabaseWriter
from statekit.errors import SourceError
from statekit.fsutil import open_regular_file
from statekit.db import Connection
from statekit.values import text, trimmed

SIDECAR_SUFFIXES = ("", "-wal", "-shm", "-journal")
COPIED_SUFFIXES = ("-wal", "-journal")  # what SQLite needs besides the database to see every committed row


def with_siblings(*paths: str) -> tuple[str, ...]:
    return tuple(p + s for p in paths for s in SIDECAR_SUFFIXES)


class _Sidecar(Reader):
    family = "sqlite-sidecars"


# --- OpenClaw's value rules ---------------------------------------------------------------


def _trimmed_or_none(value: Any) -> Any:
    """A trimmed non-blank string, else None; non-strings unchanged (OpenClaw's identifier repair only trims text)."""
    if isinstance(value, str):
        return value.strip() or None
    return value


def session_key_agent(key: str) -> str | None:
    """The agent id of an ``agent:<id>:<rest>`` session key (case-folded as OpenClaw parses it), else None."""
    folded = key.strip().lower()
    if not folded.startswith("agent:"):
        return None
    end = folded.find(":", 6)
    if end == -1:
        return None
    agent, rest = folded[6:end].strip(), folded[end + 1:]
    return agent if agent and rest and not rest.startswith(":") else None


TASK_COLUMNS = (
    "task_id", "runtime", "task_kind", "source_id", "requester_session_key", "owner_key", "scope_kind", "child_session_key",
    "parent_flow_id", "parent_task_id", "agent_id", "requester_agent_id", "run_id", "label", "task", "status",
    "delivery_status", "notify_policy", "created_at", "started_at", "ended_at", "last_event_at", "cleanup_after", "error",
    "progress_summary", "terminal_summary", "terminal_outcome", "detail_json",
)
TASK_REQUIRED = ("task_id", "runtime", "task", "status", "delivery_status", "notify_policy", "created_at")
DELIVERY_COLUMNS = ("task_id", "requester_origin_json", "last_notified_event_at")
FLOW_COLUMNS = (
    "flow_id", "shape", "sync_mode", "owner_key", "owner_session_key", "requester_origin_json", "controller_id", "revision",
    "status", "notify_policy", "goal", "current_step", "blocked_task_id", "blocked_summary", "state_json", "wait_json",
    "cancel_requested_at", "created_at", "updated_at", "ended_at",
)
FLOW_REQUIRED = ("flow_id", "status", "notify_policy", "goal", "created_at", "updated_at")
PLUGIN_STATE_COLUMNS = ("plugin_id", "namespace", "entry_key", "value_json", "created_at", "expires_at")


def task_run_row(row: dict[str, Any]) -> dict[str, Any]:
    """A legacy ``task_runs`` row as OpenClaw's task-registry import stores it."""
    runtime = text(row["runtime"]) or ""
    source_id = row["source_id"] if isinstance(row["source_id"], str) else ""
    task_id = text(row["task_id"]) or ""
    owner_raw, requester_raw = trimmed(row["owner_key"]) or "", trimmed(row["requester_session_key"]) or ""
    owner_key = owner_raw or requester_raw or f"system:{runtime}:{source_id or task_id}"
    scope_kind = "system" if row["scope_kind"] == "system" or owner_key.startswith("system:") else "session"
    child_key = trimmed(row["child_session_key"]) or ""
    persisted_agent = trimmed(row["agent_id"]) or ""
    spawned = runtime in ("subagent", "acp")
    child_agent = session_key_agent(child_key) if spawned else None
    requester_agent = trimmed(row["requester_agent_id"]) or ""
    if not requester_agent and spawned:
        requester_agent = (
            session_key_agent(owner_key)
            or session_key_agent(requester_raw)
            or (persisted_agent if child_agent and persisted_agent != child_agent else "")
        )
    executor_agent = (child_agent or persisted_agent) if requester_agent else persisted_agent
    delivery = "not_applicable" if row["delivery_status"] == "not-requested" else row["delivery_status"]

    def default(value: Any, fallback: Any) -> Any:
        return fallback if value is None else value

    out = {name: row[name] for name in TASK_COLUMNS}
    out.update({
        "task_id": task_id,
        "runtime": runtime,
        "requester_session_key": "" if scope_kind == "system" else requester_raw or owner_key,
        "owner_key": owner_key,
        "scope_kind": scope_kind,
        "child_session_key": child_key or None,
        "agent_id": executor_agent or None,
        "requester_agent_id": requester_agent or None,
        "run_id": _trimmed_or_none(row["run_id"]),
        "task": default(row["task"], ""),
        "status": default(row["status"], ""),
        "delivery_status": default(delivery, ""),
        "notify_policy": default(row["notify_policy"], ""),
        "created_at": default(row["created_at"], 0),
    })
    return out


def flow_run_row(row: dict[str, Any]) -> dict[str, Any]:
    """A legacy ``flow_runs`` row as OpenClaw's task-flow import stores it."""
    sync_mode = "task_mirrored" if row["sync_mode"] == "task_mirrored" or row["shape"] == "single_task" else "managed"
    owner_key = trimmed(row["owner_key"]) or trimmed(row["owner_session_key"]) or ""
    controller = (trimmed(row["controller_id"]) or "core/legacy-restored") if sync_mode == "managed" else None
    out = {name: row[name] for name in FLOW_COLUMNS if name != "owner_session_key"}
    out.update({
        "flow_id": "" if row["flow_id"] is None else row["flow_id"],
        "sync_mode": sync_mode,
        "owner_key": owner_key,
        "controller_id": controller,
        "revision": 0 if row["revision"] is None else row["revision"],
        "status": "" if row["status"] is None else row["status"],
        "notify_policy": "" if row["notify_policy"] is None else row["notify_policy"],
        "goal": "" if row["goal"] is None else row["goal"],
        "created_at": 0 if row["created_at"] is None else row["created_at"],
        "updated_at": 0 if row["updated_at"] is None else row["updated_at"],
    })
    return out


# --- writing ----------------------------------------------------------------------------------


def _stored(db: DatabaseWriter, table: str, key_column: str, key: Any, columns: Sequence[str]) -> dict[str, Any] | None:
    found = db.first(table, columns, {key_column: key})
    return None if found is None else dict(zip(columns, found))


def _conflict(rel: str, what: str, keys: list[str]) -> SourceError:
    return SourceError(
        rel,
        f"left in place: {len(keys)} {what} row(s) already stored with other values (first: {keys[0]}); nothing imported from it",
    )


def import_task_runs(db: DatabaseWriter, sidecar: Connection, rel: str) -> dict[str, Any]:
    tasks = [task_run_row(r) for r in select_rows(sidecar, rel, "task_runs", TASK_COLUMNS, TASK_REQUIRED, "created_at ASC, task_id ASC")]
    deliveries = select_rows(sidecar, rel, "task_delivery_state", DELIVERY_COLUMNS, ("task_id",), "task_id ASC")
    compared = [c for c in TASK_COLUMNS if c != "task_id"]
    conflicts: list[str] = []
    inserted: list[str] = []
    for task in tasks:
        existing = _stored(db, "task_runs", "task_id", task["task_id"], compared)
        if existing is not None:
            if {**existing, "run_id": _trimmed_or_none(existing["run_id"])} != {c: task[c] for c in compared}:
                conflicts.append(str(task["task_id"]))
            continue
        db.insert("task_runs", task, key=("task_id",))
        inserted.append(task["task_id"])
    delivered, orphans = [], []
    for row in deliveries:
        existing = _stored(db, "task_delivery_state", "task_id", row["task_id"], DELIVERY_COLUMNS[1:])
        if existing is not None:
            if existing != {c: row[c] for c in DELIVERY_COLUMNS[1:]}:
                conflicts.append(f"{row['task_id']}/delivery")
            continue
        if not db.exists("task_runs", {"task_id": row["task_id"]}):
            orphans.append(str(row["task_id"]))
            continue
        db.insert("task_delivery_state", row, key=("task_id",))
        delivered.append(row["task_id"])
    if conflicts:
        raise _conflict(rel, "task registry", conflicts)
    return {"tasks": tasks, "inserted": inserted, "delivered": delivered, "orphans": orphans}


def import_flow_runs(db: DatabaseWriter, sidecar: Connection, rel: str) -> dict[str, Any]:
    flows = [flow_run_row(r) for r in select_rows(sidecar, rel, "flow_runs", FLOW_COLUMNS, FLOW_REQUIRED, "created_at ASC, flow_id ASC")]
    compared = [c for c in FLOW_COLUMNS if c not in ("flow_id", "owner_session_key")]
    conflicts, inserted = [], []
    for flow in flows:
        existing = _stored(db, "flow_runs", "flow_id", flow["flow_id"], compared)
        if existing is not None:
            if existing != {c: flow[c] for c in compared}:
                conflicts.append(str(flow["flow_id"]))
            continue
        db.insert("flow_runs", flow, key=("flow_id",))
        inserted.append(flow["flow_id"])
    if conflicts:
        raise _conflict(rel, "task flow", conflicts)
    return {"flows": flows, "inserted": inserted}


def import_plugin_state(db: DatabaseWriter, sidecar: Connection, rel: str, now_ms: int) -> dict[str, Any]:
    entries = select_rows(sidecar, rel, "plugin_state_entries", PLUGIN_STATE_COLUMNS, PLUGIN_STATE_COLUMNS[:4], "plugin_id ASC, namespace ASC, entry_key ASC")
    key = ("plugin_id", "namespace", "entry_key")
    conflicts, inserted, expired, kept_newer = [], [], 0, 0
    for entry in entries:
        params = tuple(entry[k] for k in key)
        where = dict(zip(key, params))
        db.delete_where("plugin_state_entries", where, "expires_at IS NOT NULL AND expires_at <= ?", (now_ms,))  # expired: as if absent
        found = db.first("plugin_state_entries", ("value_json", "created_at", "expires_at"), where)
        is_expired = entry["expires_at"] is not None and entry["expires_at"] <= now_ms
        if found is not None:
            if tuple(found) != (entry["value_json"], entry["created_at"], entry["expires_at"]):
                if (found[1] or 0) > (entry["created_at"] or 0):
                    kept_newer += 1
                elif is_expired:
                    expired += 1
                else:
                    conflicts.append("/".join(str(p) for p in params))
            continue
        if is_expired:
            expired += 1
            continue
        db.insert("plugin_state_entries", {**entry, "created_at": entry["created_at"] or 0}, key=key)
        inserted.append(params)
    if conflicts:
        raise _conflict(rel, "plugin-state", conflicts)
    return {"entries": len(entries), "inserted": len(inserted), "expired": expired, "kept_newer": kept_newer}


CAPTURE_SESSION_REQUIRED = ("id", "started_at", "ended_at", "mode", "source_scope", "source_process", "proxy_url", "db_path", "blob_dir")
CAPTURE_SESSION_COLUMNS = ("id", "started_at", "ended_at", "mode", "source_scope", "source_process", "proxy_url", "blob_dir")
CAPTURE_EVENT_COLUMNS = (
    "session_id", "ts", "source_scope", "source_process", "protocol", "direction", "kind", "flow_id", "method", "host", "path",
    "status", "close_code", "content_type", "headers_json", "data_text", "data_blob_id", "data_sha256", "error_text", "meta_json",
)
CAPTURE_BLOBS_REL = "debug-proxy/blobs"


def _read_blob(source: Source, blob_id: str, blob_dirs: list[Path]) -> tuple[Path, bytes]:
    for directory in blob_dirs:
        candidate = directory / f"{blob_id}.bin.gz"
        if candidate.is_file():
            try:
                with open_regular_file(candidate) as handle:
                    return candidate, handle.read()
            except OSError as exc:
                raise SourceError(source.rel, f"cannot read capture blob {blob_id} ({exc.strerror or exc}); left in place") from None
    raise SourceError(source.rel, f"capture blob {blob_id} is missing (looked for {blob_id}.bin.gz in the session's blob dir and {CAPTURE_BLOBS_REL}); left in place")


def capture_rows(source: Source, sidecar: Connection) -> dict[str, list[dict[str, Any]]]:
    """Sessions, events and blobs of a debug-proxy capture database, as OpenClaw reads them."""
    rel = source.rel
    for table, required in (("capture_sessions", CAPTURE_SESSION_REQUIRED), ("capture_events", (*CAPTURE_EVENT_COLUMNS, "id"))):
        have = columns_of(sidecar, table)
        missing = [name for name in required if name not in have]
        if missing:
            raise SourceError(rel, f"table {table} lacks column(s) {', '.join(missing)}")
    sessions = select_rows(sidecar, rel, "capture_sessions", CAPTURE_SESSION_COLUMNS, CAPTURE_SESSION_COLUMNS, "started_at ASC, id ASC")
    events = select_rows(sidecar, rel, "capture_events", CAPTURE_EVENT_COLUMNS, CAPTURE_EVENT_COLUMNS, "ts ASC, id ASC")
    default_dir = source.state_dir / CAPTURE_BLOBS_REL
    known = {session["id"] for session in sessions}
    for event in events:
        if event["session_id"] not in known:
            sessions.append({
                "id": event["session_id"], "started_at": event["ts"], "ended_at": None, "mode": "implicit",
                "source_scope": event["source_scope"], "source_process": event["source_process"], "proxy_url": None,
                "blob_dir": str(default_dir),
            })
            known.add(event["session_id"])
    blob_dir_of = {session["id"]: session["blob_dir"] for session in sessions}
    referencing: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        if event["data_blob_id"]:
            referencing.setdefault(event["data_blob_id"], []).append(event)
    blobs = []
    for blob_id, users in referencing.items():
        dirs: list[Path] = []
        for directory in [*(blob_dir_of.get(e["session_id"]) for e in users), str(default_dir)]:
            if isinstance(directory, str) and directory and Path(directory) not in dirs:
                dirs.append(Path(directory))
        path, data = _read_blob(source, str(blob_id), dirs)
        try:
            raw = gzip.decompress(data)
        except (OSError, EOFError, zlib.error):
            raise SourceError(rel, f"capture blob {blob_id} is not valid gzip data; left in place") from None
        digest = hashlib.sha256(raw).hexdigest()
        if digest[:24] != blob_id:
            raise SourceError(rel, f"capture blob {blob_id} does not match its hash ({path.name}); left in place")
        blobs.append({
            "blob_id": blob_id,
            "content_type": next((e["content_type"] for e in users if e["content_type"]), None),
            "encoding": "gzip",
            "size_bytes": len(raw),
            "sha256": digest,
            "data": data,
            "created_at": min(e["ts"] if e["ts"] is not None else 0 for e in users),
        })
    return {"sessions": sessions, "events": events, "blobs": blobs}


def import_capture(db: DatabaseWriter, found: dict[str, list[dict[str, Any]]], rel: str) -> dict[str, int]:
    counts = {"blobs": 0, "sessions": 0, "events": 0}
    for blob in found["blobs"]:
        stored = _stored(db, "capture_blobs", "blob_id", blob["blob_id"], ("encoding", "size_bytes", "sha256", "data"))
        if stored is not None:
            if (stored["encoding"], stored["size_bytes"], stored["sha256"], bytes(stored["data"] or b"")) != (
                blob["encoding"], blob["size_bytes"], blob["sha256"], blob["data"]
            ):
                raise SourceError(rel, f"left in place: capture blob {blob['blob_id']} already exists with different data")
            continue
        db.insert("capture_blobs", blob)
        counts["blobs"] += 1
    session_columns = ("started_at", "ended_at", "mode", "source_scope", "source_process", "proxy_url")
    for session in found["sessions"]:
        stored = _stored(db, "capture_sessions", "id", session["id"], session_columns)
        if stored is not None:
            if stored != {c: session[c] for c in session_columns}:
                raise SourceError(rel, f"left in place: capture session {session['id']} already exists with different data")
            continue
        db.insert("capture_sessions", {"id": session["id"], **{c: session[c] for c in session_columns}})
        counts["sessions"] += 1
    match = " AND ".join(f"{c} IS ?" for c in CAPTURE_EVENT_COLUMNS)
    stored_counts: dict[tuple[Any, ...], int] = {}
    seen: dict[tuple[Any, ...], int] = {}
    for event in found["events"]:
        values = tuple(event[c] for c in CAPTURE_EVENT_COLUMNS)
        seen[values] = seen.get(values, 0) + 1
        if values not in stored_counts:
            stored_counts[values] = int(next(db.query(f"SELECT count(*) FROM capture_events WHERE {match}", values))[0])
        if seen[values] > stored_counts[values]:
            db.insert("capture_events", dict(event))
            counts["events"] += 1
    return counts


# --- the readers --------------------------------------------------------------------------------


class _ImportedSidecar(_Sidecar):
    """A sidecar database OpenClaw imports; its siblings are retired after it."""

    action = "import"
    database: ClassVar[str]

    def _is_database(self, source: Source) -> bool:
        return source.rel == self.database

    def count(self, sidecar: Connection, source: Source) -> int:
        raise NotImplementedError

    def apply(self, ctx: ImportContext, sidecar: Connection, source: Source) -> WriteResult:
        raise NotImplementedError

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        if not self._is_database(source):
            return Inspection(record_count=0, details={"sibling_of": self.database})
        with open_sidecar_copy(source, handle, ctx) as sidecar:
            return Inspection(record_count=self.count(sidecar, source))

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        if not self._is_database(source):
            if ctx.dependency_pending(self.database):
                raise SourceError(source.rel, f"waits until {self.database} is imported (it may hold that database's rows); left in place")
            result = WriteResult(records=0)
            result.report["disposition"] = f"sibling of {self.database}, whose rows were imported (read together with it); retired after it"
            return result
        with open_sidecar_copy(source, handle, ctx) as sidecar:
            return self.apply(ctx, sidecar, source)


class TaskRunsSidecar(_ImportedSidecar):
    kind = "tasks-runs-sqlite"
    description = "Task registry sidecar database tasks/runs.sqlite (+ -wal/-shm/-journal), imported into global task_runs as OpenClaw does"
    patterns = with_siblings("tasks/runs.sqlite")
    target_tables = ("global.task_runs", "global.task_delivery_state")
    database = "tasks/runs.sqlite"

    def count(self, sidecar: Connection, source: Source) -> int:
        return _count(sidecar, "task_runs")

    def apply(self, ctx: ImportContext, sidecar: Connection, source: Source) -> WriteResult:
        db = ctx.writer.state
        done = import_task_runs(db, sidecar, source.rel)
        tasks = done["tasks"]
        result = WriteResult(records=len(tasks))
        if done["orphans"]:
            result.warnings.append(
                f"{source.rel}: {len(done['orphans'])} task delivery row(s) of a task the sidecar does not have were skipped"
                f" (first: {done['orphans'][0]}; kept in the retired copy)"
            )
        skipped = len(tasks) - len(done["inserted"])
        if skipped:
            result.notices.append(f"{source.rel}: {skipped} task run(s) were already stored with the same values")
        ids = {task["task_id"] for task in tasks}
        db.expect_rows("task_runs", {"task_id": sorted(ids, key=str)}, len(ids))  # the ones already stored too
        result.report.update({
            "task_runs": len(tasks),
            "task_runs_inserted": len(done["inserted"]),
            "task_delivery_state_inserted": len(done["delivered"]),
            "orphan_delivery_rows": done["orphans"],
            "task_ids": [t["task_id"] for t in tasks],
        })
        return result


class FlowRunsSidecar(_ImportedSidecar):
    kind = "flow-runs-sqlite"
    description = "Task Flow registry sidecar database flows/registry.sqlite (+ siblings), imported into global flow_runs as OpenClaw does"
    patterns = with_siblings("flows/registry.sqlite")
    target_tables = ("global.flow_runs",)
    database = "flows/registry.sqlite"

    def count(self, sidecar: Connection, source: Source) -> int:
        return _count(sidecar, "flow_runs")

    def apply(self, ctx: ImportContext, sidecar: Connection, source: Source) -> WriteResult:
        db = ctx.writer.state
        done = import_flow_runs(db, sidecar, source.rel)
        flows = done["flows"]
        result = WriteResult(records=len(flows))
        skipped = len(flows) - len(done["inserted"])
        if skipped:
            result.notices.append(f"{source.rel}: {skipped} flow run(s) were already stored with the same values")
        ids = {flow["flow_id"] for flow in flows}
        db.expect_rows("flow_runs", {"flow_id": sorted(ids, key=str)}, len(ids))  # the ones already stored too
        result.report.update({"flow_runs": len(flows), "flow_runs_inserted": len(done["inserted"]), "flow_ids": [f["flow_id"] for f in flows]})
        return result


class PluginStateSidecar(_ImportedSidecar):
    kind = "plugin-state-sqlite"
    description = "Plugin-state sidecar database plugin-state/state.sqlite (+ siblings), imported into global plugin_state_entries as OpenClaw does"
    patterns = with_siblings("plugin-state/state.sqlite")
    target_tables = ("global.plugin_state_entries",)
    database = "plugin-state/state.sqlite"

    def count(self, sidecar: Connection, source: Source) -> int:
        return _count(sidecar, "plugin_state_entries")

    def apply(self, ctx: ImportContext, sidecar: Connection, source: Source) -> WriteResult:
        done = import_plugin_state(ctx.writer.state, sidecar, source.rel, ctx.now_ms)
        result = WriteResult(records=done["inserted"])
        if done["expired"]:
            result.notices.append(f"{source.rel}: {done['expired']} expired plugin-state entr(y/ies) dropped, as OpenClaw does")
        if done["kept_newer"]:
            result.notices.append(f"{source.rel}: {done['kept_newer']} entr(y/ies) already stored with a newer created_at were kept")
        result.report.update({f"plugin_state_{k}": v for k, v in done.items()})
        return result


class TaskFlowsLegacySidecar(_Sidecar):
    kind = "task-flows-sqlite"
    description = "Task Flow registry sidecar database at the older path tasks/flows/registry.sqlite"
    patterns = with_siblings("tasks/flows/registry.sqlite")
    action = "retain"
    reason = ("Task Flow sidecar at a path no shipped importer reads (OpenClaw imports flows/registry.sqlite only);"
              " not imported, left in place")


class MemoryIndexSidecar(_Sidecar):
    kind = "memory-index-sqlite"
    description = "Builtin memory-search index memory/<agentId>.sqlite; now the agent database's memory_index_* tables"
    patterns = ("memory/*.sqlite", "memory/*.sqlite-wal", "memory/*.sqlite-shm", "memory/*.sqlite-journal")
    action = "drop"
    reason = "regenerable memory-search index: OpenClaw reindexes the workspace memory into the agent database"


class DebugProxyCapture(_ImportedSidecar):
    kind = "debug-proxy-capture-sqlite"
    description = "Debug proxy capture database debug-proxy/capture.sqlite (+ siblings), imported into global capture_* as OpenClaw does"
    patterns = with_siblings("debug-proxy/capture.sqlite")
    target_tables = ("global.capture_sessions", "global.capture_events", "global.capture_blobs")
    database = "debug-proxy/capture.sqlite"

    def count(self, sidecar: Connection, source: Source) -> int:
        return _count(sidecar, "capture_events")

    def apply(self, ctx: ImportContext, sidecar: Connection, source: Source) -> WriteResult:
        found = capture_rows(source, sidecar)
        db = ctx.writer.state
        counts = import_capture(db, found, source.rel)
        result = WriteResult(records=len(found["events"]))
        sessions = {session["id"] for session in found["sessions"]}
        blobs = {blob["blob_id"] for blob in found["blobs"]}
        db.expect_rows("capture_sessions", {"id": sorted(sessions, key=str)}, len(sessions))
        db.expect_rows("capture_blobs", {"blob_id": sorted(blobs, key=str)}, len(blobs))
        result.report.update({
            "capture_sessions": len(found["sessions"]),
            "capture_events": len(found["events"]),
            "capture_blobs": [blob["blob_id"] for blob in found["blobs"]],
            **{f"inserted_{k}": v for k, v in counts.items()},
        })
        return result


class DebugProxyBlobs(_Sidecar):
    kind = "debug-proxy-capture-blobs"
    description = "Payload blobs of the debug proxy capture database (debug-proxy/blobs/**), retired after it"
    patterns = ("debug-proxy/blobs/**",)
    action = "import"
    depends_on = ("debug-proxy-capture-sqlite",)  # waits for the capture database

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        capture = DebugProxyCapture.database
        if not (source.state_dir / capture).exists() and not (ctx is not None and ctx.was_imported(capture)):
            return Inspection(record_count=0, action="retain", reason="debug proxy blob without a capture database beside it; left in place")
        return Inspection(record_count=0, details={"blob_of": DebugProxyCapture.database})

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        if ctx.dependency_pending(DebugProxyCapture.database):
            raise SourceError(source.rel, f"waits until {DebugProxyCapture.database} is imported (its events use these blobs); left in place")
        result = WriteResult(records=0)
        result.report["disposition"] = f"payload blob of {DebugProxyCapture.database}, whose rows (blobs included) were imported; retired after it"
        return result


class DebugProxyFiles(_Sidecar):
    kind = "debug-proxy-files"
    description = "Other debug proxy files (CA certificate and key)"
    patterns = ("debug-proxy/**",)
    action = "retain"
    reason = "debug proxy CA material: the user's trust setup, left intact"
    depends_on = ("debug-proxy-capture-sqlite", "debug-proxy-capture-blobs")  # the catch-all claims what they leave
