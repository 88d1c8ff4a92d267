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
This module sniffs the format and dispatches.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from statekit.backup.archive import sniff_format
from statekit.backup.encryption import Identities, decrypted_copy, is_encrypted
from statekit.backup.checks import (
    ABSOLUTE_CAP, OPENCLAW, STATEKIT, Scratch, ScratchError, VerifyReport, link_escapes, member_path_problem,
)
from statekit.backup.openclaw_format import OcMember, encode_openclaw_path, gzip_digest_problem, verify_openclaw
from statekit.backup.statekit_format import archive_digest_problem, verify_statekit, zstd_structure_problem
from statekit.errors import StatekitError, VerificationError
from statekit.progress import ProgressFn

# The names callers imported from here before the per-format split.
__all__ = [
    "ABSOLUTE_CAP", "OPENCLAW", "STATEKIT", "OcMember", "VerifyReport", "archive_digest_problem", "encode_openclaw_path",
    "gzip_digest_problem", "link_escapes", "member_path_problem", "verify_archive", "zstd_structure_problem",
]


def verify_archive(
    path: Path | str, *, scratch_dir: Path | None = None, max_bytes: int = ABSOLUTE_CAP, progress: ProgressFn | None = None,
    identities: Identities | None = None,
) -> VerifyReport:
    """Verify ``path`` (statekit ``.tar.zst`` or OpenClaw ``.tar.gz``, or either age-encrypted) in one streaming pass.

    ``progress`` (see :mod:`statekit.progress`) is told the compressed bytes read."""
    path = Path(path)
    report = VerifyReport(path=path, format="unknown")
    if not path.exists():
        report.problems.append(f"{path}: archive does not exist")
        return report
    if not path.is_file():
        report.problems.append(f"{path}: not a regular file")
        return report
    if is_encrypted(path):
        return _decrypt_then_verify(path, scratch_dir, max_bytes, identities)
    kind = sniff_format(path)
    scratch = Scratch(scratch_dir)
    try:
        if kind == "zstd":
            report.format = STATEKIT
            verify_statekit(report, scratch, max_bytes, progress)
        elif kind == "gzip":
            report.format = OPENCLAW
            verify_openclaw(report, scratch, max_bytes, progress)
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



def _decrypt_then_verify(path: Path, scratch_dir: Path | None, max_bytes: int, identities: Identities | None) -> VerifyReport:
    """Decrypt into a private scratch copy (age authenticates every byte: damage fails here), then verify that."""
    try:
        with decrypted_copy(path, identities, scratch_dir) as plain:
            report = verify_archive(plain, scratch_dir=scratch_dir, max_bytes=max_bytes)
    except VerificationError as exc:
        report = VerifyReport(path=path, format="age", problems=[str(exc)])
        return report
    report.problems = [p.replace(str(plain), str(path)) for p in report.problems]  # noqa: B023  (plain: set above)
    report.path = path
    report.notes.append("age-encrypted archive: decrypted and authenticated")
    return report
