"""``update-check.json``: update-notifier state -> ``global.update_check_state``.

One row, ``state_key = 'default'``, as OpenClaw 2026.7.35 imported the file:
every field a TEXT column holding the string as written (a blank or
non-string field NULL), the ISO-8601 instants (``lastCheckedAt``,
``autoFirstSeenAt``, ``autoLastAttemptAt``, ``autoLastSuccessAt``) included,
and ``updated_at_ms`` = the import time. statekit is stricter and kinder in
two places: an instant that is not ISO-8601 is refused (the file stays), and
a numeric instant (epoch ms, which the release would drop) is stored in the
release's ``toISOString`` form. A row already in the database is kept (the
release keeps it too); the file is retired with a notice.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, BinaryIO

from statekit.legacy_readers.base import ImportContext, Inspection, ReadContext, Reader, Source, WriteResult
from statekit.documents import load_object
from statekit.values import int64 as ms, iso_to_ms as parse_iso_ms
from statekit.errors import SourceError

FAMILY = "update-check"
TABLE = "update_check_state"
STATE_KEY = "default"
STRING_FIELDS = {
    "lastNotifiedVersion": "last_notified_version",
    "lastNotifiedTag": "last_notified_tag",
    "lastAvailableVersion": "last_available_version",
    "lastAvailableTag": "last_available_tag",
    "autoInstallId": "auto_install_id",
    "autoFirstSeenVersion": "auto_first_seen_version",
    "autoFirstSeenTag": "auto_first_seen_tag",
    "autoLastAttemptVersion": "auto_last_attempt_version",
    "autoLastSuccessVersion": "auto_last_success_version",
}
INSTANT_FIELDS = {
    "lastCheckedAt": "last_checked_at",
    "autoFirstSeenAt": "auto_first_seen_at",
    "autoLastAttemptAt": "auto_last_attempt_at",
    "autoLastSuccessAt": "auto_last_success_at",
}


def iso_from_ms(value: int) -> str:
    """JavaScript's ``Date#toISOString`` form: millisecond precision, ``Z``."""
    stamp = datetime.fromtimestamp(value / 1000, tz=timezone.utc)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{stamp.microsecond // 1000:03d}Z"


def instant(value: Any, rel: str, field: str) -> str | None:
    """The ISO string as written (the release's value), a numeric ms instant in ``toISOString`` form."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, str):
        if parse_iso_ms(value) is None:
            raise SourceError(rel, "is not an ISO-8601 date-time", json_path=f"$.{field}")
        return value
    number = ms(value)
    if number is None:
        raise SourceError(rel, "expected an ISO-8601 string or epoch milliseconds", json_path=f"$.{field}")
    return iso_from_ms(number)


class UpdateCheckReader(Reader):
    kind = "update-check"
    family = FAMILY
    description = "Update-check notifier state (update-check.json)"
    patterns = ("update-check.json",)
    schema_name = "update-check"
    target_tables = ("global.update_check_state",)
    action = "import"

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        document = load_object(handle, source.rel, self.schema_name)
        for field in INSTANT_FIELDS:
            instant(document.get(field), source.rel, field)
        return Inspection(record_count=1)

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        document = load_object(handle, source.rel, self.schema_name)
        db = ctx.writer.state
        row: dict[str, Any] = {"state_key": STATE_KEY}
        for field, column in STRING_FIELDS.items():
            value = document.get(field)
            row[column] = value if isinstance(value, str) and value.strip() else None
        for field, column in INSTANT_FIELDS.items():
            row[column] = instant(document.get(field), source.rel, field)
        row["updated_at_ms"] = ctx.now_ms
        existing = db.first_row(TABLE, {"state_key": STATE_KEY})
        result = WriteResult(records=1)
        if existing is not None:
            decision = "kept database row"
            if any(existing.get(k) != v for k, v in row.items() if k != "updated_at_ms"):
                result.notices.append(f"{source.rel}: kept the update-check state already in the database; file retired")
        else:
            db.upsert(TABLE, row, ("state_key",))
            decision = "imported"
        extra = sorted(set(document) - set(STRING_FIELDS) - set(INSTANT_FIELDS))
        if extra:
            result.notices.append(f"{source.rel}: field(s) without a column kept only in the retired copy: {', '.join(extra)}")
        db.expect_rows(TABLE, {"state_key": STATE_KEY}, 1)
        result.report.update({"decision": decision, "fields_without_column": extra})
        return result
