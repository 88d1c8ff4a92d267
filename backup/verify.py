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

The checks live with their format: ``statekit_format.verify_statekit`` and
``openclaw_format.verify_openclaw``; the report, limits and shared member checks are in ``checks``.
This module sniffs the format and dispatches. A statekit archive is verified in one forward pass from any
stream (:func:`verify_stream`: a local file, the plaintext of an age archive as it is decrypted, an S3
body): nothing is seeked, no copy of the archive is written.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import BinaryIO

from statekit.backup.archive import ZSTD_MAGIC, sniff_format
from statekit.backup.decrypt_reader import decrypting_reader
from statekit.backup.encryption import Identities, is_encrypted, require_identities
from statekit.backup.checks import (
    ABSOLUTE_CAP, OPENCLAW, STATEKIT, Scratch, ScratchError, VerifyReport, link_escapes, member_path_problem,
)
from statekit.backup.openclaw_format import OcMember, encode_openclaw_path, gzip_digest_problem, verify_openclaw
from statekit.backup.statekit_format import (
    Written, archive_digest_problem, verify_statekit, verify_statekit_stream, zstd_structure_problem,
)
from statekit.backup.stream_verify import Readable
from statekit.errors import StatekitError, VerificationError
from statekit.fsutil import CHUNK, create_file, open_regular_file
from statekit.progress import ProgressFn, ProgressReader, start_phase

# The names callers imported from here before the per-format split.
__all__ = [
    "ABSOLUTE_CAP", "OPENCLAW", "STATEKIT", "OcMember", "VerifyReport", "archive_digest_problem", "encode_openclaw_path",
    "gzip_digest_problem", "link_escapes", "member_path_problem", "verify_archive", "verify_stream", "zstd_structure_problem",
]


def verify_archive(
    path: Path | str, *, scratch_dir: Path | None = None, max_bytes: int = ABSOLUTE_CAP, progress: ProgressFn | None = None,
    identities: Identities | None = None, written: Mapping[str, Written] | None = None,
) -> VerifyReport:
    """Verify ``path`` (statekit ``.tar.zst`` or OpenClaw ``.tar.gz``, or either age-encrypted) in one streaming pass.

    ``progress`` (see :mod:`statekit.progress`) is told the compressed bytes read. ``written``: only ``backup create``
    verifying the archive it has just written passes what it established while writing each member (its SHA-256,
    a database's integrity check): those members are not hashed or checked again (see ``statekit_format.Written``)."""
    path = Path(path)
    report = VerifyReport(path=path, format="unknown")
    if not path.exists():
        report.problems.append(f"{path}: archive does not exist")
        return report
    if not path.is_file():
        report.problems.append(f"{path}: not a regular file")
        return report
    if is_encrypted(path):
        return _encrypted_report(path, scratch_dir, max_bytes, identities, progress)
    kind = sniff_format(path)
    scratch = Scratch(scratch_dir)
    try:
        if kind == "zstd":
            report.format = STATEKIT
            verify_statekit(report, scratch, max_bytes, progress, written)
        elif kind == "gzip":
            report.format = OPENCLAW
            verify_openclaw(report, scratch, max_bytes, progress)
        else:
            report.problems.append(f"{path}: not a statekit .tar.zst or OpenClaw .tar.gz backup archive")
    except ScratchError as exc:
        raise _scratch_failed(path, exc, scratch) from None
    finally:
        scratch.cleanup()
    report.ok = not report.problems
    return report


def _scratch_failed(path: Path, exc: ScratchError, scratch: Scratch) -> StatekitError:
    return StatekitError(
        f"{path}: could not be verified: writing a scratch copy failed ({exc}; {scratch.path or tempfile.gettempdir()}); "
        "the archive itself was not judged -- free space there and verify again"
    )


def verify_stream(
    path: Path, source: Readable, *, scratch_dir: Path | None = None, max_bytes: int = ABSOLUTE_CAP,
) -> VerifyReport:
    """Verify the archive whose bytes ``source`` yields, read once front to back (``path`` names it in the report).

    A statekit ``.tar.zst`` is verified as it streams (:func:`verify_statekit_stream`): nothing of the archive is
    written anywhere (a database member is copied to a private scratch file for its ``integrity_check``). Any other
    format (an OpenClaw ``.tar.gz``, whose verify seeks) is spooled into a private scratch copy and verified there."""
    report = VerifyReport(path=path, format="unknown")
    head = _read_exactly(source, len(ZSTD_MAGIC))
    stream = _Prefixed(head, source)
    scratch = Scratch(scratch_dir)
    try:
        if head == ZSTD_MAGIC:
            report.format = STATEKIT
            verify_statekit_stream(report, stream, scratch, max_bytes)
            report.ok = not report.problems
            return report
        return _spooled_report(path, stream, scratch, max_bytes)
    except ScratchError as exc:
        raise _scratch_failed(path, exc, scratch) from None
    finally:
        scratch.cleanup()


def _spooled_report(path: Path, stream: Readable, scratch: Scratch, max_bytes: int) -> VerifyReport:
    try:
        spooled = scratch() / (path.name or "archive")
        with os.fdopen(create_file(spooled), "wb") as out:
            while block := stream.read(CHUNK):
                out.write(block)
    except OSError as exc:
        raise ScratchError(exc) from None
    report = verify_archive(spooled, scratch_dir=scratch(), max_bytes=max_bytes)
    report.problems = [p.replace(str(spooled), str(path)) for p in report.problems]
    report.path = path
    return report


def _read_exactly(source: Readable, n: int) -> bytes:
    data = b""
    while len(data) < n and (block := source.read(n - len(data))):
        data += block
    return data


class _Prefixed:
    """``prefix`` (bytes already read to sniff the format), then the rest of ``source``."""

    def __init__(self, prefix: bytes, source: Readable) -> None:
        self._prefix = prefix
        self._source = source

    def read(self, n: int = -1) -> bytes:
        if self._prefix:
            if n is None or n < 0 or n >= len(self._prefix):
                data, self._prefix = self._prefix, b""
                return data
            data, self._prefix = self._prefix[:n], self._prefix[n:]
            return data
        return self._source.read(n)


def _encrypted_report(path: Path, scratch_dir: Path | None, max_bytes: int, identities: Identities | None,
                      progress: ProgressFn | None) -> VerifyReport:
    """Decrypt while verifying (age authenticates every byte: damage fails the decryption); no plaintext copy."""
    keys = require_identities(str(path), identities)
    start_phase(progress, "verify", path.stat().st_size, "bytes")
    try:
        with open_regular_file(path, follow_symlinks=True) as opened:  # an operator-given archive
            raw: BinaryIO = opened if progress is None else ProgressReader(opened, progress)  # type: ignore[assignment]
            with decrypting_reader(raw, keys, str(path)) as plain:
                report = verify_stream(path, plain, scratch_dir=scratch_dir, max_bytes=max_bytes)
    except VerificationError as exc:
        return VerifyReport(path=path, format="age", problems=[str(exc)])
    report.notes.append("age-encrypted archive: decrypted and authenticated")
    return report
