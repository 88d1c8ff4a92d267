"""A stand-in model server on 127.0.0.1 that answers OpenAI-style chat completions.

OpenClaw's agent turn calls the tree's configured local provider (``baseUrl`` http://127.0.0.1:<port>/v1,
``api: openai-completions``); this server answers ``POST .../chat/completions`` with one short
deterministic assistant message, as plain JSON or as a server-sent event stream when ``stream`` is
true, and lists its model on ``GET .../models``. It runs in a thread of the test process; every request
is appended to a JSON-lines log.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

REPLY_PREFIX = "stand-in reply"


def reply_text(messages: list[Any]) -> str:
    """The answer to a conversation: names a digest of the last user message, so turns differ."""
    last = next((m for m in reversed(messages) if isinstance(m, dict) and m.get("role") == "user"), {})
    content = last.get("content")
    if isinstance(content, list):
        content = " ".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
    digest = hashlib.sha256(str(content or "").encode("utf-8")).hexdigest()[:8]
    return f"{REPLY_PREFIX} {digest}: noted."


def completion(request: dict[str, Any], reply: str) -> dict[str, Any]:
    prompt_tokens = max(1, len(json.dumps(request.get("messages", []))) // 4)
    reply_tokens = max(1, len(reply) // 4)
    return {"id": "chatcmpl-standin", "object": "chat.completion", "created": 0,
            "model": request.get("model") or "stand-in",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": reply}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": reply_tokens,
                      "total_tokens": prompt_tokens + reply_tokens}}


def stream_chunks(request: dict[str, Any], reply: str) -> Iterator[dict[str, Any]]:
    """The same answer as chat.completion.chunk objects: role, the text word by word, stop, then usage."""
    whole = completion(request, reply)
    base = {"id": whole["id"], "object": "chat.completion.chunk", "created": 0, "model": whole["model"]}
    yield {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]}
    for n, word in enumerate(reply.split(" ")):
        yield {**base, "choices": [{"index": 0, "delta": {"content": word if n == 0 else " " + word},
                                    "finish_reason": None}]}
    yield {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    if (request.get("stream_options") or {}).get("include_usage"):
        yield {**base, "choices": [], "usage": whole["usage"]}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass

    def _send_json(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        path = self.path.split("?")[0].rstrip("/")
        self.server.record({"method": "GET", "path": path})
        if path.endswith("/models"):
            self._send_json(200, {"object": "list", "data": [{"id": "fake-model", "object": "model", "owned_by": "stand-in"}]})
        else:
            self._send_json(404, {"error": {"message": f"no route {path}", "type": "not_found"}})

    def do_POST(self) -> None:  # noqa: N802
        path = self.path.split("?")[0].rstrip("/")
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            request = json.loads(raw or b"{}")
        except ValueError:
            request = None
        if not isinstance(request, dict) or not path.endswith("/chat/completions"):
            self.server.record({"method": "POST", "path": path, "answered": False})
            self._send_json(404 if isinstance(request, dict) else 400,
                            {"error": {"message": f"only chat completions here, not {path}", "type": "invalid_request"}})
            return
        messages = request.get("messages") if isinstance(request.get("messages"), list) else []
        reply = reply_text(messages)
        self.server.record({"method": "POST", "path": path, "answered": True, "model": request.get("model"),
                            "stream": bool(request.get("stream")), "messages": len(messages)})
        if not request.get("stream"):
            self._send_json(200, completion(request, reply))
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        for chunk in stream_chunks(request, reply):
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode("utf-8"))
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int, log: Path) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.log = log
        self.answered = 0
        self._lock = threading.Lock()

    def record(self, entry: dict[str, Any]) -> None:
        with self._lock:
            self.answered += bool(entry.get("answered"))
            with open(self.log, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(entry) + "\n")


@dataclass(frozen=True)
class StandInModel:
    port: int
    log: Path
    server: _Server

    @property
    def answered(self) -> int:
        return self.server.answered


@contextmanager
def stand_in_model(port: int, log: Path) -> Iterator[StandInModel]:
    """Serve on 127.0.0.1:``port`` (0: any free port) for the length of the block. OSError when taken."""
    server = _Server(port, log)
    thread = threading.Thread(target=server.serve_forever, name=f"stand-in-model-{port}", daemon=True)
    thread.start()
    try:
        yield StandInModel(port=server.server_address[1], log=log, server=server)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
