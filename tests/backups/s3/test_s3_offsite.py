"""Offsite archives on a real S3 endpoint (moto server on 127.0.0.1; issue 14 items 2-4).

Every test here fails on 308a7ed: ``backup create`` had no ``--to`` and no command accepted ``s3://``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pyrage import x25519

from s3_helpers import S3Server, start_subprocess_server
from helpers import rows
from statekit.backup.locations import parse_archive_key
from statekit.cli import main
from statekit.install import read_install_id

REPO = Path(__file__).resolve().parents[3]
RUNNER = REPO / "tests" / "faultkit" / "run_statekit.py"


def run(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def objects(server: S3Server, bucket: str) -> list[str]:
    return [o["Key"] for o in server.client().list_objects_v2(Bucket=bucket).get("Contents", [])]  # type: ignore[attr-defined]


def uploads(server: S3Server, bucket: str) -> list[dict[str, Any]]:
    return server.client().list_multipart_uploads(Bucket=bucket).get("Uploads", [])  # type: ignore[attr-defined]


@pytest.fixture
def keypair(tmp_path: Path) -> tuple[Path, str]:
    identity = x25519.Identity.generate()
    path = tmp_path / "key.txt"
    path.write_text(f"# public key: {identity.to_public()}\n{identity}\n")
    return path, str(identity.to_public())


def _create(capsys, state: Path, url: str, *extra: object) -> dict[str, Any]:
    code, out, err = run(capsys, "backup", "create", "--state-dir", state, "--to", url, "--json", *extra)
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize("encrypted", [False, True], ids=["plain", "age"])
def test_create_list_verify_restore_prune_end_to_end(state_tree, bucket, s3_env, tmp_path, keypair, capsys, encrypted):
    identity, public = keypair
    enc = ("--recipient", public) if encrypted else ()
    ident = ("--identity", identity) if encrypted else ()
    data = _create(capsys, state_tree.root, f"s3://{bucket}/fleet", *enc)
    install = read_install_id(state_tree.root)
    assert install is not None
    (key,) = objects(s3_env, bucket)
    parsed = parse_archive_key(key)
    assert parsed is not None and parsed.install_id == install and parsed.encrypted is encrypted
    assert key.startswith(f"fleet/{install}/openclaw-backup-") and data["archive"] == f"s3://{bucket}/{key}"
    assert not list(state_tree.home.glob(".statekit-offsite-*")), "the local staging copy is removed"
    head = s3_env.client().head_object(Bucket=bucket, Key=key)  # type: ignore[attr-defined]
    meta = head["Metadata"]
    assert meta["statekit-install-id"] == install and meta["statekit-encrypted"] == ("true" if encrypted else "false")
    assert len(meta["statekit-sha256"]) == 64 and int(meta["statekit-assets"]) > 0
    assert "testing-secret" not in json.dumps(data)

    code, out, err = run(capsys, "backup", "list", "--state-dir", state_tree.root, "--output", f"s3://{bucket}/fleet", "--json")
    assert code == 0, err
    listed = json.loads(out)["archives"]
    assert [(a["archive"], a["encrypted"], a["sha256"]) for a in listed] == [(data["archive"], encrypted, meta["statekit-sha256"])]

    url = data["archive"]
    code, out, err = run(capsys, "backup", "verify", url, *ident)
    assert code == 0, err
    assert url in out and "OK" in out
    code, out, err = run(capsys, "backup", "restore", url, "--target", tmp_path / "restored", "--yes", *ident)
    assert code == 0, err
    assert (tmp_path / "restored" / "credentials" / "oauth.json").read_bytes() == (state_tree.root / "credentials" / "oauth.json").read_bytes()
    assert (tmp_path / "restored" / "openclaw.json").read_bytes() == state_tree.config.read_bytes()

    # an older copy of the archive under another time: prune keeps the newest one
    older = key.replace(parsed.name, "openclaw-backup-20200101T000000Z.tar.zst" + (".age" if encrypted else ""))
    s3_env.client().copy_object(Bucket=bucket, Key=older, CopySource={"Bucket": bucket, "Key": key})  # type: ignore[attr-defined]
    code, out, err = run(capsys, "backup", "prune", "--state-dir", state_tree.root, "--output", f"s3://{bucket}/fleet", "--keep-last", "1")
    assert code == 0, err
    assert objects(s3_env, bucket) == [key]


def test_encrypted_remote_needs_identity_and_bucket_holds_no_clear_bytes(state_tree, bucket, s3_env, keypair, capsys):
    _identity, public = keypair
    data = _create(capsys, state_tree.root, f"s3://{bucket}", "--recipient", public)
    (key,) = objects(s3_env, bucket)
    body = s3_env.client().get_object(Bucket=bucket, Key=key)["Body"].read()  # type: ignore[attr-defined]
    assert body.startswith(b"age-encryption.org/v1\n") and b"sk-test-secret" not in body
    code, _out, err = run(capsys, "backup", "verify", data["archive"])
    assert code == 2 and "--identity" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("encrypted", [False, True], ids=["plain", "age"])
def test_object_tampered_in_the_bucket_fails_verify_with_exit_5(state_tree, bucket, s3_env, keypair, capsys, tmp_path, encrypted):
    identity, public = keypair
    data = _create(capsys, state_tree.root, f"s3://{bucket}/p", *(("--recipient", public) if encrypted else ()))
    (key,) = objects(s3_env, bucket)
    client = s3_env.client()
    got = client.get_object(Bucket=bucket, Key=key)  # type: ignore[attr-defined]
    body = bytearray(got["Body"].read())
    body[len(body) // 2] ^= 0x04
    client.put_object(Bucket=bucket, Key=key, Body=bytes(body), Metadata=got["Metadata"])  # type: ignore[attr-defined]
    ident = ("--identity", identity) if encrypted else ()
    code, out, err = run(capsys, "backup", "verify", data["archive"], *ident)
    assert code == 5 and "Traceback" not in err
    assert data["archive"] in err and "s3://s3://" not in err + out and ".statekit-" not in err + out
    code, _out, err = run(capsys, "backup", "restore", data["archive"], "--target", tmp_path / "r", "--yes", *ident)
    assert code == 5 and not (tmp_path / "r").exists()
    assert data["archive"] in err and ".statekit-" not in err
    # the same bytes without the recorded digest: the archive's own checks (age tags / digest trailer) still catch it
    client.put_object(Bucket=bucket, Key=key, Body=bytes(body))  # type: ignore[attr-defined]
    code, _out, err = run(capsys, "backup", "verify", data["archive"], *ident)
    assert code == 5


def test_bucket_that_does_not_exist_is_one_line_exit_1(state_tree, s3_env, capsys):
    code, out, err = run(capsys, "backup", "create", "--state-dir", state_tree.root, "--to", "s3://no-such-bucket-here/x")
    assert code == 1 and out == ""
    assert err.strip().splitlines() == [err.strip()] and "no-such-bucket-here" in err and "does not exist" in err
    code, _out, err = run(capsys, "backup", "list", "--output", "s3://no-such-bucket-here/x", "--all-installs")
    assert code == 1 and "does not exist" in err


@pytest.fixture(scope="module")
def auth_server() -> Any:
    """A moto server that checks credentials (INITIAL_NO_AUTH_ACTION_COUNT=0): unknown keys are refused."""
    proc, endpoint = start_subprocess_server({"INITIAL_NO_AUTH_ACTION_COUNT": "0"})
    try:
        yield endpoint
    finally:
        proc.kill()
        proc.wait()


def test_wrong_credentials_are_one_line_without_the_secret(state_tree, s3_env, auth_server, monkeypatch, capsys):
    monkeypatch.setenv("AWS_ENDPOINT_URL", auth_server)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong-secret-value-42")
    code, out, err = run(capsys, "backup", "create", "--state-dir", state_tree.root, "--to", "s3://some-bucket/x")
    assert code == 1 and out == ""
    assert len(err.strip().splitlines()) == 1 and "credentials were rejected" in err and "some-bucket" in err
    assert "wrong-secret-value-42" not in err and "testing" not in err


def test_no_credentials_at_all_is_one_line(state_tree, s3_env, monkeypatch, capsys):
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    code, _out, err = run(capsys, "backup", "create", "--state-dir", state_tree.root, "--to", "s3://some-bucket/x")
    assert code == 1 and "no AWS credentials found" in err and len(err.strip().splitlines()) == 1


def test_killed_during_upload_publishes_nothing_rerun_completes_prune_aborts_the_stale_upload(state_tree, bucket, s3_env, capsys):
    """SIGKILL after the 2nd of 3+ parts: no object is visible (completion is the publish), only an incomplete
    upload; the rerun publishes one archive and removes the killed run's clear staging copy; prune aborts the upload."""
    (state_tree.root / "blob.bin").write_bytes(os.urandom(20 << 20))  # incompressible: 3 parts of 8 MiB
    env = {**os.environ, **s3_env.env(), "STATEKIT_CRASHPOINT": "s3-part-uploaded:2"}
    url = f"s3://{bucket}/fleet"
    killed = subprocess.run([sys.executable, str(RUNNER), "backup", "create", "--state-dir", str(state_tree.root), "--to", url],
                            env=env, capture_output=True, timeout=300, cwd=REPO)
    assert killed.returncode == -9
    assert objects(s3_env, bucket) == []
    assert len(uploads(s3_env, bucket)) == 1
    assert list(state_tree.home.glob(".statekit-offsite-*")), "the killed run left its staging dir"
    data = _create(capsys, state_tree.root, url)
    assert [f"s3://{bucket}/{k}" for k in objects(s3_env, bucket)] == [data["archive"]]
    assert not list(state_tree.home.glob(".statekit-offsite-*")), "the rerun removed the dead run's staging copy"
    runs = dict(rows(state_tree.global_db, "SELECT id, status FROM backup_runs"))
    assert runs[data["run_id"]] == "ok" and sorted(runs.values()) == ["failed", "ok"], "the killed run's row says failed"
    code, out, err = run(capsys, "backup", "list", "--state-dir", state_tree.root, "--output", url)
    assert code == 0 and "1 incomplete upload" in out
    code, out, err = run(capsys, "backup", "prune", "--state-dir", state_tree.root, "--output", url, "--keep-last", "1",
                         "--stale-upload-hours", "0")
    assert code == 0, err
    assert "aborted incomplete upload" in out
    assert uploads(s3_env, bucket) == [] and len(objects(s3_env, bucket)) == 1


def test_list_and_prune_are_per_install_unless_all_installs(state_tree, bucket, s3_env, capsys):
    data = _create(capsys, state_tree.root, f"s3://{bucket}/fleet")
    (mine,) = objects(s3_env, bucket)
    client = s3_env.client()
    others = [f"fleet/{'ab' * 16}/openclaw-backup-2026010{d}T000000Z.tar.zst" for d in (1, 2, 3)]
    for key in others:
        client.copy_object(Bucket=bucket, Key=key, CopySource={"Bucket": bucket, "Key": mine})  # type: ignore[attr-defined]
    code, out, _err = run(capsys, "backup", "list", "--state-dir", state_tree.root, "--output", f"s3://{bucket}/fleet", "--json")
    assert [a["archive"] for a in json.loads(out)["archives"]] == [data["archive"]]
    code, out, _err = run(capsys, "backup", "list", "--output", f"s3://{bucket}/fleet", "--all-installs", "--json")
    assert len(json.loads(out)["archives"]) == 4
    # this install's prune never touches the other install's archives
    code, out, err = run(capsys, "backup", "prune", "--state-dir", state_tree.root, "--output", f"s3://{bucket}/fleet", "--keep-last", "1")
    assert code == 0 and sorted(objects(s3_env, bucket)) == sorted([mine, *others])
    # across installs: each install keeps its own newest
    code, out, err = run(capsys, "backup", "prune", "--output", f"s3://{bucket}/fleet", "--all-installs", "--keep-last", "1")
    assert code == 0, err
    assert sorted(objects(s3_env, bucket)) == sorted([mine, others[-1]])


def test_migrate_backup_to_copies_the_pre_migration_backup_offsite(tmp_path, bucket, s3_env, capsys):
    """``migrate --backup-to s3://...``: the local pre-migration backup stays (undo needs it), a byte-identical copy
    lands in the bucket under this install's id."""
    from helpers import make_state

    header = '{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}\n'
    state = make_state(tmp_path, {"agents/main/sessions/s1.jsonl": header, "agents/main/sessions/sessions.json": '{"main": {"sessionId": "s1"}}'})
    out = tmp_path / "backups"
    code, stdout, err = run(capsys, "migrate", "--state-dir", state, "--yes", "--backup-output", out, "--backup-to", f"s3://{bucket}/pre")
    assert code in (0, 3), err
    (local,) = out.glob("*.tar.zst")
    (key,) = objects(s3_env, bucket)
    assert key == f"pre/{read_install_id(state)}/{local.name}"
    assert s3_env.client().get_object(Bucket=bucket, Key=key)["Body"].read() == local.read_bytes()  # type: ignore[attr-defined]


def test_dry_runs_write_nothing_to_the_bucket(state_tree, bucket, s3_env, capsys):
    code, out, err = run(capsys, "backup", "create", "--state-dir", state_tree.root, "--to", f"s3://{bucket}/fleet", "--dry-run")
    assert code == 0, err
    assert f"s3://{bucket}/fleet/" in out and "nothing was written" in out
    assert objects(s3_env, bucket) == [] and uploads(s3_env, bucket) == []
    data = _create(capsys, state_tree.root, f"s3://{bucket}/fleet")
    (key,) = objects(s3_env, bucket)
    older = key.replace(key.rpartition("/")[2], "openclaw-backup-20200101T000000Z.tar.zst")
    s3_env.client().copy_object(Bucket=bucket, Key=older, CopySource={"Bucket": bucket, "Key": key})  # type: ignore[attr-defined]
    code, out, err = run(capsys, "backup", "prune", "--state-dir", state_tree.root, "--output", f"s3://{bucket}/fleet",
                         "--keep-last", "1", "--dry-run")
    assert code == 0 and "would delete" in out and sorted(objects(s3_env, bucket)) == sorted([key, older])
    code, out, err = run(capsys, "backup", "restore", data["archive"], "--target", state_tree.home / "r", "--dry-run")
    assert code == 0, err
    assert data["archive"] in out and not (state_tree.home / "r").exists()


def test_an_existing_object_is_never_overwritten_and_the_run_is_recorded_failed(state_tree, bucket, s3_env, capsys):
    from datetime import datetime, timedelta, timezone

    from statekit.backup.manifest import ARCHIVE_SUFFIX, archive_stem
    from statekit.install import ensure_install_id

    install = ensure_install_id(state_tree.root)
    now = datetime.now(timezone.utc)
    taken = [f"fleet/{install}/{archive_stem(now + timedelta(seconds=s))}{ARCHIVE_SUFFIX}" for s in range(-1, 30)]
    for key in taken:
        s3_env.client().put_object(Bucket=bucket, Key=key, Body=b"someone else's")  # type: ignore[attr-defined]
    code, out, err = run(capsys, "backup", "create", "--state-dir", state_tree.root, "--to", f"s3://{bucket}/fleet")
    assert code == 1 and "refusing to overwrite existing backup archive" in err and out == ""
    assert all(s3_env.client().get_object(Bucket=bucket, Key=k)["Body"].read() == b"someone else's" for k in taken)  # type: ignore[attr-defined]
    assert [status for (status,) in rows(state_tree.global_db, "SELECT status FROM backup_runs")] == ["failed"]


@pytest.mark.parametrize("encrypted", [False, True], ids=["plain", "age"])
def test_resume_of_a_killed_in_place_restore_fetches_the_object_again(state_tree, bucket, s3_env, keypair, capsys, encrypted):
    """An in-place restore from ``s3://`` killed while staging: its journal named the scratch copy, gone with the run,
    so ``--resume`` could only undo. The journal now keeps the URL and ``--resume`` fetches (and decrypts) it again.

    Fails before the fix: exit 1 ("the archive of the interrupted restore is gone") and the state dir's newer config."""
    identity, public = keypair
    url = _create(capsys, state_tree.root, f"s3://{bucket}/fleet", *(("--recipient", public) if encrypted else ()))["archive"]
    config_a = state_tree.config.read_bytes()
    state_tree.config.write_text('{"b": true}')
    ident = ("--identity", str(identity)) if encrypted else ()
    env = {**os.environ, **s3_env.env(), "STATEKIT_CRASHPOINT": "restore-member-written:2"}
    killed = subprocess.run([sys.executable, str(RUNNER), "backup", "restore", url, "--state-dir", str(state_tree.root), "--yes", *ident],
                            env=env, capture_output=True, timeout=300, cwd=REPO)
    assert killed.returncode == -9
    journal = json.loads((state_tree.root / ".statekit" / "restore-journal.json").read_text())
    assert journal["origin"] == url and journal["phase"] == "staging"
    scratch = Path(journal["archive"]).parent
    assert scratch.name.startswith(".statekit-fetch-") and scratch.is_dir()  # the killed run's copy (plaintext)
    code, out, err = run(capsys, "backup", "restore", "--resume", "--state-dir", state_tree.root, "--yes", "--json", *ident)
    assert code == 0, err
    assert json.loads(out)["restore"]["mode"] == "in-place"
    assert state_tree.config.read_bytes() == config_a
    assert not (state_tree.root / ".statekit" / "restore-journal.json").exists()
    assert not scratch.exists(), "the resume fetched the object again and removed the dead run's copy"
