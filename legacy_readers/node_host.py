"""``node.json``: node-host configuration -> ``global.node_host_config``.

One singleton row ``config_key = 'current'`` (OpenClaw's key). Shape:
``{version: 1, nodeId, token?, displayName?, gateway?: {host, port, tls,
tlsFingerprint, contextPath?, cloudflareAccess?}, installedAppsSharing?,
commands?}``. The file's mtime is the row's ``updated_at_ms``.

Merge with a row already in the database (as OpenClaw's own doctor does):
the same ``node_id`` and a newer row -> the row is kept and the file retired;
an older row -> replaced; a different ``node_id``, or the same timestamp
with different content -> conflict, the file stays. The legacy ``token`` is
imported into the ``token`` column (the target schema has one; newer
OpenClaw doctors drop it because node auth moved to the device identity);
the receipt holds its fingerprint. ``gateway.contextPath``,
``gateway.cloudflareAccess`` and ``installedAppsSharing`` have no column in the
version-1 table; 2026.9.6's upgrade reads them from ``gateway_context_path``,
``gateway_cloudflare_access_json`` and ``installed_apps_sharing`` when the table
has those columns, so they are added for a file that carries them
(``legacy_readers._later_columns``). Other fields (``commands``) are named in a
notice and kept in the retired copy.
"""

from __future__ import annotations

from typing import Any, BinaryIO

from statekit.values import file_mtime_ms, js_json, record, text

from statekit.legacy_readers.base import ImportContext, Inspection, ReadContext, Reader, Source, WriteResult, fingerprint
from statekit.documents import load_object
from statekit.errors import SourceError

FAMILY = "node-host"
TABLE = "node_host_config"
CONFIG_KEY = "current"
TOP_FIELDS: tuple[str, ...] = ("version", "nodeId", "token", "displayName", "gateway")
TOP_FIELDS = (*TOP_FIELDS, "installedAppsSharing")
GATEWAY_FIELDS = ("host", "port", "tls", "tlsFingerprint", "contextPath", "cloudflareAccess")
COMPARED = ("node_id", "token", "display_name", "gateway_host", "gateway_port", "gateway_tls", "gateway_tls_fingerprint",
            "gateway_context_path", "gateway_cloudflare_access_json", "installed_apps_sharing")  # fmt: skip


def _clean(value: Any) -> str | None:
    value = text(value)
    return value.strip() if value is not None and value.strip() else None


def config_row(document: dict[str, Any], updated_at: int) -> dict[str, Any]:
    gateway = record(document.get("gateway"))
    tls = gateway.get("tls")
    return {
        "config_key": CONFIG_KEY,
        "version": 1,
        "node_id": document["nodeId"].strip(),
        "token": _clean(document.get("token")),
        "display_name": _clean(document.get("displayName")),
        "gateway_host": _clean(gateway.get("host")),
        "gateway_port": gateway.get("port") if isinstance(gateway.get("port"), int) and not isinstance(gateway.get("port"), bool) else None,
        "gateway_tls": None if not isinstance(tls, bool) else int(tls),
        "gateway_tls_fingerprint": _clean(gateway.get("tlsFingerprint")),
        "updated_at_ms": updated_at,
        # Columns 2026.9.6's upgrade reads when present (added only for a value).
        "gateway_context_path": _clean(gateway.get("contextPath")),
        "gateway_cloudflare_access_json": js_json(cloud) if isinstance(cloud := gateway.get("cloudflareAccess"), dict) else None,
        "installed_apps_sharing": None if not isinstance(sharing := document.get("installedAppsSharing"), bool) else int(sharing),
    }


def unmapped(document: dict[str, Any]) -> list[str]:
    names = [name for name in document if name not in TOP_FIELDS]
    gateway = document.get("gateway")
    if isinstance(gateway, dict):
        names += [f"gateway.{name}" for name in gateway if name not in GATEWAY_FIELDS and gateway[name] not in (None, "")]
    return sorted(names)


class NodeHostConfigReader(Reader):
    kind = "node-host-config"
    family = FAMILY
    description = "Node-host configuration (node.json)"
    patterns = ("node.json",)
    schema_name = "node-host-config"
    target_tables = ("global.node_host_config",)
    action = "import"

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        load_object(handle, source.rel, self.schema_name)
        return Inspection(record_count=1)

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        document = load_object(handle, source.rel, self.schema_name)
        db = ctx.writer.state
        row = config_row(document, file_mtime_ms(source, ctx.now_ms))
        existing = db.first_row(TABLE, {"config_key": CONFIG_KEY})
        result = WriteResult(records=1)
        decision = "imported"
        if existing is not None:
            if existing.get("node_id") != row["node_id"]:
                raise SourceError(source.rel, "nodeId conflicts with the node-host config already in the database; left in place")
            existing_at = existing.get("updated_at_ms") or 0
            same = all(existing.get(c) == row.get(c) for c in COMPARED)
            if existing_at > row["updated_at_ms"]:
                decision = "kept newer database row"
                result.notices.append(f"{source.rel}: kept the newer node-host config already in the database; file retired")
            elif existing_at == row["updated_at_ms"] and not same:
                raise SourceError(source.rel, "diverges from the database row written at the same timestamp; left in place")
            else:
                decision = "replaced older database row" if existing_at < row["updated_at_ms"] else "identical"
        if decision != "kept newer database row":
            db.upsert(TABLE, row, ("config_key",))
        extra = unmapped(document)
        if extra:
            result.notices.append(f"{source.rel}: field(s) without a column kept only in the retired copy: {', '.join(extra)}")
        db.expect_rows(TABLE, {"config_key": CONFIG_KEY, "node_id": row["node_id"]}, 1)
        result.report.update({
            "node_id": row["node_id"],
            "decision": decision,
            "has_token": row["token"] is not None,
            "fields_without_column": extra,
        })
        if row["token"] is not None:
            result.report["token_fingerprint"] = fingerprint(row["token"])
        return result
