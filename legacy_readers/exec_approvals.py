"""``exec-approvals.json``: exec approval policy -> ``global.exec_approvals_config``.

One singleton row, ``config_key = 'current'``: ``raw_json`` holds the whole
normalised file, the typed columns project the defaults and the counts.
Rules (``docs/readers/exec_approvals.md``; upstream-legacy-formats.md §2.6):

* Validation walks the file in key order and reports the first problem as a
  path with agents numbered from 1 (``agents entry #2.allowlist[1].lastUsedAt:
  expected a finite number``): agent keys and policy values never reach a
  message.
* ``lastUsedAt`` below 1e11 is seconds (real files mix both): multiplied by
  1000; how many were converted goes into the receipt.
* The socket token never lands in ``raw_json``: the column
  ``has_socket_token`` says there was one, ``socket.token`` is removed from
  the stored JSON (OpenClaw generates a fresh one when it needs it) and the
  receipt keeps only its fingerprint. The original stays byte-exact in the
  retired copy.
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
import json
import math
import re
from typing import Any, BinaryIO

from legacy_readers.base import ImportContext, Inspection, Reader, Source, WriteResult, compact_json, fingerprint, json_type, validate
from legacy_readers.devices import fetch_row, file_mtime_ms, load_json, write_row
from statekit.errors import SourceError

FAMILY = "exec-approvals"
TABLE = "exec_approvals_config"
CONFIG_KEY = "current"
SECONDS_LIMIT = 1e11  # a lastUsedAt below this is in seconds (1e11 ms is 1973)
STUB_KEYS = {"version", "socket", "defaults", "agents"}
POLICY_STRINGS = ("security", "ask", "askFallback")
ENTRY_STRINGS = ("id", "lastUsedCommand", "lastResolvedPath", "source", "commandText", "argPattern")
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


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _check_policy(policy: dict[str, Any], prefix: str) -> None:
    for name in POLICY_STRINGS:
        if name in policy and policy[name] is not None:
            _expect(policy[name], "string", f"{prefix}.{name}")
    if "autoAllowSkills" in policy and policy["autoAllowSkills"] is not None:
        _expect(policy["autoAllowSkills"], "boolean", f"{prefix}.autoAllowSkills")


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
        allowlist = agent.get("allowlist")
        if allowlist is None:
            continue
        _expect(allowlist, "array", f"{prefix}.allowlist")
        for index, entry in enumerate(allowlist):
            where = f"{prefix}.allowlist[{index}]"
            _expect(entry, "object", where)
            pattern = entry.get("pattern")
            if not isinstance(pattern, str) or not pattern.strip():
                raise _Invalid(f"{where}.pattern", "expected a non-empty string")
            for name in ENTRY_STRINGS:
                if entry.get(name) is not None:
                    _expect(entry[name], "string", f"{where}.{name}")
            if "lastUsedAt" in entry and entry["lastUsedAt"] is not None and not _finite(entry["lastUsedAt"]):
                raise _Invalid(f"{where}.lastUsedAt", "expected a finite number")


def is_stub(document: dict[str, Any]) -> bool:
    """Policy-free: only version/socket/defaults/agents, with empty (or missing) defaults and agents."""
    if set(document) - STUB_KEYS:
        return False
    return not document.get("defaults") and not document.get("agents")


def _blank(value: Any) -> bool:
    return not isinstance(value, str) or not value.strip()


def normalise(document: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """Deep copy with seconds ``lastUsedAt`` turned into ms and ``socket.token`` removed."""
    result = copy.deepcopy(document)
    converted = 0
    for agent in (result.get("agents") or {}).values():
        for entry in agent.get("allowlist") or []:
            value = entry.get("lastUsedAt")
            if _finite(value) and 0 <= value < SECONDS_LIMIT:
                entry["lastUsedAt"] = int(value * 1000) if float(value * 1000).is_integer() else value * 1000
                converted += 1
    socket = result.get("socket")
    if isinstance(socket, dict):
        socket.pop("token", None)
    return result, converted


def _policy_value(defaults: Any, name: str) -> Any:
    return defaults.get(name) if isinstance(defaults, dict) else None


def config_row(normalised: dict[str, Any], socket_path: str | None, has_token: bool, updated_at: int) -> dict[str, Any]:
    defaults = normalised.get("defaults")
    agents = normalised.get("agents") or {}
    auto = _policy_value(defaults, "autoAllowSkills")
    return {
        "config_key": CONFIG_KEY,
        "raw_json": compact_json(normalised),
        "socket_path": socket_path,
        "has_socket_token": int(has_token),
        "default_security": _policy_value(defaults, "security"),
        "default_ask": _policy_value(defaults, "ask"),
        "default_ask_fallback": _policy_value(defaults, "askFallback"),
        "auto_allow_skills": None if not isinstance(auto, bool) else int(auto),
        "agent_count": len(agents),
        "allowlist_count": sum(len(agent.get("allowlist") or []) for agent in agents.values()),
        "updated_at_ms": updated_at,
    }


def _existing_socket(existing: dict[str, Any]) -> dict[str, Any] | None:
    try:
        parsed = json.loads(existing.get("raw_json") or "{}")
    except ValueError:
        return None
    socket = parsed.get("socket") if isinstance(parsed, dict) else None
    return socket if isinstance(socket, dict) else None


class ExecApprovalsReader(Reader):
    kind = "exec-approvals"
    family = FAMILY
    description = "Exec approval policy and allowlists (exec-approvals.json)"
    patterns = ("exec-approvals.json",)
    schema_name = "exec-approvals"
    target_tables = ("global.exec_approvals_config",)
    action = "import"
    order = 47

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

    def inspect(self, source: Source, handle: BinaryIO) -> Inspection:
        document = self._load(source, handle)
        if is_stub(document):
            return Inspection(record_count=0, details={"stub": True})
        return Inspection(record_count=1)

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        document = self._load(source, handle)
        conn = ctx.global_db
        mtime = file_mtime_ms(source, ctx.now_ms)
        socket = document.get("socket") if isinstance(document.get("socket"), dict) else {}
        token = socket.get("token")
        has_token = not _blank(token)
        socket_path = None if _blank(socket.get("path")) else socket["path"]
        normalised, converted = normalise(document)
        existing = fetch_row(conn, TABLE, "config_key = ?", (CONFIG_KEY,))
        result = WriteResult(records=0)
        report: dict[str, Any] = {
            "stub": is_stub(document),
            "has_socket_token": has_token,
            "lastUsedAt_seconds_converted": converted,
        }
        if has_token:
            report["socket_token_fingerprint"] = fingerprint(token)
        if report["stub"]:
            if existing is None and (socket_path or has_token):
                stub = {"version": 1, "socket": {"path": socket_path}} if socket_path else {"version": 1, "socket": {}}
                write_row(conn, TABLE, config_row(stub, socket_path, has_token, mtime), ("config_key",))
                result.records = 1
                report["decision"] = "stub: socket imported (no database row yet)"
                result.expect("global", TABLE, "config_key = ?", (CONFIG_KEY,), 1)
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
            result.expect("global", TABLE, "config_key = ?", (CONFIG_KEY,), 1)
            return result
        if existing is not None:
            # Socket path/token are imported from the file only when SQLite has no row.
            kept_socket = _existing_socket(existing)
            if kept_socket is not None:
                normalised["socket"] = {k: v for k, v in kept_socket.items() if k != "token"}
            elif "socket" in normalised:
                normalised.pop("socket")
            socket_path = existing.get("socket_path")
            has_token = bool(existing.get("has_socket_token"))
            report["decision"] = "replaced older database row (its socket kept)"
        else:
            report["decision"] = "imported"
        row = config_row(normalised, socket_path, has_token, mtime)
        write_row(conn, TABLE, row, ("config_key",))
        result.records = 1
        if converted:
            result.notices.append(f"{source.rel}: {converted} lastUsedAt value(s) were in seconds; converted to milliseconds")
        result.expect("global", TABLE, "config_key = ? AND updated_at_ms = ?", (CONFIG_KEY, mtime), 1)
        report.update({"agents": row["agent_count"], "allowlist_entries": row["allowlist_count"]})
        result.report.update(report)
        return result
