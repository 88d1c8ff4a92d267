"""Content-addressed skill prompt cache: ``agents/<id>/sessions/skills-prompts/sha256/<xx>/<sha256>.txt``.

OpenClaw 2026.5+ stores the rendered skills section of the system prompt once
per content hash next to the session index; a ``sessions.json`` entry points
at it through ``skillsSnapshot.promptRef`` (``{version, algorithm: "sha256",
hash, bytes}``), which the session index reader keeps in ``entry_json``.

OpenClaw 2026.9.6 still reads these blobs as FILES: it resolves a
``promptRef`` to ``<dir of the session store>/skills-prompts/sha256/<xx>/<hash>.txt``
and checks size and hash of that file; its own migration leaves them in
place. So statekit keeps them where they are (``retain``): importing them into
a table and retiring them would leave every ``promptRef`` dangling for 9.6.
"""

from __future__ import annotations

from statekit.legacy_readers.base import Reader

REASON = (
    "OpenClaw 2026.9.6 reads skill prompt blobs from these files (skillsSnapshot.promptRef -> "
    "<sessions dir>/skills-prompts/sha256/<xx>/<hash>.txt) and leaves them in place on its own migration"
)


class SkillsPromptReader(Reader):
    kind = "skills-prompt"
    family = "sessions"
    description = "Content-addressed skill prompt text referenced by sessions.json skillsSnapshot.promptRef"
    patterns = ("agents/*/sessions/skills-prompts/sha256/**.txt", "sessions/skills-prompts/sha256/**.txt")
    action = "retain"
    reason = REASON
