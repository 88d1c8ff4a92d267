"""Helpers for the CLI tests: a real pseudo-terminal, transcripts, the statekit command line."""

from __future__ import annotations

import json
import os
import pty
import select
import sys
import time
from pathlib import Path

import faultkit
from statekit.values import ms_to_iso

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def statekit_argv(*args: object) -> list[str]:
    return [sys.executable, "-m", "statekit", *map(str, args)]


def clean_env(**extra: str) -> dict[str, str]:
    env = {**faultkit.without_fault_env(), "COLUMNS": "120", "LINES": "40", "TERM": "xterm-256color"}
    env.pop("STATEKIT_DEBUG", None)
    env.update(extra)
    return env


def run_in_pty(argv: list[str], env: dict[str, str], cwd: Path, timeout: float = 600) -> tuple[int, str]:
    """Run ``argv`` with stdin, stdout and stderr on a new pseudo-terminal; (exit code, everything it drew)."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: exec, never return into pytest
        try:
            os.chdir(cwd)
            os.execve(argv[0], argv, env)
        finally:
            os._exit(127)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 1.0)
            if not ready:
                continue
            try:
                data = os.read(fd, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(fd)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), b"".join(chunks).decode("utf-8", "replace")


def transcript(session_id: str, events: int, pad: int = 0) -> str:
    """A session transcript (header + ``events`` messages, each with ``pad`` characters of text)."""
    lines = [json.dumps({"type": "session", "version": 3, "id": session_id, "timestamp": ms_to_iso(T0), "cwd": "/w"})]
    parent = None
    for i in range(events):
        eid = f"e{i:07d}"
        lines.append(json.dumps({"type": "message", "id": eid, "parentId": parent, "timestamp": ms_to_iso(T0 + i * 1000),
                                 "message": {"role": "user", "content": f"hi {i} " + "x" * pad}}))
        parent = eid
    return "\n".join(lines) + "\n"
