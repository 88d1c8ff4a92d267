"""Skill Workshop files: kept in place, where OpenClaw 2026.9.6 handles them itself.

OpenClaw 2026.9.6's core Skill Workshop doctor owns the legacy
``skill-workshop/`` files: it clears an empty proposal index and keeps the
stores and review sidecars where they are (seen on its own migration of the
every-family tree). statekit writes no rows of its own for them and leaves
them in place (``retain``) for it.
"""

from __future__ import annotations

from statekit.legacy_readers.plugins._state import RetainedPluginFile

PLUGIN = "skill-workshop"
SKILL_WORKSHOP_REASON = (
    "OpenClaw 2026.9.6's core Skill Workshop doctor owns this file (it imports or clears the legacy proposal store itself); left in place for it"
)


class SkillWorkshopManifestReader(RetainedPluginFile):
    kind = "skill-workshop-proposals"
    family = "skill-workshop"
    description = "Skill Workshop proposal manifest (2026.7)"
    patterns = ("skill-workshop/proposals.json",)
    plugin_id = PLUGIN
    reason = SKILL_WORKSHOP_REASON


class SkillWorkshopStoreReader(RetainedPluginFile):
    kind = "skill-workshop-store"
    family = "skill-workshop"
    description = "Skill Workshop per-workspace proposal/review store (pre-2026.7)"
    patterns = ("skill-workshop/*.json",)
    exclude = ("skill-workshop/proposals.json", "skill-workshop/skill-workshop-review-*.json")
    plugin_id = PLUGIN
    reason = SKILL_WORKSHOP_REASON


class SkillWorkshopReviewSidecar(RetainedPluginFile):
    kind = "skill-workshop-review-sidecar"
    family = "skill-workshop"
    description = "Skill Workshop reviewer sub-agent session sidecar"
    patterns = ("skill-workshop/skill-workshop-review-*.json",)
    plugin_id = PLUGIN
    reason = SKILL_WORKSHOP_REASON
