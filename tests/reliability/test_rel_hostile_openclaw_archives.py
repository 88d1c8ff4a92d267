"""Hostile OpenClaw-format archives (``.tar.gz``), built from a real one: every one is rejected, nothing is written.

OpenClaw archives restore in place, so they get the same attack as statekit's own: built from
a verified ``statekit backup create --format openclaw`` archive of the migrated demo install, with and without
statekit's digest record (an archive ``openclaw backup create`` wrote has none), the corpus holds path
traversal, absolute and backslash names, entries outside the root or outside every asset, escaping and
unlisted symlinks, entries beneath a symlink, hard links to nowhere, device files and FIFOs, duplicate and
case-colliding entries, manifests that lie or are missing, doubled or not JSON, canonical databases that fail
integrity_check or name the wrong role or owner, live sidecars beside them, content that differs from the
digests, a stripped archive digest trailer, seeded bit flips (also those that decode to the same bytes:
deflate's redundant encodings, caught only by the trailer) and truncations of the gzip stream.

For each: ``statekit backup verify`` exits 5 naming a problem; ``backup restore --target`` exits 5 and creates
nothing; in place it exits 5 and leaves the state dir exactly as it was; nothing appears outside.
"""

from __future__ import annotations

import copy
import hashlib
import io
import json
import random
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

import rel_harness as h
from statekit.backup.archive import gzip_trailer

CI_BIT_FLIPS = 40
CI_TRUNCATIONS = 12
SLOW_BIT_FLIPS = 300
SLOW_TRUNCATIONS = 80


@dataclass
class Member:
    info: tarfile.TarInfo
    data: bytes = b""


def read_members(archive: Path) -> list[Member]:
    with tarfile.open(archive) as tar:
        return [Member(m, tar.extractfile(m).read() if m.isreg() else b"") for m in tar.getmembers()]


def pack(members: list[Member]) -> bytes:
    """A .tar.gz of ``members``; with statekit's digest record, also a valid archive digest trailer (so only the
    property under test is wrong)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        for member in members:
            info = copy.copy(member.info)
            if info.isreg():
                info.size = len(member.data)
                tar.addfile(info, io.BytesIO(member.data))
            else:
                tar.addfile(info)
    data = buffer.getvalue()
    if any(m.info.name.endswith("/statekit-manifest.json") for m in members):
        data += gzip_trailer(hashlib.sha256(data).digest())
    return data


@dataclass
class Base:
    archive: Path
    data: bytes
    members: list[Member]
    root: str
    state_path: str  # the state asset's archive path
    state: Path  # the live state dir in-place restores are tried on
    outside: Path

    def fresh(self, digests: bool = True) -> list[Member]:
        members = [Member(copy.copy(m.info), m.data) for m in self.members]
        return members if digests else [m for m in members if not m.info.name.endswith("/statekit-manifest.json")]


def manifest(members: list[Member]) -> dict:
    return json.loads(next(m for m in members if m.info.name.endswith("/manifest.json") and m.info.name.count("/") == 1).data)


def set_manifest(members: list[Member], data: dict) -> None:
    next(m for m in members if m.info.name.endswith("/manifest.json") and m.info.name.count("/") == 1).data = json.dumps(data).encode()


def entry(name: str, kind: bytes = tarfile.REGTYPE, linkname: str = "", data: bytes = b"x") -> Member:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.mode = kind, linkname, 0o600
    return Member(info, data if kind == tarfile.REGTYPE else b"")


def _insert(members: list[Member], member: Member) -> list[Member]:
    members.insert(len(members) - 2, member)  # before the two manifests
    return members


def _db(members: list[Member], suffix: str) -> Member:
    return next(m for m in members if m.info.name.endswith(suffix) and m.info.isreg())


# --------------------------------------------------------------------------- mutations (each: base, digests? -> members or bytes)


def traversal(b: Base, d: bool) -> list[Member]:
    return _insert(b.fresh(d), entry(f"{b.state_path}/../../../../outside/victim"))


def absolute(b: Base, d: bool) -> list[Member]:
    return _insert(b.fresh(d), entry(str(b.outside / "victim")))


def backslash(b: Base, d: bool) -> list[Member]:
    return _insert(b.fresh(d), entry(f"{b.state_path}\\..\\evil.txt"))


def outside_root(b: Base, d: bool) -> list[Member]:
    return _insert(b.fresh(d), entry("another-root/payload/posix/etc/evil.txt"))


def outside_assets(b: Base, d: bool) -> list[Member]:
    return _insert(b.fresh(d), entry(f"{b.root}/payload/posix/etc/cron.d/evil"))


def escaping_link_unlisted(b: Base, d: bool) -> list[Member]:
    return _insert(b.fresh(d), entry(f"{b.state_path}/escape", tarfile.SYMTYPE, str(b.outside)))


def escaping_relative_link(b: Base, d: bool) -> list[Member]:
    members = b.fresh(d)
    data = manifest(members)
    data.pop("externalSymbolicLinks", None)  # without the report, no link may leave the archive
    set_manifest(members, data)
    return _insert(members, entry(f"{b.state_path}/escape", tarfile.SYMTYPE, "../../../../../outside"))


def written_through_link(b: Base, d: bool) -> list[Member]:
    members = _insert(b.fresh(d), entry(f"{b.state_path}/inside", tarfile.SYMTYPE, "workspace"))
    return _insert(members, entry(f"{b.state_path}/inside/through.txt"))


def hard_link_nowhere(b: Base, d: bool) -> list[Member]:
    return _insert(b.fresh(d), entry(f"{b.state_path}/hard", tarfile.LNKTYPE, str(b.outside / "victim")))


def device(b: Base, d: bool) -> list[Member]:
    return _insert(b.fresh(d), entry(f"{b.state_path}/dev-null", tarfile.CHRTYPE))


def fifo(b: Base, d: bool) -> list[Member]:
    return _insert(b.fresh(d), entry(f"{b.state_path}/pipe", tarfile.FIFOTYPE))


def duplicate(b: Base, d: bool) -> list[Member]:
    members = b.fresh(d)
    config = next(m for m in members if m.info.name.endswith("/openclaw.json"))
    return _insert(members, Member(copy.copy(config.info), b'{"evil": true}'))


def case_collision(b: Base, d: bool) -> list[Member]:
    return _insert(b.fresh(d), entry(f"{b.state_path}/OPENCLAW.json"))


def two_manifests(b: Base, d: bool) -> list[Member]:
    members = b.fresh(d)
    return _insert(members, Member(copy.copy(members[-1].info), members[-1].data))


def no_manifest(b: Base, d: bool) -> list[Member]:
    return [m for m in b.fresh(d) if not (m.info.name.endswith("/manifest.json") and m.info.name.count("/") == 1)]


def manifest_not_json(b: Base, d: bool) -> list[Member]:
    members = b.fresh(d)
    next(m for m in members if m.info.name == f"{b.root}/manifest.json").data = b"{not json"
    return members


def schema_version(b: Base, d: bool) -> list[Member]:
    members = b.fresh(d)
    data = manifest(members)
    data["schemaVersion"] = 2
    set_manifest(members, data)
    return members


def wrong_root(b: Base, d: bool) -> list[Member]:
    members = b.fresh(d)
    data = manifest(members)
    data["archiveRoot"] = "2020-01-01T00-00-00.000+00-00-openclaw-backup"
    set_manifest(members, data)
    return members


def asset_outside_payload(b: Base, d: bool) -> list[Member]:
    members = b.fresh(d)
    data = manifest(members)
    data["assets"].append({"kind": "workspace", "sourcePath": "/etc", "archivePath": f"{b.root}/../etc"})
    set_manifest(members, data)
    return members


def missing_asset(b: Base, d: bool) -> list[Member]:
    members = b.fresh(d)
    data = manifest(members)
    data["assets"].append({"kind": "workspace", "sourcePath": "/srv/ws", "archivePath": f"{b.root}/payload/posix/srv/ws"})
    set_manifest(members, data)
    return members


def corrupt_global_db(b: Base, d: bool) -> list[Member]:
    members = b.fresh(d)
    db = _db(members, "/state/openclaw.sqlite")
    db.data = db.data[:4096] + bytes(x ^ 0x5A for x in db.data[4096:12288]) + db.data[12288:]
    return members


def global_db_wrong_role(b: Base, d: bool) -> list[Member]:
    from statekit.db import connect

    members = b.fresh(d)
    db = _db(members, "/state/openclaw.sqlite")
    scratch = b.outside.parent / "role.sqlite"
    scratch.write_bytes(db.data)
    conn = connect(scratch)
    conn.execute("UPDATE schema_meta SET role = 'agent'")
    conn.close()
    db.data = scratch.read_bytes()
    scratch.unlink()
    return members


def sidecar_beside_db(b: Base, d: bool) -> list[Member]:
    members = b.fresh(d)
    db = _db(members, "/state/openclaw.sqlite")
    return _insert(members, entry(db.info.name + "-wal", data=b"\0" * 32))


def content_changed(b: Base, d: bool) -> list[Member]:
    members = b.fresh(True)  # needs the digests: the change is invisible to the gzip CRC of the repacked archive
    target = next(m for m in members if m.info.name.endswith("/workspace/AGENTS.md"))
    target.data = bytes(reversed(target.data))
    return members


def trailer_stripped(b: Base, d: bool) -> bytes:
    return b.data[: -len(gzip_trailer(bytes(32)))]


def digests_name_missing(b: Base, d: bool) -> list[Member]:
    members = b.fresh(True)
    return [m for m in members if not m.info.name.endswith("/workspace/AGENTS.md")]


STRUCTURAL: list[tuple[Callable[[Base, bool], list[Member]], tuple[bool, ...]]] = [
    (traversal, (True, False)), (absolute, (True, False)), (backslash, (True, False)), (outside_root, (True, False)),
    (outside_assets, (True, False)), (escaping_link_unlisted, (True, False)), (escaping_relative_link, (True, False)),
    (written_through_link, (True, False)), (hard_link_nowhere, (True, False)), (device, (True, False)),
    (fifo, (True, False)), (duplicate, (True, False)), (case_collision, (True, False)), (two_manifests, (True, False)),
    (no_manifest, (True, False)), (manifest_not_json, (True, False)), (schema_version, (True, False)),
    (wrong_root, (True, False)), (asset_outside_payload, (True, False)), (missing_asset, (True, False)),
    (corrupt_global_db, (True, False)), (global_db_wrong_role, (True, False)), (sidecar_beside_db, (True, False)),
    (content_changed, (True,)), (digests_name_missing, (True,)), (trailer_stripped, (True,)),
]


def _bytes(made: bytes | list[Member]) -> bytes:
    return made if isinstance(made, bytes) else pack(made)


def bit_flip(b: Base, rng: random.Random) -> bytes:
    data = bytearray(b.data)
    position = rng.randrange(10, len(data) - 8)  # past the gzip header's mtime/flags; gzip's CRC and sizes cover the rest
    data[position] ^= 1 << rng.randrange(8)
    return bytes(data)


def truncation(b: Base, rng: random.Random) -> bytes:
    return b.data[: rng.randrange(1, len(b.data) - 1)]


def corpus(b: Base, *, flips: int, truncations: int) -> list[tuple[str, Callable[[], bytes]]]:
    items: list[tuple[str, Callable[[], bytes]]] = []
    for change, variants in STRUCTURAL:
        for digests in variants:
            label = f"{change.__name__}-{'digests' if digests else 'plain'}"
            items.append((label, lambda c=change, g=digests: _bytes(c(b, g))))
    for index in range(flips):
        rng = random.Random(f"{h.SEED}:oc-flip:{index}")
        items.append((f"bit_flip-{index}", lambda r=rng: bit_flip(b, r)))
    for index in range(truncations):
        rng = random.Random(f"{h.SEED}:oc-cut:{index}")
        items.append((f"truncation-{index}", lambda r=rng: truncation(b, r)))
    return items


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Base:
    world = h.build_backup_world(tmp_path_factory.mktemp("hostile-oc"))
    out = world.base / "oc-out"
    made = h.fork_cli("backup", "create", "--state-dir", world.arena.state, "--output", out, "--format", "openclaw")
    assert made.returncode == 0, made
    archive = next(out.glob("*.tar.gz"))
    members = read_members(archive)
    root = members[0].info.name.split("/")[0]
    data = json.loads(next(m for m in members if m.info.name == f"{root}/manifest.json").data)
    state_path = next(a for a in data["assets"] if a["kind"] == "state")["archivePath"]
    outside = world.base / "outside"
    outside.mkdir()
    (outside / "victim").write_text("must never change\n")
    return Base(archive, archive.read_bytes(), members, root, state_path, world.arena.state, outside)


def run_corpus(b: Base, scratch: Path, items: list[tuple[str, Callable[[], bytes]]]) -> list[str]:
    figures = h.FIGURES["hostile-openclaw-archives"]
    archives: list[tuple[str, Path]] = []
    for label, build in items:
        data = build()
        if data == b.data:
            continue
        archive = scratch / f"{label}-openclaw-backup.tar.gz"
        archive.write_bytes(data)
        archives.append((label, archive))
    problems: list[str] = []
    for (label, _archive), run in zip(archives, h.fork_many([("backup", "verify", a) for _l, a in archives])):
        figures["archives"] += 1
        if run.returncode != 5 or run.traceback or not (run.stdout.strip() or run.stderr.strip()):
            problems.append(f"{label}: verify exit {run.returncode}, expected 5: {run.stdout[-300:]} {run.stderr[-300:]}")
        else:
            figures["rejected by verify (exit 5)"] += 1
    problems += h.restores_refused(archives, b.state, b.outside, scratch, figures)
    for _label, archive in archives:
        archive.unlink()
    return problems


def test_the_untouched_archive_verifies_and_restores(base: Base, tmp_path: Path) -> None:
    assert h.fork_cli("backup", "verify", base.archive).returncode == 0
    plain = tmp_path / "plain-openclaw-backup.tar.gz"
    plain.write_bytes(pack(base.fresh(digests=False)))  # like an archive OpenClaw wrote: no digest record
    assert h.fork_cli("backup", "verify", plain).returncode == 0
    for archive, name in ((base.archive, "t1"), (plain, "t2")):
        run = h.fork_cli("backup", "restore", archive, "--target", tmp_path / name, "--yes")
        assert run.returncode == 0, run
        assert (tmp_path / name / "openclaw.json").is_file()


@pytest.mark.parametrize("group", ["structural", "bit-flips", "truncations"])
def test_hostile_openclaw_archives_are_rejected(base: Base, tmp_path: Path, group: str) -> None:
    items = corpus(base, flips=CI_BIT_FLIPS, truncations=CI_TRUNCATIONS)
    prefix = {"structural": None, "bit-flips": "bit_flip-", "truncations": "truncation-"}[group]
    chosen = [(l, c) for l, c in items if (l.startswith(prefix) if prefix else not l.startswith(("bit_flip-", "truncation-")))]
    problems = run_corpus(base, tmp_path, chosen)
    assert not problems, "\n".join(problems[:30])


@pytest.mark.slow
def test_a_larger_hostile_openclaw_corpus_is_rejected(base: Base, tmp_path: Path) -> None:
    items = [(f"slow-{label}", build) for label, build in corpus(base, flips=SLOW_BIT_FLIPS, truncations=SLOW_TRUNCATIONS)]
    problems = run_corpus(base, tmp_path, items)
    assert not problems, "\n".join(problems[:30])
