"""Persisted MCP OAuth sessions ``mcp-oauth/*.json`` -> ``global.plugin_state_entries``.

statekit's schema v1 has no MCP table, so each session becomes one plugin
state row owned by the core MCP client: plugin ``core:mcp``, namespace
``oauth-sessions``, key = the file's basename (the server it belongs to),
value = the stored object **without its ``state`` field** (the OAuth
``state`` of an interrupted browser round-trip is single-use; OpenClaw's
doctor drops it too), ``created_at`` = the file's mtime, no expiry (tokens are
refreshed by their own refresh token). Rows upsert.

Secrets: the value holds access/refresh tokens and client secrets. They go
into the database only; messages, notices and the receipt carry the server
key and field names, never a value.

Locks fail closed: a lock next to a session (``<name>.lock`` or
``<name>.json.lock``) may mean an OAuth login is running, so that session is
refused (left in place) and the lock itself is retained; delete the lock
once no login is running and rerun.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import BinaryIO

from statekit.legacy_readers._small_stores import put_plugin_state
from statekit.documents import load_document
from statekit.values import file_mtime_ms
from statekit.legacy_readers.base import ImportContext, Inspection, ReadContext, Reader, Source, WriteResult
from statekit.errors import SourceError

PLUGIN_ID, NAMESPACE = "core:mcp", "oauth-sessions"
DROPPED_FIELDS = ("state",)


def session_key_of(rel: str) -> str:
    return PurePosixPath(rel).name[: -len(".json")]


def _refuse_if_locked(source: Source) -> None:
    name = PurePosixPath(source.rel).name
    for lock in (source.path.with_name(name + ".lock"), source.path.with_name(name[: -len(".json")] + ".lock")):
        if lock.exists():
            raise SourceError(source.rel, f"{lock.name} exists (an OAuth login may be running); left in place, remove the stale lock and rerun")


class McpOAuthSessionReader(Reader):
    kind = "mcp-oauth-session"
    family = "mcp-oauth"
    description = "Persisted MCP OAuth sessions mcp-oauth/*.json"
    patterns = ("mcp-oauth/*.json",)
    schema_name = "mcp-oauth-session"
    target_tables = ("global.plugin_state_entries",)
    action = "import"

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        _refuse_if_locked(source)
        load_document(source, handle, self.schema_name or "")
        return Inspection(record_count=1)

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        _refuse_if_locked(source)
        document = load_document(source, handle, self.schema_name or "")
        value = {k: v for k, v in document.items() if k not in DROPPED_FIELDS}
        key = session_key_of(source.rel)
        put_plugin_state(ctx.writer.state, PLUGIN_ID, NAMESPACE, key, value, file_mtime_ms(source, ctx.now_ms))
        result = WriteResult(records=1)
        dropped = [k for k in DROPPED_FIELDS if k in document]
        if dropped:
            result.notices.append(f"{source.rel}: dropped the persisted OAuth {', '.join(dropped)} (single-use)")
        result.report.update({"plugin_id": PLUGIN_ID, "namespace": NAMESPACE, "entry_key": key, "fields": sorted(value), "dropped": dropped})
        return result


class McpOAuthLockReader(Reader):
    kind = "mcp-oauth-lock"
    family = "mcp-oauth"
    description = "MCP OAuth lock files mcp-oauth/*.lock"
    patterns = ("mcp-oauth/*.lock",)
    target_tables = ()
    action = "retain"
    reason = "MCP OAuth lock (fails closed): an OAuth login may be running; delete it once none is, then rerun to import the session"

    def agent_for(self, rel: str) -> str | None:
        return None
