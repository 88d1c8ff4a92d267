"""Phone Control arm state ``plugins/phone-control/armed.json`` -> ``global.plugin_state_entries``.

Version 1 ``{version, armedAtMs, expiresAtMs|null, removedFromDeny}`` or
version 2 (adds ``group``, ``armedCommands``, ``addedToAllow``), validated
exactly like OpenClaw's ``isLegacyPhoneControlArmState`` (anything else is
refused and stays in place). One row: plugin ``phone-control``, namespace
``arm-state``, key ``current``, the record as value, ``created_at`` = the
file's mtime. Re-import upserts the row.
"""

from __future__ import annotations

from typing import BinaryIO

from statekit.legacy_readers._small_stores import put_plugin_state
from statekit.documents import load_document
from statekit.values import file_mtime_ms
from statekit.legacy_readers.base import ImportContext, Inspection, ReadContext, Reader, Source, WriteResult

PLUGIN_ID, NAMESPACE, ENTRY_KEY = "phone-control", "arm-state", "current"


class PhoneControlArmStateReader(Reader):
    kind = "phone-control-arm-state"
    family = "phone-control"
    description = "Phone Control arm state plugins/phone-control/armed.json"
    patterns = ("plugins/phone-control/armed.json",)
    schema_name = "phone-control-arm-state"
    target_tables = ("global.plugin_state_entries",)
    action = "import"

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        load_document(source, handle, self.schema_name or "")
        return Inspection(record_count=1)

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        document = load_document(source, handle, self.schema_name or "")
        put_plugin_state(ctx.writer.state, PLUGIN_ID, NAMESPACE, ENTRY_KEY, document, file_mtime_ms(source, ctx.now_ms))
        result = WriteResult(records=1)
        result.report.update({"plugin_id": PLUGIN_ID, "namespace": NAMESPACE, "version": document["version"]})
        return result
