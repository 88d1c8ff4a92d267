"""``backup list`` and ``backup prune``: archives in an output dir and GFS-style retention.

Only files named ``openclaw-backup-<YYYYmmddTHHMMSSZ>.tar.zst`` count; their
time comes from the name (UTC), the install they belong to from their
manifest (``install_id``). Prune works per install (restic's ``forget`` with
one group per install) and keeps the union of the rules — ``keep_last``
newest archives, the newest archive in each of the newest N non-empty UTC
hour / day / ISO week / month / year buckets, every archive newer than
``keep_within`` before the newest one — and never deletes the newest archive
that verified with real content. Archives outside the scope (another
install's; without an install id unless asked) are never deleted. Every kept
archive carries the reasons it was kept. :func:`plan_prune` is pure, so the
same decisions apply to archives in a bucket.
"""

from __future__ import annotations

import calendar
import json
import re
import tarfile
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import zstandard

from statekit.backup import manifest as mf
from statekit.backup.archive import open_tar_stream
from statekit.backup.create import sidecar_path
from statekit.backup.encryption import AGE_SUFFIX
from statekit.backup.passphrase import key_path
from statekit.backup.lock import backup_lock
from statekit.errors import UsageError
from statekit.fsutil import atomic_write_bytes, read_regular_file
from statekit.install import is_install_id


@dataclass
class ArchiveInfo:
    """One archive as retention sees it; ``path`` may be a local file or a remote key (``plan_prune`` never touches it)."""

    path: Path
    created: datetime
    size: int
    assets: int | None = None
    verified: bool | None = None  # None: never verified (or no record of it)
    checked_at: str | None = None
    install_id: str | None = None  # None: an archive made before archives recorded their install
    has_content: bool | None = None  # holds at least one file or database (None: unknown)

    @property
    def good(self) -> bool:
        """Verified, with real content: the kind of archive prune always keeps one of."""
        return bool(self.verified) and self.has_content is not False

    def to_json(self) -> dict[str, Any]:
        return {
            "archive": str(self.path),
            "created_at": mf.iso_utc(self.created),
            "size": self.size,
            "assets": self.assets,
            "verified": self.verified,
            "checked_at": self.checked_at,
            "install_id": self.install_id,
            "has_content": self.has_content,
        }


@dataclass
class PruneDecision:
    archive: ArchiveInfo
    reasons: list[str] = field(default_factory=list)
    in_scope: bool = True  # False: another install's (or an unscoped) archive, never deleted by this prune

    @property
    def keep(self) -> bool:
        return bool(self.reasons)

    def to_json(self) -> dict[str, Any]:
        return {**self.archive.to_json(), "keep": self.keep, "reasons": self.reasons, "in_scope": self.in_scope}


_DURATION = re.compile(r"^(?:(\d+)y)?(?:(\d+)m)?(?:(\d+)d)?(?:(\d+)h)?$")


@dataclass(frozen=True)
class Duration:
    """A restic-style duration (``2d``, ``1y5m7d2h``): years, months, days, hours, in that order."""

    years: int = 0
    months: int = 0
    days: int = 0
    hours: int = 0

    @classmethod
    def parse(cls, text: str) -> Duration:
        match = _DURATION.match(text.strip())
        if not text.strip() or match is None:
            raise UsageError(f"--keep-within {text!r}: not a duration like 2d, 36h or 1y5m7d2h (years, months, days, hours)")
        return cls(*(int(g or 0) for g in match.groups()))

    def before(self, moment: datetime) -> datetime:
        """``moment`` minus this duration (calendar months and years; a day past the month's end is clamped)."""
        month_index = moment.year * 12 + moment.month - 1 - self.years * 12 - self.months
        year, month = divmod(month_index, 12)
        last_day = calendar.monthrange(year, month + 1)[1]
        shifted = moment.replace(year=year, month=month + 1, day=min(moment.day, last_day))
        return shifted - timedelta(days=self.days, hours=self.hours)

    def __str__(self) -> str:
        text = "".join(f"{n}{u}" for n, u in ((self.years, "y"), (self.months, "m"), (self.days, "d"), (self.hours, "h")) if n)
        return text or "0h"


@dataclass(frozen=True)
class RetentionPolicy:
    """The ``--keep-*`` rules; an archive is kept when any rule keeps it (restic's ``forget`` semantics)."""

    keep_last: int = 0
    keep_hourly: int = 0
    keep_daily: int = 0
    keep_weekly: int = 0
    keep_monthly: int = 0
    keep_yearly: int = 0
    keep_within: Duration | None = None

    def check(self) -> None:
        counts = (self.keep_last, self.keep_hourly, self.keep_daily, self.keep_weekly, self.keep_monthly, self.keep_yearly)
        if min(counts) < 0:
            raise UsageError("--keep-* values must be 0 or more")
        if not any(counts) and self.keep_within is None:
            raise UsageError("give at least one retention rule (--keep-last, --keep-hourly, --keep-daily, --keep-weekly, --keep-monthly,"
                             " --keep-yearly or --keep-within); nothing was deleted")


@dataclass(frozen=True)
class InstallScope:
    """Which archives a list or prune acts on: one install's (``install_id``), or every install's (None)."""

    install_id: str | None = None
    include_unscoped: bool = False  # also archives that record no install id

    def covers(self, archive: ArchiveInfo) -> bool:
        if self.install_id is None:
            return True
        if archive.install_id is None:
            return self.include_unscoped
        return archive.install_id == self.install_id


ALL_INSTALLS = InstallScope(None)


T = TypeVar("T")


def read_manifest_head(path: Path) -> mf.Manifest | None:
    """The manifest (first member) of a statekit archive, decompressing only that far (None unless it is valid)."""
    return _first_manifest(path, mf.Manifest.read)


def read_manifest_summary(path: Path) -> mf.ManifestSummary | None:
    """What ``list`` shows of that manifest, keeping no record per asset (None unless it is valid)."""
    return _first_manifest(path, mf.read_summary)


def _first_manifest(path: Path, parse: Callable[[Callable[[int], bytes]], T]) -> T | None:
    """``parse`` of the manifest (the first member) read from the archive at ``path`` as it decompresses."""
    try:
        with open_tar_stream(path, "zstd", 300 << 20) as (tar, _counter):
            member = tar.next()
            if member is None or not member.name.endswith("/" + mf.MANIFEST_NAME):
                return None
            handle = tar.extractfile(member)
            return parse(handle.read) if handle is not None else None
    except (OSError, EOFError, ValueError, tarfile.TarError, zstandard.ZstdError):
        return None


def _read_sidecar(archive: Path) -> dict[str, Any]:
    try:
        data = json.loads(read_regular_file(sidecar_path(archive)).decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def list_archives(*output_dirs: Path) -> list[ArchiveInfo]:
    """Archives in the ``output_dirs``, newest first, with the last recorded verify result and, from each manifest,
    the install it belongs to and whether it holds real content."""
    found = []
    seen: set[Path] = set()
    for output_dir in output_dirs:
        if not output_dir.is_dir():
            continue
        for path in output_dir.iterdir():
            created = mf.parse_archive_time(path.name.removesuffix(AGE_SUFFIX))
            if created is None or path in seen or not path.is_file() or path.is_symlink():
                continue
            seen.add(path)
            side = _read_sidecar(path)
            head = None if path.name.endswith(AGE_SUFFIX) else read_manifest_summary(path)  # an encrypted one: its sidecar says
            assets = head.assets if head else side.get("assets")
            verified = side.get("verified")
            side_install = side.get("install_id")
            found.append(ArchiveInfo(
                path, created, path.stat().st_size, assets if isinstance(assets, int) else None,
                verified if isinstance(verified, bool) else None, side.get("checked_at"),
                install_id=head.install_id if head else (side_install if isinstance(side_install, str) and is_install_id(side_install) else None),
                has_content=head.has_content if head else None,
            ))
    return sorted(found, key=lambda a: (a.created, a.path.name), reverse=True)


def install_dirs(base: Path) -> list[Path]:
    """``base`` (the default ``openclaw-backups/``, where archives went before they were kept per install) and its
    per-install folders (``<32 hex digits>/``)."""
    if not base.is_dir():
        return []
    return [base, *sorted(p for p in base.iterdir() if p.is_dir() and not p.is_symlink() and is_install_id(p.name))]


def record_verify_result(archive: Path, ok: bool, problems: list[str], checked_at: str) -> None:
    """Update the sidecar of one of our archives after a ``verify`` (best effort, only when it exists)."""
    side = sidecar_path(archive)
    if not side.exists():
        return
    data = _read_sidecar(archive)
    data.update({"verified": ok, "checked_at": checked_at, "problems": problems[:20]})
    atomic_write_bytes(side, (json.dumps(data, indent=1) + "\n").encode("utf-8"))


_BUCKETS: dict[str, Callable[[datetime], str]] = {
    "hourly": lambda t: t.strftime("%Y-%m-%d %H:00"),
    "daily": lambda t: t.strftime("%Y-%m-%d"),
    "weekly": lambda t: "%04d-W%02d" % t.isocalendar()[:2],
    "monthly": lambda t: t.strftime("%Y-%m"),
    "yearly": lambda t: t.strftime("%Y"),
}


def _out_of_scope_reason(archive: ArchiveInfo) -> str:
    if archive.install_id is None:
        return "no install id (a scoped prune never deletes it; --include-unscoped)"
    return f"another install ({archive.install_id[:12]})"


def _decide_group(decisions: list[PruneDecision], policy: RetentionPolicy) -> None:
    """One install's archives (newest first): the union of the rules, then the newest good archive."""
    for index, decision in enumerate(decisions[: policy.keep_last]):
        decision.reasons.append(f"keep-last {index + 1}/{policy.keep_last}")
    for rule, count in (("hourly", policy.keep_hourly), ("daily", policy.keep_daily), ("weekly", policy.keep_weekly),
                        ("monthly", policy.keep_monthly), ("yearly", policy.keep_yearly)):
        seen: list[str] = []
        for decision in decisions:
            if len(seen) >= count:
                break
            bucket = _BUCKETS[rule](decision.archive.created)
            if bucket not in seen:
                seen.append(bucket)
                decision.reasons.append(f"{rule} {bucket}")
    if policy.keep_within is not None and decisions:
        cutoff = policy.keep_within.before(decisions[0].archive.created)
        for decision in decisions:
            if decision.archive.created > cutoff:
                decision.reasons.append(f"within {policy.keep_within} of the newest")
    newest_good = next((d for d in decisions if d.archive.good), None)
    if newest_good is not None and not newest_good.keep:
        newest_good.reasons.append("newest verified archive with content (never pruned)")


def plan_prune(
    archives: list[ArchiveInfo], policy: RetentionPolicy | None = None, *, scope: InstallScope = ALL_INSTALLS, **rules: Any
) -> list[PruneDecision]:
    """Decide keep/delete for each archive, newest first; pure, no I/O (local and remote archives alike).

    ``policy`` (or its fields as keywords: ``keep_last=3``...) is applied to the scope's install (archives without an
    install id that the scope includes count as its own), or with :data:`ALL_INSTALLS` to each install's archives
    separately (those without an install id form one group); archives outside ``scope`` are kept and marked
    ``in_scope=False``. In every group the newest archive that verified with real content is never deleted,
    whatever the policy says."""
    policy = policy or RetentionPolicy(**rules)
    policy.check()
    ordered = sorted(archives, key=lambda a: (a.created, a.path.name), reverse=True)
    decisions = [PruneDecision(a, in_scope=scope.covers(a)) for a in ordered]
    groups: dict[str | None, list[PruneDecision]] = {}
    for decision in decisions:
        if decision.in_scope:  # one install: one group (unscoped archives asked in count as its own); every install: one each
            key = scope.install_id if scope.install_id is not None else decision.archive.install_id
            groups.setdefault(key, []).append(decision)
        else:
            decision.reasons.append(_out_of_scope_reason(decision.archive))
    for group in groups.values():
        _decide_group(group, policy)
    return decisions


def prune_archives(
    output_dir: Path, *, dry_run: bool = False, scope: InstallScope = ALL_INSTALLS, policy: RetentionPolicy | None = None,
    also: tuple[Path, ...] = (), **rules: Any,
) -> list[PruneDecision]:
    """Apply :func:`plan_prune` to the archives of ``output_dir`` (and the ``also`` dirs), under each dir's backup lock
    unless ``dry_run``."""
    policy = policy or RetentionPolicy(**rules)
    dirs = [d for d in (output_dir, *also) if d.is_dir()]
    if dry_run:
        return plan_prune(list_archives(*dirs), policy, scope=scope)
    if not dirs:
        policy.check()  # still reject a call without rules
        return []
    with ExitStack() as stack:
        for directory in dirs:
            stack.enter_context(backup_lock(directory))
        decisions = plan_prune(list_archives(*dirs), policy, scope=scope)
        for decision in decisions:
            if not decision.keep and decision.in_scope:
                decision.archive.path.unlink(missing_ok=True)
                sidecar_path(decision.archive.path).unlink(missing_ok=True)
                key_path(decision.archive.path).unlink(missing_ok=True)  # passphrase mode: its wrapped key goes with it
    return decisions
