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


# --- issue 12: install-scoped backups, --keep-hourly/--keep-yearly/--keep-within, STATEKIT_BACKUP_DIR; issue 11 item 2's
# prune rule. Each test below fails on 308a7ed (no such fields, rules, options or folders there).

import json  # noqa: E402

from statekit.backup.retention import Duration, InstallScope, RetentionPolicy  # noqa: E402
from statekit.cli import main  # noqa: E402
from statekit.install import ensure_install_id, install_id_path, read_install_id  # noqa: E402

A = "a" * 32
B = "b" * 32


def _at(stamp: str, install: str | None = A, verified: bool | None = True, content: bool | None = True) -> ArchiveInfo:
    info = _info(stamp, verified)
    info.install_id, info.has_content = install, content
    return info


def test_hourly_and_yearly_buckets():
    archives = [_at(s) for s in ("2024-06-01 10:00", "2025-03-01 10:00", "2025-12-31 23:10", "2026-01-01 00:05", "2026-01-01 00:40",
                                 "2026-01-01 01:00")]
    kept = _kept(plan_prune(archives, keep_hourly=2, keep_yearly=3))
    assert kept == {
        "2026-01-01 01:00": ["hourly 2026-01-01 01:00", "yearly 2026"],
        "2026-01-01 00:40": ["hourly 2026-01-01 00:00"],
        "2025-12-31 23:10": ["yearly 2025"],
        "2024-06-01 10:00": ["yearly 2024"],
    }


def test_keep_within_is_relative_to_the_newest_archive_with_calendar_months():
    """restic semantics: every archive newer than DURATION before the newest one (not before now)."""
    archives = [_at(s) for s in ("2026-03-31 12:00", "2026-03-01 00:00", "2026-02-28 13:00", "2026-02-28 11:00", "2025-01-01 00:00")]
    with freeze_time("2030-01-01"):  # the clock plays no part
        kept = _kept(plan_prune(archives, keep_within=Duration.parse("1m")))
    # 1 month before 2026-03-31 12:00 is 2026-02-28 12:00 (the day clamped to February's end)
    assert sorted(kept) == ["2026-02-28 13:00", "2026-03-01 00:00", "2026-03-31 12:00"]
    assert kept["2026-03-01 00:00"] == ["within 1m of the newest"]


def test_duration_parsing():
    assert Duration.parse("1y5m7d2h") == Duration(1, 5, 7, 2)
    assert Duration.parse("36h") == Duration(hours=36) and str(Duration.parse("2d")) == "2d"
    moment = datetime(2026, 3, 10, 5, tzinfo=timezone.utc)
    assert Duration.parse("1y5m7d2h").before(moment) == datetime(2024, 10, 3, 3, tzinfo=timezone.utc)
    for bad in ("", "2w", "5d1y", "1.5d", "-1d"):
        with pytest.raises(UsageError, match="not a duration"):
            Duration.parse(bad)
    assert plan_prune([_at("2026-01-01 00:00")], RetentionPolicy(keep_within=Duration(days=1)))[0].keep


def test_newest_verified_archive_with_content_survives_any_policy():
    """Issue 11 item 2: a newer archive that verified but holds no state does not count; the newest good one stays."""
    archives = [_at("2026-01-04 00:00", verified=None), _at("2026-01-03 00:00", content=False), _at("2026-01-02 00:00"),
                _at("2026-01-01 00:00")]
    kept = _kept(plan_prune(archives, keep_last=1))
    assert kept == {"2026-01-04 00:00": ["keep-last 1/1"], "2026-01-02 00:00": ["newest verified archive with content (never pruned)"]}


def test_prune_is_per_install_and_scoped():
    archives = [_at("2026-01-03 00:00", A), _at("2026-01-02 00:00", B), _at("2026-01-02 00:00", None), _at("2026-01-01 00:00", A),
                _at("2026-01-01 00:00", B)]
    decisions = plan_prune(archives, keep_last=1, scope=InstallScope(A))
    deleted = [(d.archive.install_id, d.archive.created.day) for d in decisions if not d.keep]
    assert deleted == [(A, 1)]
    assert {d.archive.install_id for d in decisions if not d.in_scope} == {B, None}
    with_unscoped = plan_prune(archives, keep_last=1, scope=InstallScope(A, include_unscoped=True))
    assert [d.archive.install_id for d in with_unscoped if d.in_scope] == [A, None, A]
    everyone = plan_prune(archives, keep_last=1)  # --all-installs: the policy per install, each keeps its newest
    assert sorted((d.archive.install_id or "-", d.archive.created.day) for d in everyone if not d.keep) == [(A, 1), (B, 1)]


def _two_installs(tmp_path: Path) -> tuple[Path, Path]:
    home = tmp_path / "home"
    first, second = home / ".openclaw", home / "other-openclaw"
    for state in (first, second):
        (state / "agents" / "main" / "sessions").mkdir(parents=True)
        (state / "agents" / "main" / "sessions" / "sessions.json").write_text('{"main": {"sessionId": "s1"}}')
        (state / "openclaw.json").write_text("{}")
    return first, second


def test_two_installs_under_one_parent_never_share_archives(tmp_path, capsys):
    """Issue 12 problem 2: default folders per install; `prune --keep-last 1` of one leaves the other's archives."""
    first, second = _two_installs(tmp_path)
    made: dict[Path, list[Path]] = {first: [], second: []}
    for index, stamp in enumerate(["2026-01-01 03:00:00", "2026-01-02 03:00:00", "2026-01-03 03:00:00"]):
        for offset, state in enumerate((first, second)):
            with freeze_time(stamp.replace("03:00:00", f"03:0{offset}:00")):
                made[state].append(create_backup(state, record=False).archive_path)
    assert read_install_id(first) != read_install_id(second)
    assert {p.parent for p in made[first]} == {tmp_path / "home" / "openclaw-backups" / read_install_id(first)}
    assert {p.parent for p in made[second]} == {tmp_path / "home" / "openclaw-backups" / read_install_id(second)}
    assert main(["backup", "list", "--state-dir", str(first), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["archives"]
    assert [a["archive"] for a in listed] == [str(p) for p in reversed(made[first])]
    assert main(["backup", "prune", "--state-dir", str(first), "--keep-last", "1"]) == 0
    capsys.readouterr()
    assert [p.exists() for p in made[first]] == [False, False, True]
    assert all(p.exists() for p in made[second])


def test_a_shared_output_dir_is_pruned_per_install(tmp_path, capsys):
    first, second = _two_installs(tmp_path)
    shared = tmp_path / "shared-out"
    made: dict[Path, list[Path]] = {first: [], second: []}
    for day in (1, 2, 3):
        for offset, state in enumerate((first, second)):
            with freeze_time(f"2026-01-0{day} 03:0{offset}:00"):
                made[state].append(create_backup(state, shared, record=False).archive_path)
    assert main(["backup", "prune", "--state-dir", str(second), "--output", str(shared), "--keep-last", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert sum(1 for a in out["archives"] if not a["in_scope"]) == 3
    assert all(p.exists() for p in made[first])
    assert [p.exists() for p in made[second]] == [False, False, True]
    assert main(["backup", "list", "--state-dir", str(first), "--output", str(shared), "--all-installs", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["archives"]) == 4


def test_archives_without_install_id_are_listed_and_only_pruned_when_asked(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # the table fits the terminal; at 80 columns names wrap
    first, _second = _two_installs(tmp_path)
    base = tmp_path / "home" / "openclaw-backups"
    install_id_path(first).parent.mkdir(parents=True)
    install_id_path(first).mkdir()  # an unreadable id: the archive records none (as every archive before the field)
    with freeze_time("2026-01-01 03:00:00"):
        old = create_backup(first, base, record=False)
    assert "no install id" in " ".join(old.warnings) and "install_id" not in old.manifest
    install_id_path(first).rmdir()
    ensure_install_id(first)
    with freeze_time("2026-01-02 03:00:00"):
        new = create_backup(first, record=False).archive_path
    assert main(["backup", "list", "--state-dir", str(first)]) == 0
    text = capsys.readouterr().out
    assert "(none)" in text and old.archive_path.name in text and new.name in text
    assert main(["backup", "prune", "--state-dir", str(first), "--keep-last", "1"]) == 0
    capsys.readouterr()
    assert old.archive_path.exists() and new.exists()
    assert main(["backup", "prune", "--state-dir", str(first), "--keep-last", "1", "--include-unscoped"]) == 0
    capsys.readouterr()
    assert not old.archive_path.exists() and new.exists()


def test_backup_dir_env_names_the_output_folder(tmp_path, capsys, monkeypatch):
    first, _second = _two_installs(tmp_path)
    folder = tmp_path / "from-env"
    monkeypatch.setenv("STATEKIT_BACKUP_DIR", str(folder))
    with freeze_time("2026-01-01 03:00:00"):
        assert main(["backup", "create", "--state-dir", str(first), "--quiet"]) == 0
    with freeze_time("2026-01-02 03:00:00"):
        assert main(["backup", "create", "--state-dir", str(first), "--quiet"]) == 0
    flagged = tmp_path / "flag"
    assert main(["backup", "create", "--state-dir", str(first), "--output", str(flagged), "--quiet"]) == 0  # flag > env
    assert len(list(flagged.glob("*.tar.zst"))) == 1 and len(list(folder.glob("*.tar.zst"))) == 2
    assert main(["backup", "list", "--state-dir", str(first), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["output_dir"] == str(folder)
    assert main(["backup", "prune", "--state-dir", str(first), "--keep-last", "1"]) == 0
    assert len(list(folder.glob("*.tar.zst"))) == 1


def test_migrate_pre_migration_backup_honours_the_env(tmp_path):
    from helpers import run_cli

    first, _second = _two_installs(tmp_path)
    folder = tmp_path / "from-env"
    result = run_cli("migrate", "--state-dir", first, "--yes", "--json", env={"STATEKIT_BACKUP_DIR": str(folder)})
    assert result.returncode in (0, 3), result.stderr
    assert Path(json.loads(result.stdout)["backup_path"]).parent == folder
