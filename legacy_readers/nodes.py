"""Node pairing: ``nodes/paired.json`` and ``nodes/pending.json``.

OpenClaw 2026.7 retired the separate node pairing store: a node is a paired
device whose row carries a node surface (``node_surface_json``) and, while a
capability change waits for approval, a pending one
(``pending_node_surface_json``). The ``node_pairing_*`` tables some 2026.7
databases hold were never written and are not targets.

* ``nodes-paired`` (order 43): map ``nodeId -> node`` -> ``node_surface_json``
  of the paired device whose ``device_id`` is the node id. The legacy node
  token is not carried over (node auth is the device identity now); it stays
  in the retired copy and is counted in the receipt. A node without a
  matching paired device cannot be represented: the whole file fails with
  the count and the first node id, and stays in place (nothing dropped).
* ``nodes-pending`` (order 44): map ``requestId -> request`` ->
  ``pending_node_surface_json`` of the matching paired device (newest request
  per node). Requests for a node that has no paired device are transient
  (5-minute TTL in OpenClaw) and have no home: they are skipped with a notice
  and counted; the bytes stay in the retired copy.

Both run after ``devices/paired.json`` (order 41) and refuse to run while that
file is still in place (not yet imported or failed).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, BinaryIO

from legacy_readers.base import ImportContext, Inspection, Reader, Source, WriteResult, require_columns
from legacy_readers.devices import PAIRED_TABLE, fetch_row, file_mtime_ms, json_col, load_object, ms, text
from statekit.errors import SourceError

FAMILY = "nodes"
DEVICES_PAIRED_REL = "devices/paired.json"

SURFACE_FIELDS = (
    "displayName", "version", "coreVersion", "uiVersion", "modelIdentifier", "caps", "commands", "permissions",
    "bins", "createdAtMs", "approvedAtMs", "lastConnectedAtMs", "lastDisconnectedAtMs", "sessionHost",
)
PENDING_SURFACE_FIELDS = (
    "displayName", "platform", "version", "coreVersion", "uiVersion", "clientId", "clientMode", "deviceFamily",
    "modelIdentifier", "caps", "commands", "permissions", "remoteIp", "silent",
)
# Device columns a node record may fill when the device row has no value.
DEVICE_FILL = (("platform", "platform"), ("deviceFamily", "device_family"), ("clientId", "client_id"),
               ("clientMode", "client_mode"), ("remoteIp", "remote_ip"))


def _require_devices_imported(source: Source, ctx: ImportContext) -> None:
    if ctx.dependency_pending(DEVICES_PAIRED_REL):
        raise SourceError(source.rel, f"left in place: {DEVICES_PAIRED_REL} has not been imported yet (nodes attach to paired devices)")


def _surface_of(value: Any) -> dict[str, Any] | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = json.loads(value)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def node_surface(node: Mapping[str, Any], fallback_ms: int) -> dict[str, Any]:
    surface = {name: node[name] for name in SURFACE_FIELDS if node.get(name) is not None}
    created = ms(node.get("createdAtMs"))
    approved = ms(node.get("approvedAtMs"))
    surface["createdAtMs"] = created if created is not None else approved if approved is not None else fallback_ms
    surface["approvedAtMs"] = approved if approved is not None else surface["createdAtMs"]
    return surface


def pending_surface(request_id: str, request: Mapping[str, Any], fallback_ms: int) -> dict[str, Any]:
    surface: dict[str, Any] = {"requestId": request_id, "revision": request_id}
    surface.update({name: request[name] for name in PENDING_SURFACE_FIELDS if request.get(name) is not None})
    ts = ms(request.get("ts"))
    surface["ts"] = ts if ts is not None else fallback_ms
    return surface


def _fill_device_columns(conn: Any, device_id: str, node: Mapping[str, Any]) -> None:
    for field, column in DEVICE_FILL:
        value = text(node.get(field))
        if value is not None:
            conn.execute(f'UPDATE "{PAIRED_TABLE}" SET {column} = ? WHERE device_id = ? AND {column} IS NULL', (value, device_id))


class NodePairingPairedReader(Reader):
    kind = "nodes-paired"
    family = FAMILY
    description = "Paired nodes (nodes/paired.json) -> node surface of the paired device row"
    patterns = ("nodes/paired.json",)
    schema_name = "nodes-paired"
    target_tables = ("global.device_pairing_paired",)
    action = "import"
    order = 43

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO) -> Inspection:
        return Inspection(record_count=len(load_object(handle, source.rel, self.schema_name)))

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        store = load_object(handle, source.rel, self.schema_name)
        conn = ctx.global_db
        if store:
            _require_devices_imported(source, ctx)
            require_columns(conn, PAIRED_TABLE, ("device_id", "node_surface_json"))
        mtime = file_mtime_ms(source, ctx.now_ms)
        nodes: list[tuple[str, Mapping[str, Any], dict[str, Any]]] = []
        missing: list[str] = []
        for key, node in store.items():
            node_id = (text(node.get("nodeId")) or key).strip()
            device = fetch_row(conn, PAIRED_TABLE, "device_id = ?", (node_id,))
            if device is None:
                missing.append(node_id)
            else:
                nodes.append((node_id, node, device))
        if missing:
            raise SourceError(
                source.rel,
                f"{len(missing)} paired node(s) have no paired device row to attach to (first: {missing[0]}); "
                "left in place -- pair the device again or remove the node entry",
            )
        kept = tokens = 0
        for node_id, node, device in nodes:
            if isinstance(node.get("token"), str) and node["token"]:
                tokens += 1
            surface = node_surface(node, mtime)
            current = _surface_of(device.get("node_surface_json"))
            if current is not None and (ms(current.get("approvedAtMs")) or 0) > surface["approvedAtMs"]:
                kept += 1
                continue
            conn.execute(f'UPDATE "{PAIRED_TABLE}" SET node_surface_json = ? WHERE device_id = ?', (json_col(surface), node_id))
            _fill_device_columns(conn, node_id, node)
        result = WriteResult(records=len(nodes))
        if tokens:
            result.notices.append(
                f"{source.rel}: {tokens} legacy node token(s) not carried over (nodes authenticate with their device identity); kept in the retired copy"
            )
        if kept:
            result.notices.append(f"{source.rel}: kept {kept} newer node surface(s) already in the database")
        ids = json.dumps(sorted(n for n, _, _ in nodes))
        result.expect("global", PAIRED_TABLE, "device_id IN (SELECT value FROM json_each(?)) AND node_surface_json IS NOT NULL", (ids,), len(nodes))
        result.report.update({"nodes": len(store), "legacy_node_tokens_not_carried": tokens, "kept_newer_database_surfaces": kept})
        return result


class NodePairingPendingReader(Reader):
    kind = "nodes-pending"
    family = FAMILY
    description = "Pending node pairing requests (nodes/pending.json) -> pending node surface of the paired device row"
    patterns = ("nodes/pending.json",)
    schema_name = "nodes-pending"
    target_tables = ("global.device_pairing_paired",)
    action = "import"
    order = 44

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO) -> Inspection:
        return Inspection(record_count=len(load_object(handle, source.rel, self.schema_name)))

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        store = load_object(handle, source.rel, self.schema_name)
        conn = ctx.global_db
        if store:
            _require_devices_imported(source, ctx)
            require_columns(conn, PAIRED_TABLE, ("device_id", "pending_node_surface_json"))
        mtime = file_mtime_ms(source, ctx.now_ms)
        newest: dict[str, dict[str, Any]] = {}
        superseded = 0
        for key, request in store.items():
            request_id = text(request.get("requestId")) or key
            surface = pending_surface(request_id, request, mtime)
            node_id = request["nodeId"].strip()
            if node_id in newest:
                superseded += 1
                if newest[node_id]["ts"] > surface["ts"]:
                    continue
            newest[node_id] = surface
        orphans: list[str] = []
        attached: list[str] = []
        kept = 0
        for node_id, surface in sorted(newest.items()):
            device = fetch_row(conn, PAIRED_TABLE, "device_id = ?", (node_id,))
            if device is None:
                orphans.append(node_id)
                continue
            attached.append(node_id)
            current = _surface_of(device.get("pending_node_surface_json"))
            if current is not None and (ms(current.get("ts")) or 0) > surface["ts"]:
                kept += 1
                continue
            conn.execute(f'UPDATE "{PAIRED_TABLE}" SET pending_node_surface_json = ? WHERE device_id = ?', (json_col(surface), node_id))
        result = WriteResult(records=len(attached))
        if orphans:
            result.notices.append(
                f"{source.rel}: skipped {len(orphans)} pending node request(s) with no paired device (first: {orphans[0]}); "
                "transient requests, kept in the retired copy"
            )
        if superseded:
            result.notices.append(f"{source.rel}: {superseded} older request(s) superseded by a newer one for the same node")
        if kept:
            result.notices.append(f"{source.rel}: kept {kept} newer pending node surface(s) already in the database")
        ids = json.dumps(attached)
        result.expect(
            "global", PAIRED_TABLE, "device_id IN (SELECT value FROM json_each(?)) AND pending_node_surface_json IS NOT NULL", (ids,), len(attached)
        )
        result.report.update({
            "requests": len(store),
            "attached": len(attached),
            "skipped_without_device": len(orphans),
            "superseded": superseded,
            "kept_newer_database_surfaces": kept,
        })
        return result
