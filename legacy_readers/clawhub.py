"""ClawHub skill install tracking -> ``global.plugin_state_entries`` (``core:clawhub-skills`` / ``skill-installs``).

Legacy sidecars inside a workspace (probed by discovery, workspaces are not
walked):

* ``.clawhub/lock.json`` (older ``.clawdhub/lock.json``):
  ``{"version": 1, "skills": {"<slug>": {"version", "installedAt"}}}``;
* ``skills/<slug>/.clawhub/origin.json`` (or ``.clawdhub``):
  ``{"version": 1, "registry", "slug", "installedVersion", "installedAt"}``.

One row per workspace and skill, as OpenClaw's doctor writes it: key
``<sha256(workspace path)[0:24]>:<slug>``, value ``{version: 1, registry,
slug, installedVersion, installedAt, workspaceDir, targetDir, updatedAt}``,
``created_at`` = ``installedAt``. The workspace path is the workspace's
absolute path where it is now; ``targetDir`` is ``<workspace>/skills/<slug>``
for lock entries and the origin file's skill dir for origins; ``updatedAt``
is the newest mtime of the files that fed the row. Lock entries know no
registry (``https://clawhub.ai`` is assumed).

Lock and origin of one skill are separate sources; they merge into the same
row whatever the order: an origin's fields win over what is there, a lock
entry only fills fields still missing (origins are the more precise record),
``updatedAt`` keeps the maximum.

A file whose shape is wrong (bad version, bad slug, missing version or
install time) is refused whole and stays in place, like OpenClaw leaves the
sidecars untouched when any of them warns.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import PurePosixPath
from typing import Any, BinaryIO

from statekit.legacy_readers._small_stores import PLUGIN_STATE, put_plugin_state, workspace_path
from statekit.documents import load_document
from statekit.values import file_mtime_ms, integer
from statekit.legacy_readers.base import ImportContext, Inspection, ReadContext, Reader, Source, WriteResult

PLUGIN_ID, NAMESPACE = "core:clawhub-skills", "skill-installs"
DEFAULT_REGISTRY = "https://clawhub.ai"
DOT_DIRS = (".clawhub", ".clawdhub")
WORKSPACE_ROOTS = ("workspace", "workspace-*", "agents/*/workspace")
LOCK_FILES = tuple(f"{d}/lock.json" for d in DOT_DIRS)
ORIGIN_FILES = tuple(f"skills/*/{d}/origin.json" for d in DOT_DIRS)


def workspace_rel_of(rel: str) -> str:
    parts = PurePosixPath(rel).parts
    for index, part in enumerate(parts):
        if part in DOT_DIRS:
            # <ws>/.clawhub/lock.json or <ws>/skills/<slug>/.clawhub/origin.json
            cut = index if parts[index + 1] == "lock.json" else index - 2
            return "/".join(parts[:cut])
    raise ValueError(rel)


def entry_key(path: str, slug: str) -> str:
    return f"{hashlib.sha256(path.encode('utf-8')).hexdigest()[:24]}:{slug}"


def _merge(existing: dict[str, Any] | None, incoming: dict[str, Any], incoming_wins: bool) -> dict[str, Any]:
    if existing is None:
        return incoming
    if incoming_wins:
        merged = {**existing, **incoming}
        for field in ("registry", "installedVersion", "installedAt"):
            if not incoming.get(field):
                merged[field] = existing.get(field) or incoming.get(field)
    else:
        merged = {**incoming, **existing}
        for field in ("registry", "installedVersion", "installedAt"):
            if not existing.get(field):
                merged[field] = incoming.get(field)
    merged["updatedAt"] = max(integer(existing.get("updatedAt")) or 0, integer(incoming.get("updatedAt")) or 0)
    return merged


def _write_records(source: Source, ctx: ImportContext, records: list[dict[str, Any]], incoming_wins: bool) -> WriteResult:
    db = ctx.writer.state
    keys = []
    for record in records:
        key = entry_key(record["workspaceDir"], record["slug"])
        row = db.first(PLUGIN_STATE, ("value_json",), {"plugin_id": PLUGIN_ID, "namespace": NAMESPACE, "entry_key": key})
        existing = None
        if row is not None:
            try:
                parsed = json.loads(row[0])
                existing = parsed if isinstance(parsed, dict) else None
            except ValueError:
                existing = None
        merged = _merge(existing, record, incoming_wins)
        created = integer(merged.get("installedAt"))
        put_plugin_state(db, PLUGIN_ID, NAMESPACE, key, merged, created if created is not None else merged["updatedAt"])
        keys.append(key)
    result = WriteResult(records=len(records))
    result.report.update({"workspace": workspace_rel_of(source.rel), "skills": sorted(r["slug"] for r in records)})
    return result


class ClawHubLockReader(Reader):
    kind = "clawhub-lock"
    family = "clawhub"
    description = "ClawHub skill lock <workspace>/.clawhub/lock.json (.clawdhub)"
    workspace_patterns = LOCK_FILES
    patterns = tuple(f"{root}/{name}" for root in WORKSPACE_ROOTS for name in LOCK_FILES)
    schema_name = "clawhub-lock"
    target_tables = ("global.plugin_state_entries",)
    action = "import"

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        document = load_document(source, handle, self.schema_name or "")
        return Inspection(record_count=len(document["skills"]))

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        document = load_document(source, handle, self.schema_name or "")
        ws = workspace_path(source, workspace_rel_of(source.rel))
        mtime = file_mtime_ms(source, ctx.now_ms)
        records = []
        for raw_slug, entry in document["skills"].items():
            slug = raw_slug.strip()
            records.append(
                {
                    "version": 1,
                    "registry": DEFAULT_REGISTRY,
                    "slug": slug,
                    "installedVersion": entry["version"],
                    "installedAt": entry["installedAt"],
                    "workspaceDir": ws,
                    "targetDir": f"{ws}/skills/{slug}",
                    "updatedAt": mtime,
                }
            )
        return _write_records(source, ctx, records, incoming_wins=False)


class ClawHubOriginReader(Reader):
    kind = "clawhub-origin"
    family = "clawhub"
    description = "ClawHub skill origin <workspace>/skills/<slug>/.clawhub/origin.json (.clawdhub)"
    workspace_patterns = ORIGIN_FILES
    patterns = tuple(f"{root}/{name}" for root in WORKSPACE_ROOTS for name in ORIGIN_FILES)
    schema_name = "clawhub-origin"
    target_tables = ("global.plugin_state_entries",)
    action = "import"

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        load_document(source, handle, self.schema_name or "")
        return Inspection(record_count=1)

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        document = load_document(source, handle, self.schema_name or "")
        ws_rel = workspace_rel_of(source.rel)
        ws = workspace_path(source, ws_rel)
        skill_dir = workspace_path(source, str(PurePosixPath(source.rel).parent.parent))
        record = {
            **document,
            "slug": document["slug"].strip(),
            "workspaceDir": ws,
            "targetDir": skill_dir,
            "updatedAt": file_mtime_ms(source, ctx.now_ms),
        }
        return _write_records(source, ctx, [record], incoming_wins=True)
