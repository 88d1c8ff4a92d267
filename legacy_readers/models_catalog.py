"""Generated model catalogs: ``agents/<id>/agent/models.json`` and ``agents/<id>/agent/plugins/<plugin>/catalog.json``.

Both are handled the way OpenClaw 2026.9.6 handles them itself:

* ``models.json`` (also the pre-multi-agent ``agent/models.json``) stays where
  it is (``retain``): 9.6 still reads the agent's model registry from that
  file, and its own migration leaves it in place. (Version 1's
  ``agent_model_catalogs`` table is no home for it: 9.6's upgrade drops that
  table as dead, with its rows.)
* ``plugins/<plugin>/catalog.json``, a catalog a provider plugin generated
  (``generatedBy: "openclaw-plugin-model-catalog-v1"``), goes into the
  agent's own database as 9.6's doctor imports it: one ``cache_entries`` row,
  scope ``plugin-model-catalog-v1``, key the plugin id (the directory name,
  URI-decoded), ``value_json`` the file's text exactly as it is, no blob, no
  expiry, ``updated_at`` the import time; an existing row for the plugin is
  replaced. A ``catalog.json`` without that marker, or one that is not JSON,
  is not a generated catalog: 9.6 leaves it in place, and so does statekit
  (``retain``, with the reason).

Details: docs/readers/models.md.
"""

from __future__ import annotations

import json
from pathlib import PurePosixPath
from typing import Any, BinaryIO
from urllib.parse import unquote

from statekit.legacy_readers.auth_profiles import owner_agent
from statekit.legacy_readers.base import ImportContext, Inspection, ReadContext, Reader, Source, WriteResult, decode_utf8
from statekit.errors import SourceError

CACHE_SCOPE = "plugin-model-catalog-v1"
GENERATED_BY = "openclaw-plugin-model-catalog-v1"
MODELS_JSON_REASON = (
    "OpenClaw 2026.9.6 reads the agent's model registry from this file and keeps it in place "
    "(its upgrade drops agent_model_catalogs as a dead table)"
)
NOT_GENERATED_REASON = (
    "not a generated plugin catalog (no generatedBy 'openclaw-plugin-model-catalog-v1' or not JSON); "
    "OpenClaw 2026.9.6 leaves it in place too"
)


class ModelsJsonReader(Reader):
    kind = "models-json"
    family = "models"
    description = "Per-agent model registry agents/<id>/agent/models.json (read by OpenClaw as a file)"
    patterns = ("agents/*/agent/models.json", "agent/models.json")
    action = "retain"
    reason = MODELS_JSON_REASON


def plugin_id_of(rel: str) -> str | None:
    """The plugin id of ``.../plugins/<encoded id>/catalog.json`` as OpenClaw decodes it (decodeURIComponent)."""
    encoded = PurePosixPath(rel).parts[-2]
    if encoded in ("", ".", ".."):
        return None
    try:
        decoded = unquote(encoded, errors="strict")
    except UnicodeDecodeError:
        return None
    if "%" in encoded and not _valid_percent_escapes(encoded):
        return None  # decodeURIComponent throws on a malformed escape; OpenClaw skips the directory
    return decoded or None


def _valid_percent_escapes(text: str) -> bool:
    index = text.find("%")
    while index != -1:
        if len(text) < index + 3 or any(c not in "0123456789abcdefABCDEF" for c in text[index + 1:index + 3]):
            return False
        index = text.find("%", index + 3)
    return True


def _reject_constant(name: str) -> Any:
    raise ValueError(name)  # NaN / Infinity: JSON.parse refuses them


def generated_catalog_text(data: bytes, rel: str) -> str | None:
    """The file's text when OpenClaw would import it (JSON with the generated marker), else None."""
    text = decode_utf8(data, rel)
    try:
        parsed = json.loads(text, parse_constant=_reject_constant)
    except ValueError:
        return None
    if isinstance(parsed, dict) and parsed.get("generatedBy") == GENERATED_BY:
        return text
    return None


class PluginCatalogReader(Reader):
    kind = "plugin-model-catalog"
    family = "models"
    description = "Provider-plugin model catalog agents/<id>/agent/plugins/<plugin>/catalog.json"
    patterns = ("agents/*/agent/plugins/*/catalog.json",)
    target_tables = ("agent.cache_entries",)
    action = "import"

    def _read(self, source: Source, handle: BinaryIO) -> tuple[str | None, str | None]:
        plugin_id = plugin_id_of(source.rel)
        text = generated_catalog_text(handle.read(), source.rel)
        return plugin_id, text

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        plugin_id, text = self._read(source, handle)
        if plugin_id is None or text is None:
            return Inspection(record_count=0, action="retain", reason=NOT_GENERATED_REASON)
        return Inspection(record_count=1, details={"plugin_id": plugin_id})

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        plugin_id, text = self._read(source, handle)
        if plugin_id is None or text is None:
            raise SourceError(source.rel, NOT_GENERATED_REASON)
        agent = owner_agent(source, dict(ctx.config))
        ctx.writer.agent(agent).upsert(
            "cache_entries",
            {"scope": CACHE_SCOPE, "key": plugin_id, "value_json": text, "blob": None, "expires_at": None, "updated_at": ctx.now_ms},
            ("scope", "key"),
        )
        result = WriteResult(records=1)
        result.report.update({"scope": CACHE_SCOPE, "key": plugin_id, "agent_id": agent, "bytes": len(text.encode("utf-8"))})
        return result
