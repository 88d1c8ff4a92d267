"""Shared machinery for the channel/plugin readers (``plugins/*.py``).

Every plugin family turns one legacy file into rows of the global
``plugin_state_entries`` (small JSON values) or ``plugin_blob_entries``
(bytes, large documents) tables under ``(plugin_id, namespace, entry_key)``.
A reader only says how to turn its file into entries
(:meth:`PluginStateReader.entries`); this module parses, validates, counts,
upserts, validates the committed rows and writes a secret-free report.

Rows as OpenClaw 2026.9.6's doctor writes them when it imports the same
file: ``value_json`` is the value as ``JSON.stringify`` writes it;
``created_at`` is the import time unless the reader gives the entry's own
timestamp (9.6 keeps one only where its importer passes it, e.g. Telegram's
sent-message cache); ``expires_at`` is set only for entries with a TTL. A key
already in the database is kept as it is (9.6 registers imported entries
only when absent), so a rerun converges and a newer runtime row is never
clobbered. Entries whose TTL has already run out are skipped, as OpenClaw
does, and counted in the report.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, BinaryIO, ClassVar

from statekit.documents import parse_json_line, validate
from statekit.legacy_readers.base import ImportContext, Inspection, ReadContext, Reader, Source, WriteResult, fingerprint
from statekit.legacy_readers.writer import DatabaseWriter
from statekit.errors import SourceError
from statekit.values import file_mtime_ms, js_json

STATE_TABLE = "plugin_state_entries"
BLOB_TABLE = "plugin_blob_entries"
MAX_KEY_BYTES = 512


@dataclass
class StateEntry:
    """One ``plugin_state_entries`` row: a small JSON value."""

    namespace: str
    key: str
    value: Any
    created_at: int | None = None
    expires_at: int | None = None
    plugin_id: str | None = None


@dataclass
class BlobEntry:
    """One ``plugin_blob_entries`` row: bytes plus small JSON metadata."""

    namespace: str
    key: str
    blob: bytes
    metadata: dict[str, Any] = field(default_factory=dict)
    created_at: int | None = None
    expires_at: int | None = None
    plugin_id: str | None = None


@dataclass
class EntryContext:
    """What an ``entries()`` implementation may use: times, and lists for notices/warnings/report facts."""

    source: Source
    now_ms: int
    mtime_ms: int
    notices: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    report: dict[str, Any] = field(default_factory=dict)
    skipped_expired: int = 0
    skipped_invalid: int = 0
    config: dict[str, Any] = field(default_factory=dict)  # openclaw.json (empty during the plan)

    @property
    def rel(self) -> str:
        return self.source.rel


# --- small helpers shared by the plugin modules -------------------------------------


def sha_hex(text: str, length: int = 64) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]


def short_hash(*parts: Any, length: int = 32) -> str:
    """sha256 over the NUL-joined parts (the key scheme OpenClaw's plugin stores use)."""
    return sha_hex("\0".join(str(p) for p in parts), length)


def file_stem(rel: str, prefix: str = "", suffix: str = ".json") -> str:
    """The part of the file name between ``prefix`` and ``suffix`` (e.g. the account id)."""
    name = PurePosixPath(rel).name
    if prefix and name.startswith(prefix):
        name = name[len(prefix):]
    if suffix and name.endswith(suffix):
        name = name[: -len(suffix)]
    return name


def check_key(key: str, rel: str, where: str) -> str:
    if not isinstance(key, str) or not key:
        raise SourceError(rel, "entry key is empty", json_path=where)
    if len(key.encode("utf-8")) > MAX_KEY_BYTES:
        raise SourceError(rel, f"entry key is longer than {MAX_KEY_BYTES} bytes", json_path=where)
    return key


def iter_jsonl(source: Source, handle: BinaryIO, schema_name: str | None, ectx: EntryContext) -> Iterator[tuple[int, bytes, Any]]:
    """Yield ``(line number, raw line, parsed object)`` for every non-blank line, streaming.

    An invalid line fails the whole file (it stays in place), except a torn
    last line (invalid and without a final newline: a crash mid-append), which
    is reported and skipped.
    """
    pending: tuple[int, bytes, bool] | None = None
    number = 0

    def parse(item: tuple[int, bytes, bool]) -> tuple[int, bytes, Any]:
        line_no, line, _ = item
        value = parse_json_line(line, source.rel, line_no)
        if not isinstance(value, dict):
            raise SourceError(source.rel, "expected a JSON object", line=line_no)
        if schema_name:
            validate(value, schema_name, source.rel, line=line_no)
        return line_no, line, value

    for raw in handle:
        number += 1
        had_newline = raw.endswith(b"\n")
        line = raw.strip()
        if number == 1 and line.startswith(b"\xef\xbb\xbf"):
            line = line[3:].strip()
        if not line:
            continue
        if pending is not None:
            yield parse(pending)
        pending = (number, line, had_newline)
    if pending is not None:
        try:
            yield parse(pending)
        except SourceError:
            if pending[2]:
                raise
            ectx.warnings.append(f"{source.rel}:{pending[0]}: torn last line (crash mid-append) not imported; the original is kept byte-exact in the retired folder")


# --- the reader base ------------------------------------------------------------------


class PluginStateReader(Reader):
    """Base for readers that write ``plugin_state_entries`` / ``plugin_blob_entries``.

    Subclasses set ``kind``, ``patterns``, ``schema_name``, ``plugin_id`` and
    ``namespaces`` and implement :meth:`entries`.
    """

    plugin_id: ClassVar[str] = ""
    namespaces: ClassVar[tuple[str, ...]] = ()
    target_tables = ("global.plugin_state_entries",)
    action = "import"
    # Secret-bearing sources: reports carry only counts and fingerprints.
    secret: ClassVar[bool] = False

    def entries(self, source: Source, handle: BinaryIO, ectx: EntryContext) -> Iterator[StateEntry | BlobEntry]:
        raise NotImplementedError

    def should_replace(self, existing_value: Any, incoming_value: Any) -> bool:
        """Whether an imported value replaces the one a key already holds (9.6's shouldReplaceExistingEntry); default never."""
        return False

    def secret_values(self, entry: StateEntry | BlobEntry) -> list[str]:
        """Secret strings of an entry, fingerprinted (never stored) in the receipt."""
        return []

    def describe(self) -> dict[str, Any]:
        described = super().describe()
        described["plugin_id"] = self.plugin_id
        described["namespaces"] = list(self.namespaces)
        return described

    # -- plan -------------------------------------------------------------------------

    def _context(self, source: Source, now_ms: int, config: Any = None) -> EntryContext:
        return EntryContext(source=source, now_ms=now_ms, mtime_ms=file_mtime_ms(source, now_ms), config=dict(config or {}))

    def _collect(self, source: Source, handle: BinaryIO, ectx: EntryContext) -> dict[tuple[str, str, str, str], StateEntry | BlobEntry]:
        """Entries by (table, plugin, namespace, key); a later duplicate key replaces an earlier one."""
        chosen: dict[tuple[str, str, str, str], StateEntry | BlobEntry] = {}
        duplicates = 0
        for entry in self.entries(source, handle, ectx):
            check_key(entry.key, source.rel, f"$[{entry.namespace}]")
            if entry.expires_at is not None and entry.expires_at <= ectx.now_ms:
                ectx.skipped_expired += 1
                continue
            table = BLOB_TABLE if isinstance(entry, BlobEntry) else STATE_TABLE
            ident = (table, entry.plugin_id or self.plugin_id, entry.namespace, entry.key)
            if ident in chosen:
                duplicates += 1
                del chosen[ident]
            chosen[ident] = entry
        if duplicates:
            ectx.notices.append(f"{source.rel}: {duplicates} duplicate entry key(s); the last one in the file was kept")
        return chosen

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        ctx = ctx or ReadContext.for_source(source)  # the run's config and clock, as the apply step gets them
        ectx = self._context(source, ctx.now_ms, ctx.config)
        chosen = self._collect(source, handle, ectx)
        return Inspection(record_count=len(chosen), warnings=list(ectx.warnings))

    # -- apply ------------------------------------------------------------------------

    def _replaces(self, db: DatabaseWriter, plugin_id: str, namespace: str, key: str, entry: StateEntry) -> bool:
        held = _held_value(db, plugin_id, namespace, key)
        return held is not None and self.should_replace(held, entry.value)

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        ectx = self._context(source, ctx.now_ms, ctx.config)
        chosen = self._collect(source, handle, ectx)
        db = ctx.writer.state
        kept_existing = 0
        counts: dict[str, int] = {}
        keys_by_group: dict[tuple[str, str, str], list[str]] = {}
        fingerprints: list[str] = []
        for (table, plugin_id, namespace, key), entry in chosen.items():
            created = entry.created_at if entry.created_at is not None else ectx.now_ms
            if isinstance(entry, BlobEntry):
                row = {
                    "plugin_id": plugin_id,
                    "namespace": namespace,
                    "entry_key": key,
                    "metadata_json": js_json(entry.metadata),
                    "blob": sqlite_blob(entry.blob),
                    "created_at": created,
                    "expires_at": entry.expires_at,
                }
            else:
                row = {
                    "plugin_id": plugin_id,
                    "namespace": namespace,
                    "entry_key": key,
                    "value_json": js_json(entry.value),
                    "created_at": created,
                    "expires_at": entry.expires_at,
                }
            changed = db.upsert(table, row, ("plugin_id", "namespace", "entry_key"), update=False)
            if not changed and isinstance(entry, StateEntry) and self._replaces(db, plugin_id, namespace, key, entry):
                ident = {"plugin_id": plugin_id, "namespace": namespace, "entry_key": key}
                changed = db.update(STATE_TABLE, {"value_json": row["value_json"], "created_at": created, "expires_at": entry.expires_at}, ident)
            if not changed:
                kept_existing += 1
            counts[f"{plugin_id}/{namespace}"] = counts.get(f"{plugin_id}/{namespace}", 0) + 1
            keys_by_group.setdefault((table, plugin_id, namespace), []).append(key)
            for secret in self.secret_values(entry):
                if isinstance(secret, str) and secret:
                    fingerprints.append(fingerprint(secret))
        result = WriteResult(records=len(chosen), notices=list(ectx.notices), warnings=list(ectx.warnings))
        for (table, plugin_id, namespace), keys in keys_by_group.items():
            db.expect_rows(table, {"plugin_id": plugin_id, "namespace": namespace, "entry_key": keys}, len(keys))
        if kept_existing:
            result.notices.append(f"{source.rel}: {kept_existing} entr(y/ies) already in SQLite; kept them (as OpenClaw's import does)")
        result.report.update({
            "plugin_id": self.plugin_id,
            "entries": len(chosen),
            "by_namespace": dict(sorted(counts.items())),
            "kept_newer_existing": kept_existing,
            "skipped_expired": ectx.skipped_expired,
            "skipped_invalid": ectx.skipped_invalid,
        })
        if fingerprints:
            result.report["secret_fingerprints"] = sorted(set(fingerprints))
        for name, value in ectx.report.items():
            result.report.setdefault(name, value)
        return result


def _held_value(db: DatabaseWriter, plugin_id: str, namespace: str, key: str) -> Any:
    row = db.first(STATE_TABLE, ("value_json",), {"plugin_id": plugin_id, "namespace": namespace, "entry_key": key})
    try:
        return json.loads(row[0]) if row else None
    except ValueError:
        return None


def sqlite_blob(data: bytes) -> Any:
    return memoryview(data)  # what sqlite3.Binary was; the engine stores it as a BLOB


class NotImportedReader(Reader):
    """A recognised plugin file that is not imported (``drop`` or ``retain``, with a reason)."""

    plugin_id: ClassVar[str] = ""
    namespaces: ClassVar[tuple[str, ...]] = ()

    def describe(self) -> dict[str, Any]:
        described = super().describe()
        described["plugin_id"] = self.plugin_id
        described["namespaces"] = list(self.namespaces)
        return described


def in_session_dirs(*names: str) -> tuple[str, ...]:
    """Patterns for files next to a session index (``agents/<id>/sessions/`` and the flat ``sessions/``)."""
    return tuple(d + n for d in ("agents/*/sessions/", "sessions/") for n in names)


def in_workspaces(*names: str) -> tuple[str, ...]:
    """State-dir patterns for files inside every workspace layout discovery knows."""
    return tuple(d + n for d in ("workspace/", "workspace-*/", "agents/*/workspace/") for n in names)


def workspace_key(rel: str) -> str:
    """The workspace a workspace-relative file lives in, as its state-dir relative dir (``workspace-work``)."""
    parts = PurePosixPath(rel).parts
    if parts and parts[0] == "agents" and len(parts) >= 3:
        return "/".join(parts[:3])
    return parts[0] if parts else ""


__all__ = [
    "BlobEntry",
    "EntryContext",
    "NotImportedReader",
    "RetainedPluginFile",
    "PluginStateReader",
    "StateEntry",
    "external_plugin_reason",
    "check_key",
    "file_stem",
    "in_session_dirs",
    "in_workspaces",
    "iter_jsonl",
    "sha_hex",
    "short_hash",
    "workspace_key",
]


# --- files OpenClaw 2026.9.6 leaves to a plugin's own doctor -------------------------------

EXTERNAL_PLUGIN_REASON = (
    "OpenClaw 2026.9.6 does not bundle the {plugin} plugin and leaves this file in place; the "
    "installed plugin's own doctor migrates it under its own keys, so statekit keeps it for that"
)


def external_plugin_reason(plugin: str) -> str:
    """The retain reason of a file of a plugin 9.6 does not bundle (its package owns the migration)."""
    return EXTERNAL_PLUGIN_REASON.format(plugin=plugin)


class RetainedPluginFile(NotImportedReader):
    """A plugin file statekit leaves where it is, because OpenClaw (or the plugin) imports or reads it there.

    For the plugins OpenClaw 2026.9.6 does not bundle (they ship as their own packages): 9.6's doctor
    leaves their files exactly where they are, and the installed plugin's own doctor contract migrates
    them into plugin state under its own namespaces and keys. Rows statekit wrote under keys of its own
    would be read by no one while the file they came from was gone, so every file such a plugin owns is
    ``retain`` (recognised, left byte-exact, with the reason); pure caches and leftovers keep their ``drop``.
    """

    action = "retain"
