"""Auth profile stores: ``auth-profiles.json``, ``auth-state.json``, ``auth.json``, ``credentials/oauth.json``.

All of them land in the global database, one row per agent:
``auth_profile_stores(store_key='agent:<agentId>', store_json={version, profiles})``
and ``auth_profile_state(store_key='agent:<agentId>', state_json={version, order?,
lastGood?, usageStats?})``.

Sources, in plan order:

* ``agents/<id>/agent/auth-profiles.json.tmp`` / ``auth.json.tmp`` (49): an
  atomic-write temp file left behind. When its credentials are the same as the
  live file's (or, once that is imported, as the fingerprints in the live
  file's receipt), it is retired with nothing written; otherwise it is reported
  and left in place for review.
* ``agents/<id>/agent/auth-profiles.json`` (50) and the pre-multi-agent
  ``agent/auth-profiles.json`` (the default agent): ``{version, profiles,
  order?, lastGood?, usageStats?}`` or the older flat map
  ``{<provider>: {apiKey, baseUrl?}}`` (becomes ``<provider>:default``).
  Runtime fields (``order``, ``lastGood``, ``usageStats``) go to the state row.
* ``agents/<id>/agent/auth-state.json`` (51): the split-off runtime state.
* ``agents/<id>/agent/auth.json`` (52): PI's credential cache
  ``{<provider>: {type|mode, key|apiKey|access|refresh|expires...}}``.
* ``credentials/oauth.json`` (53): legacy OAuth map ``{<provider>: {access,
  refresh, expires, ...}}`` for the default agent.

Merge rule (upsert by key = store_key + profile id): the per-agent
``auth-profiles.json`` / ``auth-state.json`` win for the ids and fields they
hold; the legacy sources (flat ``agent/``, ``auth.json``, ``oauth.json``) only
fill ids and fields that are still missing. Importing never deletes a
credential. Receipts carry fingerprints of each credential, never a value.
Details: docs/readers/auth.md.
"""

from __future__ import annotations

import json
import os
from pathlib import PurePosixPath
from typing import Any, BinaryIO

from legacy_readers.base import (
    ImportContext,
    Inspection,
    Reader,
    Source,
    WriteResult,
    compact_json,
    fingerprint,
    parse_json5_document,
    upsert,
    validate,
)
from statekit.errors import SourceError
from statekit.fsutil import open_regular_file
from statekit.layout import DEFAULT_AGENT_ID, is_valid_agent_id, normalize_agent_id

STORE_VERSION = 1
STATE_FIELDS = ("order", "lastGood", "usageStats")
SECRET_FIELDS = frozenset({
    "key", "apiKey", "api_key", "token", "access", "refresh", "accessToken", "access_token", "refreshToken",
    "refresh_token", "idToken", "id_token", "secret", "clientSecret", "client_secret", "password", "sessionKey",
    "session_key", "cookie",
})
LEGACY_DROPPED_FIELDS = ("baseUrl",)  # endpoint config, not a credential (it belongs to models.providers in the config)


def store_key(agent_id: str) -> str:
    return f"agent:{agent_id}"


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


def credential_fingerprints(profile: dict[str, Any]) -> dict[str, str]:
    return {name: fingerprint(value) for name, value in sorted(profile.items()) if name in SECRET_FIELDS and isinstance(value, str) and value}


def profile_summary(profile_id: str, profile: dict[str, Any]) -> dict[str, Any]:
    summary: dict[str, Any] = {"id": profile_id, "fingerprints": credential_fingerprints(profile)}
    for name in ("type", "provider"):
        if isinstance(profile.get(name), str):
            summary[name] = profile[name]
    return summary


def legacy_entry_to_profile(provider: str, entry: dict[str, Any], *, oauth: bool = False) -> tuple[dict[str, Any] | None, list[str]]:
    """A ``{provider: {...}}`` legacy entry as a canonical credential (None when it holds no credential)."""
    declared = entry.get("type") if isinstance(entry.get("type"), str) else entry.get("mode")
    declared = declared if isinstance(declared, str) and declared else None
    if declared in ("apiKey", "api-key"):
        declared = "api_key"
    if oauth or declared == "oauth" or (declared is None and ("access" in entry or "refresh" in entry)):
        kind = "oauth"
    elif declared == "token" or (declared is None and "token" in entry):
        kind = "token"
    elif declared == "api_key" or (declared is None and ("apiKey" in entry or "key" in entry)):
        kind = "api_key"
    else:
        kind = declared
    dropped: list[str] = []
    if kind is None:
        return None, dropped
    profile: dict[str, Any] = {"type": kind, "provider": provider}
    for name, value in entry.items():
        if name in ("type", "mode", "provider"):
            continue
        if name in LEGACY_DROPPED_FIELDS:
            dropped.append(name)
            continue
        if name == "apiKey" and kind == "api_key":
            if "key" not in entry:
                profile["key"] = value
            else:
                dropped.append(name)
            continue
        profile[name] = value
    has_secret = any(isinstance(profile.get(n), str) and profile[n] for n in ("key", "token", "access", "refresh"))
    if kind in ("api_key", "token", "oauth") and not has_secret:
        return None, dropped
    return profile, dropped


def _mtime_ms(source: Source, fallback: int) -> int:
    try:
        return int(os.stat(source.path).st_mtime * 1000)
    except OSError:
        return fallback


def _load_row(conn: Any, table: str, column: str, key: str, rel: str) -> tuple[dict[str, Any] | None, int]:
    row = conn.execute(f"SELECT {column}, updated_at FROM {table} WHERE store_key = ?", (key,)).fetchone()
    if row is None:
        return None, 0
    try:
        value = json.loads(row[0])
    except (TypeError, ValueError):
        raise SourceError(rel, f"existing {table} row {key!r} is not valid JSON; left unchanged") from None
    if not isinstance(value, dict):
        raise SourceError(rel, f"existing {table} row {key!r} is not a JSON object; left unchanged")
    return value, int(row[1] or 0)


def merge_store(
    conn: Any,
    key: str,
    profiles: dict[str, dict[str, Any]],
    extras: dict[str, Any],
    version: Any,
    updated_at: int,
    authoritative: bool,
    rel: str,
) -> dict[str, int]:
    """Upsert ``profiles`` into the store row by profile id; returns counts (added/replaced/kept)."""
    existing, existing_at = _load_row(conn, "auth_profile_stores", "store_json", key, rel)
    current = dict(existing) if existing else {}
    merged = dict(current.get("profiles")) if isinstance(current.get("profiles"), dict) else {}
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
    document: dict[str, Any] = {}
    for name, value in current.items():
        if name not in ("version", "profiles"):
            document[name] = value
    for name, value in extras.items():
        if authoritative or name not in document:
            document[name] = value
    if isinstance(version, int) and not isinstance(version, bool) and (authoritative or "version" not in current):
        document_version = version
    else:
        document_version = current.get("version", STORE_VERSION)
    store = {"version": document_version, "profiles": merged, **document}
    upsert(
        conn,
        "auth_profile_stores",
        {"store_key": key, "store_json": compact_json(store), "updated_at": max(updated_at, existing_at)},
        ("store_key",),
    )
    return counts


def merge_state(conn: Any, key: str, state: dict[str, Any], updated_at: int, authoritative: bool, rel: str) -> None:
    """Merge runtime state two levels deep (per top-level field, then per provider / profile id)."""
    existing, existing_at = _load_row(conn, "auth_profile_state", "state_json", key, rel)
    merged: dict[str, Any] = dict(existing) if existing else {}
    for name, value in state.items():
        if name == "version":
            continue
        old = merged.get(name)
        if isinstance(old, dict) and isinstance(value, dict):
            combined = dict(old)
            for inner, inner_value in value.items():
                if authoritative or inner not in combined:
                    combined[inner] = inner_value
            merged[name] = combined
        elif authoritative or name not in merged:
            merged[name] = value
    version = state.get("version")
    if isinstance(version, int) and not isinstance(version, bool) and (authoritative or "version" not in merged):
        merged["version"] = version
    merged.setdefault("version", STORE_VERSION)
    ordered = {"version": merged.pop("version"), **merged}
    upsert(
        conn,
        "auth_profile_state",
        {"store_key": key, "state_json": compact_json(ordered), "updated_at": max(updated_at, existing_at)},
        ("store_key",),
    )


def _expect_profiles(result: WriteResult, key: str, profile_ids: list[str]) -> None:
    result.expect("global", "auth_profile_stores", "store_key = ?", (key,), 1)
    for profile_id in profile_ids:
        if '"' not in profile_id and "\\" not in profile_id:
            result.expect(
                "global", "auth_profile_stores", "store_key = ? AND json_type(store_json, ?) = 'object'", (key, f'$.profiles."{profile_id}"'), 1
            )


def parse_auth_profiles(document: dict[str, Any], rel: str) -> tuple[str, dict[str, dict[str, Any]], dict[str, Any], dict[str, Any], Any, list[str], list[str]]:
    """(format, profiles, state, extras, version, warnings, dropped field names) of an auth-profiles.json document."""
    warnings: list[str] = []
    dropped: list[str] = []
    if "profiles" in document:
        profiles = {pid: dict(p) for pid, p in document["profiles"].items()}
        state = {name: document[name] for name in STATE_FIELDS if name in document}
        extras = {k: v for k, v in document.items() if k not in ("version", "profiles", *STATE_FIELDS)}
        return "canonical", profiles, state, extras, document.get("version"), warnings, dropped
    profiles = {}
    for provider, entry in document.items():
        profile, lost = legacy_entry_to_profile(provider, entry)
        dropped.extend(f"{provider}.{name}" for name in lost)
        if profile is None:
            warnings.append(f"{rel}: entry {provider!r} holds no credential; skipped (kept in the retired copy)")
            continue
        profiles[f"{provider}:default"] = profile
    return "legacy-flat", profiles, {}, {}, None, warnings, dropped


def convert_provider_map(document: dict[str, Any], rel: str, *, oauth: bool) -> tuple[dict[str, dict[str, Any]], list[str], list[str]]:
    profiles: dict[str, dict[str, Any]] = {}
    warnings: list[str] = []
    dropped: list[str] = []
    for provider, entry in document.items():
        profile, lost = legacy_entry_to_profile(provider, entry, oauth=oauth)
        dropped.extend(f"{provider}.{name}" for name in lost)
        if profile is None:
            warnings.append(f"{rel}: entry {provider!r} holds no credential; skipped (kept in the retired copy)")
            continue
        profiles[f"{provider}:default"] = profile
    return profiles, warnings, dropped


def _load(source: Source, handle: BinaryIO, schema: str) -> dict[str, Any]:
    document = parse_json5_document(handle.read(), source.rel)
    validate(document, schema, source.rel)
    return document


def owner_agent(source: Source, config: Any) -> str:
    """The agent whose store a file feeds: ``agents/<id>/...``, or the configured default agent for the
    pre-multi-agent ``agent/`` dir (OpenClaw moved that dir to the default agent's dir)."""
    if source.rel.startswith("agent/"):
        return default_agent_id(config)
    if source.agent_id is None:
        raise SourceError(source.rel, "cannot tell which agent owns this auth store")
    return source.agent_id


def _fingerprint_map(profiles: dict[str, dict[str, Any]]) -> dict[str, dict[str, str]]:
    return {pid: credential_fingerprints(p) for pid, p in sorted(profiles.items())}


class AuthProfilesReader(Reader):
    kind = "auth-profiles"
    family = "auth"
    description = "Auth profile store auth-profiles.json (per agent, or the pre-multi-agent agent/ dir)"
    patterns = ("agents/*/agent/auth-profiles.json", "agent/auth-profiles.json")
    schema_name = "auth-profiles"
    target_tables = ("global.auth_profile_stores", "global.auth_profile_state")
    action = "import"
    order = 50

    def inspect(self, source: Source, handle: BinaryIO) -> Inspection:
        document = _load(source, handle, self.schema_name or "")
        fmt, profiles, _state, _extras, _version, warnings, _dropped = parse_auth_profiles(document, source.rel)
        return Inspection(record_count=len(profiles), warnings=warnings, details={"format": fmt})

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        agent = owner_agent(source, dict(ctx.config))
        document = _load(source, handle, self.schema_name or "")
        fmt, profiles, state, extras, version, warnings, dropped = parse_auth_profiles(document, source.rel)
        authoritative = source.rel.startswith("agents/")
        key = store_key(agent)
        updated = _mtime_ms(source, ctx.now_ms)
        counts = merge_store(ctx.global_db, key, profiles, extras, version, updated, authoritative, source.rel)
        if state:
            merge_state(ctx.global_db, key, state, updated, authoritative, source.rel)
        notices = []
        if counts["kept_existing"]:
            notices.append(f"{source.rel}: {counts['kept_existing']} profile(s) already in {key!r} from the agent's own store were kept")
        if dropped:
            notices.append(f"{source.rel}: legacy field(s) not carried into the store: {', '.join(sorted(dropped))}")
        result = WriteResult(records=len(profiles), notices=notices, warnings=warnings)
        _expect_profiles(result, key, list(profiles))
        if state:
            result.expect("global", "auth_profile_state", "store_key = ?", (key,), 1)
        result.report.update({
            "store_key": key,
            "format": fmt,
            "authoritative": authoritative,
            "profiles": [profile_summary(pid, p) for pid, p in sorted(profiles.items())],
            "credential_fingerprints": _fingerprint_map(profiles),
            "state_fields": sorted(state),
            "dropped_fields": sorted(dropped),
            **counts,
        })
        return result


class AuthStateReader(Reader):
    kind = "auth-state"
    family = "auth"
    description = "Auth profile runtime state auth-state.json (order, lastGood, usageStats)"
    patterns = ("agents/*/agent/auth-state.json", "agent/auth-state.json")
    schema_name = "auth-state"
    target_tables = ("global.auth_profile_state",)
    action = "import"
    order = 51

    def inspect(self, source: Source, handle: BinaryIO) -> Inspection:
        document = _load(source, handle, self.schema_name or "")
        return Inspection(record_count=1, details={"fields": sorted(k for k in document if k != "version")})

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        agent = owner_agent(source, dict(ctx.config))
        document = _load(source, handle, self.schema_name or "")
        key = store_key(agent)
        authoritative = source.rel.startswith("agents/")
        merge_state(ctx.global_db, key, document, _mtime_ms(source, ctx.now_ms), authoritative, source.rel)
        result = WriteResult(records=1)
        result.expect("global", "auth_profile_state", "store_key = ?", (key,), 1)
        usage = document.get("usageStats") if isinstance(document.get("usageStats"), dict) else {}
        result.report.update({
            "store_key": key,
            "authoritative": authoritative,
            "fields": sorted(k for k in document if k != "version"),
            "usage_stats_profiles": sorted(usage),
        })
        return result


class _ProviderMapReader(Reader):
    """``{<provider>: {...credential}}`` maps (``auth.json``, ``credentials/oauth.json``): fill-only."""

    oauth: bool = False

    def _agent(self, source: Source, ctx: ImportContext) -> str:
        return owner_agent(source, dict(ctx.config))

    def inspect(self, source: Source, handle: BinaryIO) -> Inspection:
        document = _load(source, handle, self.schema_name or "")
        profiles, warnings, _dropped = convert_provider_map(document, source.rel, oauth=self.oauth)
        return Inspection(record_count=len(profiles), warnings=warnings)

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        agent = self._agent(source, ctx)
        document = _load(source, handle, self.schema_name or "")
        profiles, warnings, dropped = convert_provider_map(document, source.rel, oauth=self.oauth)
        key = store_key(agent)
        counts = merge_store(ctx.global_db, key, profiles, {}, None, _mtime_ms(source, ctx.now_ms), False, source.rel)
        notices = []
        if counts["kept_existing"]:
            notices.append(
                f"{source.rel}: {counts['kept_existing']} profile(s) already in {key!r} were kept (auth-profiles.json wins over this legacy file)"
            )
        if dropped:
            notices.append(f"{source.rel}: legacy field(s) not carried into the store: {', '.join(sorted(dropped))}")
        result = WriteResult(records=len(profiles), notices=notices, warnings=warnings)
        _expect_profiles(result, key, list(profiles))
        result.report.update({
            "store_key": key,
            "format": "provider-map",
            "profiles": [profile_summary(pid, p) for pid, p in sorted(profiles.items())],
            "credential_fingerprints": _fingerprint_map(profiles),
            "dropped_fields": sorted(dropped),
            **counts,
        })
        return result


class AuthJsonReader(_ProviderMapReader):
    kind = "auth-json"
    family = "auth"
    description = "PI runtime credential cache agents/<id>/agent/auth.json"
    patterns = ("agents/*/agent/auth.json", "agent/auth.json")
    schema_name = "auth-json"
    target_tables = ("global.auth_profile_stores",)
    action = "import"
    order = 52


class OAuthJsonReader(_ProviderMapReader):
    kind = "oauth-json"
    family = "auth"
    description = "Legacy shared OAuth credentials credentials/oauth.json (default agent)"
    patterns = ("credentials/oauth.json",)
    schema_name = "oauth-json"
    target_tables = ("global.auth_profile_stores",)
    action = "import"
    order = 53
    oauth = True

    def _agent(self, source: Source, ctx: ImportContext) -> str:
        return default_agent_id(dict(ctx.config))


# --- leftover atomic-write temp files -------------------------------------------------

def _tmp_live_rel(rel: str) -> str:
    return rel[: -len(".tmp")]


def _profiles_of(document: Any, live_name: str, rel: str) -> dict[str, dict[str, Any]]:
    schema = "auth-profiles" if live_name == "auth-profiles.json" else "auth-json"
    validate(document, schema, rel)
    if live_name == "auth-profiles.json":
        return parse_auth_profiles(document, rel)[1]
    return convert_provider_map(document, rel, oauth=False)[0]


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
    order = 49

    def _fingerprints(self, source: Source, data: bytes) -> tuple[str, dict[str, dict[str, str]]]:
        live_name = PurePosixPath(_tmp_live_rel(source.rel)).name
        document = parse_json5_document(data, source.rel)
        return live_name, _fingerprint_map(_profiles_of(document, live_name, source.rel))

    def _live_fingerprints(self, source: Source, live_name: str) -> dict[str, dict[str, str]] | None:
        live_rel = _tmp_live_rel(source.rel)
        live_path = source.path.with_name(live_name)
        if not live_path.exists():
            return None
        try:
            with open_regular_file(live_path) as handle:
                data = handle.read()
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

    def inspect(self, source: Source, handle: BinaryIO) -> Inspection:
        live_name, mine = self._fingerprints(source, handle.read())
        live = self._live_fingerprints(source, live_name)
        if live is not None:
            self._compare(source, mine, live, live_name)
        return Inspection(record_count=0, details={"profiles": len(mine)})

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        live_name, mine = self._fingerprints(source, handle.read())
        live = self._live_fingerprints(source, live_name)
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
        try:
            row = ctx.global_db.execute(
                "SELECT report_json FROM migration_sources WHERE source_path = ? AND status = 'completed'"
                " ORDER BY imported_at DESC LIMIT 1",
                (live_rel,),
            ).fetchone()
        except Exception:  # a foreign receipts table we cannot read: treat as no receipt
            return None
        if row is None:
            return None
        try:
            report = json.loads(row[0])
        except (TypeError, ValueError):
            return None
        found = report.get("credential_fingerprints") if isinstance(report, dict) else None
        return found if isinstance(found, dict) else None
