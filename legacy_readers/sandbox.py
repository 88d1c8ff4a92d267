"""Sandbox container / browser registries -> ``global.sandbox_registry_entries``.

OpenClaw kept two registries under ``<state>/sandbox/``, first monolithic
(``containers.json`` / ``browsers.json``: ``{"entries": [...]}``), later
sharded (``containers/<sha256(name)>.json`` / ``browsers/<sha256(name)>.json``,
one entry per file). Every entry becomes one row keyed by
``(registry_kind, container_name)`` with ``registry_kind`` ``container`` or
``browser`` (the values OpenClaw's SQLite registry reads):

* exactly as OpenClaw 2026.7.35's own import of these files writes a row
  (``writeLegacyEntryIfMissing`` + ``containerEntryToRow`` /
  ``browserEntryToRow``): the entry with ``sessionKey``/``image`` defaulted
  to ``""``, ``createdAtMs``/``lastUsedAtMs`` to ``0`` (and a browser's
  ``cdpPort`` to ``0``) when absent, projected into the typed columns;
  ``backend_id``, ``runtime_label`` and ``config_label_kind`` only when the
  entry has them (OpenClaw fills ``docker`` / the container name / ``Image``
  when it reads the row back, not in the row);
* ``entry_json`` is that entry as ``JSON.stringify`` writes it, ``updated_at``
  the file's mtime (OpenClaw: the time of its import).

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

from statekit.values import file_mtime_ms, integer, js_json
from statekit.documents import load_document
from statekit.values import trimmed as text  # the trimmed non-empty string
from statekit.legacy_readers.base import ImportContext, Inspection, ReadContext, Reader, Source, WriteResult

TABLE = "sandbox_registry_entries"
KIND_OF_NAME = {"containers": "container", "browsers": "browser"}


def registry_kind_of(rel: str) -> str:
    parts = PurePosixPath(rel).parts
    name = parts[1][: -len(".json")] if len(parts) == 2 else parts[1]
    return KIND_OF_NAME[name]


def _string(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _number(value: Any) -> Any:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def release_entry(kind: str, entry: dict[str, Any]) -> dict[str, Any]:
    """The entry as 2026.7.35's ``writeLegacyEntryIfMissing`` completes it before writing the row."""
    completed = {
        **entry,
        "containerName": entry["containerName"],
        "sessionKey": _string(entry.get("sessionKey")),
        "createdAtMs": _number(entry.get("createdAtMs")),
        "lastUsedAtMs": _number(entry.get("lastUsedAtMs")),
        "image": _string(entry.get("image")),
    }
    if kind == "browser":
        completed["cdpPort"] = _number(entry.get("cdpPort"))
    return completed


def registry_row(kind: str, entry: dict[str, Any], mtime: int) -> dict[str, Any]:
    completed = release_entry(kind, entry)
    container = kind == "container"
    return {
        "registry_kind": kind,
        "container_name": completed["containerName"],
        "session_key": completed["sessionKey"],
        "backend_id": text(completed.get("backendId")) if container else None,
        "runtime_label": text(completed.get("runtimeLabel")) if container else None,
        "image": completed["image"],
        "created_at_ms": integer(completed["createdAtMs"]),
        "last_used_at_ms": integer(completed["lastUsedAtMs"]),
        "config_label_kind": text(completed.get("configLabelKind")) if container else None,
        "config_hash": text(completed.get("configHash")),
        "cdp_port": None if container else integer(completed["cdpPort"]),
        "no_vnc_port": None if container else integer(completed.get("noVncPort")),
        "entry_json": js_json(completed),
        "updated_at": mtime,
    }


def _write_entries(source: Source, ctx: ImportContext, kind: str, entries: list[dict[str, Any]]) -> WriteResult:
    mtime = file_mtime_ms(source, ctx.now_ms)
    names: dict[str, None] = {}
    for entry in entries:
        ctx.writer.state.upsert(TABLE, registry_row(kind, entry, mtime), ("registry_kind", "container_name"))
        names[entry["containerName"]] = None
    result = WriteResult(records=len(entries))
    if len(names) < len(entries):
        result.notices.append(f"{source.rel}: {len(entries) - len(names)} repeated container name(s); the later entry wins")
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

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
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
    depends_on = ("sandbox-registry",)  # shards merge into the registry rows

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
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

    def agent_for(self, rel: str) -> str | None:
        return None
