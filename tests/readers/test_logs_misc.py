"""Retained logs: logs/commands.log, logs/stability/*.json, other logs/*.jsonl|*.log."""

from __future__ import annotations

from pathlib import Path

from small_store_harness import new_state, outcome, run
from helpers import run_cli
from statekit.legacy_readers import reader_for


def test_claims():
    assert reader_for("logs/commands.log").kind == "command-log"
    assert reader_for("logs/stability/2026-03-01T00-00-00Z.json").kind == "stability-bundle"
    assert reader_for("logs/cache-trace.jsonl").kind == "diagnostic-log"
    assert reader_for("logs/gateway.log").kind == "diagnostic-log"
    assert reader_for("logs/config-audit.jsonl").kind == "audit-jsonl"


def test_logs_are_retained_in_place(tmp_path: Path):
    files = {
        "logs/commands.log": '{"timestamp":"2026-03-01T00:00:00Z","action":"new","sessionKey":"agent:main:main","senderId":"u","source":"telegram"}\n',
        "logs/stability/2026-03-01T00-00-00Z.json": {"reason": "event-loop-stall", "generatedAt": "2026-03-01T00:00:00Z"},
        "logs/raw-stream.jsonl": "{}\n",
        "audit/crestodian.jsonl": '{"timestamp":"2026-03-01T00:00:00Z"}\n',
    }
    state, originals = new_state(tmp_path, files)
    report = run(state)
    assert report.status == "completed", report.warnings
    for rel, kind in (("logs/commands.log", "command-log"), ("logs/stability/2026-03-01T00-00-00Z.json", "stability-bundle"), ("logs/raw-stream.jsonl", "diagnostic-log")):
        result = outcome(report, rel)
        assert (result.kind, result.status) == (kind, "retain")
        assert result.message and "statekit" in result.message or "file-backed" in (result.message or "")
        assert (state / rel).read_bytes() == originals[rel]
    plan = run_cli("plan", "--state-dir", state, "--json")
    assert plan.returncode == 0, plan.stderr
    assert '"command-log"' in plan.stdout and '"retain"' in plan.stdout
