"""Permissions and secrets.

Modes: under a hostile umask (000) and the usual one (022), everything
statekit creates is private: databases and their -wal/-shm sidecars, the
lock, retired sources and their folders, the backup directory, archives,
their ``.verify.json``, the staging dir and the ``.partial`` a killed create
leaves, the pre-restore folder, and restored databases and credentials
(0600 files, 0700 directories).

Secrets: the every-family world gets a unique canary in every secret field
(``tests/test_no_secrets.plant_canaries``, which covers plan, migrate and
backup create). Here: the outputs that test does not run -- migrate with its
pre-migration backup, a killed migrate and its rerun, a migrate on a full
disk, ``backup verify``/``list``/``restore --dry-run``/``restore``,
``history``, ``inspect`` (human and ``--json``), the ``.verify.json``
sidecar, the archive manifest, every report in the databases -- and, above
all, the error lines for secret-bearing files made malformed *around* the
secret (wrong types in its place or beside it, truncation just after or in
the middle of it, invalid UTF-8 next to it): no canary, nor its first 20
characters, may appear anywhere.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import stat
import tarfile
from pathlib import Path

import pytest
import zstandard

import rel_harness as h

PRIVATE_FILE, PRIVATE_DIR = 0o600, 0o700


def _new_entries(root: Path, before: set[str]) -> dict[str, int]:
    return {rel: mode for rel, mode in h.modes(root).items() if rel not in before}


def _mode_problems(root: Path, entries: dict[str, int], label: str) -> list[str]:
    problems = []
    for rel, mode in sorted(entries.items()):
        path = root / rel
        if path.is_symlink():
            continue
        want = PRIVATE_DIR if path.is_dir() else PRIVATE_FILE
        h.FIGURES["modes"]["entries checked"] += 1
        if mode != want:
            problems.append(f"{label}: {rel} is {mode:04o}, expected {want:04o}")
    return problems


@pytest.mark.parametrize("umask", [0o000, 0o022])
def test_everything_migrate_creates_is_private(tmp_path: Path, umask: int) -> None:
    state = h.copy_world("every-family", tmp_path)
    output = tmp_path / "backups"
    before = set(h.modes(state))
    killed = h.fork_cli("migrate", "--state-dir", state, "--yes", "--backup-output", output,
                        env={"STATEKIT_CRASHPOINT": "between-commits:40"}, umask=umask)
    assert killed.killed, killed
    sidecars = [p for p in state.rglob("*.sqlite-*") if p.name.endswith(("-wal", "-shm"))]
    assert sidecars, "a run killed between commits leaves WAL sidecars to check"
    problems = _mode_problems(state, {p.relative_to(state).as_posix(): p.stat().st_mode & 0o7777 for p in sidecars}, "killed")
    h.next_archive_second(output)
    rerun = h.fork_cli("migrate", "--state-dir", state, "--yes", "--backup-output", output, umask=umask)
    assert rerun.returncode in (0, 3), rerun
    created = _new_entries(state, before)
    assert any(rel.startswith(".statekit/migrated/") for rel in created) and "state/openclaw.sqlite" in created
    problems += _mode_problems(state, created, "state dir")
    problems += _mode_problems(output.parent, {"backups": stat.S_IMODE(output.stat().st_mode)}, "backup dir")
    problems += _mode_problems(output, h.modes(output), "backup dir")
    assert not problems, "\n".join(problems)


def test_a_killed_create_leaves_only_private_entries(tmp_path: Path) -> None:
    world = h.build_backup_world(tmp_path)
    world.reset()
    killed = h.fork_cli(*world.args(), env={"STATEKIT_CRASHPOINT": "backup-partial-written"}, umask=0)
    assert killed.killed, killed
    entries = h.modes(world.arena.output)
    assert any(rel.startswith(".statekit-backup-") for rel in entries) and any(rel.endswith(".partial") for rel in entries), entries
    problems = _mode_problems(world.arena.output, entries, "killed create")
    assert not problems, "\n".join(problems)


def test_restores_are_private(tmp_path: Path) -> None:
    world = h.build_restore_world(tmp_path)
    state = world.reset()
    target = tmp_path / "target"
    assert h.fork_cli("backup", "restore", world.archive, "--target", target, "--yes", umask=0).returncode == 0
    problems = []  # (the target root and other directories get the modes the manifest recorded)
    for rel in h.modes(target):
        path = target / rel
        if path.is_file() and (h.is_sqlite(path) or rel.startswith("credentials/")):
            problems += _mode_problems(target, {rel: stat.S_IMODE(path.stat().st_mode)}, "restored")
    run = h.fork_cli("backup", "restore", world.archive, "--state-dir", state, "--yes", umask=0)
    assert run.returncode == 0, run
    pre = state / ".statekit" / "pre-restore"
    dirs = {p.relative_to(state).as_posix(): stat.S_IMODE(p.stat().st_mode) for p in [pre, *pre.rglob("*")] if p.is_dir()}
    problems += _mode_problems(state, dirs, "pre-restore")
    for db in h.live_databases(state):
        problems += _mode_problems(state, {db.relative_to(state).as_posix(): stat.S_IMODE(db.stat().st_mode)}, "restored in place")
    assert not problems, "\n".join(problems)


# --------------------------------------------------------------------------- secrets


def _plant(state: Path) -> list[str]:
    try:
        from test_no_secrets import plant_canaries
    except ImportError:  # pragma: no cover - the canary planter moved
        pytest.skip("tests/test_no_secrets.py (plant_canaries) is not importable")
    return [canary for _rel, _name, canary in plant_canaries(state)]


def _leaks(text: str, canaries: list[str]) -> list[str]:
    return [c for c in canaries if c in text or c[:20] in text]


def _db_reports(state: Path) -> str:
    gdb = state / "state" / "openclaw.sqlite"
    if not gdb.exists():
        return ""
    texts = []
    for sql in ("SELECT report_json FROM migration_runs", "SELECT report_json FROM migration_sources",
                "SELECT manifest_json FROM backup_runs"):
        texts += [str(r[0]) for r in h._rows(gdb, sql)]
    return "\n".join(texts)


def _archive_manifest(archive: Path) -> str:
    with open(archive, "rb") as raw:
        reader = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
        with tarfile.open(fileobj=io.BufferedReader(reader), mode="r|") as tar:
            member = next(iter(tar))
            handle = tar.extractfile(member)
            return handle.read().decode("utf-8") if handle else ""


def test_no_canary_in_any_other_output(tmp_path: Path) -> None:
    state = h.copy_world("every-family", tmp_path)
    canaries = _plant(state)
    assert len(canaries) >= 25
    output = tmp_path / "backups"
    texts: dict[str, str] = {}

    def run(label: str, *args, **kwargs) -> h.Run:
        result = h.fork_cli(*args, **kwargs)
        texts[label] = result.stdout + result.stderr
        assert not result.traceback, result
        return result

    run("migrate killed", "migrate", "--state-dir", state, "--yes", "--backup-output", output, env={"STATEKIT_CRASHPOINT": "after-commit:30"})
    h.next_archive_second(output)
    run("migrate on a full disk", "migrate", "--state-dir", state, "--yes", "--backup-output", output, io_faults="write:ENOSPC:3:/backups/")
    h.next_archive_second(output)
    run("migrate --json with backup", "migrate", "--state-dir", state, "--yes", "--backup-output", output, "--json")
    archive = h.archives(output)[-1]
    for label, args in [
        ("verify", ("backup", "verify", archive)), ("verify --json", ("backup", "verify", archive, "--json")),
        ("list", ("backup", "list", "--output", output)), ("list --json", ("backup", "list", "--output", output, "--json")),
        ("restore --dry-run", ("backup", "restore", archive, "--target", tmp_path / "t", "--dry-run")),
        ("restore --dry-run --json", ("backup", "restore", archive, "--target", tmp_path / "t", "--dry-run", "--json")),
        ("restore", ("backup", "restore", archive, "--target", tmp_path / "t", "--yes")),
        ("history", ("history", "--state-dir", state)), ("history --json", ("history", "--state-dir", state, "--json")),
        ("inspect", ("inspect", "--state-dir", state, "--all-agents")),
        ("inspect --json", ("inspect", "--state-dir", state, "--all-agents", "--json")),
        ("plan after", ("plan", "--state-dir", state, "--json")),
    ]:
        run(label, *args)
    texts["database reports"] = _db_reports(state)
    texts["archive manifest"] = _archive_manifest(archive)
    texts["verify sidecar"] = "".join(p.read_text() for p in output.glob("*.verify.json"))
    leaks = {label: _leaks(text, canaries) for label, text in texts.items()}
    h.FIGURES["secrets"]["outputs checked"] += len(texts)
    h.FIGURES["secrets"]["canaries planted"] += len(canaries)
    assert {label: found for label, found in leaks.items() if found} == {}


def _secret_spots(state: Path, canaries: list[str]) -> list[tuple[Path, str]]:
    spots = []
    for path in sorted(state.rglob("*")):
        if path.is_file() and path.suffix in (".json", ".jsonl"):
            text = path.read_text(encoding="utf-8")
            spots += [(path, c) for c in canaries if c in text]
    return spots


def _around_secret(path: Path, canary: str, style: str) -> None:
    data = path.read_bytes()
    quoted = json.dumps(canary).encode()
    at = data.index(quoted)
    end = at + len(quoted)
    if style == "in-a-list":
        data = data[:at] + b"[" + quoted + b"]" + data[end:]
    elif style == "in-an-object":
        data = data[:at] + b'{"value": ' + quoted + b", \"n\": [1]}" + data[end:]
    elif style == "cut-after":
        data = data[:end]
    elif style == "cut-inside":
        data = data[: at + 1 + len(canary) // 2]
    elif style == "utf8-after":
        data = data[:end] + b"\xff\xfe" + data[end:]
    elif style == "sibling-wrong":
        data = data[:end] + b', "statekitUnexpected": [[], {}], "expires": "soon", "type": 7' + data[end:]
    path.write_bytes(data)


STYLES = ["in-a-list", "in-an-object", "cut-after", "cut-inside", "utf8-after", "sibling-wrong"]


@pytest.mark.parametrize("style", STYLES)
def test_no_canary_in_errors_about_malformed_secret_files(tmp_path: Path, style: str) -> None:
    state = h.copy_world("every-family", tmp_path)
    canaries = _plant(state)
    done: set[Path] = set()
    for path, canary in _secret_spots(state, canaries):
        if path not in done:  # one malformed spot per file
            _around_secret(path, canary, style)
            done.add(path)
    malformed = {path: path.read_bytes() for path in done}
    texts = {}
    for label, args in [("plan", ("plan", "--state-dir", state)), ("plan --json", ("plan", "--state-dir", state, "--json")),
                        ("migrate", ("migrate", "--state-dir", state, "--yes", "--no-backup")),
                        ("migrate again --json", ("migrate", "--state-dir", state, "--yes", "--no-backup", "--retry-failed", "--json"))]:
        result = h.fork_cli(*args)
        assert result.returncode in (0, 3) and not result.traceback, result
        texts[label] = result.stdout + result.stderr
    texts["database reports"] = _db_reports(state)
    h.FIGURES["secrets"]["malformed secret files"] += len(done)
    h.FIGURES["secrets"]["outputs checked"] += len(texts)
    if style in ("cut-after", "cut-inside", "utf8-after"):  # none of these parse: each file statekit reads is named by a line
        from statekit import legacy_readers

        lines = texts["migrate"].splitlines()
        kept = {p for p in done if getattr(legacy_readers.reader_for(p.relative_to(state).as_posix()), "action", None) == "retain"}
        unnamed = [p.relative_to(state).as_posix() for p in done - kept if not any(p.relative_to(state).as_posix() in line for line in lines)]
        assert unnamed == [], texts["migrate"][-2000:]
        # the files kept in place for OpenClaw (models.json, plugin state of unbundled plugins) are not even read
        assert {p: p.read_bytes() for p in kept} == {p: malformed[p] for p in kept}
    leaks = {label: _leaks(text, canaries) for label, text in texts.items()}
    assert {label: found for label, found in leaks.items() if found} == {}
