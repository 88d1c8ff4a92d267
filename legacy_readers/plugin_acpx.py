"""ACPX plugin process leases -> ``plugin_state_entries`` (plugin ``acpx``).

``acpx/process-leases.json`` held the whole lease registry (ACP agent processes the
gateway started, so stale ones can be reaped at the next start). OpenClaw now stores one
row per lease under ``acpx/process-leases``. Accepted shapes: ``{leases: [...]}``,
``{leases: {id: lease}}``, a bare array, or a bare ``{id: lease}`` map. Key = the lease's
``leaseId``/``id`` (else its map key, else ``pid:<pid>``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, BinaryIO

from legacy_readers._plugin_state import EntryContext, PluginStateReader, StateEntry, as_ms, load_document
from legacy_readers.base import Source, json_type
from statekit.errors import SourceError

PLUGIN = "acpx"


def _leases(document: Any) -> list[tuple[str | None, Any]]:
    container = document.get("leases", document) if isinstance(document, dict) else document
    if isinstance(container, list):
        return [(None, item) for item in container]
    if isinstance(container, dict):
        return [(k, v) for k, v in container.items() if k != "version"]
    return []


class AcpxProcessLeasesReader(PluginStateReader):
    kind = "acpx-process-leases"
    family = "acpx"
    description = "ACPX process lease registry"
    patterns = ("acpx/process-leases.json",)
    schema_name = "plugin-acpx-process-leases"
    plugin_id = PLUGIN
    namespaces = ("process-leases",)

    def entries(self, source: Source, handle: BinaryIO, ectx: EntryContext) -> Iterator[StateEntry]:
        document = load_document(source, handle, self.schema_name)
        for index, (map_key, lease) in enumerate(_leases(document)):
            if not isinstance(lease, dict):
                raise SourceError(source.rel, f"expected object, found {json_type(lease)}", json_path=f"$.leases[{index}]")
            ident = lease.get("leaseId") or lease.get("id") or map_key
            if not ident and isinstance(lease.get("pid"), int):
                ident = f"pid:{lease['pid']}"
            if not isinstance(ident, str) or not ident:
                raise SourceError(source.rel, "lease has no id, leaseId or pid", json_path=f"$.leases[{index}]")
            stamp = next((as_ms(lease.get(n)) for n in ("heartbeatAt", "updatedAt", "startedAt", "createdAt") if as_ms(lease.get(n)) is not None), None)
            yield StateEntry("process-leases", ident, lease, created_at=stamp)
