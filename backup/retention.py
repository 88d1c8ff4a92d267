"""``backup list`` and ``backup prune``: archives in an output dir and GFS-style retention.

Only files named ``openclaw-backup-<YYYYmmddTHHMMSSZ>.tar.zst`` count; their
time comes from the name (UTC). Prune keeps the union of the rules —
``keep_last`` newest archives, and the newest archive in each of the newest N
non-empty UTC day / ISO week / month buckets — and never deletes the newest
verified archive. Every kept archive carries the reasons it was kept.
"""

from __future__ import annotations

import json
import tarfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import zstandard

from statekit.backup import manifest as mf
from statekit.backup.archive import open_tar_stream
from statekit.backup.create import sidecar_path
from statekit.backup.lock import backup_lock
from statekit.errors import UsageError
from statekit.fsutil import atomic_write_bytes


@dataclass
class ArchiveInfo:
    path: Path
    created: datetime
    size: int
    assets: int | None = None
    verified: bool | None = None  # None: never verified (or no record of it)
    checked_at: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "archive": str(self.path),
            "created_at": mf.iso_utc(self.created),
            "size": self.size,
            "assets": self.assets,
            "verified": self.verified,
            "checked_at": self.checked_at,
        }


@dataclass
class PruneDecision:
    archive: ArchiveInfo
    reasons: list[str] = field(default_factory=list)

    @property
    def keep(self) -> bool:
        return bool(self.reasons)

    def to_json(self) -> dict[str, Any]:
        return {**self.archive.to_json(), "keep": self.keep, "reasons": self.reasons}


def read_manifest_head(path: Path) -> mf.Manifest | None:
    """The manifest (first member) of a statekit archive, decompressing only that far (None unless it is valid)."""
    try:
        with open_tar_stream(path, "zstd", 300 << 20) as (tar, _counter):
            member = tar.next()
            if member is None or not member.name.endswith("/" + mf.MANIFEST_NAME):
                return None
            handle = tar.extractfile(member)
            return mf.Manifest.parse(handle.read()) if handle is not None else None
    except (OSError, EOFError, ValueError, tarfile.TarError, zstandard.ZstdError):
        return None


def _read_sidecar(archive: Path) -> dict[str, Any]:
    try:
        data = json.loads(sidecar_path(archive).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def list_archives(output_dir: Path) -> list[ArchiveInfo]:
    """Archives in ``output_dir``, newest first, with the last recorded verify result."""
    if not output_dir.is_dir():
        return []
    found = []
    for path in output_dir.iterdir():
        created = mf.parse_archive_time(path.name)
        if created is None or not path.is_file() or path.is_symlink():
            continue
        side = _read_sidecar(path)
        assets = side.get("assets")
        if not isinstance(assets, int):
            head = read_manifest_head(path)
            assets = len(head.assets) if head else None
        verified = side.get("verified")
        found.append(
            ArchiveInfo(path, created, path.stat().st_size, assets, verified if isinstance(verified, bool) else None, side.get("checked_at"))
        )
    return sorted(found, key=lambda a: (a.created, a.path.name), reverse=True)


def record_verify_result(archive: Path, ok: bool, problems: list[str], checked_at: str) -> None:
    """Update the sidecar of one of our archives after a ``verify`` (best effort, only when it exists)."""
    side = sidecar_path(archive)
    if not side.exists():
        return
    data = _read_sidecar(archive)
    data.update({"verified": ok, "checked_at": checked_at, "problems": problems[:20]})
    atomic_write_bytes(side, (json.dumps(data, indent=1) + "\n").encode("utf-8"))


_BUCKETS: dict[str, Callable[[datetime], str]] = {
    "daily": lambda t: t.strftime("%Y-%m-%d"),
    "weekly": lambda t: "%04d-W%02d" % t.isocalendar()[:2],
    "monthly": lambda t: t.strftime("%Y-%m"),
}


def plan_prune(
    archives: list[ArchiveInfo], *, keep_last: int = 0, keep_daily: int = 0, keep_weekly: int = 0, keep_monthly: int = 0
) -> list[PruneDecision]:
    """Decide keep/delete for each archive (newest first); pure, no I/O."""
    if min(keep_last, keep_daily, keep_weekly, keep_monthly) < 0:
        raise UsageError("--keep-* values must be 0 or more")
    if not any((keep_last, keep_daily, keep_weekly, keep_monthly)):
        raise UsageError("give at least one retention rule (--keep-last, --keep-daily, --keep-weekly or --keep-monthly); nothing was deleted")
    ordered = sorted(archives, key=lambda a: (a.created, a.path.name), reverse=True)
    decisions = [PruneDecision(a) for a in ordered]
    for index, decision in enumerate(decisions[:keep_last]):
        decision.reasons.append(f"keep-last {index + 1}/{keep_last}")
    for rule, count in (("daily", keep_daily), ("weekly", keep_weekly), ("monthly", keep_monthly)):
        seen: list[str] = []
        for decision in decisions:
            if len(seen) >= count:
                break
            bucket = _BUCKETS[rule](decision.archive.created)
            if bucket not in seen:
                seen.append(bucket)
                decision.reasons.append(f"{rule} {bucket}")
    newest_verified = next((d for d in decisions if d.archive.verified), None)
    if newest_verified is not None and not newest_verified.keep:
        newest_verified.reasons.append("newest verified archive (never pruned)")
    return decisions


def prune_archives(output_dir: Path, *, dry_run: bool = False, **rules: int) -> list[PruneDecision]:
    """Apply :func:`plan_prune` to ``output_dir`` (under the backup lock unless ``dry_run``)."""
    if dry_run:
        return plan_prune(list_archives(output_dir), **rules)
    if not output_dir.is_dir():
        plan_prune([], **rules)  # still reject a call without rules
        return []
    with backup_lock(output_dir):
        decisions = plan_prune(list_archives(output_dir), **rules)
        for decision in decisions:
            if not decision.keep:
                decision.archive.path.unlink(missing_ok=True)
                sidecar_path(decision.archive.path).unlink(missing_ok=True)
    return decisions
