"""What OpenClaw 2026.9.6 refuses in a legacy ``openclaw.json``, and the rewrite that makes it valid.

OpenClaw 2026.9.6 validates ``openclaw.json`` with a strict schema before it
opens any database: an unrecognised key anywhere in a strict object, a
retired enum value or a multi-agent roster without an owner makes every
command fail (``gateway run`` exits 78). Releases 2026.2.x–2026.7.x wrote
keys that 9.6 retired — every config write stamped ``meta.lastTouchedAt``,
onboarding wrote ``gateway.tailscale.resetOnExit``, 2026.2.x materialised
``commands.ownerDisplay`` — and accepted keys users set that 9.6 dropped.

The catalog below was learned from the real releases: the config schemas of
2026.2.26, 2026.7.35 and 2026.9.6 compared key by key, every difference
checked with ``openclaw config validate --json`` of 2026.9.6, and for each
rejected key what 9.6's own ``doctor --fix`` does with it (its legacy-config
migrations, then its removal of every remaining unknown key). Each entry is
one of:

* **retired** — 9.6's doctor deletes the key (a retired tuning knob or
  preference, built-in behaviour applies): statekit deletes it too, and an
  object emptied by that along the retired path, as the doctor does;
* **renamed/moved** — the doctor copies the value unchanged to its canonical
  key (the canonical key wins when both are set): statekit does the same;
* **retired value** — an enum value 9.6 no longer accepts with a one-to-one
  replacement (``dm`` → ``direct``, queue mode ``queue`` → ``steer``…);
* **manual** — the doctor converts the value (media models, TTS providers,
  plugin installs…) or the key carries data elsewhere: statekit does not
  guess. The config is left byte-identical and the run warns, naming the
  path and telling the operator to run ``openclaw doctor --fix``.

The agent roster: 9.6 still reads ``agents.list`` (it projects a list with
canonical, unique ids onto keyed entries itself), but a roster of two or
more agents needs ``agents.ownership = "explicit"`` or exactly one legacy
``default: true`` marker. Releases before 2026.9 used the first list entry
as the default agent when none was marked, so statekit marks that entry:
9.6 then gives it exactly the default agent's workspace and surfaces, as
its own doctor does. (``ownership: "explicit"`` alone would move the first
agent's workspace to ``<workspace>/<id>`` and leave no default agent.) A
second and later ``default: true`` markers are removed: the old releases
used the first one. An id not in canonical form (``"Ops"``) is written as
the id every release derives from it (``ops``): 9.6 reads ``agents.list``
only when all ids are canonical, and the agent itself does not change.

Nothing here is a full schema: channel and plugin blocks are validated by
9.6's plugins, and keys added after 2026.7 are not listed. ``openclaw
config validate`` is the judge; the tests run it on every corpus tree.

Paths and reasons only, never a value: the config holds secrets.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, cast

from statekit.migrate.config_aliases import rewrite_aliases

OPENCLAW_RELEASE = "2026.9.6"
DOCTOR_HINT = "run `openclaw doctor --fix` after `statekit migrate`"

Seg = str | int


def format_path(segs: list[Seg] | tuple[Seg, ...]) -> str:
    """``["agents", "list", 1, "id"]`` → ``agents.list[1].id``."""
    out = ""
    for seg in segs:
        if isinstance(seg, int):
            out += f"[{seg}]"
        else:
            out = f"{out}.{seg}" if out else seg
    return out or "<root>"


@dataclass(frozen=True)
class ConfigProblem:
    """One thing OpenClaw 2026.9.6 would refuse: a JSON path and why (never a value)."""

    path: str
    reason: str
    fixable: bool

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "reason": self.reason, "fixable": self.fixable}


@dataclass
class Openclaw96Result:
    document: Any
    problems: list[ConfigProblem] = field(default_factory=list)
    changes: list[str] = field(default_factory=list)

    @property
    def unfixable(self) -> list[ConfigProblem]:
        return [p for p in self.problems if not p.fixable]

    @property
    def changed(self) -> bool:
        return bool(self.changes)


class Scope(Enum):
    ROOT = "root"
    DEFAULTS = "agents.defaults"
    AGENTS = "each agent"  # agents.list[i] / agents.entries.<id>
    AGENT_SCOPES = "agents.defaults and each agent"


# --- reasons (the 9.6 rule each rewrite satisfies) --------------------------------

TUNING = "retired tuning knob: 9.6 rejects the key, its doctor deletes it and the built-in default applies"
RETIRED = "retired in 9.6: rejected as an unrecognized key, its doctor deletes it"
UNKNOWN = "not in 9.6's schema: rejected as an unrecognized key, its doctor drops it"


@dataclass(frozen=True)
class Retired:
    pattern: str  # dotted; "*" = every key of an object, "[]" = every item of a list
    reason: str
    scope: Scope = Scope.ROOT
    # returns a reason to leave the key to OpenClaw's doctor (the value carries more than a removal)
    manual_if: Callable[[dict[str, Any], str, dict[str, Any]], str | None] | None = None


@dataclass(frozen=True)
class Renamed:
    pattern: str  # the legacy key
    new_key: str  # its canonical name in the same object
    reason: str
    scope: Scope = Scope.ROOT


@dataclass(frozen=True)
class RetiredValue:
    pattern: str
    mapping: dict[str, str]
    reason: str
    scope: Scope = Scope.ROOT


@dataclass(frozen=True)
class Manual:
    pattern: str
    reason: str
    scope: Scope = Scope.ROOT
    when: Callable[[Any], bool] | None = None  # only for values this predicate accepts


def _serve_mode(parent: dict[str, Any], _key: str, _doc: dict[str, Any]) -> str | None:
    if parent.get("mode") == "serve":
        return "with gateway.tailscale.mode=serve, 9.6's doctor also switches Tailscale off (named Services cannot follow the gateway lifecycle)"
    return None


def _personality(parent: dict[str, Any], key: str, _doc: dict[str, Any]) -> str | None:
    overlays = parent.get(key)
    gpt5 = overlays.get("gpt5") if isinstance(overlays, dict) else None
    if isinstance(gpt5, dict) and "personality" in gpt5:
        return "9.6's doctor moves promptOverlays.gpt5.personality into plugins.entries.openai.config.personality"
    return None


def _truncate_false(parent: dict[str, Any], key: str, _doc: dict[str, Any]) -> str | None:
    if parent.get(key) is False and "maxActiveTranscriptBytes" in parent:
        return "with truncateAfterCompaction=false, 9.6's doctor also drops maxActiveTranscriptBytes to keep that behaviour"
    return None


def _web_enabled(parent: dict[str, Any], key: str, _doc: dict[str, Any]) -> str | None:
    web = parent.get(key)
    if isinstance(web, dict) and "enabled" in web:
        return "9.6's doctor moves web.enabled to channels.whatsapp.enabled"
    return None


LOOP_DETECTION = ("genericRepeat", "knownPollNoProgress", "pingPong", "windowSize", "historySize", "warningThreshold",
                  "unknownToolThreshold", "criticalThreshold", "globalCircuitBreakerThreshold", "detectors", "postCompactionGuard")
MEMORY_SEARCH_RETIRED = (
    "remote.nonBatchConcurrency", "remote.batch.wait", "remote.batch.concurrency", "remote.batch.pollIntervalMs",
    "remote.batch.timeoutMinutes", "local.contextSize", "local.modelCacheDir", "store.driver", "store.path", "sync",
    "query.hybrid", "chunking", "cache.maxEntries",
)

RETIRED_KEYS: tuple[Retired, ...] = (
    Retired("meta.lastTouchedAt", "9.6's meta accepts only lastTouchedVersion and migrations; its doctor drops the timestamp"),
    Retired("gateway.tailscale.resetOnExit", "retired in 9.6: managed Tailscale routes follow the gateway lifecycle; its doctor deletes it"),
    Retired("gateway.tailscale.serviceName", "retired in 9.6: named Tailscale Services are gone; its doctor deletes it", manual_if=_serve_mode),
    Retired("gateway.controlUi.allowInsecureAuth", RETIRED),
    Retired("gateway.controlUi.chatMessageMaxWidth", "retired in 9.6: chat width is browser-local; its doctor deletes it"),
    *(Retired(f"gateway.{k}", TUNING) for k in ("handshakeTimeoutMs", "channelHealthCheckMinutes", "channelStaleEventThresholdMinutes",
                                                 "channelMaxRestartsPerHour", "reload.debounceMs", "reload.deferralTimeoutMs",
                                                 "http.endpoints.chatCompletions.maxBodyBytes", "http.endpoints.chatCompletions.maxImageParts",
                                                 "http.endpoints.chatCompletions.maxTotalImageBytes", "http.endpoints.responses.maxBodyBytes")),
    Retired("gateway.remote.enabled", UNKNOWN),
    Retired("commands.ownerDisplay", "retired in 9.6: owner ids are shown raw; its doctor deletes it"),
    Retired("commands.ownerDisplaySecret", "retired in 9.6 with commands.ownerDisplay; its doctor deletes it"),
    Retired("commands.useAccessGroups", RETIRED),
    Retired("commands.modelsWrite", RETIRED),
    *(Retired(f"session.{k}", TUNING) for k in ("typingIntervalSeconds", "agentToAgent", "maintenance.rotateBytes")),
    Retired("session.parentForkMaxTokens", "retired in 9.6: parent fork sizing is automatic; its doctor deletes it"),
    *(Retired(f"cron.{k}", TUNING) for k in ("maxConcurrentRuns", "retry", "triggers.minIntervalMs")),
    Retired("cron.store", "retired in 9.6: cron jobs live in the state database; its doctor deletes it"),
    Retired("cron.runLog", "retired in 9.6: run history has a fixed per-job retention; its doctor deletes it"),
    *(Retired(f"diagnostics.{k}", TUNING) for k in ("stuckSessionWarnMs", "stuckSessionAbortMs", "memoryPressureSnapshot", "memoryPressureBundle")),
    *(Retired(f"diagnostics.cacheTrace.{k}", "retired in 9.6: cacheTrace keeps only `enabled`; its doctor deletes the rest")
      for k in ("filePath", "includeMessages", "includePrompt", "includeSystem")),
    Retired("logging.redactSensitive", RETIRED),
    *(Retired(f"update.auto.{k}", TUNING) for k in ("stableDelayHours", "stableJitterHours", "betaCheckIntervalHours")),
    *(Retired(f"browser.{k}", TUNING) for k in ("remoteCdpTimeoutMs", "remoteCdpHandshakeTimeoutMs", "localLaunchTimeoutMs", "localCdpReadyTimeoutMs",
                                                 "actionTimeoutMs", "cdpPortRangeStart", "tabCleanup.idleMinutes", "tabCleanup.maxTabsPerSession",
                                                 "tabCleanup.sweepMinutes")),
    Retired("browser.color", "retired in 9.6: the built-in colour applies; its doctor deletes it"),
    Retired("browser.profiles.*.color", "retired in 9.6: the built-in colour applies; its doctor deletes it"),
    Retired("secrets.resolution", TUNING),
    *(Retired(p, RETIRED) for p in ("secrets.providers.*.allowInsecurePath", "secrets.providers.*.allowSymlinkCommand",
                                    "security.installPolicy.exec.allowInsecurePath", "security.installPolicy.exec.allowSymlinkCommand")),
    Retired("auth.cooldowns", TUNING),
    *(Retired(f"acp.{k}", TUNING) for k in ("stream.coalesceIdleMs", "stream.maxChunkChars", "stream.maxOutputChars", "stream.maxSessionUpdateChars",
                                             "stream.hiddenBoundarySeparator", "maxConcurrentSessions", "runtime.ttlMinutes")),
    Retired("tools.media.asyncCompletion", RETIRED),
    *(Retired(f"messages.{k}", TUNING) for k in ("queue.debounceMs", "statusReactions.timing")),
    Retired("messages.statusReactions.emojis", "retired in 9.6: the curated defaults apply; its doctor deletes it"),
    Retired("messages.removeAckAfterReply", "retired in 9.6: acknowledgements are kept; its doctor deletes it"),
    Retired("messages.suppressToolErrors", RETIRED),
    Retired("tts.prefsPath", RETIRED),
    Retired("tts.personas.*.prompt", "retired in 9.6: TTS persona prompts are gone; its doctor deletes them"),
    Retired("transcripts.maxUtterances", TUNING),
    Retired("hooks.internal.installs", RETIRED),
    Retired("hooks.maxBodyBytes", TUNING),
    Retired("plugins.bundledDiscovery", RETIRED),
    Retired("skills.load.watchDebounceMs", TUNING),
    Retired("skills.workshop.allowSymlinkTargetWrites", RETIRED),
    Retired("models.pricing", "retired in 9.6: pricing ships with the hosted catalog; its doctor deletes it"),
    Retired("models.bedrockDiscovery", UNKNOWN),
    Retired("memory.backend", "retired in 9.6: the builtin memory engine is the only one; its doctor deletes it"),
    *(Retired(f"memory.search.{k}", TUNING) for k in MEMORY_SEARCH_RETIRED),
    Retired("attachments.preserveFilenames", "retired in 9.6: temp-safe file names always apply; its doctor deletes it"),
    Retired("ui.assistant", "retired in 9.6: an agent's identity replaces it; its doctor deletes it"),
    *(Retired(k, RETIRED) for k in ("cli", "commitments", "crestodian", "marketplaces", "systemAgent", "tui", "worktrees")),
    Retired("canvasHost", UNKNOWN),
    Retired("web", "retired in 9.6 (WhatsApp Web settings moved to channels.whatsapp); its doctor deletes it", manual_if=_web_enabled),
    # every agent scope (agents.defaults and each agent)
    *(Retired(f"compaction.{k}", TUNING, Scope.AGENT_SCOPES) for k in ("reserveTokens", "reserveTokensFloor", "maxHistoryShare")),
    *(Retired(f"compaction.{k}", "retired in 9.6: compaction prompts are built in; its doctor deletes them", Scope.AGENT_SCOPES)
      for k in ("customInstructions", "identifierInstructions", "memoryFlush.prompt", "memoryFlush.systemPrompt")),
    *(Retired(f"contextPruning.{k}", TUNING, Scope.AGENT_SCOPES)
      for k in ("keepLastAssistants", "softTrimRatio", "hardClearRatio", "minPrunableToolChars", "softTrim")),
    *(Retired(f"contextLimits.{k}", "retired in 9.6: the canonical memory and context caps apply; its doctor deletes it", Scope.AGENT_SCOPES)
      for k in ("memoryGetDefaultLines", "toolResultMaxChars")),
    Retired("runRetries", TUNING, Scope.AGENT_SCOPES),
    Retired("groupChat.visibleReplies", RETIRED, Scope.AGENT_SCOPES),
    *(Retired(f"heartbeat.{k}", RETIRED, Scope.AGENT_SCOPES)
      for k in ("ackMaxChars", "includeReasoning", "includeSystemPromptSection", "skipWhenBusy", "suppressToolErrorWarnings")),
    *(Retired(f"tools.loopDetection.{k}", TUNING, s) for k in LOOP_DETECTION for s in (Scope.ROOT, Scope.AGENTS)),
    *(Retired("tools.codeMode.languages", "retired in 9.6: Code Mode runs JavaScript only; its doctor deletes it", s) for s in (Scope.ROOT, Scope.AGENTS)),
    Retired("tts.personas.*.prompt", "retired in 9.6: TTS persona prompts are gone; its doctor deletes them", Scope.AGENTS),
    *(Retired(f"memory.search.{k}", TUNING, Scope.AGENTS) for k in MEMORY_SEARCH_RETIRED),
    Retired("typingIntervalSeconds", "retired per agent in 9.6: agents.defaults.typingIntervalSeconds applies to every agent; its doctor deletes it",
            Scope.AGENTS),
    *(Retired(k, "retired in 9.6: built-in behaviour applies; its doctor deletes it", Scope.DEFAULTS)
      for k in ("envelopeTimestamp", "envelopeElapsed", "envelopeTimezone", "timeFormat", "bootstrapPromptTruncationWarning",
                "mediaGenerationAutoProviderFallback")),
    Retired("promptOverlays", "retired in 9.6: built-in behaviour applies; its doctor deletes it", Scope.DEFAULTS, manual_if=_personality),
    Retired("compaction.truncateAfterCompaction", "retired in 9.6: byte-triggered compaction opts in through maxActiveTranscriptBytes alone",
            Scope.DEFAULTS, manual_if=_truncate_false),
)

RENAMED_KEYS: tuple[Renamed, ...] = (
    Renamed("session.maintenance.pruneDays", "pruneAfter", "renamed in 9.6"),
    Renamed("session.threadBindings.ttlHours", "idleHours", "renamed in 9.6"),
    Renamed("talk.realtime.voice", "speakerVoice", "renamed in 9.6"),
    Renamed("tools.exec.timeoutSec", "timeoutSeconds", "renamed in 9.6"),
    Renamed("tools.exec.timeoutSec", "timeoutSeconds", "renamed in 9.6", Scope.AGENT_SCOPES),
    Renamed("sandbox.browser.enableNoVnc", "noVncEnabled", "renamed in 9.6", Scope.AGENT_SCOPES),
    Renamed("pdfMaxBytesMb", "pdfMaxMb", "renamed in 9.6", Scope.DEFAULTS),
)

RETIRED_VALUES: tuple[RetiredValue, ...] = (
    RetiredValue("bindings.[].match.peer.kind", {"dm": "direct"}, "9.6 accepts direct/group/channel; its doctor maps the retired alias"),
    RetiredValue("session.sendPolicy.rules.[].match.chatType", {"dm": "direct"},
                 "9.6 accepts direct/group/channel (statekit maps the retired alias as 9.6's doctor does for bindings)"),
    RetiredValue("tools.media.image.scope.rules.[].match.chatType", {"dm": "direct"},
                 "9.6 accepts direct/group/channel (statekit maps the retired alias as 9.6's doctor does for bindings)"),
    RetiredValue("messages.queue.mode", {"queue": "steer", "steer-backlog": "followup", "steer+backlog": "followup"},
                 "retired queue mode; 9.6's doctor maps it"),
    RetiredValue("messages.queue.byChannel.*", {"queue": "steer", "steer-backlog": "followup", "steer+backlog": "followup"},
                 "retired queue mode; 9.6's doctor maps it"),
    RetiredValue("gateway.reload.mode", {"hot": "hybrid", "restart": "hybrid"}, "retired reload mode; 9.6's doctor maps it to hybrid"),
    RetiredValue("logging.consoleStyle", {"compact": "pretty"}, "retired console style; 9.6's doctor maps it"),
    RetiredValue("compaction.identifierPolicy", {"custom": "strict"}, "retired with custom compaction instructions; 9.6's doctor maps it",
                 Scope.DEFAULTS),
)

MANUAL_KEYS: tuple[Manual, ...] = (
    Manual("plugins.installs", "9.6 keeps plugin install records in its plugin index; its doctor moves them there"),
    Manual("hooks.internal.handlers", "retired in 9.6: each hook module must move to a hook directory (HOOK.md + handler) first"),
    Manual("cron.webhook", "9.6's doctor moves the global cron webhook into each stored job's delivery first"),
    Manual("memory.qmd", "9.6's doctor moves QMD paths into memory.search.extraPaths"),
    Manual("memory.search.qmd", "9.6's doctor moves QMD collections into memory.search.extraPaths"),
    Manual("memory.search.qmd", "9.6's doctor moves QMD collections into memory.search.extraPaths", Scope.AGENTS),
    Manual("audio", "9.6's doctor converts audio.transcription into a tools.media.models entry"),
    Manual("messages.tts", "9.6's doctor converts messages.tts into the top-level tts providers shape"),
    Manual("messages.messagePrefix", "9.6's doctor moves it to channels.whatsapp.responsePrefix"),
    Manual("heartbeat", "9.6's doctor splits it into agents.defaults.heartbeat and channels.defaults.heartbeat"),
    Manual("channels.defaults.heartbeat", "9.6's doctor moves the heartbeat visibility settings"),
    Manual("browser.ssrfPolicy.allowPrivateNetwork", "9.6's doctor converts it into the current private-network policy"),
    Manual("agents.defaults.cliBackends", "9.6 registers CLI backends through plugins; its doctor converts the entries"),
    Manual("tools.message.allowCrossContextSend", "9.6's doctor converts it into tools.message.crossContext"),
    Manual("tools.message.allowCrossContextSend", "9.6's doctor converts it into tools.message.crossContext", Scope.AGENTS),
    Manual("tools.web.fetch.firecrawl", "9.6's doctor moves it into the Firecrawl plugin config"),
    Manual("tools.web.x_search", "9.6's doctor moves it into the xAI plugin config"),
    *(Manual(f"tools.media.{c}.{k}", "9.6's doctor consolidates per-capability media settings into tools.media.models")
      for c in ("audio", "image", "video") for k in ("models", "deepgram", "echoFormat", "echoTranscript")),
    Manual("tools.media.models.[].deepgram", "9.6's doctor converts it into providerOptions.deepgram"),
    *(Manual(f"talk.{k}", "9.6's doctor moves the legacy talk voice settings into its talk provider config")
      for k in ("apiKey", "modelId", "outputFormat", "voiceAliases", "voiceId")),
    *(Manual(f"models.providers.*.models.[].compat.{k}", "9.6's doctor moves known-model compatibility flags into provider catalogs")
      for k in ("nativeWebSearchTool", "requiresMistralToolIds")),
    Manual("models.providers.*.api", "9.6's doctor moves Codex routes into the OpenAI provider", when=lambda v: v == "openai-codex-responses"),
    Manual("models.providers.*.models.[].api", "9.6's doctor moves Codex routes into the OpenAI provider", when=lambda v: v == "openai-codex-responses"),
    Manual("diagnostics.otel.protocol", "9.6 has no gRPC exporter; its doctor disables telemetry until an OTLP/HTTP collector is set",
           when=lambda v: v == "grpc"),
)


# --- traversal ----------------------------------------------------------------------


def _scopes(doc: dict[str, Any], scope: Scope) -> Iterator[tuple[dict[str, Any], list[Seg]]]:
    if scope is Scope.ROOT:
        yield doc, []
        return
    agents = doc.get("agents")
    if not isinstance(agents, dict):
        return
    if scope in (Scope.DEFAULTS, Scope.AGENT_SCOPES) and isinstance(agents.get("defaults"), dict):
        yield agents["defaults"], ["agents", "defaults"]
    if scope in (Scope.AGENTS, Scope.AGENT_SCOPES):
        listed = agents.get("list")
        if isinstance(listed, list):
            for index, item in enumerate(listed):
                if isinstance(item, dict):
                    yield item, ["agents", "list", index]
        entries = agents.get("entries")
        if isinstance(entries, dict):
            for name, item in entries.items():
                if isinstance(item, dict):
                    yield item, ["agents", "entries", name]


Chain = list[tuple[Any, Seg]]  # (container, key) from the scope down to the matched key


def _matches(node: Any, parts: list[str], segs: list[Seg], chain: Chain) -> Iterator[tuple[Chain, list[Seg]]]:
    head, rest = parts[0], parts[1:]
    if head == "[]":
        if not isinstance(node, list):
            return
        items: list[tuple[Seg, Any]] = list(enumerate(node))
    elif not isinstance(node, dict):
        return
    elif head == "*":
        items = list(node.items())
    elif head in node:
        items = [(head, node[head])]
    else:
        return
    for key, child in items:
        step = chain + [(node, key)]
        if rest:
            yield from _matches(child, rest, segs + [key], step)
        else:
            yield step, segs + [key]


def _find(doc: dict[str, Any], pattern: str, scope: Scope) -> list[tuple[Chain, list[Seg]]]:
    parts = pattern.split(".")
    found: list[tuple[Chain, list[Seg]]] = []
    for container, prefix in _scopes(doc, scope):
        found.extend(_matches(container, parts, list(prefix), []))
    return found


def _remove(chain: Chain, segs: list[Seg]) -> list[str]:
    """Delete the matched key; then each object along the path that this emptied (as 9.6's doctor does)."""
    container, key = chain[-1]
    del container[key]
    emptied: list[str] = []
    for depth in range(len(chain) - 2, -1, -1):
        parent, parent_key = chain[depth]
        child = parent[parent_key]
        if isinstance(child, dict) and not child and isinstance(parent, dict):
            del parent[parent_key]
            emptied.append(format_path(segs[: len(segs) - (len(chain) - 1 - depth)]))
        else:
            break
    return emptied


class _Run:
    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc
        self.problems: list[ConfigProblem] = []
        self.changes: list[str] = []

    def fixed(self, path: str, reason: str, change: str) -> None:
        self.problems.append(ConfigProblem(path, reason, True))
        self.changes.append(change)

    def manual(self, path: str, reason: str) -> None:
        self.problems.append(ConfigProblem(path, f"{reason}; statekit leaves this to OpenClaw: {DOCTOR_HINT}", False))


def _removed_line(path: str, emptied: list[str], reason: str) -> str:
    extra = f"; emptied {', '.join(emptied)} removed too" if emptied else ""
    return f"{path} removed ({reason}{extra})"


# --- the rules -----------------------------------------------------------------------


def _merge_missing(target: dict[str, Any], source: dict[str, Any]) -> None:
    for key, value in source.items():
        if key not in target:
            target[key] = value
        elif isinstance(target[key], dict) and isinstance(value, dict):
            _merge_missing(target[key], value)


def _move_block(run: _Run, owner: dict[str, Any], key: str, owner_segs: list[Seg], target_owner: dict[str, Any], target_key: str,
                target_segs: list[Seg], reason: str) -> None:
    """Merge ``owner[key]`` (an object) into ``target_owner[target_key]``: existing target values win."""
    src_path, dst_path = format_path(owner_segs + [key]), format_path(target_segs + [target_key])
    value = owner[key]
    existing = target_owner.get(target_key)
    if not isinstance(value, dict) or (existing is not None and not isinstance(existing, dict)):
        run.manual(src_path, f"{reason}; the values are not objects statekit can merge")
        return
    if existing is None:
        target_owner[target_key] = value
        line = f"{src_path} → {dst_path} ({reason})"
    else:
        _merge_missing(existing, value)
        line = f"{src_path} merged into {dst_path} ({reason}; values already set there win)"
    del owner[key]
    run.fixed(src_path, reason, line)


def _ensure_object(owner: dict[str, Any], key: str) -> dict[str, Any] | None:
    if key not in owner:
        owner[key] = {}
    value = owner[key]
    return value if isinstance(value, dict) else None


def _memory_search(run: _Run) -> None:
    """``memorySearch`` (top level, agents.defaults, each agent) → ``memory.search`` (9.6's canonical owner)."""
    doc = run.doc
    reason = "moved in 9.6 to its canonical memory owner"
    agents_value = doc.get("agents")
    agents: dict[str, Any] = agents_value if isinstance(agents_value, dict) else {}
    defaults = agents.get("defaults") if isinstance(agents.get("defaults"), dict) else None
    sources: list[tuple[dict[str, Any], list[Seg]]] = []
    if defaults is not None and "memorySearch" in defaults:
        sources.append((defaults, ["agents", "defaults"]))
    if "memorySearch" in doc:
        sources.append((doc, []))
    for owner, segs in sources:
        memory = _ensure_object(doc, "memory")
        if memory is None:
            run.manual(format_path(segs + ["memorySearch"]), f"{reason}; memory is not an object")
            continue
        _move_block(run, owner, "memorySearch", segs, memory, "search", ["memory"], reason)
        if not memory:
            del doc["memory"]
    for entry, segs in _scopes(doc, Scope.AGENTS):
        if "memorySearch" not in entry:
            continue
        memory = _ensure_object(entry, "memory")
        if memory is None:
            run.manual(format_path(segs + ["memorySearch"]), f"{reason}; memory is not an object")
            continue
        _move_block(run, entry, "memorySearch", segs, memory, "search", segs + ["memory"], reason)
        if not memory:
            del entry["memory"]


def _memory_search_flat_fields(run: _Run) -> None:
    """Flat ``maxResults`` → ``query.maxResults``; flat ``chunkSize``/``chunkOverlap`` go with the retired chunking."""
    scopes: list[tuple[dict[str, Any], list[Seg]]] = []
    memory = run.doc.get("memory")
    if isinstance(memory, dict) and isinstance(memory.get("search"), dict):
        scopes.append((memory["search"], ["memory", "search"]))
    for entry, segs in _scopes(run.doc, Scope.AGENTS):
        mem = entry.get("memory")
        if isinstance(mem, dict) and isinstance(mem.get("search"), dict):
            scopes.append((mem["search"], segs + ["memory", "search"]))
    for search, segs in scopes:
        if "maxResults" in search:
            path = format_path(segs + ["maxResults"])
            query = _ensure_object(search, "query")
            if query is None:
                run.manual(path, "moved in 9.6 to query.maxResults; query is not an object")
            elif "maxResults" in query:
                del search["maxResults"]
                run.fixed(path, "moved in 9.6 to query.maxResults", f"{path} removed (moved in 9.6 to query.maxResults, which is already set and wins)")
            else:
                query["maxResults"] = search.pop("maxResults")
                run.fixed(path, "moved in 9.6 to query.maxResults", f"{path} → {format_path(segs + ['query', 'maxResults'])} (moved in 9.6)")
        for key in ("chunkSize", "chunkOverlap"):
            if key in search:
                del search[key]
                path = format_path(segs + [key])
                run.fixed(path, TUNING, f"{path} removed (9.6's doctor moves it into chunking, which is a {TUNING})")


def _typing_mode(run: _Run) -> None:
    session = run.doc.get("session")
    if not isinstance(session, dict) or "typingMode" not in session:
        return
    reason = "moved in 9.6 to agents.defaults.typingMode (the session value wins, as it did before)"
    agents = _ensure_object(run.doc, "agents")
    defaults = _ensure_object(agents, "defaults") if agents is not None else None
    if defaults is None:
        run.manual("session.typingMode", f"{reason}; agents.defaults is not an object")
        return
    defaults["typingMode"] = session.pop("typingMode")
    run.fixed("session.typingMode", reason, f"session.typingMode → agents.defaults.typingMode ({reason})")


def _generation_models(run: _Run) -> None:
    for defaults, segs in _scopes(run.doc, Scope.DEFAULTS):
        for legacy, canonical in (("imageGenerationModel", "image"), ("videoGenerationModel", "video"), ("musicGenerationModel", "music")):
            if legacy not in defaults:
                continue
            path = format_path(segs + [legacy])
            media = _ensure_object(defaults, "mediaModels")
            if media is None:
                run.manual(path, "moved in 9.6 to agents.defaults.mediaModels; mediaModels is not an object")
                continue
            reason = f"moved in 9.6 to agents.defaults.mediaModels.{canonical}"
            if canonical in media:
                del defaults[legacy]
                run.fixed(path, reason, f"{path} removed ({reason}, which is already set and wins)")
            else:
                media[canonical] = defaults.pop(legacy)
                run.fixed(path, reason, f"{path} → {format_path(segs + ['mediaModels', canonical])} (moved in 9.6)")


def _embedded_pi(run: _Run) -> None:
    for scope, segs in _scopes(run.doc, Scope.AGENT_SCOPES):
        if "embeddedPi" in scope:
            _move_block(run, scope, "embeddedPi", segs, scope, "embeddedAgent", segs, "renamed in 9.6 to embeddedAgent")


def _sandbox_per_session(run: _Run) -> None:
    for scope, segs in _scopes(run.doc, Scope.AGENT_SCOPES):
        sandbox = scope.get("sandbox")
        if not isinstance(sandbox, dict) or "perSession" not in sandbox:
            continue
        path = format_path(segs + ["sandbox", "perSession"])
        reason = "replaced in 9.6 by sandbox.scope (session or shared)"
        value = sandbox["perSession"]
        if not isinstance(value, bool):
            run.manual(path, f"{reason}; the value is not a boolean")
        elif "scope" in sandbox:
            del sandbox["perSession"]
            run.fixed(path, reason, f"{path} removed ({reason}; sandbox.scope is already set and wins)")
        else:
            sandbox["scope"] = "session" if sandbox.pop("perSession") else "shared"
            run.fixed(path, reason, f"{path} → {format_path(segs + ['sandbox', 'scope'])} ({reason})")


def _code_mode_runtime(run: _Run) -> None:
    owners: list[tuple[Any, list[Seg]]] = [(run.doc.get("tools"), ["tools"])]
    owners += [(entry.get("tools"), segs + ["tools"]) for entry, segs in _scopes(run.doc, Scope.AGENTS)]
    for tools, segs in owners:
        code_mode = tools.get("codeMode") if isinstance(tools, dict) else None
        if not isinstance(code_mode, dict) or "runtime" not in code_mode:
            continue
        path = format_path(segs + ["codeMode", "runtime"])
        if code_mode["runtime"] == "quickjs-wasi" and "executor" not in code_mode:
            del code_mode["runtime"]
            code_mode["executor"] = "quickjs"
            run.fixed(path, "replaced in 9.6 by codeMode.executor", f"{path} → {format_path(segs + ['codeMode', 'executor'])} (replaced in 9.6)")
        else:
            del code_mode["runtime"]
            run.fixed(path, RETIRED, f"{path} removed ({RETIRED})")


def _experimental_tools(run: _Run) -> None:
    tools = run.doc.get("tools")
    if not isinstance(tools, dict) or "experimental" not in tools:
        return
    experimental = tools["experimental"]
    if isinstance(experimental, dict) and "planTool" in experimental and "updatePlan" not in tools:
        tools["updatePlan"] = experimental["planTool"]
        del tools["experimental"]
        run.fixed("tools.experimental", "replaced in 9.6 by tools.updatePlan",
                  "tools.experimental.planTool → tools.updatePlan (replaced in 9.6); tools.experimental removed")
    else:
        del tools["experimental"]
        run.fixed("tools.experimental", RETIRED, f"tools.experimental removed ({RETIRED}; tools.updatePlan owns the switch)")


def _node_commands(run: _Run) -> None:
    gateway = run.doc.get("gateway")
    nodes = gateway.get("nodes") if isinstance(gateway, dict) else None
    if not isinstance(nodes, dict):
        return
    for legacy, canonical in (("allowCommands", "allow"), ("denyCommands", "deny")):
        if legacy not in nodes:
            continue
        path = f"gateway.nodes.{legacy}"
        reason = f"moved in 9.6 to gateway.nodes.commands.{canonical}"
        commands = _ensure_object(nodes, "commands")
        if commands is None:
            run.manual(path, f"{reason}; gateway.nodes.commands is not an object")
        elif canonical in commands:
            del nodes[legacy]
            run.fixed(path, reason, f"{path} removed ({reason}, which is already set and wins)")
        else:
            commands[canonical] = nodes.pop(legacy)
            run.fixed(path, reason, f"{path} → gateway.nodes.commands.{canonical} (moved in 9.6)")


def _hostname_allowlist(run: _Run) -> None:
    browser = run.doc.get("browser")
    policy = browser.get("ssrfPolicy") if isinstance(browser, dict) else None
    if not isinstance(policy, dict) or "hostnameAllowlist" not in policy:
        return
    path = "browser.ssrfPolicy.hostnameAllowlist"
    reason = "merged in 9.6 into browser.ssrfPolicy.allowedHostnames"
    legacy, current = policy["hostnameAllowlist"], policy.get("allowedHostnames", [])
    if not isinstance(legacy, list) or not isinstance(current, list):
        run.manual(path, f"{reason}; the values are not lists")
        return
    merged: list[Any] = []
    for item in [*current, *legacy]:
        if isinstance(item, str) and item not in merged:
            merged.append(item)
    policy["allowedHostnames"] = merged
    del policy["hostnameAllowlist"]
    run.fixed(path, reason, f"{path} merged into browser.ssrfPolicy.allowedHostnames ({reason})")


def _root_blocks(run: _Run) -> None:
    doc = run.doc
    for legacy, parent, key, reason in (
        ("media", None, "attachments", "renamed in 9.6 to attachments"),
        ("audit", "logging", "audit", "moved in 9.6 to logging.audit"),
    ):
        if legacy not in doc:
            continue
        if parent is None:
            _move_block(run, doc, legacy, [], doc, key, [], reason)
            continue
        owner = _ensure_object(doc, parent)
        if owner is None:
            run.manual(legacy, f"{reason}; {parent} is not an object")
            continue
        _move_block(run, doc, legacy, [], owner, key, [parent], reason)
    cron = doc.get("cron")
    if isinstance(cron, dict) and "failureDestination" in cron:
        _move_block(run, cron, "failureDestination", ["cron"], cron, "failureAlert", ["cron"], "merged in 9.6 into cron.failureAlert")


def _wide_area(run: _Run) -> None:
    discovery = run.doc.get("discovery")
    wide = discovery.get("wideArea") if isinstance(discovery, dict) else None
    if not isinstance(wide, dict) or "enabled" not in wide:
        return
    reason = "retired in 9.6: a configured domain now enables wide-area discovery"
    domain = wide.get("domain")
    if wide["enabled"] is False and isinstance(domain, str) and domain.strip():
        del wide["enabled"], wide["domain"]
        run.fixed("discovery.wideArea.enabled", reason,
                  f"discovery.wideArea.enabled removed ({reason}); discovery.wideArea.domain removed so it stays disabled, as 9.6's doctor does")
    else:
        del wide["enabled"]
        run.fixed("discovery.wideArea.enabled", reason, f"discovery.wideArea.enabled removed ({reason})")


def _autonomous_mode(run: _Run) -> None:
    skills = run.doc.get("skills")
    workshop = skills.get("workshop") if isinstance(skills, dict) else None
    autonomous = workshop.get("autonomous") if isinstance(workshop, dict) else None
    if not isinstance(autonomous, dict) or "enabled" not in autonomous:
        return
    path = "skills.workshop.autonomous.enabled"
    reason = "replaced in 9.6 by skills.workshop.autonomous.mode (off or propose)"
    enabled = autonomous.pop("enabled")
    if "mode" in autonomous:
        run.fixed(path, reason, f"{path} removed ({reason}; mode is already set and wins)")
    else:
        autonomous["mode"] = "off" if enabled is False else "propose"
        run.fixed(path, reason, f"{path} → skills.workshop.autonomous.mode ({reason})")


def _gateway_port(run: _Run) -> None:
    gateway = run.doc.get("gateway")
    port = gateway.get("port") if isinstance(gateway, dict) else None
    if isinstance(gateway, dict) and isinstance(port, (int, float)) and not isinstance(port, bool) and not 1 <= port <= 65535:
        del gateway["port"]
        run.fixed("gateway.port", "9.6 accepts TCP ports 1–65535",
                  "gateway.port removed (outside 1–65535: 9.6 refuses it and its doctor removes it; the default port applies)")


_ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-")


def _canonical_agent_id(raw: str) -> bool:
    return 0 < len(raw) <= 64 and raw[0] not in "_-" and set(raw) <= _ID_CHARS


def legacy_agent_id(raw: str) -> str | None:
    """The id releases 2026.2–2026.9 all derive from a configured one (trim, lower-case, other characters → ``-``,
    no leading/trailing ``-``, at most 64); None when nothing is left (they fell back to ``main``)."""
    lowered = raw.strip().lower()
    if _canonical_agent_id(lowered):
        return lowered
    normalized = re.sub(r"[^a-z0-9_-]+", "-", lowered).strip("-")[:64]
    return normalized or None


def _roster(run: _Run) -> None:
    """The multi-agent ownership rule of 9.6 (see the module docstring)."""
    agents = run.doc.get("agents")
    if not isinstance(agents, dict):
        return
    listed, entries, ownership = agents.get("list"), agents.get("entries"), agents.get("ownership")
    if listed is not None and entries is not None:
        run.manual("agents.list", "9.6 uses agents.entries and refuses agents.list beside it; its doctor drops the list")
        return
    if isinstance(listed, list):
        seen: set[str] = set()
        canonical: list[str] = []
        for index, item in enumerate(listed):
            agent_id = item.get("id") if isinstance(item, dict) else None
            normalized = legacy_agent_id(agent_id) if isinstance(agent_id, str) else None
            if normalized is None or normalized in seen:
                run.manual(f"agents.list[{index}].id", "9.6 reads agents.list only when every item has its own agent id; "
                           "its doctor renames the agent")
                return
            seen.add(normalized)
            canonical.append(normalized)
        reason = "9.6 reads agents.list only when every id is in canonical form (lower case, a-z 0-9 _ -)"
        for index, (item, normalized) in enumerate(zip(listed, canonical)):
            if item["id"] != normalized:
                item["id"] = normalized
                run.fixed(f"agents.list[{index}].id", reason,
                          f"agents.list[{index}].id written in canonical form ({reason}; the agent id, which every release "
                          "derives the same way, does not change)")
        roster: list[tuple[dict[str, Any], list[Seg]]] = [(item, ["agents", "list", i]) for i, item in enumerate(listed)]
    elif isinstance(entries, dict):
        roster = [(item, ["agents", "entries", key]) for key, item in entries.items() if isinstance(item, dict)]
    else:
        return
    for item, segs in roster:
        if "default" in item and not isinstance(item["default"], bool):
            run.manual(format_path(segs + ["default"]), "9.6 accepts only a boolean default marker")
            return
    marked = [(item, segs) for item, segs in roster if item.get("default") is True]
    if ownership == "explicit" and marked:
        run.manual("agents.ownership", "9.6 refuses agents.ownership=explicit together with a default=true marker")
        return
    if len(marked) > 1:
        if not isinstance(listed, list):
            run.manual("agents.entries", "9.6 accepts at most one default=true entry")
            return
        first = format_path(marked[0][1])
        for item, segs in marked[1:]:
            del item["default"]
            path = format_path(segs + ["default"])
            run.fixed(path, "9.6 accepts at most one default=true entry",
                      f"{path} removed (9.6 accepts one default=true marker; releases before 2026.9 used the first, {first})")
        return
    if len(roster) < 2 or marked or ownership is not None:
        return
    if isinstance(listed, list):
        first_item, first_segs = roster[0]
        first_item["default"] = True
        path = format_path(first_segs + ["default"])
        run.fixed("agents.ownership", "multi-agent rosters require agents.ownership=\"explicit\" or one legacy default=true marker",
                  f"{path} set (9.6 requires one default=true marker or agents.ownership=explicit for a multi-agent roster; "
                  f"releases before 2026.9 used the first agent, {format_path(first_segs)}, as the default)")
    else:
        agents["ownership"] = "explicit"
        run.fixed("agents.ownership", "multi-agent rosters require agents.ownership=\"explicit\" or one legacy default=true marker",
                  "agents.ownership set to explicit (9.6 requires it for a keyed multi-agent roster without a marker, as its doctor sets it)")


CUSTOM_RULES: tuple[Callable[[_Run], None], ...] = (
    _roster, _memory_search, _memory_search_flat_fields, _typing_mode, _generation_models, _embedded_pi, _sandbox_per_session,
    _code_mode_runtime, _experimental_tools, _node_commands, _hostname_allowlist, _root_blocks, _wide_area, _autonomous_mode,
    _gateway_port,
)


def _apply_catalog(run: _Run) -> None:
    for rule in CUSTOM_RULES:
        rule(run)
    for manual in MANUAL_KEYS:
        for chain, segs in _find(run.doc, manual.pattern, manual.scope):
            container, key = chain[-1]
            if manual.when is None or manual.when(container[key]):
                run.manual(format_path(segs), manual.reason)
    for renamed in RENAMED_KEYS:
        for chain, segs in _find(run.doc, renamed.pattern, renamed.scope):
            container, key = chain[-1]
            path = format_path(segs)
            target = format_path(segs[:-1] + [renamed.new_key])
            if renamed.new_key in container:
                del container[key]
                run.fixed(path, renamed.reason, f"{path} removed ({renamed.reason} to {renamed.new_key}, which is already set and wins)")
            else:
                container[renamed.new_key] = container.pop(key)
                run.fixed(path, renamed.reason, f"{path} → {target} ({renamed.reason})")
    for retired_value in RETIRED_VALUES:
        for chain, segs in _find(run.doc, retired_value.pattern, retired_value.scope):
            container, key = chain[-1]
            value = container[key]
            if isinstance(value, str) and value in retired_value.mapping:
                container[key] = retired_value.mapping[value]
                path = format_path(segs)
                run.fixed(path, retired_value.reason, f"{path}: retired value replaced by its 9.6 equivalent ({retired_value.reason})")
    for retired in RETIRED_KEYS:
        for chain, segs in _find(run.doc, retired.pattern, retired.scope):
            container, key = chain[-1]
            path = format_path(segs)
            # a retired key's last segment names a mapping key, never a list index
            why_manual = retired.manual_if(container, cast(str, key), run.doc) if retired.manual_if is not None else None
            if why_manual is not None:
                run.manual(path, why_manual)
                continue
            run.fixed(path, retired.reason, _removed_line(path, _remove(chain, segs), retired.reason))


def rewrite_for_openclaw96(document: Any) -> Openclaw96Result:
    """Apply every rewrite the catalog knows to a copy of ``document``; list what 9.6 would still refuse.

    ``result.document`` is the rewritten copy; the caller must not write it
    when ``result.unfixable`` is not empty (a config statekit cannot make
    valid is left alone, never half-rewritten).
    """
    doc = copy.deepcopy(document)
    if not isinstance(doc, dict):
        return Openclaw96Result(doc, [ConfigProblem("<root>", "9.6 requires the config to be a JSON object", False)])
    run = _Run(doc)
    _apply_catalog(run)
    return Openclaw96Result(doc, run.problems, run.changes)


ALIAS_REASON = "retired alias: 9.6 rejects it as an unrecognized key (statekit moves it to its canonical key or drops it)"


def config_problems(document: Any) -> list[ConfigProblem]:
    """The problems OpenClaw 2026.9.6 would refuse ``document`` for (paths and reasons, no values). Pure.

    Covers the retired aliases of :mod:`migrate.config_aliases` and the
    catalog of this module; ``fixable`` says whether ``statekit migrate``
    rewrites the key (otherwise the operator runs ``openclaw doctor --fix``).
    """
    aliases = rewrite_aliases(document)
    problems = [ConfigProblem(path, ALIAS_REASON, True) for path in aliases.legacy_paths]
    return problems + rewrite_for_openclaw96(aliases.document).problems


__all__ = ["OPENCLAW_RELEASE", "ConfigProblem", "Openclaw96Result", "config_problems", "rewrite_for_openclaw96", "format_path"]
