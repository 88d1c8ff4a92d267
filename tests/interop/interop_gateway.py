"""Run the real OpenClaw gateway on a state dir, ask it for chat history, and make one new turn.

``openclaw gateway run --port <free> --bind loopback`` in its own process group (stopped by that group
only), ready when ``openclaw gateway call health`` succeeds. Chat history comes from ``gateway call
chat.history``; the new turn is one ``POST /v1/chat/completions`` on an imported session (or ``openclaw
agent --session-key`` when the config has that endpoint off), answered by the stand-in model server on
the port of the tree's configured local provider.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import json5

from interop_db import SESSION_KEY_TABLES
from interop_model import StandInModel
from interop_setup import CommandResult, OpenClaw, first_error_line, shorten
from interop_trees import LegacyFacts
from helpers import open_db
from statekit.db import SQLiteError

# The gateway runs as OpenClaw's own update rehearsal runs one: no channels, no cron (and so no scheduled
# heartbeats), no gmail watcher, canvas host, browser control server or model prewarm. Offline there is
# nothing for channels to reach, and a cron job or heartbeat firing would add turns to the very
# sessions whose history is being checked.
GATEWAY_QUIET_ENV = {"OPENCLAW_SKIP_CHANNELS": "1", "OPENCLAW_SKIP_CRON": "1", "OPENCLAW_SKIP_GMAIL_WATCHER": "1",
                     "OPENCLAW_SKIP_CANVAS_HOST": "1", "OPENCLAW_SKIP_BROWSER_CONTROL_SERVER": "1",
                     "OPENCLAW_SKIP_STARTUP_MODEL_PREWARM": "1"}
CALL_TIMEOUT_S = 180
TURN_TIMEOUT_S = 300
STOP_GRACE_S = 30
PROBE_TEXT = "interop probe: please acknowledge"
LOCAL_BASE_URL = re.compile(r"^https?://(?:127\.0\.0\.1|localhost)(?::(\d+))?(?:/|$)")


# ------------------------------------------------------------------------------------------ config facts
@dataclass(frozen=True)
class GatewayConfig:
    """What the gateway run needs from an ``openclaw.json``."""

    mode: str | None = None
    token: str | None = None
    model_port: int | None = None        # port of the local model provider (the primary model's first)
    chat_endpoint: bool = False          # gateway.http.endpoints.chatCompletions.enabled
    reset_mode: str | None = None        # session.reset.mode
    error: str | None = None


def read_gateway_config(state: Path) -> GatewayConfig:
    path = state / "openclaw.json"
    try:
        config = json5.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return GatewayConfig(error=f"cannot read {path}: {exc}")
    if not isinstance(config, dict):
        return GatewayConfig(error=f"{path} is not a JSON object")
    gateway = _dict(config.get("gateway"))
    token = _dict(gateway.get("auth")).get("token")
    primary = _dict(_dict(_dict(config.get("agents")).get("defaults")).get("model")).get("primary")
    provider_first = str(primary).split("/")[0] if isinstance(primary, str) else ""
    providers = _dict(_dict(config.get("models")).get("providers"))
    model_port = None
    for name in sorted(providers, key=lambda n: n != provider_first):
        match = LOCAL_BASE_URL.match(str(_dict(providers[name]).get("baseUrl", "")))
        if match and match.group(1):
            model_port = int(match.group(1))
            break
    chat = _dict(_dict(_dict(gateway.get("http")).get("endpoints")).get("chatCompletions"))
    reset = _dict(_dict(config.get("session")).get("reset")).get("mode")
    mode = gateway.get("mode")
    return GatewayConfig(mode=mode if isinstance(mode, str) else None, token=token if isinstance(token, str) else None,
                         model_port=model_port, chat_endpoint=chat.get("enabled") is True,
                         reset_mode=reset if isinstance(reset, str) else None)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def port_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


# ------------------------------------------------------------------------------------------ the gateway
@dataclass(frozen=True)
class Readiness:
    ready: bool
    seconds: float
    detail: str


class Gateway:
    """One ``openclaw gateway run`` on the HOME ``home``; use as a context manager (stops it on exit)."""

    def __init__(self, openclaw: OpenClaw, home: Path, token: str | None, allow_unconfigured: bool) -> None:
        self.openclaw = openclaw
        self.home = home
        self.token = token
        self.port = free_port()
        self.log = openclaw.log.next_path("gateway-run", ".log")
        self.argv = openclaw.argv(["gateway", "run", "--port", str(self.port), "--bind", "loopback"]
                                  + (["--allow-unconfigured"] if allow_unconfigured else []))
        self.proc: subprocess.Popen[bytes] | None = None
        self.started = 0.0

    def __enter__(self) -> Gateway:
        self.log.write_text(f"$ {' '.join(self.argv)}\n", encoding="utf-8")
        self.started = time.monotonic()
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(self.argv, env={**self.openclaw.env(self.home), **GATEWAY_QUIET_ENV},
                                         cwd=self.home, stdout=out,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """SIGTERM to the gateway's own process group, SIGKILL after a grace period."""
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        except ProcessLookupError:
            pass

    def _exited(self, wait_s: float) -> bool:
        """Whether the gateway has exited, waiting up to ``wait_s`` for it to do so."""
        assert self.proc is not None
        try:
            self.proc.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            return False
        return True

    def wait_ready(self, timeout_s: float) -> Readiness:
        """Listening on its port and ``gateway call health`` ok, within ``timeout_s`` of the start."""
        deadline = self.started + timeout_s
        last: CommandResult | None = None
        while time.monotonic() < deadline:
            if self._exited(0):
                break
            if not _listening(self.port):
                self._exited(1.0)  # the wait doubles as the poll interval
                continue
            last = self.call("health", {})
            if last.ok and not self._exited(0):
                secs = time.monotonic() - self.started
                return Readiness(True, secs, f"ready on 127.0.0.1:{self.port} after {secs:.0f} s (health ok)")
            self._exited(1.0)
        secs = time.monotonic() - self.started
        assert self.proc is not None
        if self.proc.poll() is not None:
            text = self.log.read_text(encoding="utf-8", errors="replace")
            return Readiness(False, secs, f"gateway exited rc {self.proc.returncode} after {secs:.0f} s: "
                                          f"{first_error_line(text)} (log {self.log})")
        if last is None:
            return Readiness(False, secs, f"not listening on port {self.port} within {timeout_s:.0f} s (log {self.log})")
        return Readiness(False, secs, f"listening, but `gateway call health` never succeeded within {timeout_s:.0f} s: "
                                      f"{last.why()}; gateway log {self.log}")

    def call(self, method: str, params: dict[str, Any]) -> CommandResult:
        args = ["gateway", "call", method, "--json", "--port", str(self.port), "--params", json.dumps(params),
                "--timeout", "60000"] + (["--token", self.token] if self.token else [])
        return self.openclaw.run(f"gateway-call-{method}", args, home=self.home, timeout=CALL_TIMEOUT_S)

    def post_chat_completion(self, agent: str, session_key: str, text: str) -> tuple[int | None, str]:
        body = json.dumps({"model": f"openclaw:{agent}", "messages": [{"role": "user", "content": text}]}).encode()
        headers = {"Content-Type": "application/json", "x-openclaw-agent-id": agent,
                   "x-openclaw-session-key": session_key}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}/v1/chat/completions", data=body,
                                         headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=TURN_TIMEOUT_S) as response:
                return response.status, response.read().decode("utf-8", errors="replace")
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode("utf-8", errors="replace")
        except (OSError, ValueError) as exc:
            return None, repr(exc)

    def agent_turn(self, session_key: str, text: str) -> CommandResult:
        env_extra = {"OPENCLAW_GATEWAY_PORT": str(self.port), **({"OPENCLAW_GATEWAY_TOKEN": self.token} if self.token else {})}
        env = {**self.openclaw.env(self.home), **env_extra}
        return self.openclaw.log.run("agent-turn", self.openclaw.argv(
            ["agent", "--session-key", session_key, "--message", text, "--json", "--timeout", str(TURN_TIMEOUT_S)]),
            env=env, cwd=self.home, timeout=TURN_TIMEOUT_S + 60)


# ------------------------------------------------------------------------------------------ history
@dataclass(frozen=True)
class SessionHistory:
    agent: str
    key: str
    session_id: str
    legacy_messages: int
    served_messages: int | None
    served_session: str | None
    problem: str | None


def served_history(gateway: Gateway, keys: dict[str, dict[str, str]], keyless: dict[str, list[str]],
                   legacy: LegacyFacts) -> list[SessionHistory]:
    """chat.history for every (agent, key -> session id), held to the legacy transcript's message count."""
    found = []
    for agent in sorted(keys):
        for key, session_id in sorted(keys[agent].items()):
            expected = legacy.expected_messages(agent, session_id)
            reply = gateway.call("chat.history", {"sessionKey": key, "limit": 1000})
            doc = reply.json() if reply.ok else None
            if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
                why = reply.why() if not reply.ok else f"no messages in the reply (log {reply.log})"
                found.append(SessionHistory(agent, key, session_id, expected, None, None, why))
                continue
            total = doc.get("totalMessages")
            served = total if isinstance(total, int) else len(doc["messages"])
            served_session = doc.get("sessionId")
            problem = None
            if served_session != session_id:
                problem = f"served session {served_session}, expected {session_id} (log {reply.log})"
            elif served != expected:
                problem = f"{served} messages served, the legacy transcript has {expected} (log {reply.log})"
            found.append(SessionHistory(agent, key, session_id, expected, served, served_session, problem))
    for agent, session_ids in sorted(keyless.items()):
        for session_id in session_ids:
            found.append(SessionHistory(agent, "(none)", session_id, legacy.expected_messages(agent, session_id),
                                        None, None, "the session has no key: the gateway cannot serve it"))
    return found


# ------------------------------------------------------------------------------------------ new turn
@dataclass
class TurnResult:
    appended: bool
    detail: str
    events_before: dict[str, int] = field(default_factory=dict)
    events_after: dict[str, int] = field(default_factory=dict)


def turn_candidate(keys: dict[str, dict[str, str]], legacy: LegacyFacts) -> tuple[str, str, str, int] | None:
    """(agent, key, session id, messages) of the imported user session with the fewest messages (not cron)."""
    options = [(legacy.expected_messages(agent, sid), agent, key, sid)
               for agent, mapping in keys.items() for key, sid in mapping.items()
               if ":cron:" not in key and legacy.indexed(agent, sid) and legacy.expected_messages(agent, sid) > 0]
    if not options:
        return None
    count, agent, key, sid = min(options)
    return agent, key, sid, count


def key_event_counts(state: Path, agent: str, key: str) -> dict[str, int]:
    """{session id: transcript events} for every session the key maps to (a reset may have started one)."""
    db = state / "agents" / agent / "agent" / "openclaw-agent.sqlite"
    con = open_db(db, "ro", busy_timeout_ms=30_000)
    try:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        session_ids: set[str] = set()
        for table in SESSION_KEY_TABLES:
            if table in tables and {"session_key", "session_id"} <= {r[1] for r in con.execute(f'PRAGMA table_info("{table}")')}:
                session_ids |= {r[0] for r in con.execute(f'SELECT session_id FROM "{table}" WHERE session_key = ?', (key,)) if r[0]}
        return {sid: con.execute("SELECT count(*) FROM transcript_events WHERE session_id = ?", (sid,)).fetchone()[0]
                for sid in sorted(session_ids)}
    finally:
        con.close()


def new_turn(gateway: Gateway, state: Path, config: GatewayConfig, agent: str, key: str, session_id: str,
             messages: int, model: StandInModel) -> TurnResult:
    """One turn on ``key``; appended when the key's events grew, none were lost, and the model answered."""
    answered_before = model.answered
    try:
        before = key_event_counts(state, agent, key)
    except SQLiteError as exc:
        return TurnResult(False, f"cannot count {agent}'s transcript events before the turn: {exc}")
    if config.chat_endpoint:
        how = "POST /v1/chat/completions"
        status, text = gateway.post_chat_completion(agent, key, PROBE_TEXT)
        log = gateway.openclaw.log.next_path("new-turn-http")
        log.write_text(f"{how} session key {key}\nstatus {status}\n{text}\n", encoding="utf-8")
        sent, why = status == 200, f"HTTP {status}: {shorten(text, 200)} (log {log})"
    else:
        how = "openclaw agent --session-key"
        reply = gateway.agent_turn(key, PROBE_TEXT)
        sent, why = reply.ok, reply.why()
    history = gateway.call("chat.history", {"sessionKey": key, "limit": 5})  # also lets the store settle
    try:
        after = key_event_counts(state, agent, key)
    except SQLiteError as exc:
        return TurnResult(False, f"cannot count {agent}'s transcript events after the turn: {exc}", before)
    grew = sum(after.values()) > sum(before.values())
    lost = {sid: (n, after.get(sid, 0)) for sid, n in before.items() if after.get(sid, 0) < n}
    model_calls = model.answered - answered_before
    new_sessions = sorted(set(after) - set(before))
    served = history.json() if history.ok else None
    detail = (f"{how} on {key} ({messages} legacy messages): {'reply ok' if sent else why}; stand-in model answered "
              f"{model_calls} request(s); transcript events under the key {sum(before.values())} -> {sum(after.values())}"
              + (f" (9.6 started session {', '.join(new_sessions)} for the key, session.reset.mode={config.reset_mode}; "
                 f"imported session {session_id} kept {after.get(session_id)} events)" if new_sessions else "")
              + (f"; EVENTS LOST {lost}" if lost else "")
              + f"; chat.history now reports {served.get('totalMessages') if isinstance(served, dict) else '?'} messages")
    return TurnResult(sent and grew and not lost and model_calls > 0, detail, before, after)
