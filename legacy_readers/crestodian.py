"""Crestodian rescue approvals ``crestodian/rescue-pending/*.json`` -> ``global.plugin_state_entries``.

Each file is one pending rescue operation ``{id, createdAt, expiresAt,
operation, auditDetails}`` (the shape OpenClaw's ``isRescuePendingOperation``
accepts; anything else is refused and the file stays in place). It becomes
one row owned by ``core:crestodian`` in namespace ``rescue-pending``, keyed
by the file's basename (OpenClaw keys these by a hash of channel/sender), with
the record as value and ``created_at`` = ``createdAt`` parsed as ISO-8601
(the file's mtime when it does not parse). Rows upsert.

(The Crestodian *audit* log ``audit/crestodian.jsonl`` is imported by the
``audit-jsonl`` reader.)
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import BinaryIO

from statekit.legacy_readers._small_stores import put_plugin_state
from statekit.documents import load_document
from statekit.values import file_mtime_ms, iso_to_ms
from statekit.legacy_readers.base import ImportContext, Inspection, ReadContext, Reader, Source, WriteResult

PLUGIN_ID, NAMESPACE = "core:crestodian", "rescue-pending"


def entry_key_of(rel: str) -> str:
    name = PurePosixPath(rel).name
    return name[: -len(".json")] if name.endswith(".json") else name


class CrestodianRescuePendingReader(Reader):
    kind = "crestodian-rescue-pending"
    family = "crestodian"
    description = "Pending Crestodian rescue approvals crestodian/rescue-pending/*.json"
    patterns = ("crestodian/rescue-pending/*.json",)
    schema_name = "crestodian-rescue-pending"
    target_tables = ("global.plugin_state_entries",)
    action = "import"

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        load_document(source, handle, self.schema_name or "")
        return Inspection(record_count=1)

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        document = load_document(source, handle, self.schema_name or "")
        key = entry_key_of(source.rel)
        created = iso_to_ms(document["createdAt"])
        put_plugin_state(ctx.writer.state, PLUGIN_ID, NAMESPACE, key, document, created if created is not None else file_mtime_ms(source, ctx.now_ms))
        result = WriteResult(records=1)
        result.report.update({"plugin_id": PLUGIN_ID, "namespace": NAMESPACE, "entry_key": key})
        return result
