"""Backups of state dirs OpenClaw 2026.9.6 migrated itself, and archives across the two tools (issue 15, parts 2-4).

Per tree, on A (9.6's own ``doctor --fix`` of a copy, at the tree's HOME):

* statekit's archive of A: ``backup create``, ``verify`` (integrity_check of every database), ``restore --target``
  and in place: every database equal to A's table by table and row by row (rowids, FTS shadow tables, the
  quarantine database included), every entry 9.6 left either archived or skipped with its reason, and 9.6
  itself accepts the result: ``sessions --json`` lists A's sessions, ``database preflight`` says ``exact``;
* ``openclaw backup create`` of A restored by statekit (``--target`` and in place): the target *is* the state
  dir (config at its top), holds nothing the archive did not, its databases equal the archive's, and 9.6
  pointed at it lists A's sessions;
* ``statekit backup create --format openclaw`` of A: ``openclaw backup verify`` and ``openclaw backup restore``
  accept it, the state dir 9.6 restores lists A's sessions; a damaged copy is refused by both tools.

Not run with ``--interop-control`` (they check statekit's backups, not its migration).
"""

from __future__ import annotations

import io
import json
import os
import shutil
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from interop_flow import Reference, TreeRun, list_sessions
from interop_reports import session_list_problems
from interop_setup import CommandResult
from statekit.backup.assets import SKIP_LOCK, SKIP_OPENCLAW_TRANSIENT, SKIP_SIDECAR
from statekit.db import SQLITE_HEADER, connect, read_only_view

pytestmark = pytest.mark.interop

SIDECARS = ("-wal", "-shm", "-journal")
# why an entry 9.6 leaves in a state dir may stay out of statekit's archive (everything else is archived)
EXPECTED_SKIPS = (SKIP_SIDECAR, SKIP_LOCK, SKIP_OPENCLAW_TRANSIENT)  # backup.assets' own reasons (sidecars, statekit's lock, 9.6's lock coordinators)


# ------------------------------------------------------------------------------------------ helpers
def full_dump(db: Path) -> dict[str, list[str]]:
    """Schema, user_version and every row (with its rowid where the table has one) of every real table,
    FTS5 shadow tables included (virtual tables are read through their shadow tables)."""
    with read_only_view(db) as conn:
        out = {"<schema>": sorted(repr(tuple(r)) for r in conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master")),
               "<user_version>": [str(conn.execute("PRAGMA user_version").fetchone()[0])]}
        for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND rootpage > 0 ORDER BY name"):
            quoted = '"' + name.replace('"', '""') + '"'
            try:
                rows = conn.execute(f"SELECT rowid, * FROM {quoted}").fetchall()
            except Exception:  # WITHOUT ROWID
                rows = conn.execute(f"SELECT * FROM {quoted}").fetchall()
            out[name] = sorted(repr(tuple(r)) for r in rows)
    return out


def databases(state: Path) -> list[str]:
    """Every SQLite database below ``state`` (found by its header), minus sidecars and 9.6's lock coordinators."""
    found = []
    for path in sorted(state.rglob("*")):
        if path.is_symlink() or not path.is_file() or path.name.endswith(SIDECARS) or path.name.endswith(".lock.sqlite"):
            continue
        if path.relative_to(state).parts[0] == ".statekit":
            continue  # statekit's own (the pre-restore copies of an in-place restore)
        with open(path, "rb") as handle:
            if handle.read(len(SQLITE_HEADER)) == SQLITE_HEADER:
                found.append(path.relative_to(state).as_posix())
    return found


def dump_all(state: Path) -> dict[str, dict[str, list[str]]]:
    return {rel: full_dump(state / rel) for rel in databases(state)}


def dump_problems(want: dict[str, dict[str, list[str]]], got: dict[str, dict[str, list[str]]], what: str) -> list[str]:
    problems = []
    for rel in sorted(set(want) | set(got)):
        if rel not in got:
            problems.append(f"{what}: database {rel} is missing")
        elif rel not in want:
            problems.append(f"{what}: database {rel} was not in the source")
        elif got[rel] != want[rel]:
            tables = sorted(t for t in set(want[rel]) | set(got[rel]) if want[rel].get(t) != got[rel].get(t))
            problems.append(f"{what}: {rel} differs in {tables[:6]}")
    return problems


def files_below(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() or p.is_symlink()}


def preflight(run: TreeRun, tag: str, state: Path, home: Path) -> list[str]:
    """``database preflight`` / ``preflight-agent`` of 9.6 on copies of every core database: must be ``exact``."""
    scratch = Path(tempfile.mkdtemp(prefix=f"{tag}-preflight-", dir=run.work))
    problems = []
    targets = [("state", state / "state" / "openclaw.sqlite", None)]
    agents_dir = state / "agents"
    targets += [(f"agent-{a.name}", a / "agent" / "openclaw-agent.sqlite", a.name)
                for a in sorted(agents_dir.iterdir()) if (a / "agent" / "openclaw-agent.sqlite").is_file()] if agents_dir.is_dir() else []
    for name, db, agent in targets:
        if not db.is_file():
            problems.append(f"{name}: {db} is missing")
            continue
        copy = scratch / f"{name}.sqlite"
        for suffix in ("", "-wal"):
            if Path(f"{db}{suffix}").exists():
                shutil.copyfile(f"{db}{suffix}", f"{copy}{suffix}")
        args = ["database", "preflight", "--json", str(copy)] if agent is None else \
            ["database", "preflight-agent", "--json", "--agent-id", agent, str(copy)]
        result = run.openclaw.run(f"{tag}-preflight-{name}", args, home=home, timeout=300)
        doc = result.json()
        if not isinstance(doc, dict) or doc.get("status") != "exact" or doc.get("issues"):
            problems.append(f"{name}: 9.6 preflight is not exact: {result.why() if not result.ok else doc}")
    return problems


def fresh_home(run: TreeRun, name: str) -> Path:
    home = run.work / name / "home"
    shutil.rmtree(home.parent, ignore_errors=True)
    home.mkdir(parents=True)
    return home


def copy_of_a(run: TreeRun, reference: Reference, name: str) -> Path:
    """A copy of A outside the tree's HOME (for in-place restores); returns its home."""
    home = run.work / name / "home"
    shutil.rmtree(home.parent, ignore_errors=True)
    shutil.copytree(reference.home, home, symlinks=True)
    return home


def make_b(state: Path) -> None:
    """State B, newer than the archive: a changed config, a deleted agent database, a row gone from the global one."""
    config = state / "openclaw.json"
    config.write_text(config.read_text() + "\n", encoding="utf-8")
    agents = sorted(p for p in (state / "agents").glob("*/agent/openclaw-agent.sqlite"))
    agents[-1].unlink()
    for sidecar in SIDECARS:
        Path(f"{agents[-1]}{sidecar}").unlink(missing_ok=True)
    conn = connect(state / "state" / "openclaw.sqlite")
    conn.execute("DELETE FROM backup_runs")
    conn.close()


def skip_in_control(run: TreeRun) -> None:
    if run.control:
        pytest.skip("a backup check, not a check of statekit's migration: not run in control mode")


def must(result: CommandResult, what: str) -> None:
    assert result.ok, f"{what}: {result.why()}"


def single(directory: Path, suffix: str) -> Path:
    found = sorted(p for p in directory.iterdir() if p.is_file() and p.name.endswith(suffix))
    assert len(found) == 1, f"expected one {suffix} archive in {directory}, found {[p.name for p in found]}"
    return found[0]


@dataclass
class Made:
    """An archive of A made at the tree's HOME, with A's databases and entries as they were right after."""

    archive: Path
    create: CommandResult
    dumps: dict[str, dict[str, list[str]]]
    entries: dict[str, str] = field(default_factory=dict)  # rel -> "file" | "dir" | "symlink"
    state_at: Path = Path()  # A's state dir at the tree's HOME (the paths the archive records)


def _entries(state: Path) -> dict[str, str]:
    out = {}
    for path in state.rglob("*"):
        rel = path.relative_to(state).as_posix()
        out[rel] = "symlink" if path.is_symlink() else "dir" if path.is_dir() else "file"
    return out


def _tree_stamp(root: Path) -> dict[str, tuple[int, int]] | None:
    """Every entry below ``root`` with its size and mtime (None when it does not exist)."""
    if not os.path.lexists(root):
        return None
    return {p.relative_to(root).as_posix(): (p.lstat().st_size, p.lstat().st_mtime_ns) for p in [root, *root.rglob("*")]}


def _make(run: TreeRun, reference: Reference, tag: str, args: list[str], suffix: str, *, openclaw: bool = False) -> Made:
    out = run.work / tag
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    with run.slot.occupy(reference.home):
        argv = [a.replace("{state}", str(run.state)).replace("{out}", str(out)) for a in args]
        create = (run.openclaw.run(f"{tag}-create", argv, home=run.slot.home, timeout=900) if openclaw
                  else run.statekit.run(f"{tag}-create", argv, home=run.slot.home))
        must(create, f"{tag}: create")
        made = Made(single(out, suffix), create, dump_all(run.state), _entries(run.state), run.state)
    return made


# ------------------------------------------------------------------------------------------ fixtures
@pytest.fixture(scope="session")
def statekit_archive(interop_tree: TreeRun, reference: Reference) -> Made:
    skip_in_control(interop_tree)
    return _make(interop_tree, reference, "bk15-statekit",
                 ["backup", "create", "--state-dir", "{state}", "--output", "{out}", "--json"], ".tar.zst")


@pytest.fixture(scope="session")
def openclaw_archive(interop_tree: TreeRun, reference: Reference) -> Made:
    skip_in_control(interop_tree)
    return _make(interop_tree, reference, "bk15-openclaw", ["backup", "create", "--output", "{out}", "--verify", "--json"],
                 ".tar.gz", openclaw=True)


@pytest.fixture(scope="session")
def statekit_openclaw_archive(interop_tree: TreeRun, reference: Reference) -> Made:
    skip_in_control(interop_tree)
    return _make(interop_tree, reference, "bk15-skoc",
                 ["backup", "create", "--format", "openclaw", "--state-dir", "{state}", "--output", "{out}", "--json"], ".tar.gz")


def archive_databases(archive: Path, scratch: Path) -> tuple[dict[str, dict[str, list[str]]], set[str], dict[str, int]]:
    """The state asset's databases as an OpenClaw archive holds them (dumped), its entries below the state asset,
    and the number of entries of each other asset (by source path)."""
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        manifest = json.loads(tar.extractfile(next(n for n in names if n.count("/") == 1 and n.endswith("/manifest.json"))).read())
        state = next(a for a in manifest["assets"] if a["kind"] == "state")["archivePath"].rstrip("/") + "/"
        others = {a["sourcePath"]: a["archivePath"].rstrip("/") + "/" for a in manifest["assets"] if a["kind"] != "state"}
        counts = {source: sum(1 for m in tar.getmembers() if m.name.startswith(prefix) and not m.isdir())
                  for source, prefix in others.items()}
        below: set[str] = set()
        dumps = {}
        for member in tar.getmembers():
            if not member.name.startswith(state) or not (member.isfile() or member.issym() or member.islnk()):
                continue
            rel = member.name[len(state):]
            below.add(rel)
            if member.isfile():
                data = tar.extractfile(member).read(len(SQLITE_HEADER))
                if data == SQLITE_HEADER and not rel.endswith(SIDECARS):
                    dest = scratch / rel
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    dest.write_bytes(tar.extractfile(member).read())
                    dumps[rel] = full_dump(dest)
    return dumps, below, counts


# ------------------------------------------------------------------------------------------ statekit's archive of A
def test_statekit_backup_of_96_state_names_every_entry(interop_tree: TreeRun, statekit_archive: Made) -> None:
    """Each entry 9.6 left in the state dir is in the archive, or skipped with one of the expected reasons."""
    manifest = statekit_archive.create.json()
    assert isinstance(manifest, dict), f"no JSON from create: {statekit_archive.create.why()}"
    verify = interop_tree.statekit.run("bk15-statekit-verify", ["backup", "verify", str(statekit_archive.archive), "--json"],
                                       home=interop_tree.work)
    must(verify, "statekit backup verify")
    report = verify.json()
    assert report["assets_verified"] == report["assets"] > 0
    skipped = {Path(s["source_path"]).relative_to(statekit_archive.state_at).as_posix(): s["reason"] for s in manifest["skipped"]}
    bad = {rel: why for rel, why in skipped.items() if not why.startswith(EXPECTED_SKIPS)}
    assert not bad, f"entries skipped for an unexpected reason: {bad}"
    dbs = {Path(d["source_path"]).relative_to(statekit_archive.state_at).as_posix(): d for d in manifest["databases"]}
    assert set(dbs) == set(statekit_archive.dumps), f"databases archived {sorted(dbs)} != on disk {sorted(statekit_archive.dumps)}"
    assert dbs["state/openclaw.sqlite"]["schema_version"] == 18 and dbs["state/openclaw.sqlite"]["role"] == "global"
    assert all(d["schema_version"] == 23 for rel, d in dbs.items() if rel.endswith("openclaw-agent.sqlite"))
    assert manifest["assets"] == sum(1 for rel in statekit_archive.entries if rel not in skipped) + 1  # + the state dir itself


def test_statekit_backup_of_96_state_restored_to_a_target(interop_tree: TreeRun, reference: Reference,
                                                         statekit_archive: Made) -> None:
    run = interop_tree
    home = fresh_home(run, "bk15-statekit-target")
    target = home / ".openclaw"
    must(run.statekit.run("bk15-statekit-restore", ["backup", "restore", str(statekit_archive.archive), "--target", str(target),
                                                    "--yes", "--json"], home=home), "statekit backup restore --target")
    problems = dump_problems(statekit_archive.dumps, dump_all(target), "restored target")
    problems += preflight(run, "bk15-statekit-target", target, home)
    problems += session_list_problems(reference.sessions, list_sessions(run, "bk15-statekit-target", home, target))
    assert not problems, "; ".join(problems)


def test_statekit_backup_of_96_state_restored_in_place(interop_tree: TreeRun, reference: Reference,
                                                      statekit_archive: Made) -> None:
    run = interop_tree
    home = copy_of_a(run, reference, "bk15-statekit-inplace")
    state = home / ".openclaw"
    make_b(state)
    restore = run.statekit.run("bk15-statekit-inplace-restore", ["backup", "restore", str(statekit_archive.archive),
                                                                 "--state-dir", str(state), "--yes", "--json"], home=home)
    must(restore, "statekit backup restore in place")
    assert restore.json()["counts"]["replace"] > 0
    problems = dump_problems(statekit_archive.dumps, dump_all(state), "restored in place")
    problems += preflight(run, "bk15-statekit-inplace", state, home)
    problems += session_list_problems(reference.sessions, list_sessions(run, "bk15-statekit-inplace", home, state))
    assert not problems, "; ".join(problems)


# ------------------------------------------------------------------------------------------ OpenClaw's archive of A
def test_openclaw_archive_restored_as_the_state_dir(interop_tree: TreeRun, reference: Reference, openclaw_archive: Made) -> None:
    run = interop_tree
    home = fresh_home(run, "bk15-openclaw-target")
    target = home / ".openclaw"
    archived, below, others = archive_databases(openclaw_archive.archive, Path(tempfile.mkdtemp(dir=run.work)))
    recorded = {source: _tree_stamp(Path(source)) for source in others}  # may exist on this machine: must stay as it is
    restore = run.statekit.run("bk15-openclaw-restore", ["backup", "restore", str(openclaw_archive.archive), "--target",
                                                         str(target), "--yes", "--json"], home=home)
    must(restore, "statekit backup restore --target of an OpenClaw archive")
    assert (target / "openclaw.json").is_file(), f"no openclaw.json at the top of {target}: {sorted(os.listdir(target))[:8]}"
    restored = files_below(target)
    state_files = {f for f in restored if not f.startswith(".statekit/")}
    assert state_files == below, (f"the state dir differs from the archive's state asset: extra {sorted(state_files - below)[:6]}, "
                                  f"missing {sorted(below - state_files)[:6]}")
    relocated = {r["source_path"]: Path(r["destination"]) for r in restore.json()["relocated"]}
    assert set(relocated) == set(others), f"assets outside the state dir {sorted(others)} not all listed: {relocated}"
    for source, count in others.items():  # each restored below .statekit/external/, listed, never at its recorded path
        assert relocated[source].parent == target / ".statekit" / "external"
        assert len(files_below(relocated[source])) == count, f"{source}: {count} entries archived, restored otherwise"
        assert _tree_stamp(Path(source)) == recorded[source], f"restore wrote to the recorded path {source}"
    assert {f.split("/")[2] for f in restored - state_files} == {p.name for p in relocated.values()}
    assert not os.path.lexists(openclaw_archive.state_at), "restore wrote to the absolute path the manifest records"
    problems = dump_problems(archived, dump_all(target), "restored OpenClaw archive")
    problems += preflight(run, "bk15-openclaw-target", target, home)
    problems += session_list_problems(reference.sessions, list_sessions(run, "bk15-openclaw-target", home, target))
    assert not problems, "; ".join(problems)


def test_openclaw_archive_restored_in_place(interop_tree: TreeRun, reference: Reference, openclaw_archive: Made) -> None:
    run = interop_tree
    home = copy_of_a(run, reference, "bk15-openclaw-inplace")
    state = home / ".openclaw"
    make_b(state)
    dry = run.statekit.run("bk15-openclaw-inplace-dry", ["backup", "restore", str(openclaw_archive.archive), "--state-dir",
                                                         str(state), "--dry-run", "--json"], home=home)
    must(dry, "statekit backup restore --dry-run in place of an OpenClaw archive")
    assert dry.json()["counts"]["create"] >= 1  # the deleted agent database
    restore = run.statekit.run("bk15-openclaw-inplace", ["backup", "restore", str(openclaw_archive.archive), "--state-dir",
                                                         str(state), "--yes", "--json"], home=home)
    must(restore, "statekit backup restore in place of an OpenClaw archive")
    archived, _below, _others = archive_databases(openclaw_archive.archive, Path(tempfile.mkdtemp(dir=run.work)))
    problems = dump_problems(archived, {rel: d for rel, d in dump_all(state).items() if rel in archived}, "in place")
    problems += preflight(run, "bk15-openclaw-inplace", state, home)
    problems += session_list_problems(reference.sessions, list_sessions(run, "bk15-openclaw-inplace", home, state))
    assert not problems, "; ".join(problems)


# ------------------------------------------------------------------------------------------ statekit's OpenClaw-format archive
def test_openclaw_verifies_and_restores_statekits_openclaw_format(interop_tree: TreeRun, reference: Reference,
                                                                 statekit_openclaw_archive: Made) -> None:
    run = interop_tree
    made = statekit_openclaw_archive
    verify = run.openclaw.run("bk15-skoc-openclaw-verify", ["backup", "verify", str(made.archive), "--json"], home=run.work)
    must(verify, "openclaw backup verify of statekit's --format openclaw archive")
    assert verify.json().get("ok") is True
    own = run.statekit.run("bk15-skoc-statekit-verify", ["backup", "verify", str(made.archive), "--json"], home=run.work)
    must(own, "statekit backup verify of its --format openclaw archive")
    assert own.json()["statekit_digests"] is True and own.json()["assets_verified"] > 0
    home = fresh_home(run, "bk15-skoc-restored")
    staging = home / "restored"
    must(run.openclaw.run("bk15-skoc-openclaw-restore", ["backup", "restore", str(made.archive), "--target", str(staging),
                                                          "--json"], home=home), "openclaw backup restore")
    root = made.archive.name.removesuffix(".tar.gz")
    state = staging / root / "payload" / "posix" / str(made.state_at).lstrip("/")
    assert (state / "openclaw.json").is_file(), f"9.6 restored no state dir at {state}"
    problems = dump_problems(made.dumps, dump_all(state), "restored by openclaw")
    problems += session_list_problems(reference.sessions, list_sessions(run, "bk15-skoc-restored", home, state))
    assert not problems, "; ".join(problems)


def test_a_damaged_openclaw_format_archive_is_refused_by_both(interop_tree: TreeRun, statekit_openclaw_archive: Made) -> None:
    """Control: 9.6's verifier really checks the databases inside (so its ``ok`` above means something)."""
    run = interop_tree
    damaged = run.work / "bk15-skoc-damaged.tar.gz"
    with tarfile.open(statekit_openclaw_archive.archive) as src, tarfile.open(damaged, "w:gz", format=tarfile.PAX_FORMAT) as dst:
        for member in src.getmembers():
            data = src.extractfile(member).read() if member.isreg() else None
            if data is not None and member.name.endswith("/state/openclaw.sqlite"):
                data = data[:8192] + bytes(b ^ 0x5A for b in data[8192:16384]) + data[16384:]
            dst.addfile(member, io.BytesIO(data) if data is not None else None)
    theirs = run.openclaw.run("bk15-skoc-damaged-openclaw-verify", ["backup", "verify", str(damaged), "--json"], home=run.work)
    assert not theirs.ok, f"9.6 accepted an archive whose global database is damaged (log {theirs.log})"
    ours = run.statekit.run("bk15-skoc-damaged-statekit-verify", ["backup", "verify", str(damaged)], home=run.work)
    assert ours.rc == 5, ours.why()
