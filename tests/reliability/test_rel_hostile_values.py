"""Hostile values in every legacy family file, and in the rows statekit reads back (issue 11 item 10).

Each hostile kind is written into **every** legacy JSON/JSONL file of a copy of ``fixtures/every-family``
(each JSONL line alike) and into the config ``openclaw.json`` (as JSON5): a 5,000-deep array as an extra
field, a 5,000-deep document, every integer beyond 2^63, every number -10^30 (``version`` fields are kept so
the readers get past them to the rows). Then ``plan``, ``migrate``, ``inspect``, ``history``, ``sessions
list``, ``backup create`` and ``backup verify`` run on it. A second world puts 5,000-deep JSON into the rows
statekit reads back (session entries, transcript events, receipts and run reports) and runs the same
read commands, ``backup restore --dry-run`` and a ``sessions delete`` that archives the rows.

Every command: an exit code of the contract (0, 1, 3, 5), no ``Traceback``, every stderr line one of
statekit's own one-line messages; every source that was not imported has a receipt whose error names
the file, and no error is an "unexpected" exception (an integer beyond SQLite's 64-bit range is named
with its column). On 308a7ed a deep config made ``backup create`` (and so migrate's pre-migration
backup) print a traceback, deep rows did the same for ``history`` and ``sessions list``, and big
integers failed their sources with "unexpected OverflowError".
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import rel_harness as h
from statekit.migrate.discover import discover

EVERY = h.FIXTURES / "every-family" / ".openclaw"
DEPTH = 5000
CONTRACT = (0, 1, 3, 5)
DEEP = "[" * DEPTH + "1" + "]" * DEPTH


def _numbers(value: Any, new: Callable[[Any], Any]) -> Any:
    if isinstance(value, dict):
        return {k: (v if k in ("version", "schemaVersion") else _numbers(v, new)) for k, v in value.items()}
    if isinstance(value, list):
        return [_numbers(v, new) for v in value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return new(value)
    return value


def _deep_field(doc: Any) -> str:
    if not isinstance(doc, dict):
        return DEEP
    return json.dumps({**doc, "hostileDeep": 0}).replace('"hostileDeep": 0', f'"hostileDeep": {DEEP}')


KINDS: dict[str, Callable[[Any], str]] = {
    "deep-field": _deep_field,
    "deep-document": lambda _doc: DEEP,
    "int-beyond-2^63": lambda doc: json.dumps(_numbers(doc, lambda v: 2**64 + 7 if isinstance(v, int) else v)),
    "minus-10^30": lambda doc: json.dumps(_numbers(doc, lambda v: -(10**30))),
}
CI_KINDS = ("deep-field", "int-beyond-2^63")


def hostile_world(state: Path, kind: str) -> list[str]:
    """Write ``kind`` into every legacy JSON/JSONL file and the config; returns the files changed."""
    change = KINDS[kind]
    changed = []
    for entry, _reader in discover(state).legacy:
        path = state / entry.rel
        if path.is_symlink() or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
            if entry.rel.endswith(".jsonl"):
                lines = [change(json.loads(line)) for line in text.splitlines() if line.strip()]
                path.write_text("\n".join(lines) + "\n", encoding="utf-8")
            else:
                path.write_text(change(json.loads(text)), encoding="utf-8")
        except (UnicodeDecodeError, ValueError):
            continue  # a JSON5 or binary sidecar: not this test's
        changed.append(entry.rel)
    config = state / "openclaw.json"
    if kind.startswith("deep"):
        config.write_text("// JSON5, as OpenClaw reads it\n{gateway: {mode: 'local', hostile: " + DEEP + "}}\n", encoding="utf-8")
    else:
        config.write_text(KINDS[kind](json.loads(config.read_text(encoding="utf-8"))), encoding="utf-8")
    changed.append("openclaw.json")
    return changed


def _line_problems(label: str, run: h.Run) -> list[str]:
    problems = [f"{label}: {p}" for p in h.clear_failure(run, CONTRACT)]
    for line in run.stderr.splitlines():
        if line and not line.startswith("statekit: "):
            problems.append(f"{label}: stray stderr line {line[:200]!r}")
            break
        if len(line) > 2000:
            problems.append(f"{label}: a message of {len(line)} characters")
    return problems


def _receipt_problems(state: Path) -> list[str]:
    db = state / "state" / "openclaw.sqlite"
    if not db.is_file():
        return []
    problems = []
    for rel, status, report in h._rows(db, "SELECT source_path, status, report_json FROM migration_sources"):
        if status != "failed":
            continue
        error = str(json.loads(report).get("error") or "")
        if not error.startswith(rel):
            problems.append(f"{rel}: the error does not name the file: {error[:200]!r}")
        if "unexpected" in error or "Overflow" in error:
            problems.append(f"{rel}: not a cause a person can act on: {error[:200]!r}")
    return problems


def _commands(state: Path, scratch: Path) -> list[tuple[str, tuple[Any, ...]]]:
    return [
        ("plan", ("plan", "--state-dir", state)),
        ("plan --json", ("plan", "--state-dir", state, "--json")),
        ("migrate", ("migrate", "--state-dir", state, "--yes", "--backup-output", scratch / "pre")),
        ("inspect", ("inspect", "--state-dir", state)),
        ("history", ("history", "--state-dir", state)),
        ("sessions list", ("sessions", "list", "--state-dir", state)),
        ("backup create", ("backup", "create", "--state-dir", state, "--output", scratch / "backups")),
    ]


def _run_all(state: Path, scratch: Path, kind: str) -> list[str]:
    problems: list[str] = []
    for label, args in _commands(state, scratch):
        run = h.fork_cli(*args)
        problems += _line_problems(f"{kind}/{label}", run)
    for archive in sorted((scratch / "backups").glob("*.tar.zst")):
        problems += _line_problems(f"{kind}/backup verify", h.fork_cli("backup", "verify", archive))
        problems += _line_problems(f"{kind}/restore --dry-run", h.fork_cli("backup", "restore", archive, "--target", scratch / "restored", "--dry-run"))
    problems += _receipt_problems(state)
    return problems


def _check_kind(tmp_path: Path, kind: str) -> None:
    state = tmp_path / kind / ".openclaw"
    shutil.copytree(EVERY, state, symlinks=True)
    changed = hostile_world(state, kind)
    assert len(changed) >= 40, changed
    problems = _run_all(state, tmp_path / f"{kind}-out", kind)
    figures = h.FIGURES[f"hostile-values/{kind}"]
    figures["files"] += len(changed)
    figures["commands"] += len(_commands(state, tmp_path)) + 2
    figures["clean"] += int(not problems)
    assert not problems, problems


@pytest.mark.parametrize("kind", CI_KINDS)
def test_hostile_values_in_every_family_file(tmp_path: Path, kind: str) -> None:
    _check_kind(tmp_path, kind)


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(set(KINDS) - set(CI_KINDS)))
def test_hostile_values_in_every_family_file_slow(tmp_path: Path, kind: str) -> None:
    _check_kind(tmp_path, kind)


def test_deep_json_in_the_rows_statekit_reads_back(tmp_path: Path) -> None:
    """5,000-deep JSON in session entries, transcript events and statekit's own receipts and run reports."""
    from statekit.db import connect

    state = h.copy_world("demo-install", tmp_path)
    first = h.fork_cli("migrate", "--state-dir", state, "--yes", "--no-backup")
    assert first.returncode in (0, 3) and not first.traceback, first
    agent = connect(state / "agents" / "main" / "agent" / "openclaw-agent.sqlite")
    key = agent.execute("SELECT session_key FROM session_entries ORDER BY session_key LIMIT 1").fetchone()[0]
    agent.execute("UPDATE session_entries SET entry_json = ?", (DEEP,))
    agent.execute("UPDATE transcript_events SET event_json = ? WHERE seq = 1", (DEEP,))
    agent.close()
    books = connect(state / "state" / "openclaw.sqlite")
    books.execute("UPDATE migration_runs SET report_json = ?", (DEEP,))
    books.execute("UPDATE migration_sources SET report_json = ? WHERE rowid IN (SELECT rowid FROM migration_sources LIMIT 3)", (DEEP,))
    books.close()
    scratch = tmp_path / "out"
    problems: list[str] = []
    for label, args in _commands(state, scratch)[3:]:
        problems += _line_problems(f"rows/{label}", h.fork_cli(*args))
    problems += _line_problems("rows/sessions delete", h.fork_cli("sessions", "delete", key, "--agent", "main", "--state-dir", state, "--yes"))
    problems += _line_problems("rows/migrate again", h.fork_cli("migrate", "--state-dir", state, "--yes", "--no-backup"))
    for archive in sorted((scratch / "backups").glob("*.tar.zst")):
        problems += _line_problems("rows/backup verify", h.fork_cli("backup", "verify", archive))
        problems += _line_problems("rows/restore --dry-run", h.fork_cli("backup", "restore", archive, "--target", scratch / "restored", "--dry-run"))
    h.FIGURES["hostile-values/rows"]["clean"] += int(not problems)
    assert not problems, problems


# (what is put where, the words the one error line must say). A directory or a link where a database or its
# journal belongs is not a failing disk: the line names the path and what is there. On 308a7ed: "check the disk".
REAL_CAUSES = [
    ("dir:state/openclaw.sqlite", "state/openclaw.sqlite: the database is a directory"),
    ("dir:agents/ops/agent/openclaw-agent.sqlite", "agents/ops/agent/openclaw-agent.sqlite: the database is a directory"),
    # a link leading out of the state dir is refused before SQLite sees it (issue 11 item 1), and named as such
    ("link:state/openclaw.sqlite-wal", "state/openclaw.sqlite-wal: leads outside"),
    ("dir:state/openclaw.sqlite-journal", "state/openclaw.sqlite-journal: its journal file is a directory"),
]


@pytest.mark.parametrize(("plant", "words"), REAL_CAUSES, ids=[p for p, _w in REAL_CAUSES])
def test_the_error_names_what_is_at_the_database_path(tmp_path: Path, plant: str, words: str) -> None:
    state = h.copy_world("demo-install", tmp_path)
    what, rel = plant.split(":", 1)
    target = state / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    if what == "dir":
        target.mkdir()
    else:
        target.symlink_to(tmp_path / "elsewhere")
    run = h.fork_cli("migrate", "--state-dir", state, "--yes", "--no-backup")
    problems = h.clear_failure(run, (1,))
    line = " ".join(h.error_lines(run))
    if words not in line:
        problems.append(f"the error does not say {words!r}: {line[:600]!r}")
    if "check the disk" in line:
        problems.append("blames the disk")
    h.FIGURES["hostile-values/real-cause"]["named"] += int(not problems)
    assert not problems, problems
