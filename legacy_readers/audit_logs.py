"""Legacy audit logs (JSONL) -> ``global.plugin_state_entries``.

===============================  =====================  ===========  ==============
source                           plugin_id              namespace    time field
===============================  =====================  ===========  ==============
``logs/config-audit.jsonl``      ``core:config``        ``audit``    ``ts``
``audit/file-transfer.jsonl``    ``file-transfer``      ``audit``    ``timestamp``
``audit/crestodian.jsonl``       ``core:crestodian``    ``audit``    ``timestamp``
===============================  =====================  ===========  ==============

These are the owners and namespaces OpenClaw's own runtime stores uses
(``CONFIG_AUDIT_OWNER_ID``, ``CRESTODIAN_AUDIT_OWNER_ID``, the file-transfer
plugin), so OpenClaw finds the imported records next to the ones it writes.

Each non-blank line becomes one row, keyed as OpenClaw's doctor keys them:
``legacy:<line>:<sha256(trimmed line)[0:16]>`` (line numbers 1-based,
counting blank lines). ``value_json`` is the record re-serialised the way
``JSON.stringify`` writes it; ``created_at`` is the record's time field
parsed as ISO-8601, else the file's mtime (deterministic, where OpenClaw
used "now"). Config audit records get their ``argv`` / ``execArgv`` masked
the way OpenClaw's current config-audit writer masks them (values after
credential flags such as ``--gateway-token`` / ``--api-key``, ``--flag=value``
forms, ``KEY=VALUE`` assignments with secret-looking keys and raw token
shapes become ``***``); only the number of masked values reaches the receipt.

Bad lines: OpenClaw removes an audit log "only if no line warnings". Here any
line that is not a JSON object fails the whole file with one error naming the
line; nothing is imported and the file stays where it is (fix or delete the
line and rerun). The file is streamed line by line.

Re-import of a changed file converges: the file's namespace loses its
``legacy:*`` rows and gets them again in the same transaction (runtime rows,
keyed ``<ts>:<event>:<uuid>``, are never touched).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, BinaryIO

from statekit.values import file_mtime_ms, iso_to_ms, js_json
from statekit.legacy_readers._small_stores import PLUGIN_STATE, line_key
from statekit.legacy_readers.base import ImportContext, Inspection, ReadContext, Reader, Source, WriteResult
from statekit.documents import parse_json_line, validate
from statekit.errors import SourceError

SCHEMA = "audit-record"
BATCH = 1000

# rel -> (plugin_id, namespace, time field, mask argv?)
LOGS: dict[str, tuple[str, str, str, bool]] = {
    "logs/config-audit.jsonl": ("core:config", "audit", "ts", True),
    "audit/file-transfer.jsonl": ("file-transfer", "audit", "timestamp", False),
    "audit/crestodian.jsonl": ("core:crestodian", "audit", "timestamp", False),
}

# --- argv masking (mirrors OpenClaw's redactConfigAuditArgv) -----------------------------

SECRET_FLAGS = frozenset(
    {
        "--token", "--api-key", "--apikey", "--secret", "--password", "--passwd", "--auth-token",
        "--access-token", "--refresh-token", "--client-secret", "--hook-token", "--gateway-token",
        "--bot-token", "--app-token", "--remote-token", "--push-token", "--webhook-secret",
        "--webhook-token", "--service-account-token", "--op-service-account-token", "--bearer",
        "--bearer-token", "--pat", "--personal-access-token", "--oauth-token", "--id-token",
        "--identity-token", "--session-token", "--service-token", "--private-key", "--recovery-key",
        "--gateway-key", "--session-key", "--active-key",
    }
)  # fmt: skip
SECRET_FLAG_SUFFIX = re.compile(
    r"^--(?:[a-z0-9]+(?:-[a-z0-9]+)*-)?(?:token|secret|password|passwd|api[-_]?key|api[-_]?secret|webhook|credential"
    r"|bearer|pat|private[-_]?key|recovery[-_]?key|signing[-_]?key|encryption[-_]?key|master[-_]?key|session[-_]?key"
    r"|gateway[-_]?key|service[-_]?key|hook[-_]?key)$"
)
SECRET_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*(?:TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|PRIVATE_?KEY|CREDENTIAL)[A-Za-z0-9_]*)=(.+)$", re.I)
TOKEN_SHAPES = re.compile(
    r"(sk-[A-Za-z0-9_\-]{8,}|gh[pousr]_[A-Za-z0-9]{16,}|xox[abposr]-[A-Za-z0-9\-]{8,}|AIza[0-9A-Za-z_\-]{20,}"
    r"|gsk_[A-Za-z0-9]{16,}|npm_[A-Za-z0-9]{16,}|\b\d{6,12}:[A-Za-z0-9_\-]{30,}\b|(?i:bearer)\s+[A-Za-z0-9._\-~+/]{12,}=*)"
)


def _flag_name(arg: str) -> str | None:
    if not arg.startswith("--"):
        return None
    return arg.split("=", 1)[0].lower()


def _is_secret_flag(name: str | None) -> bool:
    return name is not None and (name in SECRET_FLAGS or bool(SECRET_FLAG_SUFFIX.match(name)))


def mask_argv(argv: list[Any]) -> tuple[list[Any], int]:
    """(masked argv, number of masked values); non-string entries are kept as they are."""
    out: list[Any] = []
    masked = 0
    mask_next = False
    for arg in argv:
        if not isinstance(arg, str):
            out.append(arg)
            mask_next = False
            continue
        if mask_next:
            mask_next = False
            out.append("***")
            masked += 1
            continue
        name = _flag_name(arg)
        if _is_secret_flag(name):
            if "=" in arg:
                out.append(arg.split("=", 1)[0] + "=***")
                masked += 1
            else:
                out.append(arg)
                mask_next = True
            continue
        assignment = SECRET_ASSIGNMENT.match(arg)
        if assignment:
            out.append(assignment.group(1) + "=***")
            masked += 1
            continue
        replaced, count = TOKEN_SHAPES.subn("***", arg)
        out.append(replaced)
        masked += count
    return out, masked


def mask_record(record: dict[str, Any]) -> tuple[dict[str, Any], int]:
    total = 0
    result = record
    for key in ("argv", "execArgv"):
        value = record.get(key)
        if isinstance(value, list):
            masked, count = mask_argv(value)
            if count:
                if result is record:
                    result = dict(record)
                result[key] = masked
                total += count
    return result, total


# --- the reader ---------------------------------------------------------------------------


def _records(source: Source, handle: BinaryIO) -> Iterator[tuple[int, bytes, dict[str, Any]]]:
    """(line number, trimmed line bytes, record) for every non-blank line; the first bad line raises."""
    number = 0
    for raw in handle:
        number += 1
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SourceError(source.rel, f"invalid UTF-8 at byte {exc.start}", line=number) from None
        if number == 1:
            text = text.lstrip("\ufeff")
        trimmed = text.strip()
        if not trimmed:
            continue
        line = trimmed.encode("utf-8")
        record = parse_json_line(line, source.rel, number)
        if not isinstance(record, dict):
            raise SourceError(source.rel, "expected a JSON object", line=number)
        validate(record, SCHEMA, source.rel, line=number)
        yield number, line, record


class AuditLogReader(Reader):
    kind = "audit-jsonl"
    family = "audit-logs"
    description = "Legacy audit logs: config audit, file-transfer audit, Crestodian audit (JSONL)"
    patterns = tuple(LOGS)
    schema_name = SCHEMA
    target_tables = ("global.plugin_state_entries",)
    action = "import"

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        count = sum(1 for _ in _records(source, handle))
        return Inspection(record_count=count)

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        plugin_id, namespace, time_field, mask = LOGS[source.rel]
        db = ctx.writer.state
        columns = ("plugin_id", "namespace", "entry_key", "value_json", "created_at", "expires_at")
        db.require_columns(PLUGIN_STATE, columns)
        fallback = file_mtime_ms(source, ctx.now_ms)
        owner = {"plugin_id": plugin_id, "namespace": namespace}
        if not ctx.merging:  # a log that came back after its import holds only new lines: keep the imported ones
            db.delete_where(PLUGIN_STATE, owner, "entry_key LIKE 'legacy:%'")  # the lines an earlier import of this log wrote
        conflict = (
            "(plugin_id, namespace, entry_key) DO UPDATE SET value_json = excluded.value_json,"
            " created_at = excluded.created_at, expires_at = excluded.expires_at"
        )
        batch: list[tuple[Any, ...]] = []
        count = masked_total = 0
        for number, line, record in _records(source, handle):
            if mask:
                record, masked = mask_record(record)
                masked_total += masked
            created = iso_to_ms(record.get(time_field)) if isinstance(record.get(time_field), str) else None
            batch.append((plugin_id, namespace, line_key(number, line), js_json(record), created if created is not None else fallback, None))
            count += 1
            if len(batch) >= BATCH:
                db.insert_many(PLUGIN_STATE, columns, batch, conflict=conflict)
                batch.clear()
        if batch:
            db.insert_many(PLUGIN_STATE, columns, batch, conflict=conflict)
        db.expect_rows(PLUGIN_STATE, owner, count)
        result = WriteResult(records=count)
        result.report.update({"plugin_id": plugin_id, "namespace": namespace, "records": count, "masked_argv_values": masked_total})
        if masked_total:
            result.notices.append(f"{source.rel}: masked {masked_total} credential-looking argv value(s) in the imported audit records")
        return result
