"""Generated model catalogs: ``agents/<id>/agent/models.json`` and ``agents/<id>/agent/plugins/<plugin>/catalog.json``.

Both are caches OpenClaw regenerates from the config (``models.providers``),
the auth profiles and provider plugins. They are imported into the global
``agent_model_catalogs`` table so the agent keeps its catalog until the runtime
rebuilds it:

* ``catalog_key`` = ``agent:<agentId>`` for ``models.json`` (also the
  pre-multi-agent ``agent/models.json`` of the default agent, which never
  replaces a row the agent's own file wrote) and
  ``agent:<agentId>:plugin:<plugin>`` for a plugin catalog;
* ``agent_dir`` = ``agents/<agentId>/agent`` (relative to the state dir, so it
  survives a moved state dir);
* ``raw_json`` = the document with every secret-bearing field (``apiKey``,
  tokens, passwords, credential headers) replaced by
  ``statekit-redacted:<fingerprint>``; environment references (``${VAR}`` or a
  bare ``UPPER_CASE_NAME``) are kept. The
  values live in the config and the auth store, which is where the runtime
  takes them from when it regenerates the catalog.

Details: docs/readers/models.md.
"""

from __future__ import annotations

import os
import re
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
from legacy_readers.auth_profiles import owner_agent

REDACTED_PREFIX = "statekit-redacted:"
SECRET_NAMES = frozenset(
    name.lower()
    for name in (
        "apiKey", "api_key", "key", "token", "accessToken", "access_token", "refreshToken", "refresh_token", "idToken",
        "authToken", "bearerToken", "secret", "clientSecret", "client_secret", "password", "sessionKey", "session_key",
        "privateKey", "private_key",
    )
)
SECRET_HEADER = re.compile(r"(authorization|api[-_]?key|token|cookie|secret|password)", re.I)
ENV_REFERENCE = re.compile(r"^(?:\$\{[A-Za-z_][A-Za-z0-9_]*\}|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)$")  # ${VAR} or an env var name


def _redact_value(value: Any, path: str, redacted: list[dict[str, str]]) -> Any:
    if isinstance(value, str):
        if not value or ENV_REFERENCE.match(value) or value.startswith(REDACTED_PREFIX):
            return value
        marker = fingerprint(value)
        redacted.append({"path": path, "fingerprint": marker})
        return REDACTED_PREFIX + marker
    if isinstance(value, (dict, list)):
        return redact(value, path, redacted, force=True)
    return value


def redact(value: Any, path: str, redacted: list[dict[str, str]], *, force: bool = False) -> Any:
    """A copy of ``value`` with secret-bearing fields replaced; ``redacted`` collects (path, fingerprint)."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for name, item in value.items():
            child = f"{path}.{name}"
            if force or name.lower() in SECRET_NAMES:
                out[name] = _redact_value(item, child, redacted)
            elif name.lower() == "headers" and isinstance(item, dict):
                out[name] = {
                    header: _redact_value(v, f"{child}.{header}", redacted) if SECRET_HEADER.search(header) else redact(v, f"{child}.{header}", redacted)
                    for header, v in item.items()
                }
            else:
                out[name] = redact(item, child, redacted)
        return out
    if isinstance(value, list):
        return [redact(item, f"{path}[{index}]", redacted, force=force) for index, item in enumerate(value)]
    if force:
        return _redact_value(value, path, redacted)
    return value


def catalog_counts(document: dict[str, Any]) -> tuple[int, int]:
    providers = document.get("providers") if isinstance(document.get("providers"), dict) else {}
    models = sum(len(p.get("models") or []) for p in providers.values() if isinstance(p, dict) and isinstance(p.get("models"), list))
    return len(providers), models


class _CatalogReader(Reader):
    schema_name = "models-json"
    target_tables = ("global.agent_model_catalogs",)
    action = "import"

    def _key(self, source: Source, agent: str) -> str:
        raise NotImplementedError

    def _load(self, source: Source, handle: BinaryIO) -> dict[str, Any]:
        document = parse_json5_document(handle.read(), source.rel)
        validate(document, self.schema_name or "", source.rel)
        return document

    def inspect(self, source: Source, handle: BinaryIO) -> Inspection:
        document = self._load(source, handle)
        providers, models = catalog_counts(document)
        return Inspection(record_count=1, details={"providers": providers, "models": models})

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        agent = owner_agent(source, dict(ctx.config))
        document = self._load(source, handle)
        redacted: list[dict[str, str]] = []
        clean = redact(document, "$", redacted)
        key = self._key(source, agent)
        try:
            updated = int(os.stat(source.path).st_mtime * 1000)
        except OSError:
            updated = ctx.now_ms
        authoritative = source.rel.startswith("agents/")
        upsert(
            ctx.global_db,
            "agent_model_catalogs",
            {"catalog_key": key, "agent_dir": f"agents/{agent}/agent", "raw_json": compact_json(clean), "updated_at": updated},
            ("catalog_key",),
            update=True if authoritative else False,
        )
        notices = []
        if not authoritative:
            notices.append(f"{source.rel}: pre-multi-agent catalog; an existing {key!r} row (from the agent's own models.json) is kept")
        providers, models = catalog_counts(document)
        result = WriteResult(records=1, notices=notices)
        result.expect("global", "agent_model_catalogs", "catalog_key = ?", (key,), 1)
        result.report.update({
            "catalog_key": key,
            "agent_dir": f"agents/{agent}/agent",
            "providers": providers,
            "models": models,
            "redacted_fields": redacted,
        })
        return result


class ModelsJsonReader(_CatalogReader):
    kind = "models-json"
    family = "models"
    description = "Generated per-agent model catalog agents/<id>/agent/models.json"
    patterns = ("agents/*/agent/models.json", "agent/models.json")
    order = 60

    def _key(self, source: Source, agent: str) -> str:
        return f"agent:{agent}"


class PluginCatalogReader(_CatalogReader):
    kind = "plugin-model-catalog"
    family = "models"
    description = "Provider-plugin model catalog agents/<id>/agent/plugins/<plugin>/catalog.json"
    patterns = ("agents/*/agent/plugins/*/catalog.json",)
    order = 61

    def _key(self, source: Source, agent: str) -> str:
        plugin = PurePosixPath(source.rel).parts[-2]
        return f"agent:{agent}:plugin:{plugin}"
