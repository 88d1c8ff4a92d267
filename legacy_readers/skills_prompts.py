"""Content-addressed skill prompt cache: ``agents/<id>/sessions/skills-prompts/sha256/<xx>/<sha256>.txt``.

OpenClaw 2026.5-2026.7 stores the rendered skills section of the system
prompt once per content hash; ``sessions.json`` entries point at it through
``skillsSnapshot.promptRef`` (``{version, algorithm: "sha256", hash, bytes}``),
and the session index reader keeps that reference in ``entry_json``. The text
is regenerable from the installed skills, but it is small and the reference
would otherwise dangle, so it is imported into the agent's ``cache_entries``
(scope ``skills-prompts``, key ``sha256:<hash>``, the bytes in ``blob``, a
small descriptor in ``value_json``, no expiry). A file whose content does not
hash to its own name is a corrupt cache entry: it is reported and left in place.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from typing import BinaryIO

from legacy_readers.base import ImportContext, Inspection, Reader, Source, WriteResult, upsert
from statekit.errors import SourceError

SCOPE = "skills-prompts"
NAME_RE = re.compile(r"^(?P<hash>[0-9a-f]{64})\.txt$")
MAX_BYTES = 16 << 20


def prompt_hash(rel: str) -> str:
    match = NAME_RE.match(rel.rsplit("/", 1)[-1])
    if match is None:
        raise SourceError(rel, "file name is not <sha256>.txt")
    return match.group("hash")


def _read_checked(source: Source, handle: BinaryIO) -> tuple[str, bytes]:
    expected = prompt_hash(source.rel)
    data = handle.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise SourceError(source.rel, f"larger than {MAX_BYTES} bytes; not a skill prompt")
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected:
        raise SourceError(source.rel, "content does not match the sha256 in its file name (corrupt cache entry)")
    return expected, data


class SkillsPromptReader(Reader):
    kind = "skills-prompt"
    family = "sessions"
    description = "Content-addressed skill prompt text referenced by sessions.json skillsSnapshot.promptRef"
    patterns = ("agents/*/sessions/skills-prompts/sha256/**.txt", "sessions/skills-prompts/sha256/**.txt")
    target_tables = ("agent.cache_entries",)
    action = "import"
    order = 46

    def inspect(self, source: Source, handle: BinaryIO) -> Inspection:
        _read_checked(source, handle)
        return Inspection(record_count=1)

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        agent_id = source.agent_id
        if agent_id is None:
            raise SourceError(source.rel, "cannot tell which agent owns this skill prompt")
        digest, data = _read_checked(source, handle)
        try:
            updated = int(os.stat(source.path).st_mtime * 1000)
        except OSError:
            updated = ctx.now_ms
        key = f"sha256:{digest}"
        descriptor = {"version": 1, "algorithm": "sha256", "hash": digest, "bytes": len(data), "contentType": "text/plain; charset=utf-8"}
        upsert(
            ctx.agent_db(agent_id),
            "cache_entries",
            {
                "scope": SCOPE,
                "key": key,
                "value_json": json.dumps(descriptor, separators=(",", ":")),
                "blob": data,
                "expires_at": None,
                "updated_at": updated,
            },
            ("scope", "key"),
        )
        result = WriteResult(records=1)
        result.expect("agent:" + agent_id, "cache_entries", "scope = ? AND key = ? AND length(blob) = ?", (SCOPE, key, len(data)), 1)
        result.report.update({"scope": SCOPE, "key": key, "bytes": len(data)})
        return result
