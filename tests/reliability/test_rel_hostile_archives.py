"""Hostile archives, built by the test from a real verified backup: every one is rejected.

The corpus (seeded): path traversal in member names and in declared asset
paths, absolute and backslash paths, symlinks escaping the root and members
written through them, hard links, device files, FIFOs and unsupported tar
types, duplicate members, manifests that lie (sizes, SHA-256, totals, kinds,
schema, missing or undeclared members, databases that fail integrity_check
or carry the wrong user_version / role), manifests that are missing, not
first or not JSON, the real archive truncated at random offsets (inside and
between zstd frames), 100 single-bit flips at random positions of the real
archive, garbage appended, and decompression bombs (a 1 GiB zero frame after
the payload; an undeclared 1 GiB member).

For each: ``statekit backup verify`` exits 5 naming a problem; ``backup
restore --target`` (every 5th archive in CI, all in the slow run) exits 5 and creates nothing (not even the target);
``backup restore`` in place exits 5 and leaves the state dir exactly as it
was; nothing appears outside (link targets, traversal destinations).
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
import zstandard

import rel_harness as h

CI_BIT_FLIPS = 100
CI_TRUNCATIONS = 24
CI_RESTORE_EVERY = 5  # restore attempts (target and in place) for every 5th archive in CI; all of them in slow
SLOW_BIT_FLIPS = 400
SLOW_TRUNCATIONS = 120
BOMB_BYTES = 1 << 30


@dataclass
class Member:
    info: tarfile.TarInfo
    data: bytes = b""


def read_members(archive: Path) -> list[Member]:
    raw = zstandard.ZstdDecompressor().stream_reader(open(archive, "rb"), read_across_frames=True).read()
    members = []
    with tarfile.open(fileobj=io.BytesIO(raw), mode="r:") as tar:
        for info in tar:
            handle = tar.extractfile(info) if info.isreg() else None
            members.append(Member(info, handle.read() if handle else b""))
    return members


def pack(members: list[Member]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for member in members:
            info = copy.copy(member.info)
            if info.isreg():
                info.size = len(member.data)
                tar.addfile(info, io.BytesIO(member.data))
            else:
                tar.addfile(info)
    return zstandard.ZstdCompressor(level=3, write_checksum=True).compress(buffer.getvalue())


def manifest_of(members: list[Member]) -> dict:
    return json.loads(members[0].data)


def set_manifest(members: list[Member], manifest: dict) -> None:
    members[0].data = json.dumps(manifest, indent=1).encode()


def tar_info(name: str, kind: bytes = tarfile.REGTYPE, linkname: str = "", mode: int = 0o600) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.mode = kind, linkname, mode
    return info


def declare(members: list[Member], info: tarfile.TarInfo, data: bytes = b"", **fields) -> None:
    """Append a member and declare it in the manifest, so only the property under test is wrong."""
    manifest = manifest_of(members)
    asset = {
        "id": f"state/{info.name.rsplit('/', 1)[-1]}", "kind": "file", "role": "state", "agent_id": None, "schema_version": None,
        "source_path": "/x/" + info.name.rsplit("/", 1)[-1], "archive_path": info.name.rstrip("/") or "x", "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(), "mode": 0o600, "mtime": 0,
    }
    asset.update(fields)
    manifest["assets"].append(asset)
    manifest["totals"]["assets"] += 1
    manifest["totals"]["bytes"] += asset["size"]
    set_manifest(members, manifest)
    members.append(Member(info, data))


def zstd_frame_ends(data: bytes) -> list[int]:
    """Offsets where a zstd (or skippable) frame ends."""
    ends, pos = [], 0
    while pos + 4 <= len(data):
        magic = int.from_bytes(data[pos : pos + 4], "little")
        if 0x184D2A50 <= magic <= 0x184D2A5F:
            pos += 8 + int.from_bytes(data[pos + 4 : pos + 8], "little")
        else:
            d = data[pos + 4]
            single, checksum, dict_flag, fcs = (d >> 5) & 1, (d >> 2) & 1, d & 3, d >> 6
            pos += 5 + (0 if single else 1) + (0, 1, 2, 4)[dict_flag] + ((1 if single else 0), 2, 4, 8)[fcs]
            while True:
                block = int.from_bytes(data[pos : pos + 3], "little")
                pos += 3 + (1 if (block >> 1) & 3 == 1 else block >> 3)
                if block & 1:
                    break
            pos += 4 if checksum else 0
        ends.append(pos)
    return ends


# --------------------------------------------------------------------------- the corpus


@dataclass
class Base:
    archive: Path
    data: bytes
    members: list[Member]
    root: str
    state: Path
    outside: Path  # where escaping links point and traversals would land

    def fresh(self) -> list[Member]:
        return [Member(copy.copy(m.info), m.data) for m in self.members]


Change = Callable[[Base, random.Random], "bytes | list[Member]"]


def _payload(base: Base, rel: str) -> str:
    return f"{base.root}/payload/state/{rel}"


def _file_members(members: list[Member], kind: str = "file") -> list[int]:
    manifest = manifest_of(members)
    declared = {a["archive_path"]: a for a in manifest["assets"]}
    return [i for i, m in enumerate(members[1:], 1) if declared.get(m.info.name, {}).get("kind") == kind]


def traversal(base: Base, rng: random.Random) -> list[Member]:
    members = base.fresh()
    name = rng.choice([f"{base.root}/payload/state/../../../{base.outside.name}/evil", f"{base.root}/../evil", "../evil",
                       f"{base.root}/payload/state/a/../../../../evil", f"{base.root}/payload/./state/evil", f"{base.root}/payload/state/..",
                       f"{base.root}/payload/state//evil"])
    declare(members, tar_info(name), b"escaped\n")
    return members


def traversal_declared_only(base: Base, rng: random.Random) -> list[Member]:
    members = base.fresh()
    manifest = manifest_of(members)
    asset = rng.choice([a for a in manifest["assets"] if a["kind"] == "file"])
    asset["archive_path"] = asset["archive_path"].replace("/payload/state/", rng.choice(["/payload/state/../../", "/payload/../../"]), 1)
    set_manifest(members, manifest)
    return members


def absolute(base: Base, rng: random.Random) -> list[Member]:
    members = base.fresh()
    name = rng.choice([str(base.outside / "evil"), "/etc/statekit-evil", "//evil", "C:/evil", "C:\\evil"])
    declare(members, tar_info(name), b"absolute\n")
    return members


def backslash(base: Base, rng: random.Random) -> list[Member]:
    members = base.fresh()
    declare(members, tar_info(f"{base.root}/payload/state/dir\\..\\..\\evil"), b"x")
    return members


def escaping_symlink(base: Base, rng: random.Random) -> list[Member]:
    members = base.fresh()
    target = rng.choice([str(base.outside), "/etc/passwd", "../../../../..", f"../../../{base.outside.name}", "/", "..\\..\\x"])
    name = _payload(base, f"link-{rng.randrange(1000)}")
    info = tar_info(name, tarfile.SYMTYPE, target, 0o777)
    declare(members, info, b"", kind="symlink", size=len(target.encode()), sha256=hashlib.sha256(target.encode()).hexdigest(),
            link_target=target, link_scope="internal")
    return members


def write_through_symlink(base: Base, rng: random.Random) -> list[Member]:
    members = base.fresh()
    link = _payload(base, "through")
    target = rng.choice(["workspace", str(base.outside), "../../.."])
    declare(members, tar_info(link, tarfile.SYMTYPE, target, 0o777), b"", kind="symlink", size=len(target),
            sha256=hashlib.sha256(target.encode()).hexdigest(), link_target=target, link_scope="internal")
    declare(members, tar_info(f"{link}/evil.txt"), b"written through a link\n")
    return members


def hard_link(base: Base, rng: random.Random) -> list[Member]:
    members = base.fresh()
    inside = rng.choice([m.info.name for m in members[1:] if m.info.isreg()])
    target = rng.choice(["/etc/passwd", str(base.outside / "victim"), inside, "../../victim"])
    declare(members, tar_info(_payload(base, "hard"), tarfile.LNKTYPE, target), b"")
    return members


def special_member(base: Base, rng: random.Random) -> list[Member]:
    members = base.fresh()
    kind = rng.choice([tarfile.CHRTYPE, tarfile.BLKTYPE, tarfile.FIFOTYPE, b"V", b"M"])  # (CONTTYPE "7" is a regular file)
    info = tar_info(_payload(base, "special"), kind)
    info.devmajor, info.devminor = 1, 3
    declare(members, info, b"")
    return members


def duplicate(base: Base, rng: random.Random) -> list[Member]:
    members = base.fresh()
    index = rng.choice(_file_members(members))
    twin = Member(copy.copy(members[index].info), rng.choice([members[index].data, b"the second copy differs\n"]))
    members.insert(rng.randint(index + 1, len(members)), twin)
    return members


def lying_size(base: Base, rng: random.Random) -> list[Member]:
    members = base.fresh()
    manifest = manifest_of(members)
    asset = rng.choice([a for a in manifest["assets"] if a["kind"] in ("file", "sqlite")])
    delta = rng.choice([-1, 1, 4096, -asset["size"]]) or 1
    asset["size"] = max(0, asset["size"] + delta)
    manifest["totals"]["bytes"] = sum(a["size"] for a in manifest["assets"])
    set_manifest(members, manifest)
    return members


def lying_hash(base: Base, rng: random.Random) -> list[Member]:
    members = base.fresh()
    manifest = manifest_of(members)
    asset = rng.choice([a for a in manifest["assets"] if a.get("sha256")])
    asset["sha256"] = hashlib.sha256(rng.randbytes(8)).hexdigest()
    set_manifest(members, manifest)
    return members


def content_swapped(base: Base, rng: random.Random) -> list[Member]:
    """The bytes change, the manifest does not (same size: a targeted edit)."""
    members = base.fresh()
    index = rng.choice([i for i in _file_members(members) if members[i].data])
    data = bytearray(members[index].data)
    data[rng.randrange(len(data))] ^= 0x20
    members[index].data = bytes(data)
    return members


def lying_totals(base: Base, rng: random.Random) -> list[Member]:
    members = base.fresh()
    manifest = manifest_of(members)
    key = rng.choice(["assets", "bytes"])
    manifest["totals"][key] += rng.choice([1, -1, 10**6])
    manifest["totals"][key] = max(0, manifest["totals"][key])
    set_manifest(members, manifest)
    return members


def lying_kind(base: Base, rng: random.Random) -> list[Member]:
    members = base.fresh()
    manifest = manifest_of(members)
    asset = rng.choice(manifest["assets"])
    asset["kind"] = rng.choice([k for k in ("file", "dir", "symlink") if k != asset["kind"]])
    if asset["kind"] == "symlink":
        asset["link_target"], asset["link_scope"] = "x", "internal"
    set_manifest(members, manifest)
    return members


def missing_member(base: Base, rng: random.Random) -> list[Member]:
    members = base.fresh()
    del members[rng.choice(_file_members(members) + _file_members(members, "sqlite"))]
    return members


def undeclared_member(base: Base, rng: random.Random) -> list[Member]:
    members = base.fresh()
    members.insert(rng.randint(1, len(members)), Member(tar_info(_payload(base, "undeclared.txt")), b"not in the manifest\n"))
    return members


def schema_violation(base: Base, rng: random.Random) -> list[Member]:
    members = base.fresh()
    manifest = manifest_of(members)
    change = rng.choice(["format", "version", "asset-field", "extra", "mode", "path", "types"])
    if change == "format":
        manifest["format"] = "something-else"
    elif change == "version":
        manifest["schema_version"] = 2
    elif change == "asset-field":
        del manifest["assets"][rng.randrange(len(manifest["assets"]))]["sha256"]
    elif change == "extra":
        manifest["assets"][0]["evil"] = True
    elif change == "mode":
        manifest["assets"][0]["mode"] = 0o170777
    elif change == "path":
        manifest["state_dir"] = "relative/path"
    else:
        manifest["assets"] = {"not": "a list"}
    set_manifest(members, manifest)
    return members


def bad_manifest_member(base: Base, rng: random.Random) -> list[Member]:
    members = base.fresh()
    change = rng.choice(["not-first", "missing", "twice", "not-json", "huge-nesting", "dir"])
    if change == "not-first":
        members.insert(2, members.pop(0))
    elif change == "missing":
        members.pop(0)
    elif change == "twice":
        members.insert(3, Member(copy.copy(members[0].info), members[0].data))
    elif change == "not-json":
        members[0].data = members[0].data[: len(members[0].data) // 2]
    elif change == "huge-nesting":
        members[0].data = b"[" * 100_000 + b"]" * 100_000
    else:
        members[0] = Member(tar_info(members[0].info.name, tarfile.DIRTYPE, mode=0o700))
    return members


def corrupt_database(base: Base, rng: random.Random) -> list[Member]:
    """A database whose bytes match its (rewritten) manifest record but that fails integrity_check."""
    members = base.fresh()
    manifest = manifest_of(members)
    dbs = [i for i in _file_members(members, "sqlite") if len(members[i].data) > 8192]
    index = rng.choice(dbs)
    data = bytearray(members[index].data)
    how = rng.choice(["truncate", "schema-page", "header"])
    if how == "truncate":  # cut at a page boundary: pages the schema points to are gone
        data = data[: 4096 * rng.randrange(1, len(data) // 4096)]
    elif how == "schema-page":  # the b-tree header of page 1 (sqlite_schema)
        data[100:108] = bytes([0x0D, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x00])
    else:  # the database header: page size / file format bytes
        data[16:24] = rng.randbytes(8)
    members[index].data = bytes(data)
    asset = next(a for a in manifest["assets"] if a["archive_path"] == members[index].info.name)
    asset["size"], asset["sha256"] = len(data), hashlib.sha256(data).hexdigest()
    manifest["totals"]["bytes"] = sum(a["size"] for a in manifest["assets"])
    set_manifest(members, manifest)
    return members


def database_facts_lie(base: Base, rng: random.Random) -> list[Member]:
    members = base.fresh()
    manifest = manifest_of(members)
    asset = rng.choice([a for a in manifest["assets"] if a["kind"] == "sqlite" and a["role"] in ("global", "agent")])
    if rng.random() < 0.5:
        asset["schema_version"] = (asset["schema_version"] or 0) + rng.choice([1, 7])
    else:
        asset["role"] = "agent" if asset["role"] == "global" else "global"
    set_manifest(members, manifest)
    return members


def not_a_database(base: Base, rng: random.Random) -> list[Member]:
    members = base.fresh()
    manifest = manifest_of(members)
    index = rng.choice(_file_members(members, "sqlite"))
    data = rng.choice([b"", b"SQLite format 3\x00" + b"\x00" * 84, b"not sqlite at all"])
    members[index].data = data
    asset = next(a for a in manifest["assets"] if a["archive_path"] == members[index].info.name)
    asset["size"], asset["sha256"] = len(data), hashlib.sha256(data).hexdigest()
    manifest["totals"]["bytes"] = sum(a["size"] for a in manifest["assets"])
    set_manifest(members, manifest)
    return members


def appended_garbage(base: Base, rng: random.Random) -> bytes:
    return base.data + rng.choice([b"\x00" * 512, rng.randbytes(64), b"\x28\xb5\x2f\xfd" + rng.randbytes(16), base.data[:100]])


def bomb_trailing_frame(base: Base, rng: random.Random) -> bytes:
    """A valid archive followed by a frame of 1 GiB of zeros (far past what the manifest declares)."""
    compressor = zstandard.ZstdCompressor(level=1, write_checksum=True)
    out = io.BytesIO()
    with compressor.stream_writer(out, closefd=False, size=BOMB_BYTES) as writer:
        zero = bytes(1 << 22)
        for _ in range(BOMB_BYTES // len(zero)):
            writer.write(zero)
    return base.data + out.getvalue()


def bomb_member(base: Base, rng: random.Random) -> bytes:
    """An undeclared member of 1 GiB of zeros inside the tar stream (the manifest declares the original sizes)."""
    members = base.fresh()
    buffer = io.BytesIO()
    compressor = zstandard.ZstdCompressor(level=1, write_checksum=True)
    with compressor.stream_writer(buffer, closefd=False) as writer:
        with tarfile.open(fileobj=writer, mode="w|", format=tarfile.PAX_FORMAT) as tar:
            for member in members:
                info = copy.copy(member.info)
                if info.isreg():
                    info.size = len(member.data)
                    tar.addfile(info, io.BytesIO(member.data))
                else:
                    tar.addfile(info)
            info = tar_info(_payload(base, "bomb.bin"))
            info.size = BOMB_BYTES
            tar.addfile(info, _Zeros(BOMB_BYTES))
    return buffer.getvalue()


class _Zeros(io.RawIOBase):
    def __init__(self, size: int) -> None:
        self.left = size

    def read(self, n: int = -1) -> bytes:
        n = self.left if n < 0 else min(n, self.left)
        self.left -= n
        return bytes(n)


STRUCTURAL: list[tuple[Change, int]] = [  # (generator, instances in CI)
    (traversal, 7), (traversal_declared_only, 3), (absolute, 5), (backslash, 1), (escaping_symlink, 6), (write_through_symlink, 3),
    (hard_link, 4), (special_member, 6), (duplicate, 4), (lying_size, 4), (lying_hash, 4), (content_swapped, 4), (lying_totals, 3),
    (lying_kind, 3), (missing_member, 3), (undeclared_member, 2), (schema_violation, 7), (bad_manifest_member, 6),
    (corrupt_database, 3), (database_facts_lie, 2), (not_a_database, 3), (appended_garbage, 4), (bomb_trailing_frame, 1), (bomb_member, 1),
]


def bit_flip(base: Base, rng: random.Random) -> bytes:
    data = bytearray(base.data)
    data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    return bytes(data)


def _decoded(data: bytes) -> bytes:
    return zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True).read()


def complete_cuts(data: bytes) -> list[int]:
    """Frame boundaries where everything that decodes to content is still there (only empty frames and
    the digest trailer are cut off): the archive is complete, see the test of its own below."""
    full = _decoded(data)
    return [end for end in zstd_frame_ends(data)[:-1] if _decoded(data[:end]) == full]


def truncation(base: Base, rng: random.Random) -> bytes:
    """Cut inside a frame, at a frame boundary that loses content, or a few bytes short of the end."""
    ends = zstd_frame_ends(base.data)
    complete = set(complete_cuts(base.data))
    lossy = [e for e in ends[:-1] if e not in complete] or [len(base.data) // 2]
    while True:
        cut = rng.choice([rng.randrange(1, len(base.data)), rng.choice(lossy), len(base.data) - rng.randint(1, 8)])
        if cut not in complete:
            return base.data[:cut]


# --------------------------------------------------------------------------- running them


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Base:
    world = h.build_backup_world(tmp_path_factory.mktemp("hostile"))
    made = h.fork_cli(*world.args())
    assert made.returncode == 0, made
    archive = h.archives(world.arena.output)[0]
    members = read_members(archive)
    outside = world.base / "outside"
    outside.mkdir()
    (outside / "victim").write_text("must never change\n")
    return Base(archive, archive.read_bytes(), members, members[0].info.name.split("/")[0], world.arena.state, outside)


def corpus(base: Base, *, flips: int, truncations: int, scale: int = 1) -> list[tuple[str, Callable[[], bytes]]]:
    """(label, builder) for every hostile archive, seeded."""
    items: list[tuple[str, Callable[[], bytes]]] = []
    for change, count in STRUCTURAL:
        for index in range(count * (1 if change.__name__.startswith("bomb") else scale)):
            rng = random.Random(f"{h.SEED}:{change.__name__}:{index}")
            items.append((f"{change.__name__}-{index}", lambda c=change, r=rng: _bytes(c(base, r))))
    for index in range(flips):
        rng = random.Random(f"{h.SEED}:flip:{index}")
        items.append((f"bit_flip-{index}", lambda r=rng: bit_flip(base, r)))
    for index in range(truncations):
        rng = random.Random(f"{h.SEED}:cut:{index}")
        items.append((f"truncation-{index}", lambda r=rng: truncation(base, r)))
    return items


def _bytes(made: bytes | list[Member]) -> bytes:
    return made if isinstance(made, bytes) else pack(made)


def run_corpus(base: Base, scratch: Path, items: list[tuple[str, Callable[[], bytes]]], restore_every: int) -> list[str]:
    """Write every archive, verify them all (in parallel), then try the sampled restores; check nothing leaked out."""
    figures = h.FIGURES["hostile-archives"]
    archives: list[tuple[str, Path]] = []
    for label, build in items:
        data = build()
        if data == base.data:
            continue
        archive = scratch / f"openclaw-backup-{label}.tar.zst"
        archive.write_bytes(data)
        archives.append((label, archive))
    problems: list[str] = []
    verified = h.fork_many([("backup", "verify", archive) for _label, archive in archives])
    for (label, _archive), run in zip(archives, verified):
        figures["archives"] += 1
        figures[f"kind:{label.rsplit('-', 1)[0]}"] += 1
        if run.returncode != 5 or run.traceback:
            problems.append(f"{label}: verify exit {run.returncode}, expected 5: {run.stdout[-300:]} {run.stderr[-300:]}")
        elif not (run.stdout.strip() or run.stderr.strip()):
            problems.append(f"{label}: verify rejected it without naming a problem")
        else:
            figures["rejected by verify (exit 5)"] += 1
    sampled = archives[::restore_every]
    problems += h.restores_refused(sampled, base.state, base.outside, scratch, figures)
    for _label, archive in archives:
        archive.unlink()
    return problems


def test_the_untouched_archive_verifies_and_restores(base: Base, tmp_path: Path) -> None:
    assert h.fork_cli("backup", "verify", base.archive).returncode == 0
    assert pack(base.fresh())  # the builders round-trip
    run = h.fork_cli("backup", "restore", base.archive, "--target", tmp_path / "t", "--yes")
    assert run.returncode == 0, run


@pytest.mark.parametrize("group", ["structural", "bit-flips", "truncations"])
def test_hostile_archives_are_rejected(base: Base, tmp_path: Path, group: str) -> None:
    items = corpus(base, flips=CI_BIT_FLIPS, truncations=CI_TRUNCATIONS)
    prefix = {"structural": None, "bit-flips": "bit_flip-", "truncations": "truncation-"}[group]
    chosen = [(l, b) for l, b in items if (l.startswith(prefix) if prefix else not l.startswith(("bit_flip-", "truncation-")))]
    problems = run_corpus(base, tmp_path, chosen, CI_RESTORE_EVERY)
    assert not problems, "\n".join(problems[:30])


@pytest.mark.slow
def test_a_larger_hostile_corpus_is_rejected(base: Base, tmp_path: Path) -> None:
    items = corpus(base, flips=SLOW_BIT_FLIPS, truncations=SLOW_TRUNCATIONS, scale=4)
    items = [(f"slow-{label}", build) for label, build in items]
    problems = run_corpus(base, tmp_path, items, 1)
    assert not problems, "\n".join(problems[:30])


def test_an_archive_cut_before_its_digest_trailer_is_complete(base: Base, tmp_path: Path) -> None:
    """Cutting exactly at the last frame boundary removes only the digest trailer: every asset is still there and
    hash-checked, so verify may accept it -- but it must say the trailer is missing, and restore must give the full state."""
    cuts = complete_cuts(base.data)
    assert cuts and zstd_frame_ends(base.data)[-1] == len(base.data)
    archive = tmp_path / "openclaw-backup-cut.tar.zst"
    archive.write_bytes(base.data[: cuts[0]])
    run = h.fork_cli("backup", "verify", archive)
    h.FIGURES["hostile-archives"]["cut before the trailer (complete)"] += 1
    if run.returncode == 5:
        return
    assert run.returncode == 0 and "no digest trailer" in run.stdout + run.stderr, run
    manifest = manifest_of(base.members)
    assert f"Assets verified: {len(manifest['assets'])} of {len(manifest['assets'])}" in run.stdout, run


@pytest.mark.parametrize("body", [b"[" * 100_000 + b"]" * 100_000, b'{"a": ' * 50_000 + b"1" + b"}" * 50_000])
def test_a_manifest_nested_100k_deep_is_rejected_not_a_traceback(base: Base, tmp_path: Path, body: bytes) -> None:
    """Found by the slow corpus: the manifest decoder let RecursionError escape (traceback, exit 1)."""
    members = base.fresh()
    members[0].data = body
    archive = tmp_path / "openclaw-backup-deep.tar.zst"
    archive.write_bytes(pack(members))
    run = h.fork_cli("backup", "verify", archive)
    assert run.returncode == 5 and not run.traceback, run
    restore = h.fork_cli("backup", "restore", archive, "--target", tmp_path / "t", "--yes")
    assert restore.returncode == 5 and not restore.traceback and not (tmp_path / "t").exists(), restore
