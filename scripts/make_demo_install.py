#!/usr/bin/env python3
"""Generate fixtures/demo-install/: a realistic legacy OpenClaw install for the demo and tests.

Deterministic (fixed ids and timestamps). It mirrors what old releases left
on disk: three agents, JSON5 session indexes with legacy keys and absolute
``sessionFile`` paths under a home that no longer exists, V1/V2/V3
transcripts (one forum-topic transcript), cron jobs with every/cron/at
schedules plus a legacy-shaped job, a state sidecar and run logs, and one
malformed transcript that must be reported and left in place.

Usage: python scripts/make_demo_install.py [OUT_DIR]   (default: fixtures/demo-install)
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

OLD_HOME = "/home/olduser/.clawdbot"
T0 = 1767225600000  # 2026-01-01T00:00:00Z


def iso(ms: int) -> str:
    from datetime import datetime, timezone

    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def line(obj: dict) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def v3_transcript(session_id: str, start: int, turns: list[tuple[str, str]], cwd: str) -> str:
    out = [line({"type": "session", "version": 3, "id": session_id, "timestamp": iso(start), "cwd": cwd})]
    parent = None
    t = start
    for n, (role, text) in enumerate(turns):
        t += 1000
        eid = f"{(abs(hash((session_id, n))) % 0xFFFFFFFF):08x}" if False else f"{n + 1:04x}{session_id[:4].encode().hex()[:4]}"
        message: dict = {"role": role, "content": [{"type": "text", "text": text}], "timestamp": t}
        if role == "assistant":
            message.update({"api": "openai-completions", "provider": "fakellm", "model": "fake-model", "stopReason": "stop",
                            "usage": {"input": 10 * (n + 1), "output": 5, "totalTokens": 10 * (n + 1) + 5}})
        if role == "user":
            message["idempotencyKey"] = f"idem-{session_id}-{n}"
        out.append(line({"type": "message", "id": eid, "parentId": parent, "timestamp": iso(t), "message": message}))
        parent = eid
    return "\n".join(out) + "\n"


def v1_transcript(session_id: str, start: int) -> str:
    rows = [
        {"type": "session", "id": session_id, "timestamp": iso(start), "cwd": "/home/olduser/project", "provider": "anthropic", "modelId": "claude-old"},
        {"type": "message", "timestamp": iso(start + 1000), "message": {"role": "user", "content": "Summarise the release notes.", "timestamp": start + 1000}},
        {"type": "message", "timestamp": iso(start + 2000), "message": {"role": "assistant", "content": [{"type": "text", "text": "Three fixes and one feature."}], "timestamp": start + 2000}},
        {"type": "message", "timestamp": iso(start + 3000), "message": {"role": "user", "content": "Which feature?", "timestamp": start + 3000}},
        {"type": "compaction", "timestamp": iso(start + 4000), "summary": "User asked about release notes.", "firstKeptEntryIndex": 3, "tokensBefore": 1200},
        {"type": "message", "timestamp": iso(start + 5000), "message": {"role": "assistant", "content": [{"type": "text", "text": "Cron run history."}], "timestamp": start + 5000}},
    ]
    return "\n".join(line(r) for r in rows) + "\n"


def v2_transcript(session_id: str, start: int) -> str:
    rows = [
        {"type": "session", "version": 2, "id": session_id, "timestamp": iso(start), "cwd": "/home/olduser/project"},
        {"type": "message", "id": "a1b2c3d4", "parentId": None, "timestamp": iso(start + 1000), "message": {"role": "user", "content": "ping", "timestamp": start + 1000}},
        {"type": "message", "id": "b2c3d4e5", "parentId": "a1b2c3d4", "timestamp": iso(start + 2000), "message": {"role": "hookMessage", "customType": "reminder", "content": "hook says hi", "display": True, "timestamp": start + 2000}},
        {"type": "message", "id": "c3d4e5f6", "parentId": "b2c3d4e5", "timestamp": iso(start + 3000), "message": {"role": "assistant", "content": [{"type": "text", "text": "pong"}], "timestamp": start + 3000}},
    ]
    return "\n".join(line(r) for r in rows) + "\n"


def entry(session_id: str, updated: int, **extra) -> dict:
    base = {"sessionId": session_id, "updatedAt": updated, "sessionFile": f"{OLD_HOME}/agents/{extra.pop('agent', 'main')}/sessions/{session_id}.jsonl"}
    base.update(extra)
    return base


def build(out: Path) -> None:
    if out.exists():
        shutil.rmtree(out)
    state = out / ".openclaw"
    files: dict[str, str] = {}

    files["openclaw.json"] = json.dumps({
        "agents": {
            "defaults": {"workspace": f"{OLD_HOME}/workspace", "model": {"primary": "fakellm/fake-model"}},
            "list": [
                {"id": "main", "default": True},
                {"id": "work", "workspace": f"{OLD_HOME}/workspace-work", "agentDir": f"{OLD_HOME}/agents/work/agent"},
                {"id": "ops", "workspace": f"{OLD_HOME}/workspace-ops"},
            ],
        },
        "session": {"dmScope": "per-channel-peer", "reset": {"mode": "idle"}},
        "cron": {"enabled": True},
    }, indent=2) + "\n"

    main_ids = {
        "main": "3f0c2b7e-1111-4a5b-8c9d-000000000001",
        "tg": "3f0c2b7e-1111-4a5b-8c9d-000000000002",
        "topic": "3f0c2b7e-1111-4a5b-8c9d-000000000003",
        "v1": "3f0c2b7e-1111-4a5b-8c9d-000000000004",
        "v2": "3f0c2b7e-1111-4a5b-8c9d-000000000005",
    }
    # JSON5 index: comments, unquoted keys, trailing commas, legacy key shapes.
    main_index = f"""// sessions.json written by clawdbot 2026.1 (JSON5)
{{
  main: {json.dumps(entry(main_ids['main'], T0 + 900_000, chatType='direct', lastChannel='telegram', lastTo='12345', displayName='Main chat', skillsSnapshot={'prompt': 'skills', 'skills': ['web'], 'resolvedSkills': [{'name': 'web', 'body': 'x' * 64}]}, totalTokens=5120))},
  "agent:main:telegram:direct:12345": {json.dumps(entry(main_ids['tg'], T0 + 600_000, chatType='direct', lastChannel='telegram', lastTo='12345', lastAccountId='default', origin={'provider': 'telegram', 'chatType': 'direct', 'from': '12345', 'accountId': 'default'}))},
  "agent:main:telegram:group:-100200:topic:42": {json.dumps(entry(main_ids['topic'], T0 + 700_000, chatType='group', lastChannel='telegram', groupId='-100200', room='#release-team', lastThreadId=42, subject='Release team'))},
  "subagent:release-notes": {json.dumps(entry(main_ids['v1'], T0 + 300_000, spawnedBy='agent:main:main', spawnDepth=1, label='release notes'))},
  "agent:main:hooks:ping": {json.dumps(entry(main_ids['v2'], T0 + 200_000))},
}}
"""
    files["agents/main/sessions/sessions.json"] = main_index
    files[f"agents/main/sessions/{main_ids['main']}.jsonl"] = v3_transcript(main_ids["main"], T0, [("user", "Good morning"), ("assistant", "Morning! Two cron jobs ran overnight."), ("user", "Thanks")], f"{OLD_HOME}/workspace")
    files[f"agents/main/sessions/{main_ids['tg']}.jsonl"] = v3_transcript(main_ids["tg"], T0 + 100_000, [("user", "hi from telegram"), ("assistant", "hello")], f"{OLD_HOME}/workspace")
    files[f"agents/main/sessions/{main_ids['topic']}-topic-42.jsonl"] = v3_transcript(main_ids["topic"], T0 + 200_000, [("user", "topic 42: ship it?"), ("assistant", "Ship it.")], f"{OLD_HOME}/workspace")
    files[f"agents/main/sessions/{main_ids['v1']}.jsonl"] = v1_transcript(main_ids["v1"], T0 + 250_000)
    files[f"agents/main/sessions/{main_ids['v2']}.jsonl"] = v2_transcript(main_ids["v2"], T0 + 150_000)
    files[f"agents/main/sessions/{main_ids['tg']}.jsonl.lock"] = json.dumps({"pid": 4242, "createdAt": iso(T0)}) + "\n"

    work_ids = ["5a55c72a-2222-4a5b-8c9d-000000000001", "5a55c72a-2222-4a5b-8c9d-000000000002"]
    files["agents/work/sessions/sessions.json"] = json.dumps({
        "agent:work:main": entry(work_ids[0], T0 + 800_000, agent="work", chatType="direct"),
        "agent:work:discord:channel:998877": entry(work_ids[1], T0 + 850_000, agent="work", chatType="channel", lastChannel="discord", lastTo="998877", displayName="#ops"),
    }, indent=2) + "\n"
    files[f"agents/work/sessions/{work_ids[0]}.jsonl"] = v3_transcript(work_ids[0], T0 + 400_000, [("user", "status?"), ("assistant", "green")], f"{OLD_HOME}/workspace-work")
    files[f"agents/work/sessions/{work_ids[1]}.jsonl"] = v3_transcript(work_ids[1], T0 + 450_000, [("user", "deploy window?"), ("assistant", "Thursday 10:00 UTC"), ("user", "ok")], f"{OLD_HOME}/workspace-work")

    ops_ids = ["9e9e9e9e-3333-4a5b-8c9d-000000000001", "9e9e9e9e-3333-4a5b-8c9d-000000000002"]
    files["agents/ops/sessions/sessions.json"] = json.dumps({
        "agent:ops:main": entry(ops_ids[0], T0 + 500_000, agent="ops", chatType="direct"),
        "agent:ops:incident-42": entry(ops_ids[1], T0 + 510_000, agent="ops"),
    }, indent=2) + "\n"
    files[f"agents/ops/sessions/{ops_ids[0]}.jsonl"] = v3_transcript(ops_ids[0], T0 + 480_000, [("user", "pager?"), ("assistant", "quiet")], f"{OLD_HOME}/workspace-ops")
    # The malformed file: a corrupt line in the middle. It must be reported and left in place.
    broken = v3_transcript(ops_ids[1], T0 + 490_000, [("user", "incident 42 timeline"), ("assistant", "10:02 alert"), ("user", "and then?")], f"{OLD_HOME}/workspace-ops").splitlines()
    broken[2] = broken[2][: len(broken[2]) // 2]
    files[f"agents/ops/sessions/{ops_ids[1]}.jsonl"] = "\n".join(broken) + "\n"

    jobs = [
        {"id": "2724d87a-f7ba-4cb6-8390-83c7ff828e3c", "agentId": "main", "name": "daily-summary", "enabled": True, "createdAtMs": T0, "updatedAtMs": T0 + 1000,
         "schedule": {"kind": "cron", "expr": "0 9 * * *", "tz": "UTC"}, "sessionTarget": "isolated", "wakeMode": "now",
         "payload": {"kind": "agentTurn", "message": "Summarize yesterday"}, "delivery": {"mode": "none"}},
        {"id": "8b1c2d3e-4f50-4a6b-8c7d-9e0f1a2b3c4d", "agentId": "work", "name": "hourly-check", "enabled": True, "createdAtMs": T0, "updatedAtMs": T0 + 2000,
         "schedule": {"kind": "every", "everyMs": 3_600_000, "anchorMs": T0}, "sessionTarget": "isolated", "wakeMode": "now",
         "payload": {"kind": "agentTurn", "message": "Check the ops queue"}, "delivery": {"mode": "announce", "channel": "last"}},
        {"id": "c0ffee00-1234-4abc-8def-000000000001", "agentId": "main", "name": "one-shot-reminder", "enabled": True, "createdAtMs": T0, "updatedAtMs": T0 + 3000,
         "deleteAfterRun": True, "schedule": {"kind": "at", "at": "2026-12-02T09:00:00Z"}, "sessionTarget": "main", "wakeMode": "next-heartbeat",
         "payload": {"kind": "systemEvent", "text": "Reminder: renew the certificate"}},
        {"jobId": "legacy-nudge", "name": "main-nudge", "enabled": False, "createdAtMs": T0, "schedule": "0 */6 * * *",
         "sessionTarget": "main", "wakeMode": "now", "kind": "systemEvent", "text": "Time for the periodic nudge",
         "state": {"lastRunAtMs": T0 + 21_600_000, "lastStatus": "ok", "consecutiveErrors": 0}},
    ]
    files["cron/jobs.json"] = json.dumps({"version": 1, "jobs": jobs}, indent=2) + "\n"
    files["cron/jobs-state.json"] = json.dumps({"version": 1, "jobs": {
        "2724d87a-f7ba-4cb6-8390-83c7ff828e3c": {"updatedAtMs": T0 + 90_000_000, "state": {"nextRunAtMs": T0 + 118_800_000, "lastRunAtMs": T0 + 32_400_000, "lastRunStatus": "ok", "lastDurationMs": 5300, "consecutiveErrors": 0}},
        "8b1c2d3e-4f50-4a6b-8c7d-9e0f1a2b3c4d": {"updatedAtMs": T0 + 90_000_000, "state": {"nextRunAtMs": T0 + 90_000_000, "lastRunStatus": "error", "lastError": "timeout", "consecutiveErrors": 2}},
    }}, indent=2) + "\n"
    runs = [
        {"ts": T0 + 32_405_300, "jobId": "2724d87a-f7ba-4cb6-8390-83c7ff828e3c", "action": "finished", "status": "ok", "summary": "Summary sent", "sessionId": "77777777-0000-4000-8000-000000000001", "runAtMs": T0 + 32_400_000, "durationMs": 5300, "model": "fake-model", "provider": "fakellm", "usage": {"total_tokens": 321}},
        {"ts": T0 + 118_805_000, "jobId": "2724d87a-f7ba-4cb6-8390-83c7ff828e3c", "action": "finished", "status": "ok", "summary": "Summary sent", "runAtMs": T0 + 118_800_000, "durationMs": 5000},
    ]
    files["cron/runs/2724d87a-f7ba-4cb6-8390-83c7ff828e3c.jsonl"] = "".join(line(r) + "\n" for r in runs)

    files["workspace/AGENTS.md"] = "# Agents\n\nUser content: statekit never touches it.\n"
    files["workspace-work/NOTES.md"] = "Deploy window: Thursday.\n"

    for rel, text in files.items():
        path = state / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        os.utime(path, ns=(T0 * 1_000_000, T0 * 1_000_000))


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1] / "fixtures" / "demo-install"
    build(target)
    print(f"demo install written to {target / '.openclaw'}")
