"""Verify an archive in one streaming pass: statekit ``.tar.zst`` or OpenClaw ``.tar.gz``.

Every problem becomes one line in :attr:`VerifyReport.problems`; the archive
is never modified. Checks for statekit archives (backup-contract.md, Verify):
readable zstd frames (content checksums, no truncation, no trailing garbage)
and tar; ``<root>/manifest.json`` first and schema-valid; every payload member
declared and every declared asset present; size and SHA-256 per asset; member
paths relative, without ``..``, inside ``<root>/``; no link escaping the root,
no hard link, no device or FIFO, nothing nested beneath a symlink; every
SQLite asset passes ``integrity_check`` with its recorded ``user_version`` and
role; decompressed bytes bounded by the manifest's declared totals.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import shutil
import tarfile
import tempfile
import unicodedata
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

import zstandard

from statekit.values import iso_to_ms
from statekit.backup import manifest as mf
from statekit.backup import openclaw_format as ocf
from statekit.backup.archive import (DIGEST_MAGIC, DIGEST_TAG, GZIP_TRAILER_LEN, GZIP_TRAILER_TAG, BombError, copy_member, gzip_trailer,
                            open_tar_stream, parse_digest_trailer, sniff_format)
from statekit.backup.snapshot import DbFacts, inspect_db
from statekit.db import SQLITE_HEADER
from statekit.errors import StatekitError
from statekit.fsutil import CHUNK, PRIVATE_FILE_MODE

MANIFEST_MAX = 256 << 20  # bytes: a manifest listing ~500k entries
OPENCLAW_MANIFEST_MAX = 1_000_000
OPENCLAW_MAX_ENTRIES = 200_000
OPENCLAW_RATIO = 1100  # decompressed : compressed bound for archives without declared totals
ABSOLUTE_CAP = 1 << 40  # 1 TiB: no backup we write or read is bigger
HEADER_ALLOWANCE = 3 * 512  # per member: header, PAX header, padding

STATEKIT = "statekit"
OPENCLAW = "openclaw-tar.gz"


@dataclass
class VerifyReport:
    path: Path
    format: str
    ok: bool = False
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    manifest: dict[str, Any] | None = None
    entries: int = 0
    assets_verified: int = 0
    decompressed_bytes: int = 0
    oc_members: dict[str, Any] = field(default_factory=dict)  # OpenClaw archives: name -> OcMember (restore plans from it)
    digests: bool = False  # an OpenClaw archive carrying statekit's per-entry digests

    @property
    def root(self) -> str | None:
        if self.manifest is None:
            return None
        if self.format == OPENCLAW:
            return self.manifest.get("archiveRoot")
        assets = self.manifest.get("assets") or []
        return assets[0]["archive_path"].split("/", 1)[0] if assets else None

    def to_json(self) -> dict[str, Any]:
        totals = (self.manifest or {}).get("totals") or {}
        return {
            "ok": self.ok,
            "archive": str(self.path),
            "format": self.format,
            "root": self.root,
            "created_at": (self.manifest or {}).get("created_at") or (self.manifest or {}).get("createdAt"),
            "assets": totals.get("assets", len((self.manifest or {}).get("assets") or [])),
            "assets_verified": self.assets_verified,
            "entries": self.entries,
            "decompressed_bytes": self.decompressed_bytes,
            "problems": self.problems,
            "notes": self.notes,
            **({"statekit_digests": self.digests} if self.format == OPENCLAW else {}),
        }


# --------------------------------------------------------------------------- shared checks


def member_path_problem(name: str, root: str | None) -> str | None:
    """Why a member name is unsafe (absolute, ``..``, backslash, outside the root), or None."""
    if not name:
        return "member with an empty path"
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return f"member {name!r} has an absolute path"
    if "\\" in name:
        return f"member {name!r} uses backslashes (only forward slashes are allowed)"
    parts = name.rstrip("/").split("/")
    if any(part in ("..", ".") for part in parts):
        return f"member {name!r} has path traversal segments ('.' or '..')"
    if any(part == "" for part in parts):
        return f"member {name!r} has an empty path segment"
    if root is not None and parts[0] != root:
        return f"member {name!r} is outside the archive root {root}/"
    return None


def link_escapes(name: str, target: str, root: str) -> bool:
    """True when a symlink member's target leaves ``<root>/`` (absolute targets always do)."""
    if not target or target.startswith("/") or "\\" in target:
        return True
    joined = os.path.normpath(os.path.join(os.path.dirname(name), target))
    return not (joined == root or joined.startswith(root + "/"))


def _beneath_symlink(name: str, links: set[str]) -> str | None:
    path = PurePosixPath(name)
    for parent in path.parents:
        if str(parent) in links:
            return str(parent)
    return None


def _member_type_problem(member: tarfile.TarInfo) -> str | None:
    if member.ischr() or member.isblk():
        return f"member {member.name!r} is a device file"
    if member.isfifo():
        return f"member {member.name!r} is a FIFO"
    if not (member.isreg() or member.isdir() or member.issym() or member.islnk()):
        return f"member {member.name!r} has unsupported tar type {member.type!r}"
    return None


class ScratchError(Exception):
    """Writing a scratch copy failed (full or failing disk): says nothing about the archive."""

    def __init__(self, exc: OSError) -> None:
        super().__init__(exc.strerror or str(exc))
        self.where = exc.filename


class _MemberSink:
    """Hash a member's bytes and, for databases, spill them to a private scratch file."""

    def __init__(self, scratch: Callable[[], Path], spill: bool) -> None:
        self.digest = hashlib.sha256()
        self.size = 0
        self._scratch = scratch
        self.spilled: Path | None = None
        self._fh: BinaryIO | None = None
        if spill:
            self._open()

    def _open(self) -> None:
        try:
            fd, name = tempfile.mkstemp(prefix="db-", suffix=".sqlite", dir=self._scratch())
        except OSError as exc:
            raise ScratchError(exc) from None
        os.fchmod(fd, PRIVATE_FILE_MODE)
        self.spilled = Path(name)
        self._fh = os.fdopen(fd, "wb")

    def __call__(self, block: bytes) -> None:
        self.digest.update(block)
        self.size += len(block)
        if self._fh is not None:
            try:
                self._fh.write(block)
            except OSError as exc:
                raise ScratchError(exc) from None

    def close(self) -> None:
        if self._fh is not None:
            fh, self._fh = self._fh, None
            try:
                fh.close()
            except OSError as exc:
                raise ScratchError(exc) from None

    def discard(self) -> None:
        self.close()
        if self.spilled is not None:
            try:
                self.spilled.unlink(missing_ok=True)
            except OSError:
                pass  # the scratch dir is removed as a whole at the end
            self.spilled = None


class _Scratch:
    """A private (0700) temp dir created on first use, removed at the end."""

    def __init__(self, parent: Path | None) -> None:
        self._parent = parent
        self.path: Path | None = None

    def __call__(self) -> Path:
        if self.path is None:
            self.path = Path(tempfile.mkdtemp(prefix=".statekit-verify-", dir=self._parent))
        return self.path

    def cleanup(self) -> None:
        if self.path is not None:
            shutil.rmtree(self.path, ignore_errors=True)
            self.path = None


# --------------------------------------------------------------------------- zstd frame structure


def zstd_structure_problem(path: Path) -> str | None:
    """Walk the zstd frame and block headers: catches truncation and trailing garbage.

    (A zstd stream reader stops quietly at a cut-off frame; content checksums
    are checked by the decompressor while the payload streams.)
    """
    size = os.path.getsize(path)
    with open(path, "rb") as fh:
        pos = 0
        frames = 0
        while pos < size:
            fh.seek(pos)
            magic = fh.read(4)
            if len(magic) < 4:
                return f"archive is truncated (partial zstd frame header at byte {pos})"
            value = int.from_bytes(magic, "little")
            if 0x184D2A50 <= value <= 0x184D2A5F:  # skippable frame
                length = fh.read(4)
                if len(length) < 4:
                    return f"archive is truncated (skippable frame at byte {pos})"
                pos += 8 + int.from_bytes(length, "little")
                if pos > size:
                    return f"archive is truncated (skippable frame runs past the end of the file)"
                continue
            if magic != b"\x28\xb5\x2f\xfd":
                return f"unexpected data after the last zstd frame at byte {pos}" if frames else "not a zstd archive"
            descriptor = fh.read(1)
            if not descriptor:
                return f"archive is truncated (zstd frame header at byte {pos})"
            d = descriptor[0]
            fcs_flag, single, checksum, dict_flag = d >> 6, (d >> 5) & 1, (d >> 2) & 1, d & 3
            header = 1 + (0 if single else 1) + (0, 1, 2, 4)[dict_flag] + ((1 if single else 0), 2, 4, 8)[fcs_flag]
            pos += 4 + header
            while True:
                fh.seek(pos)
                raw = fh.read(3)
                if len(raw) < 3:
                    return f"archive is truncated (zstd block header at byte {pos} of {size})"
                block = int.from_bytes(raw, "little")
                last, btype, bsize = block & 1, (block >> 1) & 3, block >> 3
                if btype == 3:
                    return f"corrupt zstd block header at byte {pos}"
                pos += 3 + (1 if btype == 1 else bsize)
                if pos > size:
                    return f"archive is truncated (zstd block at byte {pos - bsize} runs past the end of the file)"
                if last:
                    break
            pos += 4 if checksum else 0
            if pos > size:
                return "archive is truncated (zstd frame checksum missing)"
            frames += 1
    return None if frames else "archive holds no zstd frame"


def _frame_end(fh: BinaryIO, pos: int, size: int) -> int | None:
    """End offset of the zstd frame starting at ``pos`` (None if its headers do not add up)."""
    fh.seek(pos + 4)
    descriptor = fh.read(1)
    if not descriptor:
        return None
    d = descriptor[0]
    fcs_flag, single, checksum, dict_flag = d >> 6, (d >> 5) & 1, (d >> 2) & 1, d & 3
    pos += 5 + (0 if single else 1) + (0, 1, 2, 4)[dict_flag] + ((1 if single else 0), 2, 4, 8)[fcs_flag]
    while True:
        fh.seek(pos)
        raw = fh.read(3)
        if len(raw) < 3:
            return None
        block = int.from_bytes(raw, "little")
        btype, bsize = (block >> 1) & 3, block >> 3
        pos += 3 + (1 if btype == 1 else bsize)
        if pos > size:
            return None
        if block & 1:
            break
    return pos + (4 if checksum else 0)


def _hash_range(fh: BinaryIO, start: int, end: int) -> bytes:
    digest = hashlib.sha256()
    fh.seek(start)
    left = end - start
    while left > 0:
        block = fh.read(min(CHUNK, left))
        if not block:
            break
        digest.update(block)
        left -= len(block)
    return digest.digest()


def archive_digest_problem(path: Path) -> tuple[str | None, bool]:
    """Check the archive digest trailer: (problem or None, whether a trailer was found).

    Covers every compressed byte, including bits a decoder ignores. Archives
    without a trailer (built by other tools or tests) are checked by their
    frame checksums and member hashes only.
    """
    size = os.path.getsize(path)
    with open(path, "rb") as fh:
        if fh.read(4) != b"\x28\xb5\x2f\xfd":
            return None, False
        head_end = _frame_end(fh, 0, size)
        if head_end is None or size < head_end + 8:
            return None, False
        fh.seek(size - 8 - len(DIGEST_TAG) - 64)
        tail = fh.read()
        parsed = parse_digest_trailer(tail[8:])
        magic_ok = int.from_bytes(tail[:4], "little") == DIGEST_MAGIC
        if parsed is None and not magic_ok:
            return None, False
        if parsed is None or not magic_ok or int.from_bytes(tail[4:8], "little") != len(tail) - 8:
            return "archive digest trailer is malformed (altered)", True
        trailer_start = size - len(tail)
        if trailer_start < head_end:
            return "archive digest trailer overlaps the manifest frame", True
        head_sha, payload_sha = parsed
        if _hash_range(fh, 0, head_end) != head_sha:
            return "archive bytes do not match the recorded digest (manifest frame altered)", True
        if _hash_range(fh, head_end, trailer_start) != payload_sha:
            return "archive bytes do not match the recorded digest (payload altered)", True
    return None, True


# --------------------------------------------------------------------------- statekit format


def _declared_bound(manifest: dict[str, Any], manifest_len: int) -> int:
    totals = manifest.get("totals") or {}
    assets = int(totals.get("assets") or 0)
    declared = int(totals.get("bytes") or 0)
    bound = manifest_len + declared + (assets + 2) * HEADER_ALLOWANCE + (declared // 100) + (1 << 20)
    return min(bound, ABSOLUTE_CAP)


def _manifest_consistency(manifest: dict[str, Any], root: str) -> tuple[list[str], dict[str, dict[str, Any]]]:
    problems: list[str] = []
    declared: dict[str, dict[str, Any]] = {}
    for asset in manifest["assets"]:
        path = asset["archive_path"]
        problem = member_path_problem(path, root)
        if problem:
            problems.append(f"manifest asset {asset['id']}: {problem}")
            continue
        if mf.payload_rel(path, root) is None:
            problems.append(f"manifest asset {asset['id']}: archive path {path} is not under {root}/payload/state or {root}/payload/external/<id>")
            continue
        if path in declared:
            problems.append(f"manifest declares {path} twice")
            continue
        declared[path] = asset
    totals = manifest["totals"]
    if totals["assets"] != len(manifest["assets"]):
        problems.append(f"manifest totals say {totals['assets']} assets, it lists {len(manifest['assets'])}")
    if totals["bytes"] != sum(a["size"] for a in manifest["assets"]):
        problems.append("manifest totals.bytes does not match the sum of asset sizes")
    return problems, declared


def _db_problem(asset: dict[str, Any], facts: DbFacts) -> str | None:
    where = f"sqlite asset {asset['archive_path']}"
    if not facts.ok:
        return f"{where} fails integrity_check: {facts.integrity}"
    if facts.user_version != asset.get("schema_version"):
        return f"{where}: user_version is {facts.user_version}, manifest records {asset.get('schema_version')}"
    if facts.meta_role in ("global", "agent") and facts.meta_role != asset["role"]:
        return f"{where}: schema_meta role is {facts.meta_role!r}, manifest records {asset['role']!r}"
    if facts.meta_agent_id and asset.get("agent_id") and facts.meta_agent_id != asset["agent_id"]:
        return f"{where}: schema_meta agent id is {facts.meta_agent_id!r}, manifest records {asset['agent_id']!r}"
    return None


def _check_asset_member(
    member: tarfile.TarInfo, asset: dict[str, Any], tar: tarfile.TarFile, root: str, scratch: _Scratch
) -> str | None:
    """Check one declared member against its manifest record; returns a problem or None."""
    kind, name = asset["kind"], member.name
    if kind == "dir":
        return None if member.isdir() else f"member {name} should be a directory"
    if kind == "symlink" and asset.get("link_scope") == "internal":
        if not member.issym():
            return f"member {name} should be a symlink"
        if member.linkname != asset.get("link_target"):
            return f"symlink {name} points to {member.linkname!r}, manifest records {asset.get('link_target')!r}"
        if link_escapes(name, member.linkname, root):
            return f"symlink {name} points outside the archive root ({member.linkname})"
        expected = hashlib.sha256(member.linkname.encode("utf-8", "surrogateescape")).hexdigest()
        return None if expected == asset["sha256"] else f"symlink {name}: sha256 mismatch"
    if not member.isreg():
        return f"member {name} should be a regular file (manifest kind {kind})"
    if member.size != asset["size"]:
        return f"member {name}: size {member.size}, manifest records {asset['size']}"
    sink = _MemberSink(scratch, spill=kind == "sqlite")
    try:
        handle = tar.extractfile(member)
        got = copy_member(handle, sink, member.size) if handle is not None else 0
        sink.close()
        if got != member.size:
            return f"member {name} is truncated ({got} of {member.size} bytes)"
        if sink.digest.hexdigest() != asset["sha256"]:
            return f"member {name}: sha256 mismatch (content differs from the manifest)"
        if kind == "symlink":
            text = asset.get("link_target", "").encode("utf-8", "surrogateescape")
            return None if hashlib.sha256(text).hexdigest() == asset["sha256"] else f"symlink {name}: target text mismatch"
        if kind == "sqlite" and sink.spilled is not None:
            return _db_problem(asset, inspect_db(sink.spilled))
        return None
    finally:
        sink.discard()


def _verify_statekit(report: VerifyReport, scratch: _Scratch, max_bytes: int) -> None:
    structure = zstd_structure_problem(report.path)
    if structure:
        report.problems.append(structure)
    else:
        digest_problem, has_trailer = archive_digest_problem(report.path)
        if digest_problem:
            report.problems.append(digest_problem)
        elif not has_trailer:
            report.notes.append("archive has no digest trailer: checked by zstd frame checksums and member hashes only")
    declared: dict[str, dict[str, Any]] = {}
    seen: set[str] = set()
    links: set[str] = set()
    root: str | None = None
    stream_ok = False
    try:
        with open_tar_stream(report.path, "zstd", min(MANIFEST_MAX + (64 << 10), max_bytes)) as (tar, counter):
            for member in tar:
                report.entries += 1
                if root is None:
                    root = _read_manifest(report, tar, member)
                    if root is None:
                        return
                    consistency, declared = _manifest_consistency(report.manifest or {}, root)
                    report.problems.extend(consistency)
                    counter.limit = min(_declared_bound(report.manifest or {}, member.size), max_bytes)
                    continue
                _check_member(report, tar, member, root, declared, seen, links, scratch)
            # Drain to the end so every zstd content checksum is checked.
            while counter.read(CHUNK):
                pass
            report.decompressed_bytes = counter.count
            stream_ok = True
    except BombError as exc:
        report.problems.append(f"decompression bomb: {exc} (the manifest declares far less); stopped reading")
    except (tarfile.TarError, zstandard.ZstdError, EOFError, OSError, zlib.error) as exc:
        report.problems.append(f"archive is unreadable (corrupt or truncated) after {report.entries} members: {exc}")
    if root is None and stream_ok:
        report.problems.append("archive is empty: no manifest member")
    if stream_ok and not structure:
        for path, asset in declared.items():
            if path not in seen:
                report.problems.append(f"asset {asset['id']} ({path}) is missing from the payload")


def _read_manifest(report: VerifyReport, tar: tarfile.TarFile, member: tarfile.TarInfo) -> str | None:
    parts = member.name.split("/")
    if len(parts) != 2 or parts[1] != mf.MANIFEST_NAME or not member.isreg():
        report.problems.append(f"first member is {member.name!r}, expected <root>/{mf.MANIFEST_NAME}")
        return None
    problem = member_path_problem(member.name, None)
    if problem:
        report.problems.append(problem)
        return None
    if member.size > MANIFEST_MAX:
        report.problems.append(f"manifest is {member.size} bytes, larger than the {MANIFEST_MAX} byte limit")
        return None
    handle = tar.extractfile(member)
    raw = handle.read() if handle is not None else b""
    try:
        data = mf.decode(raw)
    except ValueError as exc:
        report.problems.append(str(exc))
        return None
    problems = mf.schema_problems(data)
    if problems:
        report.problems.extend(problems)
        return None
    report.manifest = data
    return parts[0]


def _check_member(
    report: VerifyReport,
    tar: tarfile.TarFile,
    member: tarfile.TarInfo,
    root: str,
    declared: dict[str, dict[str, Any]],
    seen: set[str],
    links: set[str],
    scratch: _Scratch,
) -> None:
    name = member.name
    problem = member_path_problem(name, root) or _member_type_problem(member)
    if problem:
        report.problems.append(problem)
        return
    if name in seen:
        report.problems.append(f"duplicate member {name}")
        return
    seen.add(name)
    under = _beneath_symlink(name, links)
    if under:
        report.problems.append(f"member {name} is nested beneath the symlink {under}")
        return
    if member.islnk():
        inside = member_path_problem(member.linkname, root) is None and member.linkname in seen
        where = "inside" if inside else "outside"
        report.problems.append(f"hard link {name} -> {member.linkname} ({where} the archive root; statekit archives never hold hard links)")
        return
    if member.issym():
        links.add(name)
        if link_escapes(name, member.linkname, root):
            report.problems.append(f"symlink {name} points outside the archive root ({member.linkname})")
            return
    asset = declared.get(name)
    if asset is None:
        report.problems.append(f"member {name} is not declared in the manifest")
        return
    problem = _check_asset_member(member, asset, tar, root, scratch)
    if problem:
        report.problems.append(problem)
    else:
        report.assets_verified += 1


# --------------------------------------------------------------------------- OpenClaw format


def _openclaw_manifest_problems(data: dict[str, Any], root: str) -> list[str]:
    problems: list[str] = []
    if data.get("schemaVersion") != 1:
        problems.append(f"unsupported OpenClaw manifest schemaVersion {data.get('schemaVersion')!r}")
        return problems
    if data.get("archiveRoot") != root:
        problems.append(f"manifest archiveRoot {data.get('archiveRoot')!r} does not match the archive root {root!r}")
    if iso_to_ms(str(data.get("createdAt", ""))) is None:
        problems.append(f"manifest createdAt {data.get('createdAt')!r} is not a timestamp")
    assets = data.get("assets")
    if not isinstance(assets, list) or not assets:
        problems.append("manifest assets must be a non-empty array")
        return problems
    kinds = {"state", "config", "credentials", "workspace", "agent", "managed skill"}
    seen: set[str] = set()
    for index, asset in enumerate(assets):
        if not isinstance(asset, dict) or asset.get("kind") not in kinds:
            problems.append(f"manifest asset #{index} has an unknown kind")
            continue
        if not isinstance(asset.get("sourcePath"), str) or not isinstance(asset.get("archivePath"), str):
            problems.append(f"manifest asset #{index} lacks sourcePath/archivePath")
            continue
        path = asset["archivePath"].rstrip("/")
        bad = member_path_problem(path, root)
        if bad or not path.startswith(f"{root}/payload/"):
            problems.append(f"manifest asset #{index} archivePath is not under {root}/payload/ ({bad or path})")
        elif path in seen:
            problems.append(f"manifest declares asset {path} twice")
        seen.add(path)
    if sum(1 for a in assets if isinstance(a, dict) and a.get("kind") == "state") > 1:
        problems.append("manifest has more than one state asset")
    links = data.get("externalSymbolicLinks")
    if links is not None and not isinstance(links, list):
        problems.append("manifest externalSymbolicLinks must be an array")
    return problems


def gzip_digest_problem(path: Path) -> tuple[str | None, bool]:
    """statekit's gzip digest trailer (see :func:`backup.archive.gzip_trailer`): (problem or None, whether one was found)."""
    size = os.path.getsize(path)
    if size < GZIP_TRAILER_LEN:
        return None, False
    with open(path, "rb") as fh:
        fh.seek(size - GZIP_TRAILER_LEN)
        tail = fh.read()
        start = 10
        if tail[start : start + len(GZIP_TRAILER_TAG)] != GZIP_TRAILER_TAG:
            return None, False  # OpenClaw's own archives have none
        hexdigest = tail[start + len(GZIP_TRAILER_TAG) : start + len(GZIP_TRAILER_TAG) + 64]
        try:
            recorded = bytes.fromhex(hexdigest.decode("ascii"))
        except (UnicodeDecodeError, ValueError):
            return "archive digest trailer is malformed (altered)", True
        if len(recorded) != 32 or tail != gzip_trailer(recorded):
            return "archive digest trailer is malformed (altered)", True
        if _hash_range(fh, 0, size - GZIP_TRAILER_LEN) != recorded:
            return "archive bytes do not match the recorded digest (altered)", True
    return None, True


@dataclass
class OcMember:
    """One entry of an OpenClaw archive as verify saw it (restore plans from these)."""

    name: str
    kind: str  # "file" | "dir" | "symlink" | "hardlink"
    mode: int = 0o644
    mtime: float = 0.0
    size: int = 0
    sha256: str | None = None
    linkname: str = ""
    db: DbFacts | None = None


def _oc_read_member(report: VerifyReport, tar: tarfile.TarFile, member: tarfile.TarInfo, entry: OcMember, scratch: _Scratch) -> None:
    """Hash a file member (and integrity-check it when it is a SQLite database)."""
    handle = tar.extractfile(member)
    if handle is None:
        return
    head = handle.read(len(SQLITE_HEADER))
    is_db = head == SQLITE_HEADER and not entry.name.endswith(("-wal", "-shm", "-journal"))
    sink = _MemberSink(scratch, spill=is_db)
    try:
        sink(head)
        copy_member(handle, sink, member.size - len(head))
        sink.close()
        if sink.size != member.size:
            report.problems.append(f"entry {entry.name} is truncated ({sink.size} of {member.size} bytes)")
        entry.size, entry.sha256 = sink.size, sink.digest.hexdigest()
        if is_db and sink.spilled is not None:
            entry.db = inspect_db(sink.spilled, foreign_keys=True)
    finally:
        sink.discard()


def _verify_openclaw(report: VerifyReport, scratch: _Scratch, max_bytes: int) -> None:
    trailer_problem, has_trailer = gzip_digest_problem(report.path)
    if trailer_problem:
        report.problems.append(trailer_problem)
    compressed = os.path.getsize(report.path)
    limit = min(max(compressed * OPENCLAW_RATIO, 1 << 20), max_bytes)
    members: dict[str, OcMember] = {}
    folded: dict[str, str] = {}
    manifests: list[tuple[str, bytes]] = []
    digests: list[bytes] = []
    links: set[str] = set()
    root: str | None = None
    try:
        with open_tar_stream(report.path, "gzip", limit) as (tar, counter):
            for member in tar:
                report.entries += 1
                if report.entries > OPENCLAW_MAX_ENTRIES:
                    report.problems.append(f"archive has more than {OPENCLAW_MAX_ENTRIES} entries")
                    return
                name = member.name.rstrip("/") if member.isdir() else member.name
                root = root or name.split("/", 1)[0]
                problem = member_path_problem(name, root) or _member_type_problem(member)
                if problem:
                    report.problems.append(problem)
                    continue
                if name in members:
                    report.problems.append(f"duplicate entry path {name}")
                    continue
                key = unicodedata.normalize("NFC", name).lower()
                if key in folded:
                    report.problems.append(f"entries {folded[key]} and {name} collide on case-insensitive filesystems")
                folded[key] = name
                under = _beneath_symlink(name, links)
                if under:
                    report.problems.append(f"entry {name} is nested beneath the symlink {under}")
                entry = OcMember(name, "file", member.mode & 0o7777, float(member.mtime))
                members[name] = entry
                if member.islnk():
                    target = members.get(member.linkname.rstrip("/"))
                    if member_path_problem(member.linkname, root) or target is None or target.kind != "file":
                        report.problems.append(f"hard link {name} -> {member.linkname} does not name an earlier file of the archive")
                        continue
                    entry.kind, entry.linkname, entry.size, entry.sha256 = "hardlink", target.name, target.size, target.sha256
                    entry.db = target.db
                    continue
                if member.issym():
                    links.add(name)
                    entry.kind, entry.linkname, entry.mode = "symlink", member.linkname, 0o777
                    continue
                if member.isdir():
                    entry.kind = "dir"
                    continue
                if name.count("/") == 1 and name.endswith("/" + mf.MANIFEST_NAME):
                    if member.size > OPENCLAW_MANIFEST_MAX:
                        report.problems.append(f"manifest {name} is larger than {OPENCLAW_MANIFEST_MAX} bytes")
                        continue
                    handle = tar.extractfile(member)
                    raw = handle.read() if handle is not None else b""
                    manifests.append((name, raw))
                    entry.size, entry.sha256 = len(raw), hashlib.sha256(raw).hexdigest()
                    continue
                if name == f"{root}/{ocf.DIGESTS_NAME}":
                    if member.size > MANIFEST_MAX:
                        report.problems.append(f"{name} is larger than {MANIFEST_MAX} bytes")
                        continue
                    handle = tar.extractfile(member)
                    digests.append(handle.read() if handle is not None else b"")
                    continue
                _oc_read_member(report, tar, member, entry, scratch)
            while counter.read(CHUNK):
                pass
            report.decompressed_bytes = counter.count
    except BombError as exc:
        report.problems.append(f"decompression bomb: {exc} ({OPENCLAW_RATIO}:1 bound); stopped reading")
        return
    except (tarfile.TarError, EOFError, OSError, zstandard.ZstdError, zlib.error) as exc:  # zlib.error: a damaged deflate stream
        report.problems.append(f"archive is not a readable OpenClaw backup (corrupt or truncated) after {report.entries} entries: {exc}")
        return
    report.oc_members = members
    if root is None:
        report.problems.append("archive is empty")
        return
    if len(manifests) != 1:
        report.problems.append(f"expected exactly one backup manifest entry, found {len(manifests)}")
        return
    try:
        data = mf.decode(manifests[0][1])
    except ValueError as exc:
        report.problems.append(str(exc))
        return
    report.manifest = data
    problems = _openclaw_manifest_problems(data, root)
    report.problems.extend(problems)
    if problems:
        return
    _check_openclaw_assets(report, data, root, members)
    if digests:
        _check_statekit_digests(report, digests[0], manifests[0][1], root, members)
        if not has_trailer:
            report.problems.append("statekit's digest record is there but the archive digest trailer is not (altered or cut)")
    else:
        report.notes.append("OpenClaw archives record no per-file size or SHA-256: file contents are covered only by gzip's CRC")


def _check_openclaw_assets(report: VerifyReport, data: dict[str, Any], root: str, members: dict[str, OcMember]) -> None:
    names = set(members)
    assets = data["assets"]
    for asset in assets:
        path = asset["archivePath"].rstrip("/")
        nested = any(ocf.is_within(n, path) and n != path for n in names)
        if path not in names and not nested:
            report.problems.append(f"missing payload for manifest asset {asset['kind']} {asset['sourcePath']}")
        elif asset["kind"] == "config" and (path not in names or members[path].kind != "file" or nested):
            report.problems.append(f"config asset {path} must be a single regular file entry")
        else:
            report.assets_verified += 1
    asset_paths = [a["archivePath"].rstrip("/") for a in assets]
    metadata = {f"{root}/{mf.MANIFEST_NAME}", f"{root}/{ocf.DIGESTS_NAME}"}
    for name in names - metadata:
        if not any(ocf.is_within(name, p) for p in asset_paths) and not any(ocf.is_within(p, name) for p in asset_paths):
            report.problems.append(f"entry {name} is outside every manifest asset")
    _check_openclaw_links(report, data, root, members, asset_paths)
    _check_openclaw_snapshots(report, data, root, members)


def _check_openclaw_links(report: VerifyReport, data: dict[str, Any], root: str, members: dict[str, OcMember],
                          asset_paths: list[str]) -> None:
    state = next((a for a in data["assets"] if a["kind"] == "state"), None)
    state_source = state["sourcePath"] if state else None
    state_archive = state["archivePath"].rstrip("/") if state else None
    listed_raw = data.get("externalSymbolicLinks")
    listed: dict[str, str] = {}
    for item in listed_raw or []:
        if isinstance(item, dict):
            entry = item.get("entryPath") or item.get("archivePath")
            target = item.get("linkpath") if "linkpath" in item else item.get("target")
            if isinstance(entry, str):
                listed[entry.rstrip("/")] = target if isinstance(target, str) else ""
    external: dict[str, str] = {}
    for entry in members.values():
        if entry.kind != "symlink":
            continue
        if not entry.linkname or "\0" in entry.linkname:
            report.problems.append(f"symlink {entry.name} has no target")
            continue
        if not any(ocf.is_within(entry.name, p) for p in asset_paths):
            continue  # reported as outside every asset
        if listed_raw is None:  # OpenClaw's rule without a link report: a relative target inside an asset
            target = posixpath.normpath(posixpath.join(posixpath.dirname(entry.name), entry.linkname))
            if link_escapes(entry.name, entry.linkname, root) or not any(ocf.is_within(target, p) for p in asset_paths):
                report.problems.append(f"symlink {entry.name} points outside the archive's assets ({entry.linkname})")
            continue
        if ocf.link_is_external(entry.name, entry.linkname, state_source, state_archive):
            external[entry.name] = entry.linkname
    if listed_raw is None:
        return
    for name, target in external.items():
        if name not in listed:
            report.problems.append(f"symlink {name} points outside the state dir ({target}) but the manifest does not list it")
        elif listed[name] and listed[name] != target:
            report.problems.append(f"symlink {name} points to {target!r}, the manifest lists {listed[name]!r}")
        else:
            report.notes.append(f"symlink {name} points outside the archive ({target}); listed as external")
    for name in listed:
        if name not in external:
            report.problems.append(f"manifest lists external symlink {name}, which the archive does not hold as one")


def _registered_archive_path(root: str, state_source: str, registered: str) -> str:
    source = registered if registered.startswith("/") or (len(registered) > 1 and registered[1] == ":") else \
        posixpath.join(state_source, registered)
    return ocf.archive_path_for(root, posixpath.normpath(source))


def _check_openclaw_snapshots(report: VerifyReport, data: dict[str, Any], root: str, members: dict[str, OcMember]) -> None:
    """The databases OpenClaw 9.6 itself verifies: the global one (role ``global``) and every agent database its
    registry names (owned by that agent); plus a legacy ``sqliteSnapshots`` inventory when a manifest has one."""
    canonical: dict[str, tuple[str, str | None]] = {}
    state = next((a for a in data["assets"] if a["kind"] == "state"), None)
    state_dir = (data.get("paths") or {}).get("stateDir") if isinstance(data.get("paths"), dict) else None
    state_dir = state_dir if isinstance(state_dir, str) else (state["sourcePath"] if state else None)
    if state_dir:
        global_path = ocf.archive_path_for(root, posixpath.join(state_dir, "state/openclaw.sqlite"))
        entry = members.get(global_path)
        if entry is not None:
            canonical[global_path] = ("global", None)
            if entry.db is not None and entry.db.ok:
                for agent_id, registered in entry.db.registry:
                    canonical.setdefault(_registered_archive_path(root, state_dir, registered), ("agent", agent_id))
    snapshots = data.get("sqliteSnapshots")
    if isinstance(snapshots, list):
        for snap in snapshots:
            if not isinstance(snap, dict) or not isinstance(snap.get("sourcePath"), str) or snap.get("role") not in ("global", "agent"):
                report.problems.append("malformed sqliteSnapshots entry in the manifest")
                continue
            path = ocf.archive_path_for(root, snap["sourcePath"])
            canonical[path] = (snap["role"], snap.get("agentId"))
            if path not in members or members[path].kind not in ("file", "hardlink"):
                report.problems.append(f"backup lacks verified canonical SQLite coverage for {snap['sourcePath']}")
    elif not canonical:
        report.notes.append("no global database (state/openclaw.sqlite) in the archive: no canonical SQLite coverage to check")
    for path, (role, agent_id) in canonical.items():
        entry = members.get(path)
        if entry is None:
            continue  # a registered agent database that is not in the archive: OpenClaw 9.6 skips it too
        if entry.kind not in ("file", "hardlink"):
            report.problems.append(f"SQLite snapshot {path} must be a regular archive file")
            continue
        if entry.db is None:
            report.problems.append(f"{path} is a canonical SQLite snapshot but is not a SQLite file")
            continue
        if not entry.db.ok:
            report.problems.append(f"{path} fails integrity_check: {entry.db.integrity}")
        elif entry.db.meta_role is None and role == "global" and not isinstance(snapshots, list):
            report.problems.append(f"{path}: the global database has no schema_meta 'primary' row (OpenClaw 9.6 refuses it)")
        elif entry.db.meta_role and entry.db.meta_role != role:
            report.problems.append(f"{path}: schema_meta role is {entry.db.meta_role!r}, expected {role!r}")
        elif role == "agent" and agent_id and entry.db.meta_agent_id and entry.db.meta_agent_id != agent_id:
            report.problems.append(f"{path}: schema_meta agent id {entry.db.meta_agent_id!r} != {agent_id!r}")
        elif entry.db.foreign_key_violations:
            report.problems.append(f"{path}: {entry.db.foreign_key_violations} foreign_key_check violation(s) "
                                   f"(OpenClaw 9.6's verifier refuses such a snapshot)")
        for suffix in ("-wal", "-shm", "-journal"):
            if path + suffix in members:
                report.problems.append(f"{path}{suffix}: live sidecar archived beside a snapshotted database")
    for entry in members.values():
        if entry.db is not None and entry.kind == "file" and entry.name not in canonical:
            name = PurePosixPath(entry.name).name
            if not entry.db.ok and name in ("openclaw.sqlite", "openclaw-agent.sqlite"):
                report.problems.append(f"{entry.name} fails integrity_check: {entry.db.integrity}")
            elif not entry.db.ok:
                report.notes.append(f"opaque SQLite file {entry.name} fails integrity_check: {entry.db.integrity}")


def _check_statekit_digests(report: VerifyReport, raw: bytes, manifest_raw: bytes, root: str, members: dict[str, OcMember]) -> None:
    """statekit's own record beside OpenClaw's manifest: size and SHA-256 of every entry, user_version of every database."""
    where = f"{root}/{ocf.DIGESTS_NAME}"
    try:
        data = mf.decode(raw)
    except ValueError as exc:
        report.problems.append(f"{where}: {exc}")
        return
    assets = data.get("assets")
    if data.get("format") != ocf.DIGESTS_FORMAT or data.get("schema_version") != 1 or not isinstance(assets, list):
        report.problems.append(f"{where} is not a statekit digest record of a known version")
        return
    if data.get("openclaw_manifest_sha256") != hashlib.sha256(manifest_raw).hexdigest():
        report.problems.append(f"{root}/{mf.MANIFEST_NAME} does not match the digest statekit recorded for it")
    declared: dict[str, dict[str, Any]] = {}
    for asset in assets:
        if not isinstance(asset, dict) or not isinstance(asset.get("archive_path"), str) or asset.get("kind") not in mf.KINDS:
            report.problems.append(f"{where}: malformed asset record")
            return
        declared[asset["archive_path"]] = asset
    checked = 0
    metadata = {f"{root}/{mf.MANIFEST_NAME}", where}
    for name, entry in members.items():
        if name in metadata:
            continue
        asset = declared.get(name)
        if asset is None:
            if entry.kind != "dir":
                report.problems.append(f"entry {name} is not in {where}")
            continue
        kind = asset["kind"]
        if kind == "dir":
            problem = None if entry.kind == "dir" else f"entry {name} should be a directory"
        elif kind == "symlink":
            problem = None if entry.kind == "symlink" and entry.linkname == asset.get("link_target") else \
                f"symlink {name} differs from the digest record"
        elif entry.kind not in ("file", "hardlink"):
            problem = f"entry {name} should be a regular file"
        elif entry.size != asset.get("size") or entry.sha256 != asset.get("sha256"):
            problem = f"entry {name}: size or sha256 differs from the digest record (content altered)"
        elif kind == "sqlite" and (entry.db is None or not entry.db.ok or entry.db.user_version != asset.get("schema_version")):
            problem = f"sqlite entry {name} fails its checks or its user_version differs from the digest record"
        else:
            problem = None
        if problem:
            report.problems.append(problem)
        else:
            checked += 1
    for name in declared:
        if name not in members:
            report.problems.append(f"entry {name} named in {where} is missing from the archive")
    report.assets_verified = checked
    report.digests = True
    report.notes.append(f"statekit digests: {checked} entries checked by size and SHA-256")


# --------------------------------------------------------------------------- entry point


def verify_archive(path: Path | str, *, scratch_dir: Path | None = None, max_bytes: int = ABSOLUTE_CAP) -> VerifyReport:
    """Verify ``path`` (statekit ``.tar.zst`` or OpenClaw ``.tar.gz``) in one streaming pass."""
    path = Path(path)
    report = VerifyReport(path=path, format="unknown")
    if not path.exists():
        report.problems.append(f"{path}: archive does not exist")
        return report
    if not path.is_file():
        report.problems.append(f"{path}: not a regular file")
        return report
    kind = sniff_format(path)
    scratch = _Scratch(scratch_dir)
    try:
        if kind == "zstd":
            report.format = STATEKIT
            _verify_statekit(report, scratch, max_bytes)
        elif kind == "gzip":
            report.format = OPENCLAW
            _verify_openclaw(report, scratch, max_bytes)
        else:
            report.problems.append(f"{path}: not a statekit .tar.zst or OpenClaw .tar.gz backup archive")
    except ScratchError as exc:
        raise StatekitError(
            f"{path}: could not be verified: writing a scratch copy failed ({exc}; {scratch.path or tempfile.gettempdir()}); "
            "the archive itself was not judged -- free space there and verify again"
        ) from None
    finally:
        scratch.cleanup()
    report.ok = not report.problems
    return report


def encode_openclaw_path(source: str) -> str:  # kept here for callers of the earlier API
    return ocf.encode_openclaw_path(source)
