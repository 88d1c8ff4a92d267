"""Node pairing: ``nodes/paired.json`` and ``nodes/pending.json``.

Since OpenClaw 2026.7 a node is a paired device whose row carries a node
surface; 2026.9.6 keeps it in ``device_pairing_paired.node_surface_json`` and a
capability change waiting for approval in ``pending_node_surface_json``. The
canonical version-1 table has neither column: they are the columns 2026.9.6
adds to that table on its own upgrade, so statekit adds them the same way when
a node needs one (``legacy_readers._later_columns``). The v1 tables
``node_pairing_pending`` / ``node_pairing_paired`` are no home: 2026.9.6's
upgrade drops both without reading them.

* ``nodes-paired`` (order 43): map ``nodeId -> node`` -> ``node_surface_json``
  of the paired device whose ``device_id`` is the (trimmed) node id, exactly as
  2026.9.6's doctor folds the file (``migrateLegacyNodePairingStore``): the
  device must hold the approved role ``node``; a device that already has a
  surface keeps it; the surface has 2026.9.6's fields only. The legacy node
  token is not carried over (node auth is the device identity now); it stays
  in the retired copy and is counted in the receipt. A node without such a
  device cannot be represented: it is not imported (a warning names the count
  and the first node id; the retired copy keeps it), as OpenClaw drops it.
* ``nodes-pending`` (order 44): map ``requestId -> request`` ->
  ``pending_node_surface_json`` of the matching paired device (newest request
  per node). Requests for a node that has no paired device are transient
  (5-minute TTL in OpenClaw) and have no home: they are skipped with a notice
  and counted; the bytes stay in the retired copy. (2026.9.6's doctor discards
  the whole file; statekit keeps what fits, see docs/readers/nodes.md.)

Both run after ``devices/paired.json`` (order 41) and refuse to run while that
file is still in place (not yet imported or failed).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, BinaryIO

from statekit.legacy_readers.base import ImportContext, Inspection, ReadContext, Reader, Source, WriteResult
from statekit.documents import load_object

from statekit.legacy_readers.devices import PAIRED_TABLE
from statekit.values import file_mtime_ms, int64, json_text, text
from statekit.errors import SourceError

FAMILY = "nodes"
DEVICES_PAIRED_REL = "devices/paired.json"

# 2026.9.6's PairedDeviceNodeSurface as its doctor builds it from a legacy node row, in its order.
SURFACE_FIELDS = ("displayName", "version", "coreVersion", "uiVersion", "modelIdentifier")
SURFACE_LISTS = ("caps", "commands")
PENDING_SURFACE_FIELDS = (
    "displayName", "platform", "version", "coreVersion", "uiVersion", "clientId", "clientMode", "deviceFamily",
    "modelIdentifier", "caps", "commands", "permissions", "remoteIp", "silent",
)


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
    """The surface 2026.9.6 folds a ``nodes/paired.json`` row into (absent fields left out, as ``JSON.stringify`` does).

    A timestamp that is not a number takes the file's mtime (2026.9.6 takes the
    time of its own run).
    """
    surface: dict[str, Any] = {name: node[name] for name in SURFACE_FIELDS if name in node}
    surface.update({name: node[name] for name in SURFACE_LISTS if isinstance(node.get(name), list)})
    if "permissions" in node:
        surface["permissions"] = node["permissions"]
    if isinstance(node.get("bins"), list):
        surface["bins"] = node["bins"]
    for name in ("createdAtMs", "approvedAtMs"):
        value = int64(node.get(name))
        surface[name] = value if value is not None else fallback_ms
    if int64(node.get("lastConnectedAtMs")) is not None:
        surface["lastConnectedAtMs"] = node["lastConnectedAtMs"]
    return surface


def pending_surface(request_id: str, request: Mapping[str, Any], fallback_ms: int) -> dict[str, Any]:
    surface: dict[str, Any] = {"requestId": request_id, "revision": request_id}
    surface.update({name: request[name] for name in PENDING_SURFACE_FIELDS if request.get(name) is not None})
    ts = int64(request.get("ts"))
    surface["ts"] = ts if ts is not None else fallback_ms
    return surface


def _has_node_role(device: Mapping[str, Any]) -> bool:
    """``listApprovedPairedDeviceRoles(device).includes("node")``: the roles list plus the single role."""
    roles: list[Any] = []
    try:
        parsed = json.loads(device.get("roles_json") or "null")
    except ValueError:
        parsed = None
    if isinstance(parsed, list):
        roles.extend(parsed)
    roles.append(device.get("role"))
    return any(isinstance(role, str) and role.strip().lower() == "node" for role in roles)


class NodePairingPairedReader(Reader):
    kind = "nodes-paired"
    family = FAMILY
    description = "Paired nodes (nodes/paired.json) -> node surface of the paired device row"
    patterns = ("nodes/paired.json",)
    schema_name = "nodes-paired"
    target_tables = ("global.device_pairing_paired",)
    action = "import"
    depends_on = ("devices-paired",)  # writes the node surface of paired devices

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        return Inspection(record_count=len(load_object(handle, source.rel, self.schema_name)))

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        store = load_object(handle, source.rel, self.schema_name)
        db = ctx.writer.state
        if store:
            _require_devices_imported(source, ctx)
        mtime = file_mtime_ms(source, ctx.now_ms)
        attached: list[str] = []
        orphans: list[str] = []
        kept = tokens = 0
        for key, node in store.items():
            node_id = key.strip()
            if isinstance(node.get("token"), str) and node["token"]:
                tokens += 1
            device = db.first_row(PAIRED_TABLE, {"device_id": node_id}) if node_id else None
            if device is None or not _has_node_role(device):
                orphans.append(node_id or key)
                continue
            attached.append(node_id)
            if device.get("node_surface_json") is not None:
                kept += 1  # as OpenClaw: a device that already has a surface keeps it
                continue
            db.update(PAIRED_TABLE, {"node_surface_json": json_text(node_surface(node, mtime))}, {"device_id": node_id})  # adds the later column
        result = WriteResult(records=len(attached))
        if orphans:
            result.warnings.append(
                f"{source.rel}: {len(orphans)} paired node(s) not imported: no paired device with the node role to attach to "
                f"(first: {orphans[0]}); the retired copy keeps them -- pair the node again"
            )
        if tokens:
            result.notices.append(
                f"{source.rel}: {tokens} legacy node token(s) not carried over (nodes authenticate with their device identity); kept in the retired copy"
            )
        if kept:
            result.notices.append(f"{source.rel}: kept {kept} node surface(s) already in the database")
        if attached:
            ids = json.dumps(sorted(attached))
            result.expect(
                "global", PAIRED_TABLE, "device_id IN (SELECT value FROM json_each(?)) AND node_surface_json IS NOT NULL", (ids,), len(attached)
            )
        result.report.update({
            "nodes": len(store),
            "attached": len(attached),
            "skipped_without_node_device": len(orphans),
            "legacy_node_tokens_not_carried": tokens,
            "kept_database_surfaces": kept,
        })
        return result


class NodePairingPendingReader(Reader):
    kind = "nodes-pending"
    family = FAMILY
    description = "Pending node pairing requests (nodes/pending.json) -> pending node surface of the paired device row"
    patterns = ("nodes/pending.json",)
    schema_name = "nodes-pending"
    target_tables = ("global.device_pairing_paired",)
    action = "import"
    depends_on = ("devices-paired",)  # writes the pending node surface of paired devices

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        return Inspection(record_count=len(load_object(handle, source.rel, self.schema_name)))

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        store = load_object(handle, source.rel, self.schema_name)
        db = ctx.writer.state
        if store:
            _require_devices_imported(source, ctx)
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
            device = db.first_row(PAIRED_TABLE, {"device_id": node_id})
            if device is None:
                orphans.append(node_id)
                continue
            attached.append(node_id)
            current = _surface_of(device.get("pending_node_surface_json"))
            if current is not None and (int64(current.get("ts")) or 0) > surface["ts"]:
                kept += 1
                continue
            db.update(PAIRED_TABLE, {"pending_node_surface_json": json_text(surface)}, {"device_id": node_id})  # adds the later column
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
        if attached:
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
