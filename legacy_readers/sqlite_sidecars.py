"""SQLite sidecar databases of older releases: the ones OpenClaw imports, and the ones it does not.

Discovery files any SQLite file under "databases" unless a reader claims it; these
readers claim the sidecars so they are planned with a reason, together with their
``-wal``/``-shm``/``-journal`` siblings.

Imported the way OpenClaw 2026.9.6's doctor imports them (its ``task-state-sidecars``
and ``plugin-state-sidecar`` steps; 2026.7.35 had the same importer), then retired
byte-exact by the apply loop like every other source:

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
* ``debug-proxy/capture.sqlite`` (and ``debug-proxy/blobs/``): 9.6's doctor imports
  them into ``capture_*`` tables itself (sessions, events and gzip blobs checked by
  hash); ``retain`` so it still can. The proxy's CA material under ``debug-proxy/``
  is left intact as well.
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO, ClassVar

from legacy_readers.base import ImportContext, Inspection, Reader, Source, WriteResult, require_columns
from statekit.errors import SourceError
from statekit.fsutil import open_regular_file

SIDECAR_SUFFIXES = ("", "-wal", "-shm", "-journal")
COPIED_SUFFIXES = ("-wal", "-journal")  # what SQLite needs besides the database to see every committed row


def with_siblings(*paths: str) -> tuple[str, ...]:
    return tuple(p + s for p in paths for s in SIDECAR_SUFFIXES)


class _Sidecar(Reader):
    family = "sqlite-sidecars"
    order = 95


# --- reading a sidecar without touching it ---------------------------------------------------


@contextmanager
def open_sidecar_copy(source: Source, handle: BinaryIO) -> Iterator[sqlite3.Connection]:
    """A private copy of the database (and its WAL / hot journal) opened with sqlite3; the original is never opened by SQLite."""
    with tempfile.TemporaryDirectory(prefix="statekit-sidecar-") as tmp:
        copy = Path(tmp) / "sidecar.sqlite"
        with copy.open("wb") as out:
            shutil.copyfileobj(handle, out)
        for suffix in COPIED_SUFFIXES:
            sibling = source.path.with_name(source.path.name + suffix)
            if not sibling.exists():
                continue
            try:
                with open_regular_file(sibling) as src, open(str(copy) + suffix, "wb") as out:
                    shutil.copyfileobj(src, out)
            except OSError as exc:
                raise SourceError(source.rel, f"cannot read {sibling.name} to see its committed rows ({exc.strerror or exc}); left in place") from None
        try:
            conn = sqlite3.connect(copy)
        except sqlite3.Error as exc:
            raise SourceError(source.rel, f"not a readable SQLite database ({exc})") from None
        try:
            try:
                conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            except sqlite3.DatabaseError as exc:
                raise SourceError(source.rel, f"not a readable SQLite database ({exc})") from None
            yield conn
        finally:
            conn.close()


def columns_of(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f'PRAGMA table_info("{table}")')}


def select_rows(conn: sqlite3.Connection, rel: str, table: str, wanted: Sequence[str], required: Sequence[str], order_by: str) -> list[dict[str, Any]]:
    """Rows of ``table`` with the ``wanted`` columns (a missing optional column reads NULL, ``revision`` 0); none when the table is absent."""
    have = columns_of(conn, table)
    if not have:
        return []
    missing = [name for name in required if name not in have]
    if missing:
        raise SourceError(rel, f"table {table} lacks column(s) {', '.join(missing)}")
    parts = [f'"{name}"' if name in have else f"{'0' if name == 'revision' else 'NULL'} AS \"{name}\"" for name in wanted]
    try:
        cursor = conn.execute(f'SELECT {", ".join(parts)} FROM "{table}" ORDER BY {order_by}')
        return [dict(zip(wanted, row)) for row in cursor]
    except sqlite3.DatabaseError as exc:
        raise SourceError(rel, f"cannot read table {table} ({exc})") from None


# --- OpenClaw's value rules ---------------------------------------------------------------


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _trimmed(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


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
    runtime = _text(row["runtime"])
    source_id = row["source_id"] if isinstance(row["source_id"], str) else ""
    task_id = _text(row["task_id"])
    owner_raw, requester_raw = _trimmed(row["owner_key"]), _trimmed(row["requester_session_key"])
    owner_key = owner_raw or requester_raw or f"system:{runtime}:{source_id or task_id}"
    scope_kind = "system" if row["scope_kind"] == "system" or owner_key.startswith("system:") else "session"
    child_key = _trimmed(row["child_session_key"])
    persisted_agent = _trimmed(row["agent_id"])
    spawned = runtime in ("subagent", "acp")
    child_agent = session_key_agent(child_key) if spawned else None
    requester_agent = _trimmed(row["requester_agent_id"])
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
    owner_key = _trimmed(row["owner_key"]) or _trimmed(row["owner_session_key"])
    controller = (_trimmed(row["controller_id"]) or "core/legacy-restored") if sync_mode == "managed" else None
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


def _insert(conn: sqlite3.Connection, table: str, row: dict[str, Any]) -> None:
    require_columns(conn, table, row)
    names = list(row)
    conn.execute(f'INSERT INTO "{table}" ({", ".join(names)}) VALUES ({", ".join("?" for _ in names)})', [row[n] for n in names])


def _stored(conn: sqlite3.Connection, table: str, key_column: str, key: Any, columns: Sequence[str]) -> dict[str, Any] | None:
    found = conn.execute(f'SELECT {", ".join(columns)} FROM "{table}" WHERE {key_column} = ?', (key,)).fetchone()
    return None if found is None else dict(zip(columns, found))


def _conflict(rel: str, what: str, keys: list[str]) -> SourceError:
    return SourceError(
        rel,
        f"left in place: {len(keys)} {what} row(s) already stored with other values (first: {keys[0]}); nothing imported from it",
    )


def import_task_runs(conn: sqlite3.Connection, sidecar: sqlite3.Connection, rel: str) -> dict[str, Any]:
    tasks = [task_run_row(r) for r in select_rows(sidecar, rel, "task_runs", TASK_COLUMNS, TASK_REQUIRED, "created_at ASC, task_id ASC")]
    deliveries = select_rows(sidecar, rel, "task_delivery_state", DELIVERY_COLUMNS, ("task_id",), "task_id ASC")
    compared = [c for c in TASK_COLUMNS if c != "task_id"]
    conflicts: list[str] = []
    inserted: list[str] = []
    for task in tasks:
        existing = _stored(conn, "task_runs", "task_id", task["task_id"], compared)
        if existing is not None:
            if {**existing, "run_id": _trimmed_or_none(existing["run_id"])} != {c: task[c] for c in compared}:
                conflicts.append(str(task["task_id"]))
            continue
        _insert(conn, "task_runs", task)
        inserted.append(task["task_id"])
    delivered, orphans = [], []
    for row in deliveries:
        existing = _stored(conn, "task_delivery_state", "task_id", row["task_id"], DELIVERY_COLUMNS[1:])
        if existing is not None:
            if existing != {c: row[c] for c in DELIVERY_COLUMNS[1:]}:
                conflicts.append(f"{row['task_id']}/delivery")
            continue
        if conn.execute("SELECT 1 FROM task_runs WHERE task_id = ?", (row["task_id"],)).fetchone() is None:
            orphans.append(str(row["task_id"]))
            continue
        _insert(conn, "task_delivery_state", row)
        delivered.append(row["task_id"])
    if conflicts:
        raise _conflict(rel, "task registry", conflicts)
    return {"tasks": tasks, "inserted": inserted, "delivered": delivered, "orphans": orphans}


def import_flow_runs(conn: sqlite3.Connection, sidecar: sqlite3.Connection, rel: str) -> dict[str, Any]:
    flows = [flow_run_row(r) for r in select_rows(sidecar, rel, "flow_runs", FLOW_COLUMNS, FLOW_REQUIRED, "created_at ASC, flow_id ASC")]
    compared = [c for c in FLOW_COLUMNS if c not in ("flow_id", "owner_session_key")]
    conflicts, inserted = [], []
    for flow in flows:
        existing = _stored(conn, "flow_runs", "flow_id", flow["flow_id"], compared)
        if existing is not None:
            if existing != {c: flow[c] for c in compared}:
                conflicts.append(str(flow["flow_id"]))
            continue
        _insert(conn, "flow_runs", flow)
        inserted.append(flow["flow_id"])
    if conflicts:
        raise _conflict(rel, "task flow", conflicts)
    return {"flows": flows, "inserted": inserted}


def import_plugin_state(conn: sqlite3.Connection, sidecar: sqlite3.Connection, rel: str, now_ms: int) -> dict[str, Any]:
    entries = select_rows(sidecar, rel, "plugin_state_entries", PLUGIN_STATE_COLUMNS, PLUGIN_STATE_COLUMNS[:4], "plugin_id ASC, namespace ASC, entry_key ASC")
    key = ("plugin_id", "namespace", "entry_key")
    where = "plugin_id = ? AND namespace = ? AND entry_key = ?"
    conflicts, inserted, expired, kept_newer = [], [], 0, 0
    for entry in entries:
        params = tuple(entry[k] for k in key)
        conn.execute(f"DELETE FROM plugin_state_entries WHERE {where} AND expires_at IS NOT NULL AND expires_at <= ?", (*params, now_ms))
        found = conn.execute(f"SELECT value_json, created_at, expires_at FROM plugin_state_entries WHERE {where}", params).fetchone()
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
        _insert(conn, "plugin_state_entries", {**entry, "created_at": entry["created_at"] or 0})
        inserted.append(params)
    if conflicts:
        raise _conflict(rel, "plugin-state", conflicts)
    return {"entries": len(entries), "inserted": len(inserted), "expired": expired, "kept_newer": kept_newer}


# --- the readers --------------------------------------------------------------------------------


class _ImportedSidecar(_Sidecar):
    """A sidecar database OpenClaw imports; its siblings are retired after it."""

    action = "import"
    database: ClassVar[str]

    def _is_database(self, source: Source) -> bool:
        return source.rel == self.database

    def count(self, sidecar: sqlite3.Connection, source: Source) -> int:
        raise NotImplementedError

    def apply(self, ctx: ImportContext, sidecar: sqlite3.Connection, source: Source) -> WriteResult:
        raise NotImplementedError

    def inspect(self, source: Source, handle: BinaryIO) -> Inspection:
        if not self._is_database(source):
            return Inspection(record_count=0, details={"sibling_of": self.database})
        with open_sidecar_copy(source, handle) as sidecar:
            return Inspection(record_count=self.count(sidecar, source))

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        if not self._is_database(source):
            if ctx.dependency_pending(self.database):
                raise SourceError(source.rel, f"waits until {self.database} is imported (it may hold that database's rows); left in place")
            result = WriteResult(records=0)
            result.report["disposition"] = f"sibling of {self.database}, whose rows were imported (read together with it); retired after it"
            return result
        with open_sidecar_copy(source, handle) as sidecar:
            return self.apply(ctx, sidecar, source)


def _count(sidecar: sqlite3.Connection, table: str) -> int:
    if not columns_of(sidecar, table):
        return 0
    return int(sidecar.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0])


class TaskRunsSidecar(_ImportedSidecar):
    kind = "tasks-runs-sqlite"
    description = "Task registry sidecar database tasks/runs.sqlite (+ -wal/-shm/-journal), imported into global task_runs as OpenClaw does"
    patterns = with_siblings("tasks/runs.sqlite")
    target_tables = ("global.task_runs", "global.task_delivery_state")
    database = "tasks/runs.sqlite"

    def count(self, sidecar: sqlite3.Connection, source: Source) -> int:
        return _count(sidecar, "task_runs")

    def apply(self, ctx: ImportContext, sidecar: sqlite3.Connection, source: Source) -> WriteResult:
        done = import_task_runs(ctx.global_db, sidecar, source.rel)
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
        for task in tasks:
            result.expect("global", "task_runs", "task_id = ?", (task["task_id"],), 1)
        for task_id in done["delivered"]:
            result.expect("global", "task_delivery_state", "task_id = ?", (task_id,), 1)
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

    def count(self, sidecar: sqlite3.Connection, source: Source) -> int:
        return _count(sidecar, "flow_runs")

    def apply(self, ctx: ImportContext, sidecar: sqlite3.Connection, source: Source) -> WriteResult:
        done = import_flow_runs(ctx.global_db, sidecar, source.rel)
        flows = done["flows"]
        result = WriteResult(records=len(flows))
        skipped = len(flows) - len(done["inserted"])
        if skipped:
            result.notices.append(f"{source.rel}: {skipped} flow run(s) were already stored with the same values")
        for flow in flows:
            result.expect("global", "flow_runs", "flow_id = ?", (flow["flow_id"],), 1)
        result.report.update({"flow_runs": len(flows), "flow_runs_inserted": len(done["inserted"]), "flow_ids": [f["flow_id"] for f in flows]})
        return result


class PluginStateSidecar(_ImportedSidecar):
    kind = "plugin-state-sqlite"
    description = "Plugin-state sidecar database plugin-state/state.sqlite (+ siblings), imported into global plugin_state_entries as OpenClaw does"
    patterns = with_siblings("plugin-state/state.sqlite")
    target_tables = ("global.plugin_state_entries",)
    database = "plugin-state/state.sqlite"

    def count(self, sidecar: sqlite3.Connection, source: Source) -> int:
        return _count(sidecar, "plugin_state_entries")

    def apply(self, ctx: ImportContext, sidecar: sqlite3.Connection, source: Source) -> WriteResult:
        done = import_plugin_state(ctx.global_db, sidecar, source.rel, ctx.now_ms)
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


class DebugProxyCapture(_Sidecar):
    kind = "debug-proxy-capture-sqlite"
    description = "Debug proxy capture database debug-proxy/capture.sqlite and its payload blobs"
    patterns = with_siblings("debug-proxy/capture.sqlite") + ("debug-proxy/blobs/**",)
    action = "retain"
    reason = ("shipped debug-proxy captures: OpenClaw's doctor imports them (sessions, events, hashed blobs) into its"
              " capture_* tables itself; left in place for it")


class DebugProxyFiles(_Sidecar):
    kind = "debug-proxy-files"
    description = "Other debug proxy files (CA certificate and key)"
    patterns = ("debug-proxy/**",)
    action = "retain"
    reason = "debug proxy CA material: the user's trust setup, left intact"
    order = 96
