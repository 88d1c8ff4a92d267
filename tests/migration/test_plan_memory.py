"""Memory per file of migrate's plan and run report (issue 16: RSS under 200 MB at 100,000 small files)."""

from __future__ import annotations

import gc
import json
import tracemalloc
from pathlib import Path

from helpers import make_state
from statekit.migrate.apply import MigrationReport, SourceOutcome
from statekit.migrate.plan import Plan, build_plan


def install(tmp_path: Path, files: int) -> Path:
    """``files`` small transcripts (a header and one message each), no index: only the per-file plan is measured."""
    sessions = {}
    for n in range(files):
        sid = f"0b5e{n:04d}-aaaa-4bbb-8ccc-{n:012d}"  # OpenClaw's session ids are UUIDs
        lines = [{"type": "session", "version": 3, "id": sid, "timestamp": "2026-01-01T00:00:00Z"},
                 {"type": "message", "id": f"m{n}", "timestamp": "2026-01-01T00:00:01Z", "message": {"role": "user", "content": "hi"}}]
        sessions[f"agents/main/sessions/{sid}.jsonl"] = "".join(json.dumps(line) + "\n" for line in lines)
    return make_state(tmp_path, sessions)


def plan_bytes(state: Path) -> tuple[Plan, int]:
    """The plan (as migrate builds it: ``full=False``) and the bytes it holds once built (tracemalloc, after a collection)."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        plan = build_plan(state, {}, full=False)
        gc.collect()
        return plan, tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def test_the_plan_holds_less_than_700_bytes_per_small_file(tmp_path: Path) -> None:
    """The difference between plans of 1,200 and 200 files, over the 1,000 between: object sizes, not the machine.

    Before (a828ed2) a planned transcript held 761 bytes here: a new empty list for its warnings, a new empty
    dict for its re-opened files and a copy of the reader's details in a dict of its own. With the shared empties
    and the reader's own dict: 641 (CPython 3.11 object sizes).
    """
    build_plan(install(tmp_path / "warm", 5), {}, full=False)  # imports and caches before measuring
    small, small_bytes = plan_bytes(install(tmp_path / "small", 200))
    big, big_bytes = plan_bytes(install(tmp_path / "big", 1200))
    assert len(big.sources) - len(small.sources) == 1000
    assert all(s.glanced and s.action == "import" for s in big.sources)
    per_file = (big_bytes - small_bytes) / 1000
    assert per_file < 700, f"{per_file:.0f} bytes per planned file"


def test_the_run_report_of_20000_sources_is_built_within_one_and_a_half_times_its_bytes(tmp_path: Path) -> None:
    """The report's UTF-8 text is the one copy made: no list of 20,000 pieces, no joined str beside it (a828ed2: ~2.3x)."""
    report = MigrationReport(state_dir=tmp_path, run_id="r", status="completed")
    for n in range(20_000):
        report.outcomes.append(SourceOutcome("transcript", f"agents/main/sessions/{n:08d}-ü.jsonl", "main", "imported", 3,
                                             retired_to=f".statekit/retired/r/agents/main/sessions/{n:08d}-ü.jsonl"))
    gc.collect()
    tracemalloc.start()
    try:
        text = report.report_utf8()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert bytes(text) == json.dumps(report.to_json(), ensure_ascii=False, sort_keys=True).encode("utf-8")
    assert peak < 1.5 * len(text), f"peak {peak} for {len(text)} bytes of report"
