"""Transcripts parsed by the second process (``legacy_readers/transcript_worker.py``) give what one process gives.

* The rows, outcomes, warnings and retired bytes of every world of ``test_same_rows`` (demo, every family, the
  reliability mutants, each corpus tree) with every transcript sent through the parse process (threshold 0).
* A bad line is named as one process names it, and the process is reused for the next file.
* A parse process killed mid-file stops the run with one line; nothing of that file is committed, it stays in
  place, and the rerun imports it.
* An interrupt mid-file ends the parse process: nothing is left running.
* The protocol itself (``serve``), fed frames from memory.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import signal
from pathlib import Path
from typing import Any

import pytest

from helpers import agent_db, make_state, rows
from same_rows import GOLDEN, assert_same_as_golden, world_names
import statekit.legacy_readers.transcript_worker as transcript_worker
import statekit.legacy_readers.transcripts as transcripts
import statekit.migrate.apply as apply
from statekit.errors import StatekitError
from statekit.layout import ResolvedStateDir
from statekit.migrate import migrate
from statekit.migrate.apply import MigrateOptions

EXPECTED = json.loads(GOLDEN.read_text(encoding="utf-8"))


@pytest.fixture
def every_transcript_offloaded(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The parse process for every transcript (threshold 0); returns the pids of the processes forked."""
    monkeypatch.setattr(apply, "OFFLOAD_BYTES", 0)
    forked: list[int] = []
    fork = transcript_worker._fork_child

    def counted() -> Any:
        child = fork()
        forked.append(child.pid)
        return child

    monkeypatch.setattr(transcript_worker, "_fork_child", counted)
    return forked


def _gone(pid: int) -> bool:
    """True when ``pid`` is no process of ours any more (reaped: no zombie left)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


@pytest.mark.parametrize("world", world_names())
def test_same_rows_through_the_parse_process(world: str, every_transcript_offloaded: list[int]) -> None:
    if world not in EXPECTED:
        pytest.skip(f"no recorded dump for {world}")
    assert_same_as_golden(world, EXPECTED)
    if any(".jsonl" in s for s in EXPECTED[world]["sources"]):
        assert every_transcript_offloaded, "no transcript went through the parse process"
    assert all(_gone(pid) for pid in every_transcript_offloaded)


def _event(session: str, n: int) -> str:
    return json.dumps({"type": "message", "id": f"{session}-{n}", "parentId": f"{session}-{n - 1}" if n else None,
                       "timestamp": f"2026-01-01T00:00:{n % 60:02d}Z",
                       "message": {"role": "user", "content": [{"type": "text", "text": f"line {n} ünïcode " + "x" * 200}]}})


def _transcript(session: str, events: int, bad_at: int | None = None, torn: bool = False) -> str:
    lines = [json.dumps({"type": "session", "version": 3, "id": session, "timestamp": "2026-01-01T00:00:00Z"})]
    lines += ["[1, 2]" if n == bad_at else _event(session, n) for n in range(events)]
    text = "\n".join(lines) + "\n"
    return text + '{"type": "message", "id": "tor' if torn else text


def _state(tmp_path: Path) -> Path:
    return make_state(tmp_path, {
        "agents/main/sessions/a0000001.jsonl": _transcript("a0000001", 3000),
        "agents/main/sessions/b0000002.jsonl": _transcript("b0000002", 3000, bad_at=2500),
        "agents/main/sessions/c0000003.jsonl": _transcript("c0000003", 3000, torn=True),
        "agents/main/sessions/d0000004.jsonl": _transcript("d0000004", 3000),
    })


def _migrate(state: Path) -> Any:
    return migrate(ResolvedStateDir(state, "flag"), MigrateOptions(backup=False, env={}))


def _outcomes(report: Any) -> dict[str, tuple[str, int | None, str | None]]:
    return {o.rel: (o.status, o.records, o.message) for o in report.outcomes}


def test_bad_line_torn_line_and_the_next_file_as_in_one_process(tmp_path: Path, every_transcript_offloaded: list[int],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    offloaded = _migrate(_state(tmp_path / "two"))
    assert len(every_transcript_offloaded) == 1, "one parse process for the run, reused after a bad line"
    assert _gone(every_transcript_offloaded[0])
    monkeypatch.setattr(apply, "OFFLOAD_BYTES", 1 << 62)
    here = _migrate(_state(tmp_path / "one"))
    assert len(every_transcript_offloaded) == 1
    assert _outcomes(offloaded) == _outcomes(here)
    assert offloaded.warnings == here.warnings
    outcome = _outcomes(offloaded)
    assert outcome["agents/main/sessions/b0000002.jsonl"][0] == "unreadable"
    assert "agents/main/sessions/b0000002.jsonl:2502: expected a JSON object" in str(outcome["agents/main/sessions/b0000002.jsonl"][2])
    assert outcome["agents/main/sessions/d0000004.jsonl"][:2] == ("imported", 3001)
    assert any("c0000003.jsonl:3002: torn last line" in w for w in offloaded.warnings)
    for state in (tmp_path / "two/.openclaw", tmp_path / "one/.openclaw"):
        counts = dict(rows(agent_db(state), "SELECT session_id, count(*) FROM transcript_events GROUP BY session_id"))
        assert counts == {"a0000001": 3001, "c0000003": 3001, "d0000004": 3001}


def test_a_parse_process_killed_mid_file_stops_the_run_and_the_rerun_imports_the_file(
        tmp_path: Path, every_transcript_offloaded: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    state = make_state(tmp_path, {"agents/main/sessions/a0000001.jsonl": _transcript("a0000001", 5000)})
    source = state / "agents/main/sessions/a0000001.jsonl"
    before = source.read_bytes()
    write = transcripts.write_event_rows

    def kill_the_child_once(*args: Any) -> None:
        if every_transcript_offloaded and not getattr(kill_the_child_once, "done", False):
            kill_the_child_once.done = True  # type: ignore[attr-defined]
            os.kill(every_transcript_offloaded[-1], signal.SIGKILL)
        write(*args)

    monkeypatch.setattr(transcripts, "write_event_rows", kill_the_child_once)
    with pytest.raises(StatekitError) as failed:
        _migrate(state)
    message = str(failed.value)
    assert "migration stopped at agents/main/sessions/a0000001.jsonl: the transcript parse process ended mid-file" in message
    assert "\n" not in message
    assert source.read_bytes() == before, "the file stays where it was"
    assert rows(agent_db(state), "SELECT count(*) FROM transcript_events") == [(0,)]
    assert all(_gone(pid) for pid in every_transcript_offloaded)
    rerun = _migrate(state)
    assert _outcomes(rerun)["agents/main/sessions/a0000001.jsonl"][:2] == ("imported", 5001)
    assert rows(agent_db(state), "SELECT count(*) FROM transcript_events") == [(5001,)]


def test_an_interrupt_mid_file_ends_the_parse_process(tmp_path: Path, every_transcript_offloaded: list[int],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    state = make_state(tmp_path, {"agents/main/sessions/a0000001.jsonl": _transcript("a0000001", 5000)})

    def interrupted(*_args: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(transcripts, "write_event_rows", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _migrate(state)
    assert len(every_transcript_offloaded) == 1
    assert _gone(every_transcript_offloaded[0])
    assert (state / "agents/main/sessions/a0000001.jsonl").exists()


def _frames(*parts: tuple[int, bytes]) -> io.BytesIO:
    stream = io.BytesIO()
    for kind, payload in parts:
        transcript_worker._write_frame(stream, kind, payload)
    stream.seek(0)
    return stream


def _replies(out: io.BytesIO) -> list[tuple[int, Any]]:
    out.seek(0)
    found = []
    while out.tell() < len(out.getvalue()):
        kind, payload = transcript_worker._read_frame(out)
        found.append((kind, pickle.loads(payload)))
    return found


def test_serve_replies_head_rows_tail_then_an_error_and_drains_to_the_next_job(tmp_path: Path) -> None:
    job = {"rel": "agents/main/sessions/a0000001.jsonl", "agent_id": "main", "abs_path": "/x/a0000001.jsonl", "fallback_ms": 7}
    good = _transcript("a0000001", 40).encode()
    bad = _transcript("a0000001", 40, bad_at=3).encode()
    w = transcript_worker
    stream = _frames((w._JOB, json.dumps(job).encode()), (w._DATA, good[:1000]), (w._DATA, good[1000:]), (w._END, b""),
                     (w._JOB, json.dumps(job).encode()), (w._DATA, bad), (w._END, b""),
                     (w._JOB, json.dumps(job).encode()), (w._DATA, good), (w._END, b""))
    out = io.BytesIO()
    w.serve(stream, out)
    replies = _replies(out)
    kinds = [k for k, _ in replies]
    first = kinds.index(w._TAIL) + 1
    assert kinds[0] == w._HEAD and set(kinds[1:first - 1]) == {w._ROWS}
    head, tail = replies[0][1], replies[first - 1][1]
    assert (head.session_id, head.version) == ("a0000001", 3)
    events = [row for k, v in replies[1:first - 1] for row in v[0]]
    assert [row[1] for row in events] == list(range(41)) and tail.added == 41
    assert [len(v[0]) for k, v in replies[1:first - 1]][:2] == [16, 25], "the first batch is small, the next ones grow"
    assert kinds[first:first + 2] == [w._HEAD, w._ERROR]
    assert replies[first + 1][1] == ("agents/main/sessions/a0000001.jsonl", "expected a JSON object", 5, None)
    assert kinds[first + 2] == w._HEAD and kinds[-1] == w._TAIL and replies[-1][1].added == 41


def test_an_unexpected_error_in_the_child_keeps_its_type() -> None:
    assert isinstance(transcript_worker._as_raised_here("RecursionError", "maximum recursion depth exceeded"), RecursionError)
    assert isinstance(transcript_worker._as_raised_here("MemoryError", ""), MemoryError)
    other = transcript_worker._as_raised_here("SomethingOdd", "what")
    assert type(other) is RuntimeError and str(other) == "SomethingOdd: what"


def test_a_child_that_ended_between_files_is_replaced_and_its_pid_never_signalled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from statekit.fsutil import HashingReader
    from statekit.legacy_readers.base import Source

    state = make_state(tmp_path, {"agents/main/sessions/a0000001.jsonl": _transcript("a0000001", 50)})
    worker = transcript_worker.TranscriptWorker()
    worker.start()
    first = worker._child
    assert first is not None
    os.kill(first.pid, signal.SIGKILL)
    os.waitpid(first.pid, 0)  # ended and reaped between two files: its pid may now be anyone's
    assert not first.alive()
    signalled: list[int] = []
    real_kill = os.kill
    monkeypatch.setattr(transcript_worker.os, "kill", lambda pid, sig: (signalled.append(pid), real_kill(pid, sig)))
    source = Source(state, "agents/main/sessions/a0000001.jsonl", "main")
    try:
        with open(source.path, "rb") as raw, worker.transcript(source, HashingReader(raw), 0) as run:  # type: ignore[arg-type]
            events = [row for batch in run.batches(transcripts.EventMerge()) for row in batch[0]]
        assert len(events) == 51
        assert worker._child is not None and worker._child.pid != first.pid
        assert first.pid not in signalled
    finally:
        worker.close()
