"""Auth profile stores: ``auth-profiles.json``, ``auth-state.json``, ``auth.json``, ``credentials/oauth.json``.

Every agent's store lands in that agent's own database
(``agents/<id>/agent/openclaw-agent.sqlite``), as OpenClaw 2026.7.35 (the last
release writing schema version 1) kept it:
``auth_profile_store(store_key='primary', store_json={version: 1, profiles})``
and ``auth_profile_state(state_key='primary', state_json={version: 1, order?,
lastGood?, usageStats?})`` -- 9.6 keeps them there. The ``main`` agent is
OpenClaw's shared-main owner: its rows go where 9.6's doctor relocates them, the
shared store in the state database (``config_machine_state`` rows
``authProfiles.store`` / ``authProfiles.state``, with ``auth.sharedStore =
{"location": "state-db"}``), so 9.6 runs on the result without a relocation pass
(``target_for``). Both are the rows 9.6's own ``doctor --fix`` produces from the
legacy files. (The global tables ``auth_profile_stores`` / ``auth_profile_state``
are never written: 9.6's consolidation keeps only their ``shared`` row.)

Sources, in plan order:

* ``agents/<id>/agent/auth-profiles.json.tmp`` / ``auth.json.tmp`` (49): an
  atomic-write temp file left behind. When its credentials are the same as the
  live file's (or, once that is imported, as the fingerprints in the live
  file's receipt), it is retired with nothing written; otherwise it is reported
  and left in place for review.
* ``agents/<id>/agent/auth-profiles.json`` (50) and the pre-multi-agent
  ``agent/auth-profiles.json`` (the configured default agent): ``{version,
  profiles, order?, lastGood?, usageStats?}`` or the older flat map
  ``{<provider>: {apiKey, baseUrl?}}`` (becomes ``<provider>:default``).
  Runtime fields (``order``, ``lastGood``, ``usageStats``) go to the state row.
* ``agents/<id>/agent/auth-state.json`` (51): the split-off runtime state.
* ``agents/<id>/agent/auth.json`` (52): PI's credential cache
  ``{<provider>: {type|mode, key|apiKey|token|access|refresh|expires...}}``.
* ``credentials/oauth.json`` (53): legacy OAuth map ``{<provider>: {access,
  refresh, expires, ...}}``; OpenClaw imports it into the shared-main owner,
  the ``main`` agent.

Every credential and state entry is normalised the way OpenClaw's loader does
(``normalize_credential``, ``normalize_state``): known types only (``api_key``,
``token``, ``oauth``), their known fields in OpenClaw's order, provider ids
lower-cased. Fields OpenClaw does not keep are not carried; their names are
listed in the receipt and a notice, and the original file is retired byte-exact.

Merge rule (upsert by key = agent + profile id): the per-agent
``auth-profiles.json`` / ``auth-state.json`` win for the ids and fields they
hold; the legacy sources (flat ``agent/``, ``auth.json``, ``oauth.json``) only
fill ids and fields that are still missing -- as OpenClaw's doctor merges
``auth.json`` under ``auth-profiles.json``. Importing never deletes a
credential. Receipts carry fingerprints of each credential, never a value.
Details: docs/readers/auth.md.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from pathlib import PurePosixPath
from typing import Any, BinaryIO, ClassVar

from statekit.legacy_readers.base import ImportContext, Inspection, ReadContext, Reader, Source, WriteResult, fingerprint
from statekit.documents import parse_json5_document, validate
from statekit.legacy_readers.writer import DatabaseWriter, Json, as_database_writer
from statekit.values import file_mtime_ms, finite_number, trimmed
from statekit.errors import SourceError
from statekit.layout import DEFAULT_AGENT_ID, agent_db_path, is_valid_agent_id, normalize_agent_id
from statekit.db import Connection, immediate

STORE_VERSION = 1
STORE_TABLE = "auth_profile_store"
STATE_TABLE = "auth_profile_state"
PRIMARY_KEY = "primary"
SHARED_MAIN_AGENT_ID = "main"  # OpenClaw's shared-main auth owner: agents/main/agent
STATE_FIELDS = ("order", "lastGood", "usageStats")
SECRET_FIELDS = frozenset({
    "key", "apiKey", "api_key", "token", "access", "refresh", "accessToken", "access_token", "refreshToken",
    "refresh_token", "idToken", "id_token", "secret", "clientSecret", "client_secret", "password", "sessionKey",
    "session_key", "cookie",
})
CREDENTIAL_TYPES = ("api_key", "token", "oauth")
# Provider-owned OAuth fields OpenClaw keeps with the OAuth material, in its order.
OAUTH_METADATA_FIELDS = (
    "idToken", "clientId", "enterpriseUrl", "projectId", "accountId", "chatgptPlanType", "subscriptionType",
    "rateLimitTier", "tokenEndpoint", "deviceAuthorizationEndpoint", "issuer", "authFlow",
)
UNSAFE_PROVIDER_KEYS = frozenset({"__proto__", "constructor", "prototype"})
AUTH_FAILURE_REASONS = (
    "auth", "auth_permanent", "format", "overloaded", "rate_limit", "billing", "timeout", "model_not_found",
    "session_expired", "empty_response", "no_error_details", "unclassified", "unknown",
)
AUTH_COOLDOWN_CLASSIFICATIONS = {"wham_token_expired": "auth", "wham_account_dead": "auth_permanent"}
AUTH_BLOCKED_REASONS = ("subscription_limit",)
AUTH_BLOCKED_SOURCES = ("codex_rate_limits", "wham")
_ENV_TEMPLATE = re.compile(r"^\$\{([A-Z][A-Z0-9_]{0,127})\}$|^\$([A-Z][A-Z0-9_]{0,127})$")
_LEGACY_OAUTH_REF_ID = re.compile(r"^[a-f0-9]{32}$")
_SECRET_SOURCES = ("env", "file", "exec", "store")


# --- OpenClaw's value rules ---------------------------------------------------------


def _non_blank(value: Any) -> str | None:
    """A string that is not blank, kept as written (OpenClaw's ``readNonBlankString``)."""
    return value if isinstance(value, str) and value.strip() else None


def normalize_provider(value: Any) -> str:
    """Trimmed and lower-cased; ``""`` when absent."""
    stripped = trimmed(value)
    return stripped.lower() if stripped else ""


def secret_ref(value: Any) -> dict[str, str] | None:
    """A SecretRef ``{source, provider, id}`` (also the provider-less legacy form and ``${ENV}`` text), else None."""
    if isinstance(value, dict):
        source, provider, ref_id = value.get("source"), value.get("provider"), value.get("id")
        if source not in _SECRET_SOURCES or not isinstance(ref_id, str) or not ref_id.strip():
            return None
        if len(value) == 3 and isinstance(provider, str) and provider.strip():
            return {"source": source, "provider": provider, "id": ref_id}
        if "provider" not in value:
            return {"source": source, "provider": "default", "id": ref_id}
        return None
    if isinstance(value, str):
        match = _ENV_TEMPLATE.match(value.strip())
        if match:
            return {"source": "env", "provider": "default", "id": match.group(1) or match.group(2)}
    return None


def _expires(value: Any) -> int | float | None:
    """Absent stays absent; a finite positive number is kept; anything else becomes 0."""
    number = finite_number(value)
    return number if number is not None and number > 0 else 0


def _is_legacy_oauth_ref(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and value.get("source") == "openclaw-credentials"
        and value.get("provider") == "openai-codex"
        and isinstance(value.get("id"), str)
        and bool(_LEGACY_OAUTH_REF_ID.match(value["id"]))
    )


def _setup(value: Any) -> dict[str, Any] | None:
    if not isinstance(value, dict) or not isinstance(value.get("replacement"), bool):
        return None
    model_ref, config_json = _non_blank(value.get("modelRef")), _non_blank(value.get("configJson"))
    if not model_ref or not config_json:
        return None
    setup: dict[str, Any] = {"replacement": value["replacement"], "modelRef": model_ref, "configJson": config_json}
    if value.get("apiKeyHeader") is True:
        setup["apiKeyHeader"] = True
    for name in ("agentRuntimeId", "authChoice", "pluginId"):
        if _non_blank(value.get(name)):
            setup[name] = value[name]
    return setup


def _common_fields(entry: dict[str, Any]) -> dict[str, Any]:
    common: dict[str, Any] = {"provider": normalize_provider(entry.get("provider")) if isinstance(entry.get("provider"), str) else ""}
    setup = _setup(entry.get("setup"))
    if setup:
        common["setup"] = setup
    if isinstance(entry.get("copyToAgents"), bool):
        common["copyToAgents"] = entry["copyToAgents"]
    for name in ("email", "displayName"):
        if _non_blank(entry.get(name)) is not None:
            common[name] = entry[name]
    return common


def _typed_credential(raw: dict[str, Any]) -> dict[str, Any]:
    """OpenClaw's per-type normalisation of one credential record (other types come back unchanged)."""
    entry = dict(raw)
    if "type" not in entry and isinstance(entry.get("mode"), str):
        entry["type"] = entry["mode"]
    if entry.get("type") == "apiKey":
        entry["type"] = "api_key"
    if "key" not in entry and not secret_ref(entry.get("keyRef")) and isinstance(entry.get("apiKey"), str):
        entry["key"] = entry["apiKey"]
    for value_field, ref_field in (("key", "keyRef"), ("token", "tokenRef")):
        value = entry.get(value_field)
        if value is None or isinstance(value, str):
            continue
        ref = secret_ref(value)
        if ref and not secret_ref(entry.get(ref_field)):
            entry[ref_field] = ref
        del entry[value_field]
    kind = entry.get("type")
    if kind == "api_key":
        out = {"type": "api_key", **_common_fields(entry)}
        key_ref = secret_ref(entry.get("keyRef"))
        if key_ref:
            out["keyRef"] = key_ref
        elif _non_blank(entry.get("key")) is not None:
            out["key"] = entry["key"]
        metadata = {k: v for k, v in entry["metadata"].items() if isinstance(v, str)} if isinstance(entry.get("metadata"), dict) else {}
        if metadata:
            out["metadata"] = metadata
        return out
    if kind == "token":
        out = {"type": "token", **_common_fields(entry)}
        if _non_blank(entry.get("token")) is not None:
            out["token"] = entry["token"]
        token_ref = secret_ref(entry.get("tokenRef"))
        if token_ref:
            out["tokenRef"] = token_ref
        if "expires" in entry:
            out["expires"] = _expires(entry["expires"])
        return out
    if kind == "oauth":
        out = {"type": "oauth", **_common_fields(entry)}
        if _is_legacy_oauth_ref(entry.get("oauthRef")):
            out["oauthRef"] = dict(entry["oauthRef"])
        for name in ("access", "refresh", *OAUTH_METADATA_FIELDS):
            if _non_blank(entry.get(name)) is not None:
                out[name] = entry[name]
        if "expires" in entry:
            out["expires"] = _expires(entry["expires"])
        return out
    return entry


def normalize_credential(raw: Any, fallback_provider: str | None = None) -> tuple[dict[str, Any] | None, list[str]]:
    """One credential as OpenClaw stores it, and the names of the fields it does not keep.

    None when OpenClaw would reject the entry (not an object, a type other than
    ``api_key``/``token``/``oauth``, or no provider).
    """
    if not isinstance(raw, dict):
        return None, []
    typed = _typed_credential(raw)
    if typed.get("type") not in CREDENTIAL_TYPES:
        return None, []
    provider = normalize_provider(typed.get("provider") or fallback_provider)
    if not provider:
        return None, []
    credential = {**typed, "provider": provider}
    if credential["type"] == "token" and "tokenRef" in credential and "token" in credential:
        del credential["token"]  # a ref wins over a resolved literal (OpenClaw persists the ref only)
    kept = set(credential)
    if "type" not in raw:
        kept.add("mode")  # read as the type
    if "key" not in raw and "key" in credential:
        kept.add("apiKey")  # read as the key
    if "keyRef" in credential:
        kept.add("key")  # a SecretRef given as the value
    if "tokenRef" in credential:
        kept.add("token")
    return credential, sorted(name for name in raw if name not in kept)


def has_usable_credential(credential: dict[str, Any]) -> bool:
    if credential["type"] == "api_key":
        return _non_blank(credential.get("key")) is not None or "keyRef" in credential
    if credential["type"] == "token":
        return _non_blank(credential.get("token")) is not None or "tokenRef" in credential
    return (
        _non_blank(credential.get("access")) is not None
        and _non_blank(credential.get("refresh")) is not None
        and finite_number(credential.get("expires")) is not None
    )


def _flat_credential_type(raw: dict[str, Any]) -> str | None:
    explicit = _non_blank(raw.get("type")) or _non_blank(raw.get("mode"))
    if explicit in CREDENTIAL_TYPES:
        return explicit
    if _non_blank(raw.get("key")) or _non_blank(raw.get("apiKey")) or secret_ref(raw.get("keyRef")):
        return "api_key"
    if _non_blank(raw.get("token")) or secret_ref(raw.get("tokenRef")):
        return "token"
    if _non_blank(raw.get("access")) and _non_blank(raw.get("refresh")) and finite_number(raw.get("expires")) is not None:
        return "oauth"
    return None


def flat_credential(provider_id: str, raw: Any) -> tuple[dict[str, Any] | None, list[str]]:
    """An entry of the older flat ``auth-profiles.json`` map: the type is inferred from the fields it has."""
    if not isinstance(raw, dict):
        return None, []
    kind = _flat_credential_type(raw)
    if kind is None:
        return None, []
    provider = _non_blank(raw.get("provider")) or provider_id
    credential, dropped = normalize_credential({**raw, "type": kind, "provider": provider}, provider_id)
    if credential is None or not has_usable_credential(credential):
        return None, dropped
    return credential, [name for name in dropped if name != "type"]


def _usage_entry(raw: Any) -> dict[str, Any] | None:
    if not isinstance(raw, dict):
        return None

    def enum(value: Any, allowed: tuple[str, ...]) -> str | None:
        return value if isinstance(value, str) and value in allowed else None

    failure_counts: dict[str, int] = {}
    if isinstance(raw.get("failureCounts"), dict):
        for reason, count in raw["failureCounts"].items():
            number = finite_number(count)
            if reason in AUTH_FAILURE_REASONS and number is not None and number > 0:
                failure_counts[reason] = math.trunc(number)
    cooldown_reason = enum(raw.get("cooldownReason"), AUTH_FAILURE_REASONS)
    classification = raw.get("cooldownClassification")
    stats = {
        "lastUsed": finite_number(raw.get("lastUsed")),
        "blockedUntil": finite_number(raw.get("blockedUntil")),
        "blockedReason": enum(raw.get("blockedReason"), AUTH_BLOCKED_REASONS),
        "blockedSource": enum(raw.get("blockedSource"), AUTH_BLOCKED_SOURCES),
        "blockedModel": trimmed(raw.get("blockedModel")),
        "blockedScope": "model" if raw.get("blockedScope") == "model" else None,
        "cooldownUntil": finite_number(raw.get("cooldownUntil")),
        "cooldownReason": cooldown_reason,
        "cooldownClassification": (
            classification
            if isinstance(classification, str) and AUTH_COOLDOWN_CLASSIFICATIONS.get(classification) == cooldown_reason and cooldown_reason
            else None
        ),
        "cooldownModel": trimmed(raw.get("cooldownModel")),
        "disabledUntil": finite_number(raw.get("disabledUntil")),
        "disabledReason": enum(raw.get("disabledReason"), AUTH_FAILURE_REASONS),
        "errorCount": finite_number(raw.get("errorCount")),
        "failureCounts": failure_counts or None,
        "lastFailureAt": finite_number(raw.get("lastFailureAt")),
        "lastProbeAt": finite_number(raw.get("lastProbeAt")),
    }
    kept = {name: value for name, value in stats.items() if value is not None}
    return kept or None


def normalize_state(raw: Any) -> dict[str, dict[str, Any]]:
    """``{order?, lastGood?, usageStats?}`` as OpenClaw's state loader keeps them (empty maps left out)."""
    if not isinstance(raw, dict):
        return {}
    state: dict[str, dict[str, Any]] = {}
    if isinstance(raw.get("order"), dict):
        order: dict[str, Any] = {}
        for provider, ids in raw["order"].items():
            key: str | None = normalize_provider(provider)
            if not isinstance(ids, list) or not key:
                continue
            kept = [s.strip() for s in ids if isinstance(s, str) and s.strip()]
            if kept:
                order[key] = kept
        if order:
            state["order"] = order
    if isinstance(raw.get("lastGood"), dict):
        last_good = {}
        for provider, profile_id in raw["lastGood"].items():
            key, value = normalize_provider(provider), trimmed(profile_id)
            if key and value:
                last_good[key] = value
        if last_good:
            state["lastGood"] = last_good
    if isinstance(raw.get("usageStats"), dict):
        usage = {}
        for profile_id, entry in raw["usageStats"].items():
            key, stats = trimmed(profile_id), _usage_entry(entry)
            if key and stats:
                usage[key] = stats
        if usage:
            state["usageStats"] = usage
    return state


# --- reading the sources -------------------------------------------------------------


class Parsed:
    """What one source contributes to an agent's store: profiles, runtime state and what was not carried."""

    def __init__(self, fmt: str) -> None:
        self.format = fmt
        self.profiles: dict[str, dict[str, Any]] = {}
        self.state: dict[str, dict[str, Any]] = {}
        self.warnings: list[str] = []
        self.dropped: list[str] = []  # "<profile id>.<field>" or top-level key names, never values

    def add(self, profile_id: str, credential: dict[str, Any] | None, dropped: list[str], rel: str, label: str) -> None:
        self.dropped.extend(f"{profile_id}.{name}" for name in dropped)
        if credential is None:
            self.warnings.append(f"{rel}: {label} holds no credential OpenClaw can use; skipped (kept in the retired copy)")
            return
        self.profiles[profile_id] = credential


def parse_auth_profiles(document: dict[str, Any], rel: str) -> Parsed:
    if "profiles" in document:
        parsed = Parsed("canonical")
        for profile_id, raw in document["profiles"].items():
            credential, dropped = normalize_credential(_with_api_key_alias(raw))
            parsed.add(profile_id, credential, dropped, rel, f"profile {profile_id!r}")
        parsed.state = normalize_state(document)
        parsed.dropped.extend(sorted(k for k in document if k not in ("version", "profiles", *STATE_FIELDS)))
        return parsed
    parsed = Parsed("legacy-flat")
    for key, raw in document.items():
        provider = key.strip()
        if not provider or provider in UNSAFE_PROVIDER_KEYS:
            parsed.warnings.append(f"{rel}: entry {key!r} is not a provider id; skipped (kept in the retired copy)")
            continue
        credential, dropped = flat_credential(provider, raw)
        parsed.add(f"{provider}:default", credential, dropped, rel, f"entry {provider!r}")
    return parsed


def _with_api_key_alias(raw: Any) -> Any:
    """OpenClaw's import reads an ``api_key`` profile's snake_case ``api_key`` field as its key."""
    if not isinstance(raw, dict) or (_non_blank(raw.get("type")) or _non_blank(raw.get("mode"))) != "api_key":
        return raw
    if _non_blank(raw.get("key")) is not None or secret_ref(raw.get("keyRef")) or "api_key" not in raw:
        return raw
    return {**raw, "key": raw["api_key"]}


def parse_auth_json(document: dict[str, Any], rel: str) -> Parsed:
    """PI's ``auth.json``: each entry needs its own ``type``/``mode`` (nothing is inferred)."""
    parsed = Parsed("provider-map")
    for provider, raw in document.items():
        credential, dropped = normalize_credential(raw, provider)
        parsed.add(f"{provider}:default", credential, dropped, rel, f"entry {provider!r}")
    return parsed


def parse_oauth_json(document: dict[str, Any], rel: str) -> Parsed:
    """``credentials/oauth.json``: every entry is an OAuth credential of its key's provider."""
    parsed = Parsed("oauth-map")
    for provider, raw in document.items():
        if not isinstance(raw, dict):
            parsed.warnings.append(f"{rel}: entry {provider!r} is not an object; skipped (kept in the retired copy)")
            continue
        credential, dropped = normalize_credential({**raw, "type": "oauth", "provider": provider}, provider)
        parsed.add(f"{provider}:default", credential, [n for n in dropped if n not in ("type", "provider")], rel, f"entry {provider!r}")
    return parsed


def _load(source: Source, handle: BinaryIO, schema: str) -> dict[str, Any]:
    document = parse_json5_document(handle.read(), source.rel)
    validate(document, schema, source.rel)
    return document


def default_agent_id(config: Any) -> str:
    """The configured default agent (``agents.list[].default``), else ``main``."""
    agents = config.get("agents") if isinstance(config, dict) else None
    entries = agents.get("list") if isinstance(agents, dict) else None
    if isinstance(entries, list):
        for entry in entries:
            if isinstance(entry, dict) and entry.get("default") is True and isinstance(entry.get("id"), str):
                agent = normalize_agent_id(entry["id"])
                if is_valid_agent_id(agent):
                    return agent
    return DEFAULT_AGENT_ID


def owner_agent(source: Source, config: Any) -> str:
    """The agent whose store a file feeds: ``agents/<id>/...``, or the configured default agent for the
    pre-multi-agent ``agent/`` dir (OpenClaw moved that dir to the default agent's dir)."""
    if source.rel.startswith("agent/"):
        return default_agent_id(config)
    if source.agent_id is None:
        raise SourceError(source.rel, "cannot tell which agent owns this auth store")
    return source.agent_id


# --- where an agent's rows go -------------------------------------------------------------

SHARED_TABLE = "config_machine_state"
SHARED_STORE_KEY = "authProfiles.store"
SHARED_STATE_KEY = "authProfiles.state"
OWNERSHIP_KEY = "auth.sharedStore"
STATE_DB_OWNERSHIP = {"location": "state-db"}


class Target:
    """One agent's two auth rows: in its own database (``primary``), or OpenClaw's shared store (``main``)."""

    def __init__(self, writer: DatabaseWriter, agent: str, shared: bool) -> None:
        self.writer, self.agent, self.shared = writer, agent, shared

    def _where(self, kind: str) -> tuple[str, str, str, str, tuple[Any, ...]]:
        """(table, key column, json column, updated column, key) of the ``store`` or ``state`` row."""
        if self.shared:
            return SHARED_TABLE, "state_key", "value_json", "updated_at_ms", (SHARED_STORE_KEY if kind == "store" else SHARED_STATE_KEY,)
        if kind == "store":
            return STORE_TABLE, "store_key", "store_json", "updated_at", (PRIMARY_KEY,)
        return STATE_TABLE, "state_key", "state_json", "updated_at", (PRIMARY_KEY,)

    def label(self, kind: str) -> str:
        table, _key, _json, _updated, key = self._where(kind)
        return f"{table} row {key[0]!r}"

    def load(self, kind: str, rel: str) -> tuple[dict[str, Any] | None, int]:
        table, key_column, json_column, updated_column, key = self._where(kind)
        row = self.writer.first(table, (json_column, updated_column), {key_column: key[0]})
        if row is None:
            return None, 0
        try:
            value = json.loads(row[0])
        except (TypeError, ValueError):
            raise SourceError(rel, f"existing {self.label(kind)} is not valid JSON; left unchanged") from None
        if not isinstance(value, dict) or (kind == "store" and not isinstance(value.get("profiles", {}), dict)):
            raise SourceError(rel, f"existing {self.label(kind)} is not a JSON object with profiles; left unchanged")
        return value, int(row[1] or 0)

    def save(self, kind: str, value: dict[str, Any], updated_at: int, *, replace: bool = True) -> None:
        table, key_column, json_column, updated_column, key = self._where(kind)
        self.writer.upsert(table, {key_column: key[0], json_column: Json(value), updated_column: updated_at}, (key_column,), update=replace)

    def report(self) -> dict[str, Any]:
        if self.shared:
            return {"agent_id": self.agent, "target": f"state/openclaw.sqlite#{SHARED_TABLE}", "store_key": SHARED_STORE_KEY}
        return {"agent_id": self.agent, "target": f"agents/{self.agent}/agent/openclaw-agent.sqlite", "store_key": PRIMARY_KEY}


def _has_rows(db: DatabaseWriter) -> bool:
    return any(db.exists(table, {column: PRIMARY_KEY}) for table, column in ((STORE_TABLE, "store_key"), (STATE_TABLE, "state_key")))


def _ownership(state: DatabaseWriter) -> Any:
    row = state.first(SHARED_TABLE, ("value_json",), {"state_key": OWNERSHIP_KEY})
    if row is None:
        return None
    try:
        return json.loads(row[0])
    except (TypeError, ValueError):
        return row[0]


def _has_shared_table(state: DatabaseWriter) -> bool:
    return state.has_table(SHARED_TABLE)


def target_for(ctx: ImportContext, agent: str, stamp: int) -> Target:
    """Where ``agent``'s auth rows go.

    Every agent but ``main``: its own database, as 2026.7.35 kept them (9.6 keeps them there). ``main`` is
    OpenClaw's shared-main owner: its rows go straight into 9.6's shared store (``config_machine_state``),
    with the ownership marker ``auth.sharedStore = {"location": "state-db"}`` -- the state 9.6's doctor
    ends in after relocating them. Without the marker, 9.6's first doctor pass would try to read the main
    agent's version-1 database before upgrading it, and stop. When the main agent's database already holds
    auth rows of its own (a tree written by 2026.6-2026.7), they are left where they are and merged into,
    unmarked, for 9.6's relocation to move (as on OpenClaw's own trees of that era).
    """
    state = ctx.writer.state
    if agent != SHARED_MAIN_AGENT_ID or not _has_shared_table(state):
        return Target(ctx.writer.agent(agent), agent, shared=False)
    ownership = _ownership(state)
    if ownership == STATE_DB_OWNERSHIP:
        return Target(state, agent, shared=True)
    if ownership is None:
        path = agent_db_path(ctx.state_dir, agent)
        if not (path.exists() and _has_rows(ctx.writer.agent(agent))):
            claim_shared_store(state, stamp)
            return Target(state, agent, shared=True)
    return Target(ctx.writer.agent(agent), agent, shared=False)


def claim_shared_store(state: DatabaseWriter, stamp: int) -> None:
    """Record that the shared auth store lives in the state database (9.6's ``auth.sharedStore``).

    ``stamp`` is the store's own time (the imported file's mtime, the moved row's ``updated_at``, or 0
    when there is no store), never the clock: a rerun after an interruption writes the same row.
    """
    state.upsert(
        SHARED_TABLE,
        {"state_key": OWNERSHIP_KEY, "value_json": Json(STATE_DB_OWNERSHIP), "updated_at_ms": stamp},
        ("state_key",),
        update=False,
    )


def settle_shared_auth_store(state_db: DatabaseWriter | Connection, main_db: DatabaseWriter | Connection | None) -> str | None:
    """End-of-run step for the shared auth store (call inside the global database's transaction).

    When no auth file of ``main`` was imported, the ownership marker may still be missing; 9.6's first
    doctor pass then stops on the main agent's version-1 database. So: nothing to do once the marker
    is set; with no main database or one without auth rows, set it; with main's own rows, copy them into
    the shared store (unless it already holds other rows: then leave everything for 9.6's relocation)
    and set it. The rows left in the main database are removed by ``clean_relocated_main_rows`` after
    this transaction is committed. Returns a one-line notice, or None when nothing changed.
    """
    state = as_database_writer(state_db)
    main = as_database_writer(main_db, f"agent:{SHARED_MAIN_AGENT_ID}") if main_db is not None else None
    if not _has_shared_table(state) or _ownership(state) is not None:
        return None
    moved, refusal = _settling_moves(state, main)
    if refusal is not None:
        return refusal
    for shared_key, value_json, updated_at in moved:
        state.upsert(SHARED_TABLE, {"state_key": shared_key, "value_json": value_json, "updated_at_ms": updated_at}, ("state_key",), update=False)
    claim_shared_store(state, next((int(u or 0) for k, _v, u in moved if k == SHARED_STORE_KEY), 0))
    if moved:
        return "moved the main agent's auth store into the shared store (auth.sharedStore = state-db), as OpenClaw 2026.9.6 keeps it"
    return "the shared auth store lives in the state database (auth.sharedStore = state-db), as OpenClaw 2026.9.6 keeps it"


def _settling_moves(state: DatabaseWriter, main: DatabaseWriter | None) -> tuple[list[tuple[str, Any, Any]], str | None]:
    """What settling the shared store would do: (main's rows to copy into it, None), or ([], why it is left
    for OpenClaw's doctor). Reads only."""
    moved: list[tuple[str, Any, Any]] = []
    if main is None:
        return moved, None
    for kind, (table, key_column, json_column), shared_key in (
        ("store", (STORE_TABLE, "store_key", "store_json"), SHARED_STORE_KEY),
        ("state", (STATE_TABLE, "state_key", "state_json"), SHARED_STATE_KEY),
    ):
        row = main.first(table, (json_column, "updated_at"), {key_column: PRIMARY_KEY})
        if row is None:
            continue
        if not _readable(row[0], kind):
            return [], f"main's auth {kind} row is not a JSON object OpenClaw can read; left in the main agent's database for OpenClaw's doctor"
        stored = state.first(SHARED_TABLE, ("value_json", "updated_at_ms"), {"state_key": shared_key})
        if stored is not None and tuple(stored) != (row[0], row[1]):
            return [], f"main's auth {kind} differs from the shared store; both left for OpenClaw's doctor to reconcile"
        moved.append((shared_key, row[0], row[1]))
    return moved, None


def shared_store_unsettled(state_db: Connection, main_db: Connection | None) -> bool:
    """True when :func:`settle_shared_auth_store` would write: a run stopped (full disk, kill) after its last import
    but before its end-of-run step, so the next run has this step left to do although every source is imported."""
    state = as_database_writer(state_db)
    if not _has_shared_table(state) or _ownership(state) is not None:
        return False
    main = as_database_writer(main_db, f"agent:{SHARED_MAIN_AGENT_ID}") if main_db is not None else None
    return _settling_moves(state, main)[1] is None


def _readable(text: Any, kind: str) -> bool:
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        return False
    return isinstance(value, dict) and (kind != "store" or isinstance(value.get("profiles"), dict))


def clean_relocated_main_rows(state_db: DatabaseWriter | Connection, main_db: DatabaseWriter | Connection) -> int:
    """Remove main's own auth rows once the shared store holds the same values (call after the global commit)."""
    state, main = as_database_writer(state_db), as_database_writer(main_db, f"agent:{SHARED_MAIN_AGENT_ID}")
    if _ownership(state) != STATE_DB_OWNERSHIP:
        return 0
    removed = 0
    for (table, key_column, json_column), shared_key in (
        ((STORE_TABLE, "store_key", "store_json"), SHARED_STORE_KEY),
        ((STATE_TABLE, "state_key", "state_json"), SHARED_STATE_KEY),
    ):
        row = main.first(table, (json_column, "updated_at"), {key_column: PRIMARY_KEY})
        stored = state.first(SHARED_TABLE, ("value_json", "updated_at_ms"), {"state_key": shared_key})
        if row is not None and stored is not None and tuple(stored) == (row[0], row[1]):
            main.delete(table, {key_column: PRIMARY_KEY})
            removed += 1
    return removed


def finish_shared_auth_store(global_conn: Connection, main_conn: Connection | None) -> str | None:
    """The end-of-run step of a migration (both connections outside a transaction): settle, commit, clean, commit.

    Idempotent and safe to interrupt: the copy and the marker commit together; the main database's own
    rows are removed only afterwards, and only while the shared store holds the same values.
    """
    state = DatabaseWriter(global_conn, "global")
    main = DatabaseWriter(main_conn, f"agent:{SHARED_MAIN_AGENT_ID}") if main_conn is not None else None
    with immediate(global_conn):
        notice = settle_shared_auth_store(state, main)
    if main is not None and main_conn is not None:
        with immediate(main_conn):
            clean_relocated_main_rows(state, main)
    return notice


# --- merging into the rows ----------------------------------------------------------------


def merge_store(
    target: Target,
    profiles: dict[str, dict[str, Any]],
    updated_at: int,
    authoritative: bool,
    rel: str,
    *,
    first: bool = False,
) -> dict[str, int]:
    """Upsert ``profiles`` into the agent's store row by profile id; returns counts (added/replaced/kept/unchanged).

    ``first``: the incoming ids go first, in their order (OpenClaw applies ``auth.json`` before
    ``auth-profiles.json``, so its profiles lead the store even though they never win).
    """
    existing, existing_at = target.load("store", rel)
    current = dict(existing) if existing else {}
    merged = dict(current.get("profiles") or {})
    counts = {"added": 0, "replaced": 0, "kept_existing": 0, "unchanged": 0}
    for profile_id, profile in profiles.items():
        if profile_id not in merged:
            merged[profile_id] = profile
            counts["added"] += 1
        elif merged[profile_id] == profile:
            counts["unchanged"] += 1
        elif authoritative:
            merged[profile_id] = profile
            counts["replaced"] += 1
        else:
            counts["kept_existing"] += 1
    if first:
        merged = {**{pid: merged[pid] for pid in profiles}, **{pid: v for pid, v in merged.items() if pid not in profiles}}
    others = {name: value for name, value in current.items() if name not in ("version", "profiles")}
    target.save("store", {"version": current.get("version", STORE_VERSION), "profiles": merged, **others}, max(updated_at, existing_at))
    return counts


def ensure_store_row(target: Target, updated_at: int) -> None:
    """An empty store row when none exists: OpenClaw reads an agent's state only together with its store."""
    target.save("store", {"version": STORE_VERSION, "profiles": {}}, updated_at, replace=False)


def merge_state(target: Target, state: dict[str, dict[str, Any]], updated_at: int, authoritative: bool, rel: str) -> None:
    """Merge runtime state per field, then per provider / profile id (an entry is replaced whole)."""
    existing, existing_at = target.load("state", rel)
    merged: dict[str, Any] = {name: value for name, value in (existing or {}).items() if name != "version"}
    for name in STATE_FIELDS:
        incoming = state.get(name)
        if not incoming:
            continue
        old = merged.get(name)
        combined = dict(old) if isinstance(old, dict) else {}
        for inner, value in incoming.items():
            if authoritative or inner not in combined:
                combined[inner] = value
        merged[name] = combined
    version = (existing or {}).get("version", STORE_VERSION)
    ordered = {"version": version, **{n: merged[n] for n in STATE_FIELDS if n in merged}, **{n: v for n, v in merged.items() if n not in STATE_FIELDS}}
    target.save("state", ordered, max(updated_at, existing_at))


def credential_fingerprints(profile: dict[str, Any]) -> dict[str, str]:
    return {name: fingerprint(value) for name, value in sorted(profile.items()) if name in SECRET_FIELDS and isinstance(value, str) and value}


def profile_summary(profile_id: str, profile: dict[str, Any]) -> dict[str, Any]:
    summary: dict[str, Any] = {"id": profile_id, "fingerprints": credential_fingerprints(profile)}
    for name in ("type", "provider"):
        if isinstance(profile.get(name), str):
            summary[name] = profile[name]
    return summary


def _fingerprint_map(profiles: dict[str, dict[str, Any]]) -> dict[str, dict[str, str]]:
    return {pid: credential_fingerprints(p) for pid, p in sorted(profiles.items())}


def _import_store(
    source: Source, ctx: ImportContext, agent: str, parsed: Parsed, authoritative: bool, fill_note: str, *, first: bool = False
) -> WriteResult:
    updated = file_mtime_ms(source, ctx.now_ms)
    target = target_for(ctx, agent, updated)
    counts = merge_store(target, parsed.profiles, updated, authoritative, source.rel, first=first)
    if parsed.state:
        merge_state(target, parsed.state, updated, authoritative, source.rel)
    notices = []
    if counts["kept_existing"]:
        notices.append(f"{source.rel}: {counts['kept_existing']} profile(s) already in agent {agent!r}'s store were kept ({fill_note})")
    if parsed.dropped:
        notices.append(f"{source.rel}: field(s) OpenClaw does not keep were not carried: {', '.join(sorted(parsed.dropped))}")
    result = WriteResult(records=len(parsed.profiles), notices=notices, warnings=list(parsed.warnings))
    result.report.update({
        **target.report(),
        "format": parsed.format,
        "authoritative": authoritative,
        "profiles": [profile_summary(pid, p) for pid, p in sorted(parsed.profiles.items())],
        "credential_fingerprints": _fingerprint_map(parsed.profiles),
        "state_fields": sorted(parsed.state),
        "dropped_fields": sorted(parsed.dropped),
        **counts,
    })
    return result


class AuthProfilesReader(Reader):
    kind = "auth-profiles"
    family = "auth"
    description = "Auth profile store auth-profiles.json (per agent, or the pre-multi-agent agent/ dir)"
    patterns = ("agents/*/agent/auth-profiles.json", "agent/auth-profiles.json")
    schema_name = "auth-profiles"
    target_tables = ("agent.auth_profile_store", "agent.auth_profile_state", "global.config_machine_state")
    action = "import"
    depends_on = ("auth-tmp",)  # a temp copy is compared with the live file before it is imported

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        parsed = parse_auth_profiles(_load(source, handle, self.schema_name or ""), source.rel)
        return Inspection(record_count=len(parsed.profiles), warnings=parsed.warnings, details={"format": parsed.format})

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        agent = owner_agent(source, dict(ctx.config))
        parsed = parse_auth_profiles(_load(source, handle, self.schema_name or ""), source.rel)
        authoritative = source.rel.startswith("agents/")
        return _import_store(source, ctx, agent, parsed, authoritative, "the agent's own auth-profiles.json wins")


class AuthStateReader(Reader):
    kind = "auth-state"
    family = "auth"
    description = "Auth profile runtime state auth-state.json (order, lastGood, usageStats)"
    patterns = ("agents/*/agent/auth-state.json", "agent/auth-state.json")
    schema_name = "auth-state"
    target_tables = ("agent.auth_profile_store", "agent.auth_profile_state", "global.config_machine_state")  # a state needs its store row
    action = "import"
    depends_on = ("auth-profiles",)  # merges into the store auth-profiles.json wrote

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        document = _load(source, handle, self.schema_name or "")
        return Inspection(record_count=1, details={"fields": sorted(normalize_state(document))})

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        agent = owner_agent(source, dict(ctx.config))
        document = _load(source, handle, self.schema_name or "")
        state = normalize_state(document)
        authoritative = source.rel.startswith("agents/")
        updated = file_mtime_ms(source, ctx.now_ms)
        result = WriteResult(records=1 if state else 0)
        target = target_for(ctx, agent, updated)
        if state:
            ensure_store_row(target, updated)
            merge_state(target, state, updated, authoritative, source.rel)
        else:
            result.notices.append(f"{source.rel}: no runtime state OpenClaw keeps (order, lastGood, usageStats); nothing written")
        usage = state.get("usageStats", {})
        result.report.update({
            **target.report(),
            "authoritative": authoritative,
            "fields": sorted(state),
            "usage_stats_profiles": sorted(usage),
        })
        return result


class _ProviderMapReader(Reader):
    """``{<provider>: {...credential}}`` maps (``auth.json``, ``credentials/oauth.json``): fill-only."""

    parse: Callable[[dict[str, Any], str], Parsed] = staticmethod(parse_auth_json)
    leads_store: ClassVar[bool] = True  # auth.json's ids come first in OpenClaw's merged store

    def _agent(self, source: Source, ctx: ImportContext) -> str:
        return owner_agent(source, dict(ctx.config))

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        parsed = self.parse(_load(source, handle, self.schema_name or ""), source.rel)
        return Inspection(record_count=len(parsed.profiles), warnings=parsed.warnings)

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        agent = self._agent(source, ctx)
        parsed = self.parse(_load(source, handle, self.schema_name or ""), source.rel)
        return _import_store(source, ctx, agent, parsed, False, "auth-profiles.json wins over this legacy file", first=self.leads_store)


class AuthJsonReader(_ProviderMapReader):
    kind = "auth-json"
    family = "auth"
    description = "PI runtime credential cache agents/<id>/agent/auth.json"
    patterns = ("agents/*/agent/auth.json", "agent/auth.json")
    schema_name = "auth-json"
    target_tables = ("agent.auth_profile_store", "global.config_machine_state")
    action = "import"
    depends_on = ("auth-profiles", "auth-state")  # auth-profiles.json wins over this legacy file


class OAuthJsonReader(_ProviderMapReader):
    kind = "oauth-json"
    family = "auth"
    description = "Legacy shared OAuth credentials credentials/oauth.json (the shared-main agent, main)"
    patterns = ("credentials/oauth.json",)
    schema_name = "oauth-json"
    target_tables = ("agent.auth_profile_store", "global.config_machine_state")
    action = "import"
    depends_on = ("auth-json",)  # merges after the agent's own stores
    parse = staticmethod(parse_oauth_json)
    leads_store = False  # imported into the finished store: its new ids are appended

    def _agent(self, source: Source, ctx: ImportContext) -> str:
        return SHARED_MAIN_AGENT_ID

    def agent_for(self, rel: str) -> str | None:
        return SHARED_MAIN_AGENT_ID


# --- leftover atomic-write temp files -------------------------------------------------

def _tmp_live_rel(rel: str) -> str:
    return rel[: -len(".tmp")]


def _profiles_of(document: Any, live_name: str, rel: str) -> dict[str, dict[str, Any]]:
    schema = "auth-profiles" if live_name == "auth-profiles.json" else "auth-json"
    validate(document, schema, rel)
    if live_name == "auth-profiles.json":
        return parse_auth_profiles(document, rel).profiles
    return parse_auth_json(document, rel).profiles


class AuthTempFileReader(Reader):
    kind = "auth-tmp"
    family = "auth"
    description = "Leftover atomic-write temp file of an auth store (auth-profiles.json.tmp, auth.json.tmp)"
    patterns = (
        "agents/*/agent/auth-profiles.json.tmp",
        "agent/auth-profiles.json.tmp",
        "agents/*/agent/auth.json.tmp",
        "agent/auth.json.tmp",
    )
    target_tables = ()
    action = "import"

    def _fingerprints(self, source: Source, data: bytes) -> tuple[str, dict[str, dict[str, str]]]:
        live_name = PurePosixPath(_tmp_live_rel(source.rel)).name
        document = parse_json5_document(data, source.rel)
        return live_name, _fingerprint_map(_profiles_of(document, live_name, source.rel))

    def _live_fingerprints(self, source: Source, live_name: str, ctx: ReadContext) -> dict[str, dict[str, str]] | None:
        live_rel = _tmp_live_rel(source.rel)
        if not ctx.path(live_rel).exists():
            return None
        try:
            data = ctx.read(live_rel)  # verified against the plan's hash of the live file
        except OSError as exc:
            raise SourceError(source.rel, f"cannot read the live {live_name} to compare with ({exc.strerror or exc}); left in place") from None
        try:
            document = parse_json5_document(data, live_rel)
            return _fingerprint_map(_profiles_of(document, live_name, live_rel))
        except SourceError:
            raise SourceError(source.rel, f"the live {live_name} does not parse, so this temp copy cannot be compared; left in place") from None

    def _compare(self, source: Source, mine: dict[str, dict[str, str]], live: dict[str, dict[str, str]], live_name: str) -> None:
        if mine != live:
            raise SourceError(
                source.rel,
                f"credentials differ from the live {live_name} (interrupted write?); left in place for review",
            )

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        live_name, mine = self._fingerprints(source, handle.read())
        live = self._live_fingerprints(source, live_name, ctx or ReadContext.for_source(source))
        if live is not None:
            self._compare(source, mine, live, live_name)
        return Inspection(record_count=0, details={"profiles": len(mine)})

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        live_name, mine = self._fingerprints(source, handle.read())
        live = self._live_fingerprints(source, live_name, ctx)
        compared_with = "live file"
        if live is None:
            live = self._receipt_fingerprints(ctx, _tmp_live_rel(source.rel))
            compared_with = "receipt of the imported live file"
            if live is None:
                raise SourceError(source.rel, f"no live {live_name} nor an import receipt of it to compare with; left in place for review")
        self._compare(source, mine, live, live_name)
        result = WriteResult(records=0)
        result.report.update({
            "disposition": f"stale temp copy; credentials identical to the {compared_with}; retired without writing rows",
            "live_path": _tmp_live_rel(source.rel),
            "credential_fingerprints": mine,
        })
        return result

    @staticmethod
    def _receipt_fingerprints(ctx: ImportContext, live_rel: str) -> dict[str, dict[str, str]] | None:
        report = ctx.imported_report(live_rel)
        found = report.get("credential_fingerprints") if isinstance(report, dict) else None
        return found if isinstance(found, dict) else None
