"""statekit's own archive format (``.tar.zst``): verify.

The archive is a sequence of zstd frames: the manifest member in the first, the payload after it, an
optional digest trailer at the end (see ``archive.py``). :func:`verify_statekit_stream` reads the archive
once, front to back, from any binary stream (a local file, an S3 body, an age decryption): as the compressed
bytes pass, :mod:`stream_verify` walks the frame structure and hashes them for the trailer; the decompressed tar
stream is checked member by member: ``<root>/manifest.json`` first and schema-valid (:meth:`Manifest.parse`),
every payload member declared and every declared asset present, with its size, SHA-256, kind and (SQLite)
integrity (a database member is copied to a private scratch file for ``integrity_check``: one member, never
the archive).
"""

from __future__ import annotations

import hashlib
import os
import tarfile
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import BinaryIO

import zstandard

from statekit.backup import manifest as mf
from statekit.backup.archive import ZSTD_MAGIC, BombError, copy_member, members_of, open_tar_stream, tar_over_stream, write_all
from statekit.backup.checks import (
    ABSOLUTE_CAP, BLOCK, BOUND_SLACK, MANIFEST_MAX, MemberSink, Scratch, VerifyReport, beneath_symlink, link_escapes,
    member_path_problem, member_type_problem, oversized_problem, padded, tar_archive_size, tar_member_size,
)
from statekit.backup.restore_steps import RestoreStep, file_mode
from statekit.backup.snapshot import DbFacts, inspect_db
from statekit.backup.stream_verify import NO_TRAILER_NOTE, ForwardPass, Readable, forward_verdict
from statekit.errors import VerificationError
from statekit.fsutil import CHUNK, PRIVATE_FILE_MODE, create_file
from statekit.progress import ProgressFn, ProgressReader, start_phase
from statekit.states import RestoreStepAction


def zstd_structure_problem(path: Path) -> str | None:
    """Walk the zstd frame and block headers of the file at ``path``: catches truncation and trailing garbage.

    (A zstd stream reader stops quietly at a cut-off frame; content checksums
    are checked by the decompressor while the payload streams.) The walk is :class:`stream_verify.ZstdWalk`,
    the one :func:`verify_statekit_stream` runs as the bytes pass."""
    with open(path, "rb") as fh:
        return forward_verdict(fh).structure


def archive_digest_problem(path: Path, progress: ProgressFn | None = None) -> tuple[str | None, bool]:
    """Check the archive digest trailer: (problem or None, whether a trailer was found).

    Covers every compressed byte, including bits a decoder ignores. Archives
    without a trailer (built by other tools or tests) are checked by their
    frame checksums and member hashes only. (For an archive whose frame structure is broken the trailer is
    not judged: (None, False).)
    """
    with open(path, "rb") as opened:
        fh: BinaryIO = opened if progress is None else ProgressReader(opened, progress)  # type: ignore[assignment]
        verdict = forward_verdict(fh)
    return verdict.digest, verdict.has_trailer


def _data_size(asset: mf.Asset) -> int:
    """Data bytes of the member for ``asset``: none for directories and internal symlinks (see ``create._add_item``)."""
    if asset.kind == "dir" or (asset.kind == "symlink" and asset.link_scope == "internal"):
        return 0
    return max(asset.size, 0)


def asset_member_size(asset: mf.Asset) -> int:
    """Bytes the archive writer puts in the tar stream for ``asset``: header(s), data, padding."""
    internal_link = asset.kind == "symlink" and asset.link_scope == "internal"
    return tar_member_size(asset.archive_path, size=_data_size(asset), linkname=(asset.link_target or "") if internal_link else "",
                           mtime=int(asset.mtime), directory=asset.kind == "dir")


def _declared_bound(manifest: mf.Manifest, head: tarfile.TarInfo) -> int:
    """The most a sound archive with this manifest decompresses to: exactly what tar writes for the
    manifest member and every listed asset (headers, PAX headers, padding, end blocks, record
    padding) plus a fixed slack, with no more data than the declared totals allow."""
    totals = manifest.declared_totals or {}
    declared = max(int(totals.get("bytes") or 0), 0)
    sizes = [(asset_member_size(a), padded(_data_size(a))) for a in manifest.assets]
    overhead = sum(whole - data for whole, data in sizes)
    data = min(sum(data for _, data in sizes), declared + (BLOCK - 1) * len(sizes))
    head_size = tar_member_size(head.name, size=head.size, mtime=int(head.mtime))
    return min(head_size + tar_archive_size(overhead + data) + BOUND_SLACK, ABSOLUTE_CAP)


def _manifest_consistency(manifest: mf.Manifest, root: str) -> tuple[list[str], dict[str, mf.Asset]]:
    problems: list[str] = []
    declared: dict[str, mf.Asset] = {}
    for asset in manifest.assets:
        path = asset.archive_path
        problem = member_path_problem(path, root)
        if problem:
            problems.append(f"manifest asset {asset.id}: {problem}")
            continue
        if mf.payload_rel(path, root) is None:
            problems.append(f"manifest asset {asset.id}: archive path {path} is not under {root}/payload/state or {root}/payload/external/<id>")
            continue
        if path in declared:
            problems.append(f"manifest declares {path} twice")
            continue
        root_id, rel = mf.payload_rel(path, root) or ("", "")
        if root_id == "config" and (asset.kind not in ("file", "symlink") or "/" in rel or not rel):
            problems.append(f"manifest asset {asset.id}: the config asset must be one file directly below {root}/payload/external/config/")
            continue
        declared[path] = asset
    configs = [a for a in declared.values() if (mf.payload_rel(a.archive_path, root) or ("",))[0] == "config"]
    if len(configs) > 1:
        problems.append(f"manifest declares {len(configs)} config files ({', '.join(a.archive_path for a in configs[:3])}); "
                        "a restore would write them all to the one config path")
    if not any(asset.kind != "dir" for asset in manifest.assets):
        problems.append("archive holds no state: its manifest lists no file, database or link (an empty or incomplete backup)")
    totals = manifest.declared_totals or manifest.totals()
    if totals["assets"] != len(manifest.assets):
        problems.append(f"manifest totals say {totals['assets']} assets, it lists {len(manifest.assets)}")
    if totals["bytes"] != sum(a.size for a in manifest.assets):
        problems.append("manifest totals.bytes does not match the sum of asset sizes")
    return problems, declared


def _db_problem(asset: mf.Asset, facts: DbFacts) -> str | None:
    where = f"sqlite asset {asset.archive_path}"
    if not facts.ok:
        return f"{where} fails integrity_check: {facts.integrity}"
    if facts.user_version != asset.schema_version:
        return f"{where}: user_version is {facts.user_version}, manifest records {asset.schema_version}"
    if facts.meta_role in ("global", "agent") and facts.meta_role != asset.role:
        return f"{where}: schema_meta role is {facts.meta_role!r}, manifest records {asset.role!r}"
    if facts.meta_agent_id and asset.agent_id and facts.meta_agent_id != asset.agent_id:
        return f"{where}: schema_meta agent id is {facts.meta_agent_id!r}, manifest records {asset.agent_id!r}"
    return None


@dataclass(frozen=True, slots=True)
class Written:
    """What ``backup create`` established about a member's bytes as it wrote them: their SHA-256 (taken over exactly
    the bytes handed to the tar writer) and, for a database, the facts of the ``integrity_check`` its snapshot
    (those same bytes) passed. Create's own verify pass is given these and does not hash the member or check the
    database again: the pass still decompresses every byte (zstd content checksums: the payload decodes to what the
    compressor was fed), walks every tar header against the manifest and checks the digest trailer over every
    compressed byte on disk."""

    sha256: str
    facts: DbFacts | None = None
    asset: mf.Asset | None = None  # the record create wrote: the equal record read back from the manifest is this one (held once)


class WriteFailed(Exception):
    """Writing a restored member failed (a full or failing disk): says nothing about the archive; ``error`` is raised."""

    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error


@dataclass
class Extract:
    """A restore that verifies while it writes: the verify pass writes each member listed in ``destinations`` (a new
    0600 file, fsynced) as it hashes it, and checks a database member on that file itself (no scratch copy).

    The restore was planned from the manifest it read first (``manifest``, whose raw bytes hash to
    ``manifest_sha256``): the pass must meet the same manifest (else it stops: "the archive changed"), and does not
    parse it again. Whatever the pass finds, the caller publishes only when the report is ok."""

    manifest: mf.Manifest
    manifest_sha256: str
    destinations: Mapping[str, Path]
    on_written: Callable[[], None] = lambda: None


class _FileSink:
    """Hash a member's bytes and write them to a new private file (restore's staging)."""

    def __init__(self, path: Path) -> None:
        self.digest = hashlib.sha256()
        self.spilled: Path | None = path  # the file a database member is checked on
        try:
            self._fd = create_file(path, PRIVATE_FILE_MODE)
        except OSError as exc:
            raise WriteFailed(exc) from None

    def __call__(self, block: bytes) -> None:
        self.digest.update(block)
        try:
            write_all(self._fd, block)
        except OSError as exc:
            raise WriteFailed(exc) from None

    def close(self) -> None:
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            try:
                os.fsync(fd)
            except OSError as exc:
                raise WriteFailed(exc) from None
            finally:
                os.close(fd)

    def discard(self) -> None:
        """The file stays (the restore removes its staging as a whole when the archive fails)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def _check_asset_member(
    member: tarfile.TarInfo, asset: mf.Asset, tar: tarfile.TarFile, root: str, scratch: Scratch,
    written: Mapping[str, Written] | None = None, extract: Extract | None = None,
) -> str | None:
    """Check one declared member against its manifest record; returns a problem or None."""
    kind, name = asset.kind, member.name
    if kind == "dir":
        return None if member.isdir() else f"member {name} should be a directory"
    if kind == "symlink" and asset.link_scope == "internal":
        if not member.issym():
            return f"member {name} should be a symlink"
        if member.linkname != asset.link_target:
            return f"symlink {name} points to {member.linkname!r}, manifest records {asset.link_target!r}"
        if link_escapes(name, member.linkname, root):
            return f"symlink {name} points outside the archive root ({member.linkname})"
        expected = hashlib.sha256(member.linkname.encode("utf-8", "surrogateescape")).hexdigest()
        return None if expected == asset.sha256 else f"symlink {name}: sha256 mismatch"
    if not member.isreg():
        return f"member {name} should be a regular file (manifest kind {kind})"
    if member.size != asset.size:
        return f"member {name}: size {member.size}, manifest records {asset.size}"
    known = (written or {}).get(name)
    if known is not None and known.sha256 == asset.sha256 and (kind != "sqlite" or known.facts is not None):
        # Hashed (and, a database, integrity-checked) by create as it was written: the data is decompressed (tarfile
        # reads past it), not hashed again; the size was checked above, the database facts against the manifest here.
        return _db_problem(asset, known.facts) if kind == "sqlite" and known.facts is not None else None
    dest = extract.destinations.get(name) if extract is not None else None
    sink: MemberSink | _FileSink = MemberSink(scratch, spill=kind == "sqlite") if dest is None else _FileSink(dest)
    try:
        handle = tar.extractfile(member)
        got = copy_member(handle, sink, member.size) if handle is not None else 0
        sink.close()
        if dest is not None and extract is not None:
            extract.on_written()
        if got != member.size:
            return f"member {name} is truncated ({got} of {member.size} bytes)"
        if sink.digest.hexdigest() != asset.sha256:
            return f"member {name}: sha256 mismatch (content differs from the manifest)"
        if kind == "symlink":
            text = (asset.link_target or "").encode("utf-8", "surrogateescape")
            return None if hashlib.sha256(text).hexdigest() == asset.sha256 else f"symlink {name}: target text mismatch"
        if kind == "sqlite" and sink.spilled is not None:
            return _db_problem(asset, inspect_db(sink.spilled))
        return None
    finally:
        sink.discard()


def verify_statekit(report: VerifyReport, scratch: Scratch, max_bytes: int, progress: ProgressFn | None = None,
                    written: Mapping[str, Written] | None = None) -> None:
    """Verify the local archive ``report.path``: one forward pass over its bytes (:func:`verify_statekit_stream`)."""
    path = report.path
    start_phase(progress, "verify", os.path.getsize(path), "bytes")
    with open(path, "rb") as opened:
        raw: BinaryIO = opened if progress is None else ProgressReader(opened, progress)  # type: ignore[assignment]
        verify_statekit_stream(report, raw, scratch, max_bytes, written)


@dataclass
class _TarPass:
    root: str | None = None
    stream_ok: bool = False
    complete: bool = False  # the member walk ran to its end (no early stop on a bad manifest or a refused header)
    declared: dict[str, mf.Asset] = field(default_factory=dict)
    seen: set[str] = field(default_factory=set)


def verify_statekit_stream(report: VerifyReport, source: Readable, scratch: Scratch, max_bytes: int,
                           written: Mapping[str, Written] | None = None, extract: Extract | None = None) -> None:
    """Verify a statekit archive read once, front to back, from ``source`` (any binary stream: nothing is seeked).

    The decompressor reads through a :class:`ForwardPass`, which walks the zstd structure and hashes every
    compressed byte for the digest trailer as the bytes pass; the tar stream is read with the member checks
    below. The structure or digest problem, judged at the end of the stream, comes first in ``report.problems``
    (as when they were separate passes before the tar pass). A failure of ``source`` itself is raised."""
    first = len(report.problems)
    forward = ForwardPass(source)
    tar_pass = _TarPass()
    try:
        _read_members(report, forward, scratch, max_bytes, tar_pass, written, extract)
    except BaseException:
        if forward.error is not None:
            raise forward.error from None
        raise
    forward.drain()
    if forward.error is not None:
        raise forward.error
    verdict = forward.finish()
    if verdict.structure:
        report.problems.insert(first, verdict.structure)
    elif verdict.digest:
        report.problems.insert(first, verdict.digest)
    elif not verdict.has_trailer:
        report.notes.append(NO_TRAILER_NOTE)
    if not tar_pass.complete:
        return
    if tar_pass.root is None and tar_pass.stream_ok:
        report.problems.append("archive is empty: no manifest member")
    if tar_pass.stream_ok and not verdict.structure:
        for path, asset in tar_pass.declared.items():
            if path not in tar_pass.seen:
                report.problems.append(f"asset {asset.id} ({path}) is missing from the payload")


def _read_members(report: VerifyReport, forward: ForwardPass, scratch: Scratch, max_bytes: int, state: _TarPass,
                  written: Mapping[str, Written] | None = None, extract: Extract | None = None) -> None:
    """The tar pass: manifest first, then every member against it (records what it saw in ``state``)."""
    links: set[str] = set()
    try:
        with tar_over_stream(forward, "zstd", min(MANIFEST_MAX + (64 << 10), max_bytes)) as (tar, counter):
            for member in members_of(tar):
                report.entries += 1
                if state.root is None:
                    state.root = _read_manifest(report, tar, member, extract, written)
                    if state.root is None:
                        return
                    assert report.manifest is not None  # _read_manifest returns a root only with the manifest read
                    consistency, state.declared = _manifest_consistency(report.manifest, state.root)
                    report.problems.extend(consistency)
                    counter.limit = min(_declared_bound(report.manifest, member), max_bytes)
                    continue
                # Every header is checked before its data is read: a size past what the manifest's bound still allows
                # stops the read here; a size other than the manifest's is reported by _check_asset_member unread.
                stop = oversized_problem(member, counter.limit - member.offset_data)
                if stop:
                    report.problems.append(member_path_problem(member.name, state.root) or stop)
                    if report.problems[-1] != stop:
                        report.problems.append(stop)
                    return
                _check_member(report, tar, member, state.root, state.declared, state.seen, links, scratch, written, extract)
            # Drain to the end so every zstd content checksum is checked.
            while counter.read(CHUNK):
                pass
            report.decompressed_bytes = counter.count
            state.stream_ok = True
    except BombError as exc:
        report.problems.append(f"decompression bomb: {exc} (the manifest declares far less); stopped reading")
    except (tarfile.TarError, zstandard.ZstdError, EOFError, OSError, zlib.error) as exc:
        if forward.error is not None:
            raise forward.error from None
        report.problems.append(f"archive is unreadable (corrupt or truncated) after {report.entries} members: {exc}")
    state.complete = True


def _read_manifest(report: VerifyReport, tar: tarfile.TarFile, member: tarfile.TarInfo, extract: Extract | None = None,
                   written: Mapping[str, Written] | None = None) -> str | None:
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
    digest = hashlib.sha256()

    def read(n: int) -> bytes:  # the member's bytes as the parse asks for them, hashed on the way: never held whole
        block = handle.read(n) if handle is not None else b""
        digest.update(block)
        return block

    if extract is not None:
        while read(CHUNK):
            pass
        if digest.hexdigest() != extract.manifest_sha256:
            report.problems.append("the archive changed after its manifest was read for the restore plan (its manifest differs now)")
            return None
        report.manifest = extract.manifest  # the same bytes, parsed and schema-checked when the restore was planned
        return parts[0]
    try:
        report.manifest = mf.Manifest.read(read, _known_records(written))
        while read(CHUNK):  # the parse stops at the end of the document: hash the whole member
            pass
        report.manifest_sha256 = digest.hexdigest()
    except mf.ManifestError as exc:
        report.problems.extend(exc.problems)
        return None
    except ValueError as exc:
        report.problems.append(str(exc))
        return None
    return parts[0]


def _known_records(written: Mapping[str, Written] | None) -> Callable[[str], mf.Asset | None] | None:
    """The records ``backup create`` holds for what it wrote, by archive path (its verify pass reads them back)."""
    if not written:
        return None

    def known(archive_path: str) -> mf.Asset | None:
        record = written.get(archive_path)
        return record.asset if record is not None else None

    return known


def _check_member(
    report: VerifyReport,
    tar: tarfile.TarFile,
    member: tarfile.TarInfo,
    root: str,
    declared: dict[str, mf.Asset],
    seen: set[str],
    links: set[str],
    scratch: Scratch,
    written: Mapping[str, Written] | None = None,
    extract: Extract | None = None,
) -> None:
    name = member.name
    problem = member_path_problem(name, root) or member_type_problem(member)
    if problem:
        report.problems.append(problem)
        return
    asset = declared.get(name)
    key = asset.archive_path if asset is not None else name  # the manifest's str: a member's own name is not kept
    if key in seen:
        report.problems.append(f"duplicate member {name}")
        return
    seen.add(key)
    under = beneath_symlink(name, links)
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
    if asset is None:
        report.problems.append(f"member {name} is not declared in the manifest")
        return
    problem = _check_asset_member(member, asset, tar, root, scratch, written, extract)
    if problem:
        report.problems.append(problem)
    else:
        report.assets_verified += 1


# --------------------------------------------------------------------------- restore


@dataclass(frozen=True)
class Peeked:
    """The manifest of a local statekit archive, read from its first frame only (a restore plans from it)."""

    manifest: mf.Manifest
    sha256: str  # of the manifest member's raw bytes


def peek_manifest(path: Path) -> Peeked | None:
    """The manifest member of the statekit ``.tar.zst`` at ``path`` when it is first, schema-valid and consistent
    (the checks verify makes before reading any payload), decompressing only that far; else None (the caller then
    verifies the whole archive first, which reports why)."""
    try:
        if not path.is_file():  # missing, a directory, a FIFO (never opened): verify words it
            return None
        with open(path, "rb") as fh:
            if fh.read(len(ZSTD_MAGIC)) != ZSTD_MAGIC:
                return None
        with open_tar_stream(path, "zstd", MANIFEST_MAX + (64 << 10)) as (tar, _counter):
            member = tar.next()
            report = VerifyReport(path=path, format="statekit")
            if member is None or _read_manifest(report, tar, member) is None or report.manifest is None:
                return None
    except (OSError, EOFError, BombError, tarfile.TarError, zstandard.ZstdError, zlib.error):
        return None
    root = member.name.split("/")[0]
    problems, _declared = _manifest_consistency(report.manifest, root)
    if problems or report.problems:
        return None
    return Peeked(report.manifest, report.manifest_sha256 or "")


def verify_while_writing(path: Path, extract: Extract, progress: ProgressFn | None = None) -> VerifyReport:
    """The one pass of a restore: verify the local archive ``path`` (every check ``backup verify`` makes) while
    writing the members ``extract`` names. Raises :class:`WriteFailed` when writing fails."""
    report = VerifyReport(path=path, format="statekit")
    scratch = Scratch(None)  # only for a database member that is checked but not written (an unchanged one, in place)
    try:
        start_phase(progress, "restore", os.path.getsize(path), "bytes")
        with open(path, "rb") as opened:
            raw: BinaryIO = opened if progress is None else ProgressReader(opened, progress)  # type: ignore[assignment]
            verify_statekit_stream(report, raw, scratch, ABSOLUTE_CAP, extract=extract)
    finally:
        scratch.cleanup()
    report.ok = not report.problems
    return report


def restore_steps(
    manifest: mf.Manifest,
    root: str,
    target: Path | None,
    state_dir: Path,
    external: Mapping[str, Path] | None = None,
    left_out: list[dict[str, str]] | None = None,
) -> list[RestoreStep]:
    """Where each asset goes: below ``target`` (a fresh restore: assets from outside the state dir in
    ``<target>/.statekit/external/<id>/``) or below ``state_dir`` (in place). Every destination is derived from
    the archive path below ``<root>/payload/`` and the directory the operator named, never from a path the
    manifest records. In place, an asset recorded outside the state dir goes to ``external[<id>]`` (the config:
    that file; a directory: below it) when the caller gives one, else it is left out and listed in ``left_out``."""
    steps = []
    for asset in manifest.assets:
        where = mf.payload_rel(asset.archive_path, root)
        if where is None:
            raise VerificationError(f"asset {asset.id}: archive path outside the payload")
        root_id, rel = where
        rel_parts = PurePosixPath(rel).parts
        base: Path | None
        aside = "/".join(p for p in ("state" if root_id == "state" else "external", "" if root_id == "state" else root_id, rel) if p)
        if root_id == "state":
            base = target if target is not None else state_dir
            destination = base.joinpath(*rel_parts)
        elif target is not None:
            base = target.joinpath(".statekit", "external", root_id)
            destination = base.joinpath(*rel_parts)
        elif external is not None and root_id in external:
            # base None: the missing directories up to the operator's path are created (no tree of ours to guard)
            base = None
            if root_id == "config":  # a single file: the one config file the operator names
                destination = external[root_id]
            else:
                destination = external[root_id].joinpath(*rel_parts)
        else:
            if left_out is not None:
                left_out.append({"archive_path": asset.archive_path, "kind": asset.kind, "asset": root_id,
                                 "recorded_path": asset.source_path})
            continue
        kind = asset.kind
        steps.append(
            RestoreStep(
                archive_path=asset.archive_path,
                destination_text=str(destination),
                kind=kind,
                action=RestoreStepAction.CREATE,
                mode=asset.mode if kind == "dir" else file_mode(kind, asset.role, asset.mode),
                mtime=asset.mtime,
                sha256=asset.sha256,
                size=asset.size,
                link_target=asset.link_target,
                link_scope=asset.link_scope,
                aside=None if aside == asset.archive_path.split("/payload/", 1)[-1] else aside,  # derived, not held twice
                base=base,
                external_root=None if root_id == "state" else root_id,
            )
        )
    return steps
