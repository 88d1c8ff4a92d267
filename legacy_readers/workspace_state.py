"""Workspace setup milestones -> ``global.workspace_setup_state``.

Two legacy locations inside a workspace (``workspace/``, ``workspace-<agent>/``,
``agents/<id>/workspace/``): ``.openclaw/workspace-state.json`` (older) and
``openclaw-workspace-state.json`` (2026.6-2026.7). Workspaces are user
content: discovery does not walk them, it probes these two paths
(``workspace_patterns``). Each file holds ``{version, bootstrapSeededAt?,
setupCompletedAt?}`` (ISO-8601 times).

One row per workspace, keyed like OpenClaw 9.6 keys it: ``workspace_key`` =
sha256 (hex) of the workspace's canonical path (where the workspace is now,
symlinks resolved, Unicode NFC, as 9.6's workspace identity resolves it);
``workspace_path`` = that path; ``version``; the two milestones;
``updated_at`` = the import time (as 9.6's own import stamps it).
Milestones merge like OpenClaw's ``mergeWorkspaceSetupStateRecords``: the
later time wins against a row already there (so both legacy files of one
workspace, in any order, converge).

The milestones are the release's TEXT columns in ``Date#toISOString`` form
(``2026-03-01T08:00:00.000Z``): 9.6 refuses any other spelling ("workspace
bootstrap seeded timestamp is invalid"), so a file's ``...Z`` without
milliseconds or with an offset is stored normalised.

Action ``import+archive``: after the import the file is moved, byte-exact,
into ``.statekit/migrated/<run>/`` (OpenClaw archives it next to itself as
``<file>.migrated.<sha256>.<id>``; statekit keeps its one retired folder).
"""

from __future__ import annotations

import hashlib
import os
import unicodedata
from typing import Any, BinaryIO

from statekit.documents import load_document
from statekit.values import iso_to_ms, ms_to_iso
from statekit.legacy_readers.base import ImportContext, Inspection, ReadContext, Reader, Source, WriteResult
from statekit.errors import SourceError

TABLE = "workspace_setup_state"
ALIAS_TABLE = "workspace_path_aliases"
WORKSPACE_FILES = (".openclaw/workspace-state.json", "openclaw-workspace-state.json")
WORKSPACE_ROOTS = ("workspace", "workspace-*", "agents/*/workspace")
MILESTONES = (("bootstrapSeededAt", "bootstrap_seeded_at"), ("setupCompletedAt", "setup_completed_at"))


def workspace_rel_of(rel: str) -> str:
    for suffix in WORKSPACE_FILES:
        if rel.endswith("/" + suffix):
            return rel[: -len(suffix) - 1]
    raise ValueError(rel)


def workspace_key(path: str) -> str:
    return hashlib.sha256(path.encode("utf-8")).hexdigest()


def canonical_workspace_path(source: Source, workspace_rel: str) -> str:
    """The workspace's path as 9.6's workspace identity resolves it: absolute, symlinks resolved, NFC."""
    return unicodedata.normalize("NFC", os.path.realpath(source.state_dir / workspace_rel))


def workspace_alias_paths(source: Source, workspace_rel: str) -> list[str]:
    """The paths 9.6 registers as aliases of a workspace: its lexical absolute path, then its canonical one."""
    lexical = unicodedata.normalize("NFC", os.path.abspath(source.state_dir / workspace_rel))
    return list(dict.fromkeys((lexical, canonical_workspace_path(source, workspace_rel))))


def _existing_ms(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(value)
    return iso_to_ms(value)


def _iso(ms: int | None) -> str | None:
    return None if ms is None else ms_to_iso(ms)


class WorkspaceSetupStateReader(Reader):
    kind = "workspace-setup-state"
    family = "workspace-state"
    description = "Workspace bootstrap milestones (.openclaw/workspace-state.json, openclaw-workspace-state.json)"
    workspace_patterns = WORKSPACE_FILES
    patterns = tuple(f"{root}/{name}" for root in WORKSPACE_ROOTS for name in WORKSPACE_FILES)
    schema_name = "workspace-setup-state"
    target_tables = ("global.workspace_setup_state", "global.workspace_path_aliases")
    action = "import+archive"

    def agent_for(self, rel: str) -> str | None:
        return None

    def _load(self, source: Source, handle: BinaryIO) -> tuple[dict[str, Any], dict[str, int]]:
        document = load_document(source, handle, self.schema_name or "")
        times: dict[str, int] = {}
        for field, column in MILESTONES:
            raw = document.get(field)
            if raw is None:
                continue
            ms = iso_to_ms(raw)
            if ms is None:
                raise SourceError(source.rel, "not an ISO-8601 time", json_path=f"$.{field}")
            times[column] = ms
        return document, times

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        self._load(source, handle)
        return Inspection(record_count=1, details={"workspace": workspace_rel_of(source.rel)})

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        document, times = self._load(source, handle)
        path = canonical_workspace_path(source, workspace_rel_of(source.rel))
        key = workspace_key(path)
        db = ctx.writer.state
        existing = db.first(TABLE, ("version", "bootstrap_seeded_at", "setup_completed_at"), {"workspace_key": key})
        merged: dict[str, int | None] = {}
        for _field, column in MILESTONES:
            incoming = times.get(column)
            before = _existing_ms(existing[1 if column == "bootstrap_seeded_at" else 2]) if existing else None
            merged[column] = max((v for v in (incoming, before) if v is not None), default=None)
        version = max(int(document["version"]), int(existing[0] or 0) if existing else 0)
        row = {
            "workspace_key": key,
            "workspace_path": path,
            "version": version,
            "bootstrap_seeded_at": _iso(merged["bootstrap_seeded_at"]),
            "setup_completed_at": _iso(merged["setup_completed_at"]),
            "updated_at": ctx.now_ms,
        }
        db.upsert(TABLE, row, ("workspace_key",))
        aliases = workspace_alias_paths(source, workspace_rel_of(source.rel))
        for alias in aliases:  # as 9.6 registers them with the setup state; an existing alias is kept
            db.upsert(
                ALIAS_TABLE,
                {"alias_key": workspace_key(alias), "alias_path": alias, "workspace_key": key, "workspace_path": path,
                 "updated_at_ms": ctx.now_ms},
                ("alias_key",),
                update=False,
            )
        result = WriteResult(records=1)
        result.report.update(
            {
                "workspace": workspace_rel_of(source.rel),
                "workspace_key": key,
                **{column: _iso(value) for column, value in merged.items()},
            }
        )
        return result
