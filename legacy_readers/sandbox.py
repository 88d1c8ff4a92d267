"""Sandbox container / browser registries -> ``global.sandbox_registry_entries``.

OpenClaw kept two registries under ``<state>/sandbox/``, first monolithic
(``containers.json`` / ``browsers.json``: ``{"entries": [...]}``), later
sharded (``containers/<sha256(name)>.json`` / ``browsers/<sha256(name)>.json``,
one entry per file). Every entry becomes one row keyed by
``(registry_kind, container_name)`` with ``registry_kind`` ``container`` or
``browser`` (the values OpenClaw's SQLite registry reads):

* ``session_key``, ``image``, ``created_at_ms``, ``last_used_at_ms``,
  ``config_hash``, ``cdp_port``, ``no_vnc_port`` from the entry;
* containers get OpenClaw's defaults ``backend_id = docker``,
  ``runtime_label = containerName``, ``config_label_kind = Image`` when the
  entry has none (as its registry normaliser does); browsers keep what they
  have;
* ``entry_json`` is the (normalised) entry, ``updated_at`` the file's mtime.

Rows upsert, so re-importing a changed file converges; a shard and the
monolithic file naming the same container both upsert the same row (plan
order: monolithic first, shards after). Registry lock files
(``*.json.lock``) are stale locks of a stopped gateway: dropped.

The newest OpenClaw doctor refuses these files (upgrade through 2026.9.7);
statekit imports them as the first shipped SQLite layout did.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any, BinaryIO

from legacy_readers._jsjson import js_stringify
from legacy_readers._small_stores import file_mtime_ms, fit_row, integer, load_document, text
from legacy_readers.base import ImportContext, Inspection, Reader, Source, WriteResult, upsert

TABLE = "sandbox_registry_entries"
KIND_OF_NAME = {"containers": "container", "browsers": "browser"}


def registry_kind_of(rel: str) -> str:
    parts = PurePosixPath(rel).parts
    name = parts[1][: -len(".json")] if len(parts) == 2 else parts[1]
    return KIND_OF_NAME[name]


def normalize_entry(kind: str, entry: dict[str, Any]) -> dict[str, Any]:
    if kind != "container":
        return dict(entry)
    return {
        **entry,
        "backendId": text(entry.get("backendId")) or "docker",
        "runtimeLabel": text(entry.get("runtimeLabel")) or entry["containerName"],
        "configLabelKind": text(entry.get("configLabelKind")) or "Image",
    }


def registry_row(kind: str, entry: dict[str, Any], mtime: int) -> dict[str, Any]:
    normalized = normalize_entry(kind, entry)
    return {
        "registry_kind": kind,
        "container_name": entry["containerName"],
        "session_key": text(normalized.get("sessionKey")),
        "backend_id": text(normalized.get("backendId")),
        "runtime_label": text(normalized.get("runtimeLabel")),
        "image": text(normalized.get("image")),
        "created_at_ms": integer(normalized.get("createdAtMs")),
        "last_used_at_ms": integer(normalized.get("lastUsedAtMs")),
        "config_label_kind": text(normalized.get("configLabelKind")),
        "config_hash": text(normalized.get("configHash")),
        "cdp_port": integer(normalized.get("cdpPort")),
        "no_vnc_port": integer(normalized.get("noVncPort")),
        "entry_json": js_stringify(normalized),
        "updated_at": mtime,
    }


def _write_entries(source: Source, ctx: ImportContext, kind: str, entries: list[dict[str, Any]]) -> WriteResult:
    mtime = file_mtime_ms(source, ctx.now_ms)
    conn = ctx.global_db
    names: dict[str, None] = {}
    for entry in entries:
        upsert(conn, TABLE, fit_row(conn, TABLE, registry_row(kind, entry, mtime)), ("registry_kind", "container_name"))
        names[entry["containerName"]] = None
    result = WriteResult(records=len(entries))
    if len(names) < len(entries):
        result.notices.append(f"{source.rel}: {len(entries) - len(names)} repeated container name(s); the later entry wins")
    result.expect(
        "global", TABLE, "registry_kind = ? AND container_name IN (SELECT value FROM json_each(?))", (kind, js_stringify(sorted(names))), len(names)
    )
    result.report.update({"registry_kind": kind, "entries": len(entries), "containers": len(names)})
    return result


class SandboxRegistryReader(Reader):
    kind = "sandbox-registry"
    family = "sandbox"
    description = "Monolithic sandbox registries sandbox/containers.json, sandbox/browsers.json"
    patterns = ("sandbox/containers.json", "sandbox/browsers.json")
    schema_name = "sandbox-registry"
    target_tables = ("global.sandbox_registry_entries",)
    action = "import"
    order = 68

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO) -> Inspection:
        document = load_document(source, handle, self.schema_name or "")
        return Inspection(record_count=len(document["entries"]))

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        document = load_document(source, handle, self.schema_name or "")
        return _write_entries(source, ctx, registry_kind_of(source.rel), document["entries"])


class SandboxShardReader(Reader):
    kind = "sandbox-registry-shard"
    family = "sandbox"
    description = "Sharded sandbox registry entries sandbox/containers/*.json, sandbox/browsers/*.json"
    patterns = ("sandbox/containers/*.json", "sandbox/browsers/*.json")
    schema_name = "sandbox-registry-entry"
    target_tables = ("global.sandbox_registry_entries",)
    action = "import"
    order = 69

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO) -> Inspection:
        load_document(source, handle, self.schema_name or "")
        return Inspection(record_count=1)

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        entry = load_document(source, handle, self.schema_name or "")
        return _write_entries(source, ctx, registry_kind_of(source.rel), [entry])


class SandboxLockReader(Reader):
    kind = "sandbox-registry-lock"
    family = "sandbox"
    description = "Sandbox registry lock files (*.json.lock)"
    patterns = ("sandbox/*.json.lock", "sandbox/containers/*.json.lock", "sandbox/browsers/*.json.lock")
    target_tables = ()
    action = "drop"
    reason = "stale registry lock of a stopped gateway; holds no state"
    order = 69

    def agent_for(self, rel: str) -> str | None:
        return None
