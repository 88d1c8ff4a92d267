"""Builders for the maintenance tests: small migrated state dirs with session families."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from helpers import agent_db, make_state, open_db

T0 = 1767225600000  # 2026-01-01T00:00:00Z


def transcript(session_id: str, turns: int, *, start_ms: int = T0) -> str:
    """A v3 transcript: header plus ``turns`` user/assistant message pairs (parent-linked)."""
    lines = [{"type": "session", "version": 3, "id": session_id, "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"}]
    parent = None
    for index in range(turns * 2):
        event_id = f"{index:04x}{session_id[:4]}"
        role = "user" if index % 2 == 0 else "assistant"
        stamp = f"2026-01-01T00:{index // 60:02d}:{index % 60:02d}.000Z"
        lines.append({"type": "message", "id": event_id, "parentId": parent, "timestamp": stamp,
                      "message": {"role": role, "content": [{"type": "text", "text": f"{role} text {index} of {session_id}"}],
                                  "timestamp": start_ms + index * 1000}})
        parent = event_id
    return "\n".join(json.dumps(line) for line in lines) + "\n"


def entry(session_id: str, updated: int = T0, **extra: Any) -> dict[str, Any]:
    return {"sessionId": session_id, "updatedAt": updated, "chatType": "direct", "lastChannel": "telegram", "lastTo": "12345", **extra}


def checkpoint(pre: str, post: str) -> dict[str, Any]:
    return {"checkpointId": f"cp-{pre}", "createdAt": T0, "reason": "auto", "tokensBefore": 9000, "tokensAfter": 1200,
            "summary": "summary", "preCompaction": {"sessionId": pre, "leafId": "x"}, "postCompaction": {"sessionId": post}}


def migrated_state(tmp_path: Path, entries: dict[str, dict[str, Any]], transcripts: dict[str, int], agent: str = "main",
                   name: str = ".openclaw", extra_files: dict[str, Any] | None = None) -> Path:
    """A state dir whose legacy index + transcripts were migrated by the real apply loop."""
    from statekit.migrate.apply import MigrateOptions, migrate

    files: dict[str, Any] = {f"agents/{agent}/sessions/sessions.json": entries}
    for sid, turns in transcripts.items():
        files[f"agents/{agent}/sessions/{sid}.jsonl"] = transcript(sid, turns)
    files.update(extra_files or {})
    state = make_state(tmp_path, files, name=name)
    report = migrate(state, MigrateOptions(backup=False))
    assert report.status in ("completed", "warning"), report.warnings
    return state


def count(state: Path, sql: str, params: tuple[Any, ...] = (), agent: str = "main") -> int:
    conn = open_db(agent_db(state, agent), "ro")
    try:
        return conn.execute(sql, params).fetchone()[0]
    finally:
        conn.close()


def session_row_counts(state: Path, session_id: str, agent: str = "main") -> dict[str, int]:
    result = {}
    for table in ("sessions", "transcript_events", "transcript_event_identities", "transcript_snapshots", "trajectory_runtime_events"):
        result[table] = count(state, f"SELECT count(*) FROM {table} WHERE session_id = ?", (session_id,), agent)
    return result


def mode(path: Path) -> int:
    return os.stat(path).st_mode & 0o777


def copy_state(state: Path, dest: Path) -> Path:
    """A private copy of a (session-shared) state dir, mtimes kept."""
    import shutil

    target = dest / state.name
    shutil.copytree(state, target, symlinks=True)
    return target


class CliResult:
    def __init__(self, returncode: int, stdout: str, stderr: str) -> None:
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def cli(*args: Any, env: dict[str, str] | None = None) -> CliResult:
    """Run the statekit CLI in-process (same exit codes and streams as ``run_cli``, without a new interpreter)."""
    from typer.testing import CliRunner

    from statekit.cli import build_app

    runner = CliRunner()
    result = runner.invoke(build_app(), [str(a) for a in args], env=env, catch_exceptions=False)
    return CliResult(result.exit_code, result.stdout, result.stderr)
