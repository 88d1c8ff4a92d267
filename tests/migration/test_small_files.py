"""What migrate and plan do per small file: SQLite statements, table_info reads, schema validation of the index."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import statekit.db as db
from helpers import agent_db, global_db, make_state, rows
from statekit.migrate.apply import MigrateOptions, migrate


def transcript(session_id: str, events: int = 4) -> str:
    lines = [json.dumps({"type": "session", "version": 3, "id": session_id, "timestamp": "2026-01-01T00:00:00Z"})]
    lines += [json.dumps({"type": "message", "id": f"{session_id}-{n}", "timestamp": "2026-01-01T00:00:01Z",
                          "message": {"role": "user", "content": [{"type": "text", "text": f"hello {n}"}]}}) for n in range(events)]
    return "\n".join(lines) + "\n"


def install(tmp_path: Path, files: int) -> Path:
    """``files`` transcripts, every one listed by the agent's session index (the benchmark's small-20k shape, smaller)."""
    sessions = {f"agents/main/sessions/s{n:04d}.jsonl": transcript(f"s{n:04d}") for n in range(files)}
    index = {f"agent:main:s{n}": {"sessionId": f"s{n:04d}", "updatedAt": 1767225600000 + n} for n in range(files)}
    return make_state(tmp_path, {**sessions, "agents/main/sessions/sessions.json": json.dumps(index)})


def statements(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Every statement statekit runs (an executemany counted once), by its first words."""
    seen: Counter[str] = Counter()
    execute, executemany = db.Cursor._execute, db.Cursor.executemany

    def counted(self: Any, sql: str, bindings: Any = None, **kwargs: Any) -> Any:
        if not getattr(self, "_in_many", False):
            seen[" ".join(sql.split()[:3])] += 1
        return execute(self, sql, bindings, **kwargs)

    def counted_many(self: Any, sql: str, bindings: Any, **kwargs: Any) -> Any:
        seen[" ".join(sql.split()[:3])] += 1
        self._in_many = True
        try:
            return executemany(self, sql, bindings, **kwargs)
        finally:
            self._in_many = False

    monkeypatch.setattr(db.Cursor, "_execute", counted)
    monkeypatch.setattr(db.Cursor, "executemany", counted_many)
    return seen


def per_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[float, Counter[str]]:
    """Statements per transcript: the difference between installs of 40 and 10 files, over the 30 files between."""
    counts = []
    for files in (10, 40):
        seen = statements(monkeypatch)
        state = install(tmp_path / str(files), files)
        assert migrate(state, MigrateOptions(backup=False)).exit_code == 0
        assert rows(agent_db(state), "SELECT count(*) FROM transcript_events") == [(files * 5,)]
        counts.append(Counter(seen))
        seen.clear()
        monkeypatch.undo()
    small, big = counts
    extra = Counter({k: big[k] - small[k] for k in big if big[k] != small[k]})
    return sum(extra.values()) / 30, extra


def test_a_small_transcript_costs_at_most_13_statements(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A transcript with its index entry: 19 statements on 62c0aae (a PRAGMA table_info of each table it inserts
    into among them), 17 on d01e35f (two transactions of its own, its receipt and its retired mark), 13 now: small
    transcripts share a transaction per database (migrate.apply._Batch), each in a savepoint on its agent database
    (2; none on the state database, which its reader may not write); the receipts of a batch are one executemany
    at its commit and the retired marks one per batch of retirements (counted once each, so not per file here);
    the guard's schema check of each database (2), the session look-up, the two deletes of what the session owned,
    the two inserts, the post-commit count, and the index entry's three upserts (sessions, session_entries,
    session_routes)."""
    each, extra = per_file(tmp_path, monkeypatch)
    assert each <= 13, extra
    assert not any("table_info" in k for k in extra), extra
    assert not any(k.split()[0] in ("BEGIN", "COMMIT") for k in extra), extra  # no transaction of its own


def test_plan_validates_a_well_typed_index_without_jsonschema(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiled check accepts the index: jsonschema is not run on it (62c0aae ran it on every entry, twice per migrate)."""
    import statekit.documents as documents

    calls: list[str] = []
    original = documents._first_error
    monkeypatch.setattr(documents, "_first_error", lambda document, name: (calls.append(name), original(document, name))[1])
    state = install(tmp_path, 5)
    assert migrate(state, MigrateOptions(backup=False)).exit_code == 0
    assert "session-index" not in calls
    assert rows(agent_db(state), "SELECT count(*) FROM session_entries") == [(5,)]


def test_the_run_report_text_is_the_one_json_dumps_gives(tmp_path: Path) -> None:
    """MigrationReport.report_text (one source at a time) writes the bytes json.dumps of the whole report wrote."""
    from statekit.migrate.apply import MigrationReport
    from statekit.migrate.outcomes import OutcomeLog, SourceOutcome

    state = install(tmp_path, 3)
    report = migrate(state, MigrateOptions(backup=False))
    stored = rows(global_db(state), "SELECT report_json FROM migration_runs")
    assert stored == [(json.dumps(report.to_json(), ensure_ascii=False, sort_keys=True),)]
    odd = MigrationReport(state_dir=tmp_path / "ünï", run_id="r", status="warning", warnings=["a \"quoted\" ✓ line", "\x00x"])
    for count in (3, 0):
        odd.outcomes = OutcomeLog()
        for n in range(count):
            odd.outcomes.append(SourceOutcome("k", f"agents/main/sessions/é{n}.jsonl", "main", "imported", n, notices=["n\n"]))
        assert odd.report_text() == json.dumps(odd.to_json(), ensure_ascii=False, sort_keys=True)
    odd.warnings.append(json.loads(json.dumps("\x00statekit: the sources of the run\x00")))  # the marker itself, quoted
    assert odd.report_text() == json.dumps(odd.to_json(), ensure_ascii=False, sort_keys=True)


def test_the_run_report_text_streams_the_undo_modes_as_json_dumps_writes_them() -> None:
    """The undo facts' modes (one per source not 0600: 100,000 at most) are written one item at a time, in the bytes
    json.dumps of the whole report gives: unicode and quoted paths, a marker quoted in a path, no modes at all."""
    from statekit.migrate.apply import MigrationReport
    from statekit.migrate.outcomes import SourceOutcome

    report = MigrationReport(state_dir=Path("/s"), run_id="r", status="completed")
    for n in range(3):
        report.outcomes.append(SourceOutcome("k", f"agents/main/sessions/é{n}.jsonl", "main", "imported", n))
    modes = {"agents": 0o755, 'agents/ü "q"/x.jsonl': 0o644, "agents/a": 0o700, "\x00statekit: the modes of the undo facts\x00": 1}
    for undo_modes in ({k: v for k, v in modes.items() if not k.startswith("\x00")}, modes, {}):
        report.undo = {"version": 1, "databases": {"state/openclaw.sqlite": {"digest": "d"}}, "modes": undo_modes, "relocated": None}
        assert report.report_text() == json.dumps(report.to_json(), ensure_ascii=False, sort_keys=True)
