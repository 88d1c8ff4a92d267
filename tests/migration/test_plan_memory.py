"""Memory per file of migrate's plan and run report (issue 16: RSS under 200 MB at 100,000 small files)."""

from __future__ import annotations

import gc
import hashlib
import json
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

from helpers import FIXTURES, global_db, make_state, rows
from statekit.migrate.apply import MigrationReport, SourceOutcome


def install(tmp_path: Path, files: int) -> Path:
    """``files`` small transcripts (a header and one message each), no index: only the per-file plan is measured."""
    sessions = {}
    for n in range(files):
        sid = f"0b5e{n:04d}-aaaa-4bbb-8ccc-{n:012d}"  # OpenClaw's session ids are UUIDs
        lines = [{"type": "session", "version": 3, "id": sid, "timestamp": "2026-01-01T00:00:00Z"},
                 {"type": "message", "id": f"m{n}", "timestamp": "2026-01-01T00:00:01Z", "message": {"role": "user", "content": "hi"}}]
        sessions[f"agents/main/sessions/{sid}.jsonl"] = "".join(json.dumps(line) + "\n" for line in lines)
    return make_state(tmp_path, sessions)


# Measured in a fresh interpreter: what earlier tests of the session left (caches, garbage) is not counted.
MEASURE = """
import gc, sys, tracemalloc
from pathlib import Path
from statekit.migrate.plan import build_plan
warm, *states = sys.argv[1:]
build_plan(Path(warm), {}, full=False)  # imports and caches before measuring
for state in states:
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    plan = build_plan(Path(state), {}, full=False)
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert all(s.glanced and s.action == "import" for s in plan.sources)
    print(len(plan.sources), held)
    del plan
"""


def plan_bytes(*states: Path) -> list[tuple[int, int]]:
    """After a warm-up plan of the first state dir, for each other one: the sources of the plan migrate builds (``full=False``) and the bytes it holds once built."""
    out = subprocess.run([sys.executable, "-c", MEASURE, *map(str, states)], capture_output=True, text=True, check=True).stdout
    return [(int(a), int(b)) for a, b in (line.split() for line in out.splitlines())]


def test_the_plan_holds_less_than_400_bytes_per_small_file(tmp_path: Path) -> None:
    """The difference between plans of 1,200 and 200 files, over the 1,000 between: object sizes, not the machine.

    Before (a828ed2) a planned transcript held 761 bytes here: a new empty list for its warnings, a new empty
    dict for its re-opened files and a copy of the reader's details in a dict of its own. With the shared empties
    and the reader's own dict: 641 (CPython 3.11 object sizes, 4ab327b). A glanced transcript's details (the
    dict, its identity tuple, the session id) let go of once planned, its identity's hash kept in an array until
    the conflict check: 324 (the planned source, its path, size and mtime).
    """
    warm, small_state, big_state = (install(tmp_path / name, files) for name, files in (("warm", 5), ("small", 200), ("big", 1200)))
    (small, small_bytes), (big, big_bytes) = plan_bytes(warm, small_state, big_state)
    assert big - small == 1000
    per_file = (big_bytes - small_bytes) / 1000
    assert per_file < 400, f"{per_file:.0f} bytes per planned file"


def test_two_transcripts_of_one_session_still_conflict_once_glanced(tmp_path: Path) -> None:
    """The conflict check runs on the identities' hashes: two glanced files of one session id are inspected fully and
    the one not named after the session is a conflict, as when the plan kept every glanced source's details."""
    from statekit.migrate.plan import build_plan

    state = install(tmp_path, 3)
    sessions = state / "agents" / "main" / "sessions"
    original = sorted(sessions.glob("*.jsonl"))[0]
    (sessions / "copy-of-it.jsonl").write_bytes(original.read_bytes())
    plan = build_plan(state, {}, full=False)
    actions = {s.rel.rsplit("/", 1)[-1]: (s.action, s.glanced) for s in plan.sources}
    assert actions["copy-of-it.jsonl"][0] == "conflict"
    assert actions[original.name] == ("import", False)  # inspected fully: a conflict decides on it
    assert sorted(a for a, _ in actions.values()).count("import") == 3


# The Python memory of the end of a run (close_run storing the report), in a fresh interpreter: tracemalloc's peak from
# the checkpoint before close_run to the end of migrate above what was held there, and the bytes of the report stored.
END_OF_RUN = """
import hashlib, sys, tracemalloc
from pathlib import Path
from statekit.migrate.apply import MigrateOptions, migrate
from statekit.seams import install_checkpoint_hook
state = Path(sys.argv[1])
held = [0]
def hook(name):
    if name == "before-close-run":
        tracemalloc.reset_peak()
        held[0] = tracemalloc.get_traced_memory()[0]
install_checkpoint_hook(hook)
tracemalloc.start()
report = migrate(state, MigrateOptions(backup=False))
peak = tracemalloc.get_traced_memory()[1] - held[0]
tracemalloc.stop()
text = report.report_utf8()
print(len(report.outcomes), len(text), peak, hashlib.sha256(text).hexdigest())
"""


def test_closing_a_run_of_1500_sources_holds_no_copy_of_its_report(tmp_path: Path) -> None:
    """The report (~400 KB for 1,500 sources, ~27 MB for 100,000) is written into its row piece by piece: from the
    checkpoint before ``close_run`` to the end of the run Python's memory peaks at a fraction of it. Before (4ab327b)
    ``close_run`` was handed the whole UTF-8 text in a bytearray (and SQLite made its own copy to bind it): >= 1x."""
    state = install(tmp_path, 1500)
    out = subprocess.run([sys.executable, "-c", END_OF_RUN, str(state)], capture_output=True, text=True, check=True).stdout
    sources, report_bytes, peak, digest = out.split()
    sources, report_bytes, peak = int(sources), int(report_bytes), int(peak)
    assert sources == 1500
    (stored,) = rows(global_db(state), "SELECT report_json FROM migration_runs")
    assert hashlib.sha256(stored[0].encode("utf-8")).hexdigest() == digest  # the bytes json.dumps of the report gives
    assert peak < 0.25 * report_bytes, f"peak {peak} for {report_bytes} bytes of report"


def test_the_run_report_of_20000_sources_is_built_within_one_and_a_half_times_its_bytes(tmp_path: Path) -> None:
    """The report's UTF-8 text is the one copy made: no list of 20,000 pieces, no joined str beside it (a828ed2: 3.3x, with its pieces)."""
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


# What the import of a session index holds when its rows are written, before the commit (the parsed index, what the
# writer keeps for the post-commit check), in a fresh interpreter: traced bytes at ``before-commit`` above ``before-write``.
INDEX_WRITE = """
import sys, tracemalloc
from pathlib import Path
from statekit.migrate.apply import MigrateOptions, migrate
from statekit.seams import install_checkpoint_hook
seen = {}
def hook(name):
    if name in ("before-write", "before-commit") and name not in seen:
        seen[name] = tracemalloc.get_traced_memory()[0]
install_checkpoint_hook(hook)
for state in sys.argv[1:]:
    seen.clear()
    tracemalloc.start()
    report = migrate(Path(state), MigrateOptions(backup=False))
    tracemalloc.stop()
    assert report.exit_code == 0, report.warnings
    print(seen["before-commit"] - seen["before-write"])
"""


def index_install(tmp_path: Path, entries: int) -> Path:
    index = {f"agent:main:s{n}": {"sessionId": f"0b5e{n:04d}-aaaa-4bbb-8ccc-{n:012d}", "updatedAt": 1767225600000 + n, "chatType": "direct",
                                  "sessionFile": f"/home/u/.openclaw/agents/main/sessions/0b5e{n:04d}-aaaa-4bbb-8ccc-{n:012d}.jsonl"}
             for n in range(entries)}
    return make_state(tmp_path, {"agents/main/sessions/sessions.json": json.dumps(index, indent=2)})


def test_a_session_index_write_holds_less_than_1000_bytes_per_entry(tmp_path: Path) -> None:
    """Indexes of 3,000 and 1,000 entries, the difference over the 2,000 between. Before (4ab327b) the writer kept, for
    its post-commit check, each upserted row's fitted dict (three tables per entry) and through ``Json`` every
    normalised entry: 1,655 bytes an entry with the parsed index. Its tracker now keeps one tuple per row, without
    the JSON values: 739."""
    warm, small, big = (index_install(tmp_path / name, n) for name, n in (("warm", 10), ("small", 1000), ("big", 3000)))
    out = subprocess.run([sys.executable, "-c", INDEX_WRITE, str(warm), str(small), str(big)], capture_output=True, text=True, check=True).stdout
    _, small_bytes, big_bytes = map(int, out.split())
    per_entry = (big_bytes - small_bytes) / 2000
    assert per_entry < 1000, f"{per_entry:.0f} bytes per index entry"


def test_a_report_whose_pieces_come_out_shorter_the_second_time_is_refused_and_the_row_left_as_it_was(tmp_path: Path) -> None:
    """The pieces are made twice (their bytes counted, then written into a value of that length): fewer bytes the
    second time would leave NUL bytes at the end of the stored report, so the write is refused and rolled back."""
    import pytest

    from statekit.db import connect
    from statekit.migrate.receipts import close_run
    from statekit.states import RunStatus

    conn = connect(tmp_path / "runs.sqlite")
    conn.execute("CREATE TABLE migration_runs (id TEXT PRIMARY KEY, finished_at INTEGER, status TEXT, report_json TEXT)")
    conn.execute("INSERT INTO migration_runs (id, status) VALUES ('run-1', 'running')")
    made: list[int] = []

    def shrinking() -> list[bytes]:
        made.append(1)
        return [b'{"sources": [', b"]}"] if len(made) == 1 else [b'{"sources": [']

    with pytest.raises(RuntimeError, match="run-1: 13 bytes written into a value of 15"):
        close_run(conn, "run-1", 1, RunStatus.COMPLETED, shrinking)
    assert conn.execute("SELECT finished_at, status, report_json FROM migration_runs").fetchall() == [(None, "running", None)]

    close_run(conn, "run-1", 2, RunStatus.COMPLETED, lambda: [b'{"sources": [', b"]}"])
    assert conn.execute("SELECT status, report_json, typeof(report_json) FROM migration_runs").fetchall() == [
        (RunStatus.COMPLETED, '{"sources": []}', "text")]


def test_the_undo_facts_hold_one_int_per_mode_value_not_one_per_file(tmp_path: Path) -> None:
    """A run records the mode of every source that is not 0600 and of the directories above (undo puts them back):
    100,000 transcripts at 0644 were 100,000 ints of 28 bytes (3.2 MB held through the pre-migration backup)."""
    from statekit.migrate.undo_facts import path_modes

    state = install(tmp_path, 300)
    rels = sorted(p.relative_to(state).as_posix() for p in state.rglob("*.jsonl"))
    for p in state.rglob("*.jsonl"):
        p.chmod(0o644)
    modes = path_modes(state, rels)
    assert all(modes[rel] == 0o644 for rel in rels)
    assert len({id(modes[rel]) for rel in rels}) == 1


def _every_field(source: object) -> list[tuple[str, object]]:
    """Each field of a planned source, the reader by identity (``==`` on the dataclass skips compare=False fields)."""
    import dataclasses

    return [(f.name, id(value) if f.name == "reader" else value)
            for f in dataclasses.fields(source) for value in [getattr(source, f.name)]]  # type: ignore[arg-type]


@pytest.mark.parametrize("fixture", ["every-family", "demo-install"])
def test_packed_sources_give_back_every_planned_source_field_for_field(tmp_path: Path, fixture: str) -> None:
    """What the pre-migration backup runs beside: the plan packed (``PackedSources``) and unpacked is the plan, in
    order, every field equal (the reader the same object); a glanced and a fully planned plan alike."""
    import shutil

    from statekit.migrate.plan import PackedSources, build_plan

    state = tmp_path / "state"
    shutil.copytree(FIXTURES / fixture / ".openclaw", state, symlinks=True)
    extra = install(tmp_path / "small", 50)
    shutil.copytree(extra / "agents" / "main" / "sessions", state / "agents" / "main" / "sessions", dirs_exist_ok=True)
    for full in (False, True):
        plan = build_plan(state, {}, full=full)
        packed = PackedSources(plan.sources)
        assert len(packed) == len(plan.sources) > 50
        assert [_every_field(s) for s in packed] == [_every_field(s) for s in plan.sources]
        assert [_every_field(s) for s in packed] == [_every_field(s) for s in plan.sources]  # iterating again: the same
        assert [_every_field(s) for s in packed.hand_out()] == [_every_field(s) for s in plan.sources]  # as migrate takes them


PACKED = """
import gc, sys, tracemalloc
from pathlib import Path
from statekit.migrate.plan import PackedSources, build_plan
from statekit.migrate.undo_facts import PackedModes, path_modes
state = Path(sys.argv[1])
plan = build_plan(state, {}, full=False)
modes = path_modes(state, [s.rel for s in plan.sources])
gc.collect()
tracemalloc.start()
packed, packed_modes = PackedSources(plan.sources), PackedModes(modes)
del plan, modes
gc.collect()
held = tracemalloc.get_traced_memory()[0]
tracemalloc.stop()
print(len(packed), len(packed_modes), held, sum(len(rel) + 1 for rel in packed_modes))
"""


def test_the_packed_plan_and_modes_hold_their_paths_and_under_64_bytes_a_file(tmp_path: Path) -> None:
    """Packed, 1,000 glanced transcripts and their modes hold each path's characters twice (one text per buffer)
    and under 64 bytes a file more (the arrays: size, mtime, shape, where each path ends, the mode); before, a
    planned file was ~320 bytes and a mode entry ~120 beside it, every path a string object of its own."""
    state = install(tmp_path, 1000)
    for path in state.rglob("*.jsonl"):
        path.chmod(0o644)
    out = subprocess.run([sys.executable, "-c", PACKED, str(state)], capture_output=True, text=True, check=True).stdout
    sources, modes, held, path_chars = map(int, out.split())
    assert sources == 1000 and modes >= 1000
    assert (held - 2 * path_chars) / 1000 < 64, f"{held / 1000:.0f} bytes a file, {path_chars / 1000:.0f} of them path"


def test_packed_modes_are_the_modes_in_sorted_order() -> None:
    from statekit.migrate.undo_facts import PackedModes

    modes = {"b/ü.jsonl": 0o644, "a": 0o755, "a/b": 0o700, "c d/e": 0o640, "z": 0o7777}
    packed = PackedModes(modes)
    assert list(packed) == sorted(modes) and packed.to_dict() == modes and list(packed.to_dict()) == sorted(modes)
    assert all(packed[name] == mode for name, mode in modes.items()) and len(packed) == 5
    with pytest.raises(KeyError):
        packed["a/"]
    assert PackedModes({}).to_dict() == {} and list(PackedModes({})) == []
