"""``gateway-instance-id``: the ACPX gateway instance id (plain text) -> ``global.plugin_state_entries``.

Row ``(plugin_id 'acpx', namespace 'gateway-instance', entry_key 'current')``
with ``value_json = {"instanceId": <id>, "createdAt": <ms>}``: the record the
ACPX plugin registers and reads back (``normalizeAcpxGatewayInstanceRecord``,
OpenClaw 2026.7.35's bundle; any other shape is ignored and a new id drawn). The file
holds one id (surrounding whitespace and a trailing newline are ignored);
``createdAt`` and ``created_at`` are the file's mtime -- when the id was
written -- so a re-run gives the same row. A row already in the database is
kept when it is newer (``created_at``) than the file, replaced otherwise.
"""

from __future__ import annotations

import json
from typing import Any, BinaryIO

from statekit.legacy_readers.base import ImportContext, Inspection, ReadContext, Reader, Source, WriteResult, decode_utf8, validate
from statekit.legacy_readers.writer import Json
from statekit.values import file_mtime_ms
from statekit.errors import SourceError

FAMILY = "gateway"
TABLE = "plugin_state_entries"
PLUGIN_ID = "acpx"
NAMESPACE = "gateway-instance"
ENTRY_KEY = "current"
ENTRY = {"plugin_id": PLUGIN_ID, "namespace": NAMESPACE, "entry_key": ENTRY_KEY}  # the row's key


def read_instance_id(handle: BinaryIO, rel: str, schema_name: str) -> str:
    raw = handle.read()
    content = decode_utf8(raw, rel).strip()
    if not content:
        raise SourceError(rel, "file is empty")
    if "\n" in content or "\r" in content:
        raise SourceError(rel, "expected a single line holding the instance id", line=2)
    validate(content, schema_name, rel)
    return content


class GatewayInstanceIdReader(Reader):
    kind = "gateway-instance-id"
    family = FAMILY
    description = "ACPX gateway instance id (gateway-instance-id, plain text)"
    patterns = ("gateway-instance-id",)
    schema_name = "gateway-instance-id"
    target_tables = ("global.plugin_state_entries",)
    action = "import"

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        read_instance_id(handle, source.rel, self.schema_name or "")
        return Inspection(record_count=1)

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        instance_id = read_instance_id(handle, source.rel, self.schema_name or "")
        db = ctx.writer.state
        created = file_mtime_ms(source, ctx.now_ms)
        existing = db.first_row(TABLE, ENTRY)
        result = WriteResult(records=1)
        decision = "imported"
        if existing is not None:
            try:
                current: Any = json.loads(existing.get("value_json") or "null")
            except ValueError:
                current = None
            current_id = current.get("instanceId") if isinstance(current, dict) else None
            if current_id == instance_id:
                decision = "same id already in the database"
            elif (existing.get("created_at") or 0) > created:
                decision = "kept newer database row"
                result.notices.append(f"{source.rel}: the database holds a newer gateway instance id; kept it, file retired")
            else:
                decision = "replaced older database row"
        if decision in ("imported", "replaced older database row"):
            value = {"instanceId": instance_id, "createdAt": created}
            db.upsert(
                TABLE,
                {**ENTRY, "value_json": Json(value), "created_at": created, "expires_at": None},
                tuple(ENTRY),
            )
        db.expect_rows(TABLE, ENTRY, 1)
        result.report.update({"instance_id": instance_id, "decision": decision})
        return result
