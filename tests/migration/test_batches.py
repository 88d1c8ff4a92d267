"""Small sources imported in batches (one transaction per database, a savepoint per source: migrate.apply._Batch).

A source that fails inside a batch is rolled back alone; an error of the machine mid-batch rolls the whole batch
back and stops the run, and no source is then reported imported whose rows are not committed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import apsw
import pytest

import statekit.migrate.apply as apply
from helpers import agent_db, global_db, make_state, rows
from statekit.errors import SchemaError, StatekitError
from statekit.legacy_readers.transcripts import TranscriptReader
from statekit.migrate.apply import MigrateOptions, migrate

FILES = 12
BAD = "agents/main/sessions/s0005.jsonl"  # in the middle of the batch


def transcript(session_id: str, events: int = 3) -> str:
    lines = [json.dumps({"type": "session", "version": 3, "id": session_id, "timestamp": "2026-01-01T00:00:00Z"})]
    lines += [json.dumps({"type": "message", "id": f"{session_id}-{n}", "timestamp": "2026-01-01T00:00:01Z",
                          "message": {"role": "user", "content": [{"type": "text", "text": f"hello {n}"}]}}) for n in range(events)]
    return "\n".join(lines) + "\n"


def install(tmp_path: Path) -> Path:
    """Transcripts no index lists: each one's import writes a ``sessions`` row, a recovered entry and route, its events."""
    return make_state(tmp_path, {f"agents/main/sessions/s{n:04d}.jsonl": transcript(f"s{n:04d}") for n in range(FILES)})


def sessions_with_events(state: Path) -> list[str]:
    return [r[0] for r in rows(agent_db(state), "SELECT DISTINCT session_id FROM transcript_events ORDER BY 1")]


def receipts(state: Path) -> dict[str, tuple[str, int]]:
    return {p: (s, r) for p, s, r in rows(global_db(state), "SELECT source_path, status, removed_source FROM migration_sources")}


def stored_report(state: Path) -> dict[str, Any]:
    (text,), = rows(global_db(state), "SELECT report_json FROM migration_runs")
    report: dict[str, Any] = json.loads(text)
    return report


@pytest.fixture
def commits(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of sources of each batch committed (every small transcript here goes through a batch)."""
    seen: list[int] = []
    original = apply._Batch.commit_agents

    def counted(self: apply._Batch) -> None:
        seen.append(len(self.pending))
        original(self)

    monkeypatch.setattr(apply._Batch, "commit_agents", counted)
    return seen


def fail_in_write(monkeypatch: pytest.MonkeyPatch, rel: str, make_error: Any) -> None:
    """``rel``'s write raises ``make_error(ctx)`` after the reader wrote all its rows (they are in the transaction)."""
    original = TranscriptReader.write

    def write(self: TranscriptReader, source: Any, handle: Any, ctx: Any) -> Any:
        result = original(self, source, handle, ctx)
        if source.rel == rel:
            raise make_error(ctx)
        return result

    monkeypatch.setattr(TranscriptReader, "write", write)


def test_a_failing_source_inside_a_batch_is_rolled_back_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, commits: list[int]) -> None:
    state = install(tmp_path)
    fail_in_write(monkeypatch, BAD, lambda ctx: SchemaError("refused on purpose by the test"))
    report = migrate(state, MigrateOptions(backup=False))
    assert report.exit_code == 3
    statuses = {o.rel: o.status for o in report.outcomes}
    assert statuses.pop(BAD) == "failed"
    assert set(statuses.values()) == {"imported"} and len(statuses) == FILES - 1
    # Its rows (sessions row, recovered entry and route, events) are absent; every other source's are there.
    others = [f"s{n:04d}" for n in range(FILES) if n != 5]
    assert sessions_with_events(state) == others
    assert [r[0] for r in rows(agent_db(state), "SELECT session_id FROM sessions ORDER BY 1")] == others
    assert rows(agent_db(state), "SELECT count(*) FROM session_entries WHERE session_id = 's0005'") == [(0,)]
    found = receipts(state)
    assert found.pop(BAD) == ("failed", 0)
    assert set(found.values()) == {("completed", 1)} and len(found) == FILES - 1
    assert (state / BAD).is_file()
    assert sorted(p.name for p in (state / "agents" / "main" / "sessions").iterdir()) == ["s0005.jsonl"]
    # The sources before it were one batch, committed before its failure was handled; those after it another.
    assert commits == [5, FILES - 6], commits


def test_a_transaction_sqlite_rolled_back_itself_imports_the_batch_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An error after which the whole transaction is gone (SQLite rolls back on an interrupt, a full disk...): the
    batch's earlier sources are not lost with it, they are imported again one by one; the failing one fails."""

    def whole_rollback(ctx: Any) -> Exception:
        ctx.writer.agent("main").conn.execute("ROLLBACK")  # as SQLite itself does after SQLITE_INTERRUPT mid-statement
        return SchemaError("refused on purpose by the test, after the transaction was rolled back")

    state = install(tmp_path)
    fail_in_write(monkeypatch, BAD, whole_rollback)
    report = migrate(state, MigrateOptions(backup=False))
    statuses = {o.rel: o.status for o in report.outcomes}
    assert statuses.pop(BAD) == "failed"
    assert set(statuses.values()) == {"imported"} and len(statuses) == FILES - 1
    assert sessions_with_events(state) == [f"s{n:04d}" for n in range(FILES) if n != 5]
    found = receipts(state)
    assert found.pop(BAD) == ("failed", 0)
    assert set(found.values()) == {("completed", 1)}
    assert [o.rel for o in report.outcomes] == sorted(o.rel for o in report.outcomes)  # plan order kept


@pytest.mark.parametrize("where", ["write", "commit"])
def test_an_environmental_error_mid_batch_reports_no_source_imported_that_is_not_committed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    state = install(tmp_path)
    originals = {p.name: p.read_bytes() for p in (state / "agents" / "main" / "sessions").iterdir()}
    if where == "write":
        fail_in_write(monkeypatch, BAD, lambda ctx: apsw.FullError("database or disk is full"))
    else:  # the state database's commit of the first batch fails: the agent rows are committed, no receipt is
        original = apply._Batch.commit_global

        def commit_global(self: apply._Batch) -> None:
            if any(w.planned.rel == BAD for w in self.pending):
                raise apsw.FullError("database or disk is full")
            original(self)

        monkeypatch.setattr(apply._Batch, "commit_global", commit_global)
        monkeypatch.setattr(apply, "BATCH_SOURCES", 8)
    with pytest.raises(StatekitError, match="disk is full"):
        migrate(state, MigrateOptions(backup=False))
    report = stored_report(state)
    assert report["status"] == "failed"
    found = receipts(state)
    for source in report["sources"]:  # a source reported imported has its rows and its receipt committed
        assert source["status"] != "imported" or (found.get(source["path"], ("", 0))[0] == "completed"
                                                  and Path(source["path"]).stem in sessions_with_events(state)), source
    assert not any(s["status"] == "imported" for s in report["sources"])  # the batch was never committed
    assert found == {}
    # Every file is still where it was, byte for byte, and the rerun imports them all.
    assert {p.name: p.read_bytes() for p in (state / "agents" / "main" / "sessions").iterdir()} == originals
    monkeypatch.undo()
    again = migrate(state, MigrateOptions(backup=False))
    assert again.exit_code == 0 and {o.status for o in again.outcomes} == {"imported"}
    assert sessions_with_events(state) == [f"s{n:04d}" for n in range(FILES)]
    assert set(receipts(state).values()) == {("completed", 1)}


def test_a_source_sees_the_receipts_of_its_batch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, commits: list[int]) -> None:
    """``ctx.imported_report`` / ``dependency_pending`` of a source read the receipts its batch wrote, not committed yet."""
    state = install(tmp_path)
    seen: dict[str, Any] = {}
    original = TranscriptReader.write

    def write(self: TranscriptReader, source: Any, handle: Any, ctx: Any) -> Any:
        if source.rel == BAD:
            earlier = "agents/main/sessions/s0004.jsonl"
            seen["report"] = ctx.imported_report(earlier)
            seen["pending"] = ctx.dependency_pending(earlier)
        return original(self, source, handle, ctx)

    monkeypatch.setattr(TranscriptReader, "write", write)
    assert migrate(state, MigrateOptions(backup=False)).exit_code == 0
    assert commits == [FILES]  # one batch: s0004's receipt was not committed when s0005 asked
    assert seen["report"] is not None and seen["report"]["path"] == "agents/main/sessions/s0004.jsonl"
    assert seen["pending"] is False


def test_the_guard_kept_through_a_batch_still_refuses_a_table_outside_the_readers_targets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, commits: list[int]
) -> None:
    """The guards stay installed from one source of a batch to the next (Writer.guarded
    keep): a later source writing outside its reader's target_tables is still refused, and rolled back alone;
    the guard is gone after the batch (the run's last step writes the shared auth store through the same connection)."""
    state = install(tmp_path)

    def outside(ctx: Any) -> Exception:
        ctx.writer.agent("main").delete("cache_entries", {"key": "x"})  # not a transcript table: refused by the guard
        return AssertionError("the guard let a write outside the reader's targets through")

    fail_in_write(monkeypatch, BAD, outside)
    report = migrate(state, MigrateOptions(backup=False))
    bad = next(o for o in report.outcomes if o.rel == BAD)
    assert bad.status == "failed" and "cache_entries" in (bad.message or "") and "target_tables" in (bad.message or ""), bad
    assert commits == [5, FILES - 6]
    assert sessions_with_events(state) == [f"s{n:04d}" for n in range(FILES) if n != 5]
    from helpers import open_db

    with open_db(agent_db(state)) as conn:  # no guard was left behind in the file's own schema or rows
        assert conn.execute("SELECT count(*) FROM cache_entries").fetchone()[0] == 0
