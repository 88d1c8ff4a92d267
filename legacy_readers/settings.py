"""Gateway settings files under ``settings/``: Voice Wake triggers and routing, TTS preferences.

* ``settings/voicewake.json`` (``{triggers, updatedAtMs}``) ->
  ``global.voicewake_triggers``: one row per trigger, ``position`` 0..n-1,
  after OpenClaw's normalisation (strings trimmed, empties and non-strings
  dropped, at most 32 triggers, each cut to 64 characters). An empty result
  writes no rows (OpenClaw then uses its built-in defaults).
* ``settings/voicewake-routing.json`` (``{version, defaultTarget, routes,
  updatedAtMs}``) -> ``global.voicewake_routing_config`` (one row) and
  ``global.voicewake_routing_routes`` (one row per route). Targets are
  ``{"mode": "current"}``, ``{"agentId"}`` or ``{"sessionKey"}``; they map to
  ``target_mode`` ``current`` / ``agent`` / ``session`` (agent ids normalised
  like OpenClaw: lower-case, other characters -> ``-``). Route triggers are
  normalised (lower-case, punctuation/symbols stripped at word edges, spaces
  collapsed); a route whose trigger normalises to nothing is dropped (notice),
  a route whose target is not one of the three shapes is skipped (warning).
  A missing or invalid default target is ``current``.
* ``settings/tts.json`` (``{"tts": {...}}``) -> one ``plugin_state_entries``
  row owned by the bundled ``speech-core`` plugin: namespace ``tts-prefs``,
  key ``default``, the document as value.

All rows use ``config_key = 'default'`` (the Gateway keeps one global Voice
Wake config) and ``updated_at_ms`` = the import time, as OpenClaw 2026.7.35's
own import writes it (9.6 carries it into ``voicewake.*`` state). Re-import converges: the config's trigger/route rows are
deleted and written again, the config row is upserted.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any, BinaryIO

from statekit.legacy_readers._small_stores import put_plugin_state
from statekit.documents import load_document
from statekit.values import file_mtime_ms
from statekit.values import trimmed as text  # the trimmed non-empty string
from statekit.legacy_readers.base import ImportContext, Inspection, ReadContext, Reader, Source, WriteResult

CONFIG_KEY = "default"
MAX_TRIGGERS = 32
MAX_TRIGGER_LENGTH = 64
TRIGGERS = "voicewake_triggers"
ROUTING = "voicewake_routing_config"
ROUTES = "voicewake_routing_routes"
TTS_PLUGIN, TTS_NAMESPACE, TTS_KEY = "speech-core", "tts-prefs", "default"


def normalize_triggers(value: Any) -> list[str]:
    cleaned: list[str] = []
    for entry in value if isinstance(value, list) else []:
        if not isinstance(entry, str) or not entry.strip():
            continue
        cleaned.append(entry.strip()[:MAX_TRIGGER_LENGTH])
        if len(cleaned) >= MAX_TRIGGERS:
            break
    return cleaned


def normalize_trigger_word(value: str) -> str:
    words = []
    for token in value.lower().split():
        while token and unicodedata.category(token[0])[0] in "PS":
            token = token[1:]
        while token and unicodedata.category(token[-1])[0] in "PS":
            token = token[:-1]
        if token:
            words.append(token)
    return " ".join(words)


def normalize_agent_id(value: str) -> str:
    agent = re.sub(r"[^a-z0-9_-]+", "-", value.strip().lower()).strip("-")[:64]
    return agent or "main"


def normalize_target(value: Any) -> dict[str, str] | None:
    """``{mode: current}`` | ``{agentId}`` | ``{sessionKey}``, or None for anything else."""
    if not isinstance(value, dict):
        return None
    if text(value.get("mode")) == "current":
        return {"mode": "current"}
    agent, session = text(value.get("agentId")), text(value.get("sessionKey"))
    if agent and not session:
        return {"agentId": normalize_agent_id(agent)}
    if session and not agent:
        return {"sessionKey": session}
    return None


def target_columns(target: dict[str, str]) -> tuple[str, str | None, str | None]:
    if "agentId" in target:
        return "agent", target["agentId"], None
    if "sessionKey" in target:
        return "session", None, target["sessionKey"]
    return "current", None, None


def _updated_at(document: Any, source: Source, ctx: ImportContext) -> int:
    """The import time: the release stamps its voice wake rows with ``Date.now()``."""
    return ctx.now_ms


class VoiceWakeTriggersReader(Reader):
    kind = "voicewake-triggers"
    family = "settings"
    description = "Voice Wake trigger words settings/voicewake.json"
    patterns = ("settings/voicewake.json",)
    schema_name = "voicewake-triggers"
    target_tables = ("global.voicewake_triggers",)
    action = "import"

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        document = load_document(source, handle, self.schema_name or "")
        return Inspection(record_count=len(normalize_triggers(document["triggers"])))

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        document = load_document(source, handle, self.schema_name or "")
        triggers = normalize_triggers(document["triggers"])
        updated = _updated_at(document, source, ctx)
        ctx.writer.state.replace_owned(TRIGGERS, {"config_key": CONFIG_KEY}, ("config_key", "position", "trigger", "updated_at_ms"),
                                       [(CONFIG_KEY, position, trigger, updated) for position, trigger in enumerate(triggers)])  # fmt: skip
        result = WriteResult(records=len(triggers))
        dropped = len(document["triggers"]) - len(triggers)
        if dropped:
            result.notices.append(f"{source.rel}: {dropped} empty, non-string or surplus trigger(s) dropped")
        if not triggers:
            result.notices.append(f"{source.rel}: no usable trigger; OpenClaw will use its built-in defaults")
        result.report.update({"triggers": len(triggers), "dropped": dropped})
        return result


class VoiceWakeRoutingReader(Reader):
    kind = "voicewake-routing"
    family = "settings"
    description = "Voice Wake routing settings/voicewake-routing.json"
    patterns = ("settings/voicewake-routing.json",)
    schema_name = "voicewake-routing"
    target_tables = ("global.voicewake_routing_config", "global.voicewake_routing_routes")
    action = "import"

    def agent_for(self, rel: str) -> str | None:
        return None

    @staticmethod
    def _routes(document: dict[str, Any]) -> tuple[list[tuple[str, dict[str, str]]], list[str], list[str]]:
        routes: list[tuple[str, dict[str, str]]] = []
        notices: list[str] = []
        warnings: list[str] = []
        for index, route in enumerate(document.get("routes") or []):
            trigger = normalize_trigger_word(route["trigger"]) if isinstance(route, dict) and isinstance(route.get("trigger"), str) else ""
            if not trigger:
                notices.append(f"routes[{index}] has no usable trigger; dropped")
                continue
            target = normalize_target(route.get("target"))
            if target is None:
                warnings.append(f"routes[{index}] target is not {{mode: current}}, {{agentId}} or {{sessionKey}}; skipped")
                continue
            routes.append((trigger, target))
        return routes, notices, warnings

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        document = load_document(source, handle, self.schema_name or "")
        routes, _notices, warnings = self._routes(document)
        return Inspection(record_count=1 + len(routes), warnings=[f"{source.rel}: {w}" for w in warnings])

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        document = load_document(source, handle, self.schema_name or "")
        routes, notices, warnings = self._routes(document)
        default = normalize_target(document.get("defaultTarget")) or {"mode": "current"}
        if document.get("defaultTarget") is not None and normalize_target(document.get("defaultTarget")) is None:
            notices.append("defaultTarget is not a valid target; the default target is 'current'")
        updated = _updated_at(document, source, ctx)
        mode, agent, session = target_columns(default)
        db = ctx.writer.state
        db.upsert(
            ROUTING,
            {
                "config_key": CONFIG_KEY,
                "version": 1,
                "default_target_mode": mode,
                "default_target_agent_id": agent,
                "default_target_session_key": session,
                "updated_at_ms": updated,
            },
            ("config_key",),
        )
        db.replace_owned(
            ROUTES,
            {"config_key": CONFIG_KEY},
            ("config_key", "position", "trigger", "target_mode", "target_agent_id", "target_session_key", "updated_at_ms"),
            [(CONFIG_KEY, position, trigger, *target_columns(target), updated) for position, (trigger, target) in enumerate(routes)],
        )
        result = WriteResult(
            records=1 + len(routes),
            notices=[f"{source.rel}: {n}" for n in notices],
            warnings=[f"{source.rel}: {w}" for w in warnings],
        )
        result.report.update({"default_target_mode": mode, "routes": len(routes), "skipped_routes": len(warnings)})
        return result


class TtsPrefsReader(Reader):
    kind = "tts-prefs"
    family = "settings"
    description = "Default text-to-speech preferences settings/tts.json"
    patterns = ("settings/tts.json",)
    schema_name = "tts-prefs"
    target_tables = ("global.plugin_state_entries",)
    action = "import"

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        load_document(source, handle, self.schema_name or "")
        return Inspection(record_count=1)

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        document = load_document(source, handle, self.schema_name or "")
        value = document if isinstance(document, dict) else {}
        put_plugin_state(ctx.writer.state, TTS_PLUGIN, TTS_NAMESPACE, TTS_KEY, value, file_mtime_ms(source, ctx.now_ms))
        result = WriteResult(records=1)
        result.report.update({"plugin_id": TTS_PLUGIN, "namespace": TTS_NAMESPACE, "keys": sorted(value.get("tts", {}) or {}) if isinstance(value.get("tts"), dict) else []})
        return result
