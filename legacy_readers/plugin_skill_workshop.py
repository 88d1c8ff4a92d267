"""Skill Workshop plugin files -> ``plugin_state_entries`` (plugin ``skill-workshop``).

* ``skill-workshop/proposals.json`` (``openclaw.skill-workshop.proposals-manifest.v1``,
  written by 2026.7) -> ``proposals``: one row per listed proposal, key = proposal id,
  value = the manifest entry (``id, kind, status, title, ..., scanState``);
* ``skill-workshop/<workspace>.json`` (older per-workspace stores) -> ``proposals`` (one
  row per proposal, key = its id) and ``reviews`` (one row per workspace, key = the
  file's stem, value = the review counter fields);
* ``skill-workshop/skill-workshop-review-*.json``: reviewer sub-agent session sidecars,
  dropped (reviews now run through normal session transcripts).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, BinaryIO

from legacy_readers._plugin_state import (
    EntryContext,
    NotImportedReader,
    PluginStateReader,
    StateEntry,
    as_ms,
    file_stem,
    load_document,
)
from legacy_readers.base import Source, json_type
from statekit.errors import SourceError

PLUGIN = "skill-workshop"
REVIEW_FIELDS = ("reviews", "review", "reviewCount", "reviewCounter", "reviewedSessions", "lastReviewAt", "lastReviewedAt")


def _stamp(value: dict[str, Any]) -> int | None:
    for name in ("updatedAt", "createdAt"):
        stamp = as_ms(value.get(name))
        if stamp is not None:
            return stamp
    return None


class SkillWorkshopManifestReader(PluginStateReader):
    kind = "skill-workshop-proposals"
    family = "skill-workshop"
    description = "Skill Workshop proposal manifest (2026.7)"
    patterns = ("skill-workshop/proposals.json",)
    schema_name = "plugin-skill-workshop-manifest"
    plugin_id = PLUGIN
    namespaces = ("proposals",)

    def entries(self, source: Source, handle: BinaryIO, ectx: EntryContext) -> Iterator[StateEntry]:
        document = load_document(source, handle, self.schema_name)
        for proposal in document["proposals"]:
            yield StateEntry("proposals", proposal["id"], proposal, created_at=_stamp(proposal))
        ectx.report["manifest_updated_at"] = document.get("updatedAt")


class SkillWorkshopStoreReader(PluginStateReader):
    kind = "skill-workshop-store"
    family = "skill-workshop"
    description = "Skill Workshop per-workspace proposal/review store (pre-2026.7)"
    patterns = ("skill-workshop/*.json",)
    exclude = ("skill-workshop/proposals.json", "skill-workshop/skill-workshop-review-*.json")
    schema_name = "plugin-skill-workshop-store"
    plugin_id = PLUGIN
    namespaces = ("proposals", "reviews")

    def entries(self, source: Source, handle: BinaryIO, ectx: EntryContext) -> Iterator[StateEntry]:
        document = load_document(source, handle, self.schema_name)
        workspace = file_stem(source.rel)
        proposals = document.get("proposals") or []
        items = list(proposals.items()) if isinstance(proposals, dict) else [(None, p) for p in proposals]
        for index, (key, proposal) in enumerate(items):
            if not isinstance(proposal, dict):
                raise SourceError(source.rel, f"expected object, found {json_type(proposal)}", json_path=f"$.proposals[{index}]")
            ident = proposal.get("id") or key
            if not isinstance(ident, str) or not ident.strip():
                raise SourceError(source.rel, "proposal has no id", json_path=f"$.proposals[{index}]")
            value = dict(proposal)
            value.setdefault("workspace", workspace)
            yield StateEntry("proposals", ident, value, created_at=_stamp(proposal))
        review = {name: document[name] for name in REVIEW_FIELDS if name in document}
        if review:
            yield StateEntry("reviews", workspace, review)


class SkillWorkshopReviewSidecar(NotImportedReader):
    kind = "skill-workshop-review-sidecar"
    family = "skill-workshop"
    description = "Skill Workshop reviewer sub-agent session sidecar"
    patterns = ("skill-workshop/skill-workshop-review-*.json",)
    plugin_id = PLUGIN
    action = "drop"
    reason = "reviewer sub-agent session sidecar; reviews now use the normal session transcripts"
