"""Worlds migrated at a fixed place, dumped table by table with run ids, paths and import times masked.

``tests/migration/test_same_rows.py`` compares these dumps with the ones statekit wrote before the
performance work (``tests/migration/data/same-rows.json``, written by main at 2ef7472: 308a7ed's
dumps differ only where main itself changed the receipts and the run report since — parent dir
modes, undo facts, redacted notices): the performance work changes how statekit reads and writes,
never what it writes. Regenerate only for an intended change of the rows:
``.venv/bin/python tests/migration/same_rows.py --write``.

A world: the demo install, every-family, each corpus tree, and a "mutants" world (the demo with
one transcript per reliability JSONL mutator and one session index per JSON mutator, seeded).
Every file's mtime is fixed (fallback times come from mtimes) and the world sits at one fixed
path (version-1 transcript ids hash the file's absolute path).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "reliability"))

from helpers import FIXTURES, corpus_tree_names, db_dump, extract_corpus_tree  # noqa: E402

GOLDEN = HERE / "data" / "same-rows.json"
ROOT = Path(tempfile.gettempdir()) / "statekit-same-rows"
FIXED_MTIME = 1_767_225_600  # 2026-01-01T00:00:00Z
# The clock a dump runs at (ticking from here): far from every time the worlds hold, so masking
# "now" can never hide one of them (an at-job due an hour after the real clock once was).
RUN_AT = "2030-01-01T00:00:00Z"
UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
MS_RE = re.compile(r"(?<![0-9])1[0-9]{12}(?![0-9])")
# The run report's undo facts digest each database after the run: the bytes hold import times, so
# the digests differ between two runs of the same world (the rows themselves are compared table by table).
UNDO_DIGEST_RE = re.compile(r'"(content_digest|digest)": "[0-9a-f]{64}"')


def world_names() -> list[str]:
    return ["demo", "every-family", "mutants", *(f"corpus:{name}" for name in corpus_tree_names())]


def _fix_mtimes(root: Path) -> None:
    for directory, dirs, files in os.walk(root):
        for name in files + dirs:
            path = Path(directory, name)
            if not path.is_symlink():
                os.utime(path, (FIXED_MTIME, FIXED_MTIME))


def _mutants(state: Path) -> None:
    """One mutated transcript per JSONL mutator, one mutated index per JSON mutator (seeded, own ids)."""
    import rel_mutate as m

    sessions = state / "agents" / "main" / "sessions"
    base_id = "3f0c2b7e-1111-4a5b-8c9d-000000000001"
    original = (sessions / f"{base_id}.jsonl").read_bytes()
    for number, mutator in enumerate(m.JSONL_MUTATORS):
        new_id = f"mut{number:03d}-1111-4a5b-8c9d-000000000001"
        mutated = mutator(original.replace(base_id.encode(), new_id.encode()), random.Random(number))
        if mutated is not None:
            (sessions / f"{new_id}.jsonl").write_bytes(mutated)
    index = (sessions / "sessions.json").read_bytes()
    for number, mutator in enumerate(m.JSON_MUTATORS):
        mutated = mutator(index, random.Random(1000 + number))
        if mutated is not None:
            target = state / "agents" / f"mut{number:03d}" / "sessions"
            target.mkdir(parents=True)
            (target / "sessions.json").write_bytes(mutated)
    for number, mutator in enumerate(m.JSON_MUTATORS):  # big numbers, NaN, surrogates inside transcript lines
        mutated = m.jsonl_line_mutator(mutator)(original.replace(base_id.encode(), f"lin{number:03d}".encode()), random.Random(2000 + number))
        if mutated is not None:
            (sessions / f"lin{number:03d}.jsonl").write_bytes(mutated)


def build_world(name: str) -> Path:
    place = ROOT / name.replace(":", "-")
    if place.exists():
        shutil.rmtree(place)
    place.mkdir(parents=True)
    if name.startswith("corpus:"):
        state = extract_corpus_tree(name.split(":", 1)[1], place)
    else:
        fixture = "every-family" if name == "every-family" else "demo-install"
        shutil.copytree(FIXTURES / fixture, place / "w", symlinks=True)
        state = place / "w" / ".openclaw"
        if name == "mutants":
            _mutants(state)
    _fix_mtimes(place)
    return state


def _mask(text: str, state: Path, since_ms: int) -> str:
    text = text.replace(str(state), "<state>")
    text = UUID_RE.sub(lambda m: "<uuid>", text)
    return MS_RE.sub(lambda m: "<now-ms>" if since_ms <= int(m.group()) <= since_ms + 3_600_000 else m.group(), text)


def migrated_dump(name: str) -> dict[str, Any]:
    """Migrate the world (no backup) and return {exit, report outcome, db -> table -> [count, sha256]}."""
    from statekit.layout import ResolvedStateDir
    from statekit.migrate import migrate
    from statekit.migrate.apply import MigrateOptions

    from freezegun import freeze_time

    state = build_world(name)
    with freeze_time(RUN_AT, tick=True):
        since = int(time.time() * 1000) - 1000
        report = migrate(ResolvedStateDir(state, "flag"), MigrateOptions(backup=False, env={}))
    outcome: dict[str, Any] = {
        "status": report.status,
        "sources": sorted(_mask(json.dumps([o.status, o.rel, o.records, o.message, o.notices]), state, since) for o in report.outcomes),
        "warnings": sorted(_mask(w, state, since) for w in report.warnings),
    }
    tables: dict[str, Any] = {}
    for db in sorted(state.rglob("*.sqlite")):
        if ".statekit" in db.relative_to(state).parts:
            continue
        for table, rows in db_dump(db).items():
            masked = sorted(_mask(r, state, since) for r in rows)
            if table == "migration_runs":
                masked = sorted(UNDO_DIGEST_RE.sub(lambda m: f'"{m.group(1)}": "<db-digest>"', r) for r in masked)
            digest = hashlib.sha256("\n".join(masked).encode("utf-8", "surrogatepass")).hexdigest()
            tables[f"{db.relative_to(state).as_posix()}:{table}"] = [len(masked), digest]
    retired = sorted(
        _mask(p.relative_to(state).as_posix(), state, since) + ":" + hashlib.sha256(p.read_bytes()).hexdigest()
        for p in (state / ".statekit" / "migrated").rglob("*") if p.is_file()
    ) if (state / ".statekit" / "migrated").is_dir() else []
    outcome["tables"] = tables
    outcome["retired"] = retired
    return outcome


def assert_same_as_golden(world: str, expected: dict[str, Any]) -> None:
    """Migrate ``world`` and compare it with its recorded dump: every table's rows, the status, outcomes, warnings, retired bytes."""
    want, got = expected[world], migrated_dump(world)
    changed = sorted(t for t in set(want["tables"]) | set(got["tables"]) if want["tables"].get(t) != got["tables"].get(t))
    assert changed == [], f"tables whose rows changed: {changed}"
    assert got["status"] == want["status"]
    assert got["sources"] == want["sources"]
    assert got["warnings"] == want["warnings"]
    assert got["retired"] == want["retired"]


def main() -> int:
    if "--write" not in sys.argv:
        print(__doc__)
        return 2
    GOLDEN.parent.mkdir(exist_ok=True)
    dumps = {name: migrated_dump(name) for name in world_names()}
    GOLDEN.write_text(json.dumps(dumps, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {GOLDEN} ({len(dumps)} worlds)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
