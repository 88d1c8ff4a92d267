"""Issue 16: ``backup create`` hashes each byte once; ``backup restore`` of a statekit archive verifies while it writes.

* create: a snapshot is hashed as it streams into the archive (not before too); create's verify pass still reads
  every byte of the file on disk (digest trailer, zstd frames and checksums, every tar header against the manifest)
  but neither hashes the members again nor copies a database to a scratch file for a second ``integrity_check``;
* restore: one decompression pass that writes into staging while checking every digest and database; published
  only when every check passed, else the staging (and a target the run made) is removed.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from statekit.backup import snapshot as snapshot_mod
from statekit.backup import statekit_format as skf
from statekit.backup.create import create_backup
from statekit.backup.restore import TARGET_STAGING_PREFIX, restore_archive
from statekit.backup.verify import verify_archive
from backup_helpers import rewrite, tree_state
from statekit.errors import VerificationError
from statekit.seams import install_checkpoint_hook


def _read_bytes_counter() -> int:
    """Bytes this process has read through read(2) and the like (``rchar`` of /proc/self/io)."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar in /proc/self/io")


def _databases(archive: Path) -> int:
    report = verify_archive(archive)
    assert report.ok and report.manifest is not None, report.problems
    return sum(1 for a in report.manifest.assets if a.kind == "sqlite")


def test_create_checks_each_database_once_and_its_verify_copies_none(state_tree, tmp_path, monkeypatch) -> None:
    checked: list[Path] = []
    real = snapshot_mod.inspect_db

    def counting(path: Path, **kwargs: object) -> snapshot_mod.DbFacts:
        checked.append(path)
        return real(path, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(snapshot_mod, "inspect_db", counting)  # the snapshot's check
    monkeypatch.setattr(skf, "inspect_db", counting)  # verify's check of a database member
    result = create_backup(state_tree.root, tmp_path / "out", record=False)
    during_create = list(checked)
    assert result.verified and result.verify_report is not None and result.verify_report.ok
    databases = _databases(result.archive_path)
    assert databases >= 2
    assert len(during_create) == databases, during_create  # before: twice each (the snapshot, then a scratch copy in verify)
    assert all(p.name.startswith("db-") and p.parent.name.startswith(".statekit-backup-") for p in during_create)


def test_create_verify_still_reads_the_file_on_disk(state_tree, tmp_path) -> None:
    """A byte of the written archive altered before the verify pass: create fails (exit 5) and publishes nothing."""
    out = tmp_path / "out"

    def flip(name: str) -> None:
        if name == "backup-partial-written":
            partial = next(out.glob("*.partial"))
            data = bytearray(partial.read_bytes())
            data[len(data) // 2] ^= 0x01
            partial.write_bytes(bytes(data))

    previous = install_checkpoint_hook(flip)
    try:
        with pytest.raises(VerificationError, match="failed verification, nothing was published"):
            create_backup(state_tree.root, out, record=False)
    finally:
        install_checkpoint_hook(previous)
    assert not list(out.glob("*.tar.zst")) and not list(out.glob("*.partial"))


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="needs Linux /proc/<pid>/io")
def test_restore_reads_the_archive_once(state_tree, tmp_path) -> None:
    (state_tree.root / "media").mkdir()
    (state_tree.root / "media" / "big.bin").write_bytes(os.urandom(24 << 20))  # a large member that is no database
    archive = create_backup(state_tree.root, tmp_path / "out", record=False).archive_path
    size = archive.stat().st_size
    restore_archive(archive, target=tmp_path / "warm")  # imports and caches warmed
    before = _read_bytes_counter()
    restore_archive(archive, target=tmp_path / "restored")
    read = _read_bytes_counter() - before
    assert size <= read < size * 1.25, (read, size)  # before: 2.0x (a full verify, then a second full read)
    assert (tmp_path / "restored" / "media" / "big.bin").read_bytes() == (state_tree.root / "media" / "big.bin").read_bytes()
    assert not [p for p in (tmp_path / "restored").iterdir() if p.name.startswith(TARGET_STAGING_PREFIX)]


def _tamper_last_file(archive: Path, dest: Path) -> Path:
    def change(members: list) -> None:
        last = [m for m in members if m.info.isreg() and "/payload/" in m.info.name][-1]
        last.data = bytes(b ^ 0xFF for b in last.data[:1]) + last.data[1:] if last.data else b"x"

    return rewrite(archive, dest, change)


def test_a_late_mismatch_leaves_an_existing_empty_target_empty(state_tree, tmp_path) -> None:
    """Every member before the bad one was written into staging already: none of it is published."""
    archive = create_backup(state_tree.root, tmp_path / "out", record=False).archive_path
    bad = _tamper_last_file(archive, tmp_path / "bad.tar.zst")
    target = tmp_path / "empty"
    target.mkdir()
    with pytest.raises(VerificationError, match="nothing was restored"):
        restore_archive(bad, target=target)
    assert list(target.iterdir()) == []
    missing = tmp_path / "missing"
    with pytest.raises(VerificationError, match="nothing was restored"):
        restore_archive(bad, target=missing)
    assert not missing.exists()


def test_a_late_mismatch_in_place_changes_nothing(state_tree, tmp_path) -> None:
    archive = create_backup(state_tree.root, tmp_path / "out", record=False).archive_path
    bad = _tamper_last_file(archive, tmp_path / "bad.tar.zst")
    state_tree.work_db.unlink()
    (state_tree.root / "openclaw.json").write_text('{"changed": true}')
    before = tree_state(state_tree.root)
    with pytest.raises(VerificationError, match="nothing was restored"):
        restore_archive(bad, state_dir=state_tree.root)
    after = tree_state(state_tree.root)
    assert {k: v for k, v in after.items() if k != ".statekit/lock"} == {k: v for k, v in before.items() if k != ".statekit/lock"}
    assert not (state_tree.root / ".statekit" / "restore-journal.json").exists()


def test_a_fifo_named_as_the_archive_is_refused_unopened(tmp_path) -> None:
    """The manifest is read before anything else: a FIFO must not be opened (it would block), verify refuses it."""
    fifo = tmp_path / "archive.tar.zst"
    os.mkfifo(fifo)
    with pytest.raises(VerificationError, match="not a regular file"):
        restore_archive(fifo, target=tmp_path / "t")
    assert not (tmp_path / "t").exists()
