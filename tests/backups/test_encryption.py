"""age-encrypted archives (``*.tar.zst.age``, issue 14 item 1): create with public keys only, verify/restore
with an identity file, tampering detected (exit 5) before anything is restored, plain ``age``+``zstd``+``tar``.

Every test here fails on 308a7ed: ``backup create`` had no ``--recipient`` and no archive was ever encrypted.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from pyrage import x25519

from backup_helpers import SECRET, rows_digest, tree_state
from statekit.backup import create_backup, restore_archive, verify_archive
from statekit.backup.encryption import (
    AGE_MAGIC, IdentityNeeded, WrongIdentity, is_encrypted, load_identities, load_recipients,
)
from statekit.backup.retention import list_archives
from statekit.cli import main
from statekit.errors import UsageError, VerificationError


@pytest.fixture
def keypair(tmp_path: Path) -> tuple[Path, str]:
    """An identity file as age-keygen writes it, and its public key."""
    identity = x25519.Identity.generate()
    public = str(identity.to_public())
    path = tmp_path / "keys" / "key.txt"
    path.parent.mkdir(mode=0o700)
    path.write_text(f"# created: 2026-12-01T00:00:00Z\n# public key: {public}\n{identity}\n")
    os.chmod(path, 0o600)
    return path, public


def run(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_restored(state_tree, target: Path) -> None:
    """Every file byte for byte, every database row for row (snapshots are VACUUMed copies)."""
    def files(root: Path) -> dict[str, tuple]:
        return {k: v for k, v in tree_state(root).items() if not k.startswith(".statekit") and not k.endswith(".sqlite")
                and not k.endswith((".lock", "-wal", "-shm"))}
    assert files(target) == {k: v for k, v in files(state_tree.root).items() if k in files(target)}
    assert (target / "credentials" / "oauth.json").read_bytes() == (state_tree.root / "credentials" / "oauth.json").read_bytes()
    for db in (state_tree.global_db, state_tree.agent_db, state_tree.tasks_db):
        assert rows_digest(target / db.relative_to(state_tree.root)) == rows_digest(db)


def _encrypted(state_tree, tmp_path: Path, public: str) -> Path:
    result = create_backup(state_tree.root, tmp_path / "out", recipients=load_recipients([public]))
    assert result.archive_path is not None
    return result.archive_path


def test_create_encrypts_the_whole_archive_and_leaves_no_clear_copy(state_tree, tmp_path, keypair):
    _identity, public = keypair
    archive = _encrypted(state_tree, tmp_path, public)
    assert archive.name.endswith(".tar.zst.age")
    data = archive.read_bytes()
    assert data.startswith(AGE_MAGIC)
    assert SECRET.encode() not in data and b"manifest.json" not in data
    assert (archive.stat().st_mode & 0o777) == 0o600
    assert sorted(p.name for p in archive.parent.iterdir() if not p.name.endswith(".lock")) == [archive.name, archive.name + ".verify.json"]
    (listed,) = list_archives(archive.parent)
    assert listed.path == archive and listed.assets is not None  # the clear sidecar holds the counts


def test_verify_and_restore_need_the_identity_and_restore_byte_for_byte(state_tree, tmp_path, keypair):
    identity_file, public = keypair
    archive = _encrypted(state_tree, tmp_path, public)
    with pytest.raises(IdentityNeeded) as needed:
        verify_archive(archive)
    assert needed.value.exit_code == 2 and "--identity" in str(needed.value)
    keys = load_identities(identity_file)
    report = verify_archive(archive, identities=keys)
    assert report.ok, report.problems
    assert report.assets_verified > 0 and report.path == archive
    target = tmp_path / "restored"
    result = restore_archive(archive, target=target, identities=keys)
    assert result.archive == archive
    assert_restored(state_tree, target)
    assert (target / "credentials" / "oauth.json").read_text() == (state_tree.root / "credentials" / "oauth.json").read_text()


def test_wrong_identity_fails_verification_with_one_line_naming_the_identity_file(state_tree, tmp_path, keypair, capsys):
    _identity, public = keypair
    archive = _encrypted(state_tree, tmp_path, public)
    other = tmp_path / "other.txt"
    other.write_text(f"{x25519.Identity.generate()}\n")
    report = verify_archive(archive, identities=load_identities(other))
    assert not report.ok and "wrong key" in report.problems[0] and str(other) in report.problems[0]
    with pytest.raises(WrongIdentity):
        restore_archive(archive, target=tmp_path / "r", identities=load_identities(other))
    code, _out, err = run(capsys, "backup", "verify", archive, "--identity", other)
    assert code == 5 and "AGE-SECRET" not in err


@pytest.mark.parametrize("where", ["header", "middle", "last", "truncated"])
def test_any_tampered_byte_fails_verify_and_restores_nothing(state_tree, tmp_path, keypair, where, capsys):
    identity_file, public = keypair
    archive = _encrypted(state_tree, tmp_path, public)
    data = bytearray(archive.read_bytes())
    if where == "truncated":
        del data[-100:]
    else:
        data[{"header": 40, "middle": len(data) // 2, "last": len(data) - 1}[where]] ^= 0x01
    bad = tmp_path / "bad" / archive.name
    bad.parent.mkdir()
    bad.write_bytes(bytes(data))
    report = verify_archive(bad, identities=load_identities(identity_file))
    assert not report.ok and report.problems
    code, _out, err = run(capsys, "backup", "verify", bad, "--identity", identity_file)
    assert code == 5 and err.strip() and "Traceback" not in err
    target = tmp_path / "never"
    with pytest.raises(VerificationError) as failed:
        restore_archive(bad, target=target, identities=load_identities(identity_file))
    assert str(bad) in str(failed.value) and ".statekit-decrypt" not in str(failed.value)
    assert not target.exists() or not any(target.iterdir())


def test_cli_round_trip_with_recipients_file(state_tree, tmp_path, keypair, capsys):
    identity_file, public = keypair
    recipients = tmp_path / "recipients.txt"
    recipients.write_text(f"# offsite key\n{public}\n\n")
    out = tmp_path / "out"
    code, stdout, err = run(capsys, "backup", "create", "--state-dir", state_tree.root, "--output", out, "-R", recipients)
    assert code == 0, err
    (archive,) = out.glob("*.tar.zst.age")
    assert str(archive) in stdout
    code, stdout, err = run(capsys, "backup", "verify", archive)
    assert code == 2 and "--identity" in err and len(err.strip().splitlines()) == 1
    code, stdout, _err = run(capsys, "backup", "verify", archive, "--identity", identity_file)
    assert code == 0 and "OK" in stdout
    code, stdout, err = run(capsys, "backup", "restore", archive, "--target", tmp_path / "r", "--identity", identity_file, "--yes")
    assert code == 0, err
    assert (tmp_path / "r" / "openclaw.json").read_bytes() == state_tree.config.read_bytes()
    code, stdout, _err = run(capsys, "backup", "list", "--output", out)
    assert code == 0 and archive.name in stdout


def test_bad_keys_are_usage_errors_naming_the_file_never_the_secret(tmp_path):
    with pytest.raises(UsageError, match="not an age public key"):
        load_recipients(["ssh-nope"])
    bad = tmp_path / "key.txt"
    bad.write_text("AGE-SECRET-KEY-1NOTVALIDNOTVALID\n")
    with pytest.raises(UsageError) as err:
        load_identities(bad)
    assert str(bad) in str(err.value) and "NOTVALID" not in str(err.value)
    with pytest.raises(UsageError, match="encryption"):
        create_backup(tmp_path, tmp_path / "o", fmt="openclaw", recipients=load_recipients([str(x25519.Identity.generate().to_public())]))


@pytest.mark.skipif(shutil.which("age") is None or shutil.which("zstd") is None, reason="needs the age and zstd programs (Debian: age, zstd)")
def test_plain_age_zstd_tar_recover_an_encrypted_archive(state_tree, tmp_path):
    """The age layer wraps the whole .tar.zst: `age -d -i key | zstd -d | tar -x` recovers it without statekit."""
    key = tmp_path / "key.txt"
    subprocess.run(["age-keygen", "-o", str(key)], check=True, capture_output=True)
    public = subprocess.run(["age-keygen", "-y", str(key)], check=True, capture_output=True, text=True).stdout.strip()
    archive = _encrypted(state_tree, tmp_path, public)
    assert is_encrypted(archive)
    dest = tmp_path / "x"
    dest.mkdir()
    # tar stops reading at its end-of-archive blocks, so zstd may get SIGPIPE (141) on the skippable digest frame
    # that follows: age and tar must succeed, zstd must succeed or be cut off there
    pipeline = (f"age -d -i '{key}' '{archive}' | zstd -d -q | tar -x -C '{dest}'; s=(${{PIPESTATUS[@]}}); "
                f'[ "${{s[0]}}" = 0 ] && [ "${{s[2]}}" = 0 ] && {{ [ "${{s[1]}}" = 0 ] || [ "${{s[1]}}" = 141 ]; }}')
    subprocess.run(["bash", "-c", pipeline], check=True)
    (root,) = dest.iterdir()
    assert (root / "manifest.json").is_file()
    assert (root / "payload" / "state" / "credentials" / "oauth.json").read_text() == (state_tree.root / "credentials" / "oauth.json").read_text()


@pytest.mark.parametrize("point", ["backup-verified", "backup-encrypted"])
def test_killed_encrypted_create_publishes_nothing_and_the_rerun_leaves_no_clear_copy(state_tree, tmp_path, keypair, point):
    """SIGKILL before / after the age pass: no archive is published, the clear copy exists only inside the 0700
    staging dir, and the next run removes it and publishes one encrypted archive."""
    _identity, public = keypair
    out = tmp_path / "out"
    runner = Path(__file__).resolve().parents[1] / "faultkit" / "run_statekit.py"
    args = [sys.executable, str(runner), "backup", "create", "--state-dir", str(state_tree.root), "--output", str(out), "-r", public]
    killed = subprocess.run(args, env={**os.environ, "STATEKIT_CRASHPOINT": point}, capture_output=True, timeout=300)
    assert killed.returncode == -9
    assert not list(out.glob("*.tar.zst.age")) and not list(out.glob("*.tar.zst"))
    clear = [p for p in out.rglob("*.tar.zst")]
    assert all((p.parent.stat().st_mode & 0o777) == 0o700 and p.parent != out for p in clear)
    again = subprocess.run(args, capture_output=True, timeout=300, text=True)
    assert again.returncode == 0, again.stderr
    assert len(list(out.glob("*.tar.zst.age"))) == 1
    assert not list(out.rglob("*.tar.zst")) and not list(out.rglob("*.partial"))
