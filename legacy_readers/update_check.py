"""``update-check.json``: update-notifier state -> ``global.update_check_state``.

One row, ``state_key = 'default'`` (the key OpenClaw uses). The file holds
strings: versions, tags, an install id and ISO-8601 instants
(``lastCheckedAt``, ``autoFirstSeenAt``, ``autoLastAttemptAt``,
``autoLastSuccessAt``). statekit's own table declares the ``*_at`` columns
INTEGER, so instants are stored as epoch ms there; OpenClaw 2026.7 databases
declare them TEXT and get the ISO string as written (the value always
follows the existing column's declared type). A numeric instant (ms) is
accepted too. ``updated_at_ms`` is the file's mtime; a database row with a
newer ``updated_at_ms`` is kept.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, BinaryIO

from legacy_readers.base import ImportContext, Inspection, Reader, Source, WriteResult
from legacy_readers.devices import column_types, fetch_row, file_mtime_ms, load_object, ms, parse_iso_ms, write_row
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


def instant(value: Any, as_text: bool, rel: str, field: str) -> int | str | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, str):
        parsed = parse_iso_ms(value)
        if parsed is None:
            raise SourceError(rel, "is not an ISO-8601 date-time", json_path=f"$.{field}")
        return value if as_text else parsed
    number = ms(value)
    if number is None:
        raise SourceError(rel, "expected an ISO-8601 string or epoch milliseconds", json_path=f"$.{field}")
    return iso_from_ms(number) if as_text else number


class UpdateCheckReader(Reader):
    kind = "update-check"
    family = FAMILY
    description = "Update-check notifier state (update-check.json)"
    patterns = ("update-check.json",)
    schema_name = "update-check"
    target_tables = ("global.update_check_state",)
    action = "import"
    order = 52

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO) -> Inspection:
        document = load_object(handle, source.rel, self.schema_name)
        for field in INSTANT_FIELDS:
            instant(document.get(field), False, source.rel, field)
        return Inspection(record_count=1)

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        document = load_object(handle, source.rel, self.schema_name)
        conn = ctx.global_db
        types = column_types(conn, TABLE)
        mtime = file_mtime_ms(source, ctx.now_ms)
        row: dict[str, Any] = {"state_key": STATE_KEY}
        for field, column in STRING_FIELDS.items():
            value = document.get(field)
            row[column] = value if isinstance(value, str) and value.strip() else None
        for field, column in INSTANT_FIELDS.items():
            row[column] = instant(document.get(field), "TEXT" in types.get(column, "INTEGER"), source.rel, field)
        row["updated_at_ms"] = mtime
        existing = fetch_row(conn, TABLE, "state_key = ?", (STATE_KEY,))
        result = WriteResult(records=1)
        if existing is not None and (existing.get("updated_at_ms") or 0) > mtime:
            decision = "kept newer database row"
            result.notices.append(f"{source.rel}: kept the newer update-check state already in the database; file retired")
        else:
            write_row(conn, TABLE, row, ("state_key",))
            decision = "imported"
        extra = sorted(set(document) - set(STRING_FIELDS) - set(INSTANT_FIELDS))
        if extra:
            result.notices.append(f"{source.rel}: field(s) without a column kept only in the retired copy: {', '.join(extra)}")
        result.expect("global", TABLE, "state_key = ?", (STATE_KEY,), 1)
        result.report.update({"decision": decision, "instants_as": "text" if "TEXT" in types.get("last_checked_at", "") else "epoch-ms",
                              "fields_without_column": extra})
        return result
