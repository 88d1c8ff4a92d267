"""migrate.outcomes.OutcomeLog: a run's outcomes kept as their report entries, in memory and then in a temp file."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from statekit.migrate import outcomes as outcomes_module
from statekit.migrate.outcomes import OutcomeLog, SourceOutcome


def outcome(n: int) -> SourceOutcome:
    return SourceOutcome("transcript", f"agents/main/sessions/{n:05d}-é \"q\"\n.jsonl", "main" if n % 3 else None,
                         ("imported", "failed", "retired")[n % 3], n if n % 2 else None, "line\nbreak ✓" if n % 5 == 0 else None,
                         f".statekit/migrated/r/{n}" if n % 4 else None, [f"note {n}", "\x00\u2028"] if n % 7 == 0 else [])


@pytest.mark.parametrize("count", [0, 1, 3, 2_500])
def test_what_goes_in_comes_out_in_order_from_memory_and_from_its_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, count: int) -> None:
    monkeypatch.setattr(outcomes_module, "SPILL_BYTES", 4_096)  # a few dozen entries per spill
    log = OutcomeLog(tmp_path / "spill")
    expected = [outcome(n) for n in range(count)]
    for item in expected:
        log.append(item)
    assert len(log) == count
    assert list(log) == expected
    assert list(log.entries()) == [json.dumps(o.to_json(), ensure_ascii=False, sort_keys=True).encode() for o in expected]
    assert [log[i] for i in (0, count // 2, count - 1, -1)] == [expected[i] for i in (0, count // 2, count - 1, -1)] if count else True
    assert log[1:4] == expected[1:4]
    statuses: dict[str, int] = {}
    for item in expected:
        statuses[item.status] = statuses.get(item.status, 0) + 1
    assert log.counts() == dict(sorted(statuses.items()))
    with pytest.raises(IndexError):
        log[count]
    assert list(log) == expected  # read twice (the run report counts its bytes, then writes them)


def test_a_large_log_holds_its_entries_in_an_unnamed_private_file_not_in_memory(tmp_path: Path) -> None:
    spill = tmp_path / "spill"
    log = OutcomeLog(spill)
    entry = len(outcome(1).report_entry()) + 1
    for n in range(outcomes_module.SPILL_BYTES // entry + 10):
        log.append(outcome(1))
    assert log._file is not None and len(log._held) < outcomes_module.SPILL_BYTES
    st = os.fstat(log._file.fileno())
    assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_size == log._in_file > 0
    assert stat.S_IMODE(spill.stat().st_mode) == 0o700
    if os.name == "posix" and os.uname().sysname == "Linux":
        assert list(spill.iterdir()) == []  # O_TMPFILE: nothing named is left behind, even by a killed run
    assert log[-1] == outcome(1) and log[0] == outcome(1)


def test_an_outcome_changed_after_it_was_recorded_is_not_seen() -> None:
    log = OutcomeLog()
    item = outcome(2)
    log.append(item)
    item.status = "changed"
    assert log[0].status == outcome(2).status and log.counts() == {outcome(2).status: 1}
