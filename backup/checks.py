"""What every archive format's verify shares: the report, the limits, member-path and link checks, scratch space."""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

from statekit.backup import manifest as mf
from statekit.fsutil import CHUNK, PRIVATE_FILE_MODE


MANIFEST_MAX = 256 << 20  # bytes: a manifest listing ~500k entries


OPENCLAW_MANIFEST_MAX = 1_000_000


OPENCLAW_MAX_ENTRIES = 200_000


OPENCLAW_RATIO = 1100  # decompressed : compressed bound for archives without declared totals


ABSOLUTE_CAP = 1 << 40  # 1 TiB: no backup we write or read is bigger


BLOCK = tarfile.BLOCKSIZE  # 512: a tar header, and the unit data is padded to


RECORD = tarfile.RECORDSIZE  # 10240: tarfile pads the finished archive to a whole record


END_BLOCKS = 2 * BLOCK  # the two zero blocks that end an archive


BOUND_SLACK = 1 << 20  # fixed allowance over the exact size, for archives written by other tar producers


STATEKIT = "statekit"


OPENCLAW = "openclaw-tar.gz"


@dataclass
class VerifyReport:
    path: Path
    format: str
    ok: bool = False
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    manifest: mf.Manifest | None = None  # statekit archives: the typed manifest (read through Manifest.parse)
    manifest_sha256: str | None = None  # statekit archives: SHA-256 of the manifest member's bytes
    openclaw_manifest: dict[str, Any] | None = None  # OpenClaw archives: OpenClaw's manifest.json document
    entries: int = 0
    assets_verified: int = 0
    decompressed_bytes: int = 0
    oc_members: dict[str, Any] = field(default_factory=dict)  # OpenClaw archives: name -> OcMember (restore plans from it)
    digests: bool = False  # an OpenClaw archive carrying statekit's per-entry digests

    @property
    def root(self) -> str | None:
        if self.format == OPENCLAW:
            return None if self.openclaw_manifest is None else self.openclaw_manifest.get("archiveRoot")
        return None if self.manifest is None else self.manifest.archive_root

    def _created_at(self) -> Any:
        if self.manifest is not None:
            return self.manifest.created_at_text
        return (self.openclaw_manifest or {}).get("createdAt")

    def _asset_count(self) -> Any:
        if self.manifest is not None:
            return (self.manifest.declared_totals or {}).get("assets", len(self.manifest.assets))
        return len((self.openclaw_manifest or {}).get("assets") or [])

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "archive": str(self.path),
            "format": self.format,
            "root": self.root,
            "created_at": self._created_at(),
            "assets": self._asset_count(),
            "assets_verified": self.assets_verified,
            "entries": self.entries,
            "decompressed_bytes": self.decompressed_bytes,
            "problems": self.problems,
            "notes": self.notes,
            **({"statekit_digests": self.digests} if self.format == OPENCLAW else {}),
        }


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


def beneath_symlink(name: str, links: set[str]) -> str | None:
    if not links:  # most archives hold no symlink member: no path to take apart per member
        return None
    path = PurePosixPath(name)
    for parent in path.parents:
        if str(parent) in links:
            return str(parent)
    return None


def oversized_problem(member: tarfile.TarInfo, remaining: int) -> str | None:
    """A member whose header declares more data than the archive's bound still allows: refused from its header,
    before any byte of it is read (tar headers carry sizes up to 2^95; the bound comes from the manifest)."""
    if member.size < 0 or member.size > remaining:
        return (f"decompression bomb: member {member.name!r} declares {member.size} bytes, more than the {max(remaining, 0)} bytes "
                "the archive can still hold; rejected before reading it")
    return None


def member_type_problem(member: tarfile.TarInfo) -> str | None:
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


class MemberSink:
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


class Scratch:
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


def hash_range(fh: BinaryIO, start: int, end: int) -> bytes:
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


# --------------------------------------------------------------------------- tar sizes


def padded(size: int) -> int:
    """``size`` rounded up to whole 512-byte blocks (how tar stores a member's data)."""
    return -(-size // BLOCK) * BLOCK


def pax_record_len(keyword: str, value: bytes) -> int:
    """Length of one PAX record ``"<len> <keyword>=<value>\\n"`` (its length field counts itself)."""
    base = len(keyword.encode("utf-8")) + len(value) + 3
    length = base + 1
    while base + len(str(length)) != length:
        length = base + len(str(length))
    return length


def _text_needs_pax(text: str, limit: int) -> bool:
    """tarfile (PAX_FORMAT) moves a name to the PAX header when it is not ASCII or longer than its field."""
    return not text.isascii() or len(text) > limit


def _pax_value(text: str) -> tuple[bytes, bool]:
    """The bytes tarfile writes for ``text`` and whether it forces ``hdrcharset=BINARY`` (surrogates)."""
    try:
        return text.encode("utf-8"), False
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape"), True


def tar_member_size(name: str, *, size: int = 0, linkname: str = "", mtime: int = 0, directory: bool = False) -> int:
    """Bytes Python's tarfile (PAX_FORMAT, uid/gid 0, empty uname/gname) writes for one member.

    Its 512-byte header, the PAX extended header before it when the path, link target, size or mtime
    does not fit a ustar field (a 512-byte header plus its records padded to 512), and the data
    padded to 512.
    """
    if directory and not name.endswith("/"):
        name += "/"
    texts = [(key, text) for key, text, limit in (("path", name, tarfile.LENGTH_NAME), ("linkpath", linkname, tarfile.LENGTH_LINK))
             if _text_needs_pax(text, limit)]
    numbers = [(key, value) for key, value in (("size", size), ("mtime", mtime)) if not 0 <= value < 8 ** 11]
    records = 0
    binary = False
    for key, text in texts:
        value, surrogates = _pax_value(text)
        binary = binary or surrogates
        records += pax_record_len(key, value)
    for key, number in numbers:
        records += pax_record_len(key, str(number).encode("ascii"))
    if binary:
        records += len(b"21 hdrcharset=BINARY\n")
    pax = BLOCK + padded(records) if records else 0
    return pax + BLOCK + padded(size)


def tar_archive_size(members: int) -> int:
    """Bytes of a finished tar archive whose members take ``members`` bytes: end blocks, record padding."""
    return -(-(members + END_BLOCKS) // RECORD) * RECORD
