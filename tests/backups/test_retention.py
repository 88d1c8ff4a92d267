"""backup list and prune: union of keep rules, UTC buckets, newest verified archive always kept."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from freezegun import freeze_time

from statekit.backup.create import create_backup, sidecar_path
from statekit.backup.lock import backup_lock
from statekit.backup.retention import ArchiveInfo, list_archives, plan_prune, prune_archives
from statekit.errors import BusyError, UsageError


def _info(stamp: str, verified: bool | None = True) -> ArchiveInfo:
    created = datetime.strptime(stamp, "%Y-%m-%d %H:%M").replace(tzinfo=timezone.utc)
    return ArchiveInfo(Path(f"openclaw-backup-{created:%Y%m%dT%H%M%SZ}.tar.zst"), created, 100, 3, verified)


def _kept(decisions) -> dict[str, list[str]]:
    return {d.archive.created.strftime("%Y-%m-%d %H:%M"): d.reasons for d in decisions if d.keep}


def test_keep_last():
    archives = [_info(f"2026-01-0{d} 03:00") for d in range(1, 6)]
    kept = _kept(plan_prune(archives, keep_last=2))
    assert kept == {"2026-01-05 03:00": ["keep-last 1/2"], "2026-01-04 03:00": ["keep-last 2/2"]}


def test_daily_keeps_the_newest_of_each_utc_day():
    archives = [_info("2026-01-01 01:00"), _info("2026-01-01 23:30"), _info("2026-01-02 00:10"), _info("2026-01-02 12:00"), _info("2026-01-03 05:00")]
    kept = _kept(plan_prune(archives, keep_daily=2))
    assert kept == {"2026-01-03 05:00": ["daily 2026-01-03"], "2026-01-02 12:00": ["daily 2026-01-02"]}


def test_weekly_and_monthly_buckets_and_union():
    archives = [_info(s) for s in ("2025-12-29 10:00", "2026-01-04 10:00", "2026-01-05 10:00", "2026-01-31 10:00", "2026-02-01 10:00", "2026-02-02 10:00")]
    decisions = plan_prune(archives, keep_weekly=2, keep_monthly=3, keep_last=1)
    kept = _kept(decisions)
    # ISO weeks start on Monday: 2026-02-02 is W06, 2026-01-31/02-01 are W05.
    assert kept["2026-02-02 10:00"] == ["keep-last 1/1", "weekly 2026-W06", "monthly 2026-02"]
    assert kept["2026-02-01 10:00"] == ["weekly 2026-W05"]
    assert kept["2026-01-31 10:00"] == ["monthly 2026-01"]
    assert kept["2025-12-29 10:00"] == ["monthly 2025-12"]
    assert sorted(d.archive.created.day for d in decisions if not d.keep) == [4, 5]


def test_newest_verified_archive_is_never_pruned():
    archives = [_info("2026-01-03 00:00", verified=False), _info("2026-01-02 00:00", verified=None), _info("2026-01-01 00:00", verified=True)]
    kept = _kept(plan_prune(archives, keep_last=1))
    assert kept == {"2026-01-03 00:00": ["keep-last 1/1"], "2026-01-01 00:00": ["newest verified archive with content (never pruned)"]}


def test_no_rule_is_refused():
    with pytest.raises(UsageError, match="at least one retention rule"):
        plan_prune([_info("2026-01-01 00:00")])


def _make_archives(state_tree, out: Path, times: list[str]) -> list[Path]:
    paths = []
    for stamp in times:
        with freeze_time(stamp):
            paths.append(create_backup(state_tree.root, out, record=False, verify=stamp != times[-1]).archive_path)
    return paths


def test_list_and_prune_real_archives(state_tree, tmp_path):
    out = tmp_path / "out"
    paths = _make_archives(state_tree, out, ["2026-01-01 03:00:00", "2026-01-02 03:00:00", "2026-01-02 04:00:00", "2026-01-03 03:00:00"])
    listed = list_archives(out)
    assert [a.path for a in listed] == list(reversed(paths))
    assert [a.verified for a in listed] == [None, True, True, True]  # the newest was made with --no-verify
    assert all(a.assets and a.assets > 10 for a in listed)
    sidecar_path(paths[0]).unlink()  # no sidecar: asset count comes from the manifest head
    assert list_archives(out)[-1].assets == listed[-1].assets
    with freeze_time("2026-01-03 05:00:00"):
        decisions = prune_archives(out, dry_run=True, keep_last=1)
    assert all(p.exists() for p in paths)
    assert {d.archive.path: d.keep for d in decisions} == {paths[3]: True, paths[2]: True, paths[1]: False, paths[0]: False}
    prune_archives(out, keep_last=1)
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == sorted(
        [paths[3].name, paths[2].name, sidecar_path(paths[3]).name, sidecar_path(paths[2]).name]
    )


def test_prune_waits_for_no_one(state_tree, tmp_path):
    out = tmp_path / "out"
    _make_archives(state_tree, out, ["2026-01-01 03:00:00"])
    with backup_lock(out):
        with pytest.raises(BusyError):
            prune_archives(out, keep_last=1)


def test_list_ignores_foreign_files(tmp_path):
    (tmp_path / "openclaw-backup-garbage.tar.zst").write_text("x")
    (tmp_path / "notes.txt").write_text("x")
    stamp = datetime(2026, 1, 1, tzinfo=timezone.utc) + timedelta(hours=1)
    (tmp_path / f"openclaw-backup-{stamp:%Y%m%dT%H%M%SZ}.tar.zst").write_bytes(b"not zstd")
    listed = list_archives(tmp_path)
    assert len(listed) == 1 and listed[0].assets is None and listed[0].verified is None
