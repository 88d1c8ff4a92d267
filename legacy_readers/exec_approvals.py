"""``exec-approvals.json``: exec approval policy -> ``global.exec_approvals_config``.

One singleton row, ``config_key = 'current'``, exactly as OpenClaw 2026.9.6's
doctor imports the file (``state-migrations.exec-approvals``): ``raw_json`` is
the file parsed and normalised as OpenClaw parses it
(``parsePersistedExecApprovals`` + ``normalizeExecApprovalsInternal``) and
written as ``JSON.stringify(file, null, 2) + "\n"``; the typed columns are its
``projectionValues``. Rules (``docs/readers/exec_approvals.md``):

* Validation walks the file in key order and reports the first problem as a
  path with agents numbered from 1 (``agents entry #2.allowlist[1].lastUsedAt:
  expected a finite number``): agent keys and policy values never reach a
  message. Policy values must be ones OpenClaw knows (``security`` /
  ``askFallback``: allowlist, full, deny; ``ask``: always, off, on-miss): a
  row OpenClaw cannot parse would make it fall back to deny-everything.
* Normalisation as OpenClaw's: known keys first in its schema order, unknown
  top-level/defaults/socket keys dropped, a legacy ``default`` agent merged
  into ``main``, string allowlist entries become ``{pattern}``, ``commandText``
  dropped, ``null`` usage fields dropped, a missing entry ``id`` filled. Where
  OpenClaw draws a random UUID statekit derives one from the entry (same
  shape, stable across reruns).
* ``lastUsedAt`` below 1e11 is seconds (real files mix both): multiplied by
  1000 (OpenClaw keeps the number as it is); how many were converted goes into
  the receipt.
* The socket path and token are kept in ``raw_json`` as OpenClaw keeps them
  (the database is 0600 like every statekit file); receipts and messages carry
  only the token's fingerprint.
* Socket path/token come from the file only when the database has no row.
* A database row newer than the file (``updated_at_ms`` > the file's mtime,
  e.g. written by OpenClaw 2026.7) is kept; the file is retired with that
  decision in the receipt. An older row is replaced (its socket kept).
* Policy-free stubs (empty or missing ``defaults`` and ``agents``, with or
  without ``version``/``socket``, nothing else) import nothing and are
  retired with the reason -- except that a non-blank socket path/token is
  imported when the database has no row yet.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import uuid
from typing import Any, BinaryIO

from statekit.values import js_number

from statekit.documents import json_type, validate
from statekit.legacy_readers.base import ImportContext, Inspection, ReadContext, Reader, Source, WriteResult, fingerprint
from statekit.documents import load_json

from statekit.values import file_mtime_ms, finite_number, record
from statekit.errors import SourceError

FAMILY = "exec-approvals"
TABLE = "exec_approvals_config"
CONFIG_KEY = "current"
SECONDS_LIMIT = 1e11  # a lastUsedAt below this is in seconds (1e11 ms is 1973)
STUB_KEYS = {"version", "socket", "defaults", "agents"}
POLICY_STRINGS = ("security", "ask", "askFallback")
POLICY_VALUES = {"security": ("allowlist", "full", "deny"), "ask": ("always", "off", "on-miss"), "askFallback": ("allowlist", "full", "deny")}
ENTRY_STRINGS = ("id", "lastUsedCommand", "lastResolvedPath", "source", "commandText", "argPattern")
# Key order of OpenClaw's zod schemas (known keys first, in this order, then unknown keys as written).
POLICY_ORDER = ("security", "ask", "askFallback", "autoAllowSkills")
AGENT_ORDER = (*POLICY_ORDER, "allowlist", "mcpTools")
ENTRY_ORDER = ("pattern", "id", "source", "commandText", "argPattern", "lastUsedAt", "lastUsedCommand", "lastResolvedPath")
MCP_TOOL_ORDER = ("server", "tool", "source", "addedAt", "lastUsedAt")
_INDEX_KEY = re.compile(r"^(?:0|[1-9][0-9]*)$")


class _Invalid(Exception):
    def __init__(self, path: str | None, problem: str) -> None:
        super().__init__(problem)
        self.path = path
        self.problem = problem


def _article(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def _expect(value: Any, kind: str, path: str) -> None:
    ok = {
        "object": isinstance(value, dict),
        "array": isinstance(value, list),
        "string": isinstance(value, str),
        "boolean": isinstance(value, bool),
    }[kind]
    if not ok:
        raise _Invalid(path, f"expected {_article(kind)}, found {json_type(value)}")


def _check_policy(policy: dict[str, Any], prefix: str) -> None:
    for name in POLICY_STRINGS:
        if name in policy and policy[name] is not None:
            _expect(policy[name], "string", f"{prefix}.{name}")
            if policy[name] not in POLICY_VALUES[name]:
                raise _Invalid(f"{prefix}.{name}", f"expected one of {', '.join(POLICY_VALUES[name])}")
    if "autoAllowSkills" in policy and policy["autoAllowSkills"] is not None:
        _expect(policy["autoAllowSkills"], "boolean", f"{prefix}.autoAllowSkills")


def _check_mcp_tools(tools: Any, prefix: str) -> None:
    _expect(tools, "array", f"{prefix}.mcpTools")
    for index, grant in enumerate(tools):
        where = f"{prefix}.mcpTools[{index}]"
        _expect(grant, "object", where)
        for name in ("server", "tool"):
            if not isinstance(grant.get(name), str) or not grant[name].strip():
                raise _Invalid(f"{where}.{name}", "expected a non-empty string")
        if grant.get("source") != "allow-always":
            raise _Invalid(f"{where}.source", "expected a supported value")
        for name in ("addedAt", "lastUsedAt"):
            if name == "lastUsedAt" and grant.get(name) is None:
                continue
            if finite_number(grant.get(name)) is None or grant[name] < 0:
                raise _Invalid(f"{where}.{name}", "expected a finite number")


def js_key_order(keys: Any) -> list[str]:
    """``Object.keys`` order: array-index keys ("0".."4294967294") ascending first, then insertion order."""
    keys = list(keys)
    index = sorted((k for k in keys if _INDEX_KEY.match(k) and int(k) < 2**32 - 1), key=int)
    chosen = set(index)
    return index + [k for k in keys if k not in chosen]


def check(document: Any) -> None:
    """First validation problem, in ``Object.keys`` order; raises ``_Invalid``."""
    if not isinstance(document, dict):
        raise _Invalid(None, f"expected a JSON object, found {json_type(document)}")
    if "version" in document and document["version"] != 1:
        raise _Invalid("version", "unsupported version (expected 1)")
    if "socket" in document and document["socket"] is not None:
        _expect(document["socket"], "object", "socket")
        for name in ("path", "token"):
            if document["socket"].get(name) is not None:
                _expect(document["socket"][name], "string", f"socket.{name}")
    if "defaults" in document and document["defaults"] is not None:
        _expect(document["defaults"], "object", "defaults")
        _check_policy(document["defaults"], "defaults")
    agents = document.get("agents")
    if agents is None:
        return
    _expect(agents, "object", "agents")
    for number, key in enumerate(js_key_order(agents), start=1):
        agent = agents[key]
        prefix = f"agents entry #{number}"
        _expect(agent, "object", prefix)
        _check_policy(agent, prefix)
        if agent.get("mcpTools") is not None:
            _check_mcp_tools(agent["mcpTools"], prefix)
        allowlist = agent.get("allowlist")
        if allowlist is None:
            continue
        _expect(allowlist, "array", f"{prefix}.allowlist")
        for index, entry in enumerate(allowlist):
            where = f"{prefix}.allowlist[{index}]"
            if isinstance(entry, str):
                if not entry.strip():
                    raise _Invalid(where, "expected a non-empty string")
                continue
            _expect(entry, "object", where)
            pattern = entry.get("pattern")
            if not isinstance(pattern, str) or not pattern.strip():
                raise _Invalid(f"{where}.pattern", "expected a non-empty string")
            for name in ENTRY_STRINGS:
                if entry.get(name) is not None:
                    _expect(entry[name], "string", f"{where}.{name}")
            if "lastUsedAt" in entry and entry["lastUsedAt"] is not None and finite_number(entry["lastUsedAt"]) is None:
                raise _Invalid(f"{where}.lastUsedAt", "expected a finite number")


def is_stub(document: dict[str, Any]) -> bool:
    """Policy-free: only version/socket/defaults/agents, with empty (or missing) defaults and agents."""
    if set(document) - STUB_KEYS:
        return False
    return not document.get("defaults") and not document.get("agents")


def _ordered(value: dict[str, Any], order: tuple[str, ...]) -> dict[str, Any]:
    """Keys in ``order`` first (those present), then the rest as written: how zod builds a parsed object."""
    known = {k: value[k] for k in order if k in value}
    return known | {k: v for k, v in value.items() if k not in known}


def _entry_id(agent_key: str, index: int, entry: dict[str, Any]) -> str:
    """A version-4-shaped UUID derived from the entry (OpenClaw draws a random one): reruns give the same id."""
    digest = hashlib.sha256(json.dumps([agent_key, index, entry], sort_keys=True, ensure_ascii=False).encode("utf-8")).digest()
    return str(uuid.UUID(bytes=digest[:16], version=4))


def _entries(agent_key: str, allowlist: list[Any]) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    for index, item in enumerate(allowlist):
        entry = {"pattern": item.strip()} if isinstance(item, str) else _ordered(item, ENTRY_ORDER)
        for name in ("lastUsedAt", "lastUsedCommand"):
            if name in entry and entry[name] is None:
                del entry[name]  # normalizeLegacyNullableUsageMetadata
        entry = {k: v for k, v in entry.items() if v is not None or k not in ENTRY_ORDER}
        if "source" in entry and entry["source"] != "allow-always":
            del entry["source"]
        entry.pop("commandText", None)
        if not entry.get("id"):
            entry["id"] = _entry_id(agent_key, index, entry)
        entries.append(entry)
    return entries


def _agent(key: str, agent: dict[str, Any]) -> dict[str, Any]:
    result = {k: v for k, v in _ordered(agent, AGENT_ORDER).items() if v is not None or k not in AGENT_ORDER}
    if isinstance(result.get("allowlist"), list):
        if result["allowlist"]:
            result["allowlist"] = _entries(key, result["allowlist"])
    if isinstance(result.get("mcpTools"), list):
        result["mcpTools"] = [_ordered(grant, MCP_TOOL_ORDER) for grant in result["mcpTools"]]
    return result


def _merge_legacy_default(current: dict[str, Any], legacy: dict[str, Any]) -> dict[str, Any]:
    """``mergeLegacyAgent``: the ``main`` agent wins, allowlists are joined (a pattern + argPattern once)."""
    seen: set[str] = set()
    allowlist: list[dict[str, Any]] = []
    for entry in [*(current.get("allowlist") or []), *(legacy.get("allowlist") or [])]:
        key = f"{entry['pattern'].strip().lower()}\0{(entry.get('argPattern') or '').strip()}"
        if key not in seen:
            seen.add(key)
            allowlist.append(entry)
    merged = {**legacy, **current}
    for name in POLICY_ORDER:
        value = current.get(name) if current.get(name) is not None else legacy.get(name)
        if value is None:
            merged.pop(name, None)
        else:
            merged[name] = value
    if allowlist:
        merged["allowlist"] = allowlist
    else:
        merged.pop("allowlist", None)
    current_tools = current.get("mcpTools") or []
    legacy_tools = [g for g in legacy.get("mcpTools") or [] if not any(t["server"] == g["server"] and t["tool"] == g["tool"] for t in current_tools)]
    if current.get("mcpTools") is not None or legacy.get("mcpTools") is not None:
        merged["mcpTools"] = [*current_tools, *legacy_tools]
    return merged


def _policy(value: Any) -> dict[str, Any]:
    policy = value if isinstance(value, dict) else {}
    return {name: policy[name] for name in POLICY_ORDER if policy.get(name) is not None}


def openclaw_file(document: dict[str, Any]) -> dict[str, Any]:
    """The file as OpenClaw 2026.9.6 parses and normalises it (a valid ``check``-ed document)."""
    socket = record(document.get("socket"))
    normalised_socket: dict[str, Any] = {}
    for name in ("path", "token"):
        if isinstance(socket.get(name), str) and socket[name].strip():
            normalised_socket[name] = socket[name].strip()
    raw_agents = record(document.get("agents"))
    agents = {key: _agent(key, raw_agents[key]) for key in js_key_order(raw_agents)}
    legacy_default = agents.pop("default", None)
    if legacy_default is not None:
        agents["main"] = _merge_legacy_default(agents["main"], legacy_default) if "main" in agents else legacy_default
    return {"version": 1, "socket": normalised_socket, "defaults": _policy(document.get("defaults")), "agents": agents}


def convert_seconds(file: dict[str, Any]) -> int:
    """``lastUsedAt`` in seconds -> ms, in place; the number converted."""
    converted = 0
    for agent in file["agents"].values():
        for entry in agent.get("allowlist") or []:
            value = entry.get("lastUsedAt")
            if finite_number(value) is not None and 0 <= value < SECONDS_LIMIT:
                entry["lastUsedAt"] = int(value * 1000) if float(value * 1000).is_integer() else value * 1000
                converted += 1
    return converted


def js_pretty(value: Any, indent: str = "") -> str:
    """``JSON.stringify(value, null, 2)`` (array-index keys first, numbers as JavaScript prints them)."""
    inner = indent + "  "
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = [f"{inner}{json.dumps(k, ensure_ascii=False)}: {js_pretty(value[k], inner)}" for k in js_key_order(value)]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    if isinstance(value, list):
        if not value:
            return "[]"
        return "[\n" + ",\n".join(f"{inner}{js_pretty(v, inner)}" for v in value) + "\n" + indent + "]"
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return js_number(value)
    return json.dumps(value, ensure_ascii=False)


def serialise(file: dict[str, Any]) -> str:
    """``serializeExecApprovals``: ``JSON.stringify(file, null, 2) + "\n"``."""
    return js_pretty(file) + "\n"


def config_row(file: dict[str, Any], updated_at: int) -> dict[str, Any]:
    """The row of an OpenClaw-normalised file: ``raw_json`` plus 2026.9.6's ``projectionValues``."""
    defaults = file["defaults"]
    agents = file["agents"]
    auto = defaults.get("autoAllowSkills")
    return {
        "config_key": CONFIG_KEY,
        "raw_json": serialise(file),
        "socket_path": file["socket"].get("path"),
        "has_socket_token": 1 if file["socket"].get("token") else 0,
        "default_security": defaults.get("security"),
        "default_ask": defaults.get("ask"),
        "default_ask_fallback": defaults.get("askFallback"),
        "auto_allow_skills": None if not isinstance(auto, bool) else int(auto),
        "agent_count": len(agents),
        "allowlist_count": sum(len(agent.get("allowlist") or []) for agent in agents.values()),
        "updated_at_ms": updated_at,
    }


def _existing_socket(existing: dict[str, Any]) -> dict[str, Any]:
    try:
        parsed = json.loads(existing.get("raw_json") or "{}")
    except ValueError:
        return {}
    socket = parsed.get("socket") if isinstance(parsed, dict) else None
    if not isinstance(socket, dict):
        return {}
    return {name: socket[name].strip() for name in ("path", "token") if isinstance(socket.get(name), str) and socket[name].strip()}


class ExecApprovalsReader(Reader):
    kind = "exec-approvals"
    family = FAMILY
    description = "Exec approval policy and allowlists (exec-approvals.json)"
    patterns = ("exec-approvals.json",)
    schema_name = "exec-approvals"
    target_tables = ("global.exec_approvals_config",)
    action = "import"

    def agent_for(self, rel: str) -> str | None:
        return None

    def _load(self, source: Source, handle: BinaryIO) -> dict[str, Any]:
        document = load_json(handle, source.rel)
        try:
            check(document)
        except _Invalid as exc:
            raise SourceError(source.rel, exc.problem, json_path=exc.path) from None
        validate(document, self.schema_name or "", source.rel)  # backstop; check() covers the same shape
        return document

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        document = self._load(source, handle)
        if is_stub(document):
            return Inspection(record_count=0, details={"stub": True})
        return Inspection(record_count=1)

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        document = self._load(source, handle)
        db = ctx.writer.state
        mtime = file_mtime_ms(source, ctx.now_ms)
        file = openclaw_file(copy.deepcopy(document))
        converted = convert_seconds(file)
        token = file["socket"].get("token")
        existing = db.first_row(TABLE, {"config_key": CONFIG_KEY})
        result = WriteResult(records=0)
        report: dict[str, Any] = {
            "stub": is_stub(document),
            "has_socket_token": token is not None,
            "lastUsedAt_seconds_converted": converted,
        }
        if token is not None:
            report["socket_token_fingerprint"] = fingerprint(token)
        if report["stub"]:
            if existing is None and file["socket"]:
                # As OpenClaw: a policy-free file with a socket is imported while SQLite has no row.
                db.upsert(TABLE, config_row(file, mtime), ("config_key",))
                result.records = 1
                report["decision"] = "stub: socket imported (no database row yet)"
            else:
                report["decision"] = "stub: policy-free file, nothing to import; retired" + (
                    " (database row kept)" if existing is not None else ""
                )
                result.notices.append(f"{source.rel}: policy-free stub (empty defaults and agents); nothing imported, file retired")
            result.report.update(report)
            return result
        if existing is not None and (existing.get("updated_at_ms") or 0) > mtime:
            report["decision"] = "kept newer database row; file retired"
            result.notices.append(
                f"{source.rel}: the database already holds newer exec approvals (updated after the file was written); kept them, file retired"
            )
            result.report.update(report)
            db.expect_rows(TABLE, {"config_key": CONFIG_KEY}, 1)  # the newer row kept
            return result
        if existing is not None:
            # Socket path/token are imported from the file only when SQLite has no row.
            file["socket"] = _existing_socket(existing)
            report["decision"] = "replaced older database row (its socket kept)"
        else:
            report["decision"] = "imported"
        row = config_row(file, mtime)
        db.upsert(TABLE, row, ("config_key",))
        result.records = 1
        if converted:
            result.notices.append(f"{source.rel}: {converted} lastUsedAt value(s) were in seconds; converted to milliseconds")
        db.expect_rows(TABLE, {"config_key": CONFIG_KEY, "updated_at_ms": mtime}, 1)
        report.update({"agents": row["agent_count"], "allowlist_entries": row["allowlist_count"]})
        result.report.update(report)
        return result
