"""Kill `statekit migrate` at named points inside the apply loop; the rerun converges to the same rows."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from helpers import FIXTURES, db_dump, global_db, rows, run_cli

BOOKKEEPING = {"migration_runs", "migration_sources", "agent_databases", "schema_meta", "backup_runs"}
POINTS = [
    "before-write:1",
    "before-write:4",
    "before-commit:2",
    "between-commits:1",
    "between-commits:5",
    "after-commit:3",
    "retire-moved:1",
    "retire-moved:6",
    "after-retire:2",
    "after-retire:9",
    "before-close-run:1",
]


def data_dump(state: Path) -> dict[str, dict[str, list[str]]]:
    # Rows may hold the state dir's own path (cron rows are keyed by the absolute path of jobs.json, as OpenClaw
    # keys them): compare runs in different directories with that path masked.
    return {
        db.relative_to(state).as_posix(): {t: sorted(v.replace(str(state), "<state>") for v in r) for t, r in db_dump(db).items() if t not in BOOKKEEPING}
        for db in sorted(state.rglob("openclaw*.sqlite"))
    }


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict[str, list[str]]]]:
    """A clean run's rows, and the directory every kill test runs in: the same absolute path, because the
    event ids OpenClaw gives a version-1 transcript (and so statekit) hash the transcript's path."""
    root = tmp_path_factory.mktemp("ref")
    shutil.copytree(FIXTURES / "demo-install", root / "demo")
    state = root / "demo" / ".openclaw"
    assert run_cli("migrate", "--state-dir", state, "--yes", "--no-backup").returncode == 3
    return root / "demo", data_dump(state)


@pytest.mark.parametrize("point", POINTS)
def test_kill_and_rerun_converges(point: str, reference) -> None:
    place_dir, reference = reference
    shutil.rmtree(place_dir)
    shutil.copytree(FIXTURES / "demo-install", place_dir)
    state = place_dir / ".openclaw"
    originals = {p.relative_to(state).as_posix(): p.read_bytes() for p in state.rglob("*") if p.is_file()}
    killed = run_cli("migrate", "--state-dir", state, "--yes", "--no-backup", env={"STATEKIT_CRASHPOINT": point})
    assert killed.returncode == -9, (point, killed.returncode, killed.stderr[-300:])
    rerun = run_cli("migrate", "--state-dir", state, "--yes", "--no-backup")
    assert rerun.returncode in (0, 3), rerun.stderr  # 3 when the malformed transcript is first met in this run
    assert data_dump(state) == reference
    receipts = {r[0]: r[1:] for r in rows(global_db(state), "SELECT source_path, status, removed_source, last_run_id FROM migration_sources")}
    for rel, data in originals.items():
        place = state / rel
        if place.exists():
            assert place.read_bytes() == data, rel
            continue
        status, removed, run_id = receipts[rel]
        assert (status, removed) == ("completed", 1), rel
        retired = state / ".statekit" / "migrated" / run_id / rel
        assert sha(retired.read_bytes()) == sha(data), rel
    runs = rows(global_db(state), "SELECT status, json_extract(report_json, '$.interrupted') FROM migration_runs ORDER BY started_at, id")
    assert runs[0] == ("failed", 1), runs  # the killed run is closed, not left 'running' for ever
    assert [r[0] for r in runs[1:]] in (["completed"], ["warning"]) or (point == "before-close-run:1" and runs[1:] == [])
    assert "interrupted before it finished" in rerun.stdout + rerun.stderr
    again = run_cli("migrate", "--state-dir", state, "--yes", "--no-backup")
    assert data_dump(state) == reference and again.returncode == 0
    assert [r[0] for r in rows(global_db(state), "SELECT status FROM migration_runs")].count("running") == 0
