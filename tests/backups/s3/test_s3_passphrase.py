"""Passphrase-mode archives offsite (moto server on 127.0.0.1; issue 14 item 1 with item 2): the wrapped key is an
object beside the archive object (``<key>.key``), sent before the archive; list shows only archives; verify and
restore fetch the key (one small GET) and unwrap it; prune deletes it with its archive and removes a key whose
archive never came once it is stale; a wrong passphrase or a tampered key object is exit 5; plain ``age`` + ``zstd``
+ ``tar`` recover an archive from the two objects alone.

Every test here fails on 2ef7472: ``backup create`` had no ``--passphrase-file``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from passphrase_helpers import AGE_TOOLS_REASON, HAVE_AGE_TOOLS, age_decrypt_under_pty, unpack_with_zstd_and_tar, write_passphrase
from s3_helpers import S3Server
from statekit.cli import main
from statekit.install import read_install_id

PASSPHRASE = "CANARY-S3-correct-horse-battery-staple-4b1d"


def run(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def objects(server: S3Server, bucket: str) -> list[str]:
    return sorted(o["Key"] for o in server.client().list_objects_v2(Bucket=bucket).get("Contents", []))  # type: ignore[attr-defined]


def get(server: S3Server, bucket: str, key: str) -> dict[str, Any]:
    return server.client().get_object(Bucket=bucket, Key=key)  # type: ignore[attr-defined,no-any-return]


@pytest.fixture
def pw(tmp_path: Path) -> Path:
    return write_passphrase(tmp_path / "secrets" / "pw.txt", PASSPHRASE)


def _create(capsys, state: Path, url: str, pw: Path) -> dict[str, Any]:
    code, out, err = run(capsys, "backup", "create", "--state-dir", state, "--to", url, "--passphrase-file", pw, "--json")
    assert code == 0, err
    assert PASSPHRASE not in out + err
    return json.loads(out)


def test_create_list_verify_restore_prune_end_to_end(state_tree, bucket, s3_env, tmp_path, pw, capsys):
    url = f"s3://{bucket}/fleet"
    data = _create(capsys, state_tree.root, url, pw)
    install = read_install_id(state_tree.root)
    archive_key = data["archive"].removeprefix(f"s3://{bucket}/")
    assert archive_key.startswith(f"fleet/{install}/openclaw-backup-") and archive_key.endswith(".tar.zst.age")
    assert objects(s3_env, bucket) == [archive_key, archive_key + ".key"]
    assert data["key_file"] == data["archive"] + ".key"
    assert not list(state_tree.home.glob(".statekit-offsite-*"))
    head = s3_env.client().head_object(Bucket=bucket, Key=archive_key)  # type: ignore[attr-defined]
    assert head["Metadata"]["statekit-key"] == "passphrase" and head["Metadata"]["statekit-encrypted"] == "true"
    wrapped = get(s3_env, bucket, archive_key + ".key")["Body"].read()
    assert wrapped.startswith(b"age-encryption.org/v1\n-> scrypt ") and PASSPHRASE.encode() not in wrapped
    body = get(s3_env, bucket, archive_key)["Body"].read()
    assert b"sk-test-secret" not in body and b"AGE-SECRET-KEY" not in body.upper()

    for extra in ((), ("--all-installs",)):
        code, out, err = run(capsys, "backup", "list", "--state-dir", state_tree.root, "--output", url, "--json", *extra)
        assert code == 0, err
        assert [a["archive"] for a in json.loads(out)["archives"]] == [data["archive"]]  # the key object is no archive

    code, out, err = run(capsys, "backup", "verify", data["archive"], "--passphrase-file", pw)
    assert code == 0, err
    assert "OK" in out and PASSPHRASE not in out + err
    target = tmp_path / "restored"
    code, out, err = run(capsys, "backup", "restore", data["archive"], "--passphrase-file", pw, "--target", target, "--yes")
    assert code == 0, err
    assert (target / "credentials" / "oauth.json").read_bytes() == (state_tree.root / "credentials" / "oauth.json").read_bytes()
    assert (target / "openclaw.json").read_bytes() == state_tree.config.read_bytes()

    # an older pair (copies under an earlier time) and a key whose archive never came (a killed upload)
    client = s3_env.client()
    older = archive_key.replace(archive_key.rpartition("/")[2], "openclaw-backup-20200101T000000Z.tar.zst.age")
    for suffix in ("", ".key"):
        client.copy_object(Bucket=bucket, Key=older + suffix, CopySource={"Bucket": bucket, "Key": archive_key + suffix})  # type: ignore[attr-defined]
    orphan = archive_key.replace(archive_key.rpartition("/")[2], "openclaw-backup-20210101T000000Z.tar.zst.age.key")
    client.put_object(Bucket=bucket, Key=orphan, Body=wrapped)  # type: ignore[attr-defined]
    code, out, err = run(capsys, "backup", "prune", "--state-dir", state_tree.root, "--output", url, "--keep-last", "1", "--json")
    assert code == 0, err
    assert objects(s3_env, bucket) == sorted([archive_key, archive_key + ".key", orphan])  # a fresh orphan may be mid-upload
    assert json.loads(out)["orphan_keys"] == []
    code, out, err = run(capsys, "backup", "prune", "--state-dir", state_tree.root, "--output", url, "--keep-last", "1",
                         "--stale-upload-hours", "0")
    assert code == 0, err
    assert objects(s3_env, bucket) == [archive_key, archive_key + ".key"]
    assert f"s3://{bucket}/{orphan}" in out


def test_wrong_passphrase_tampered_or_missing_key_object_is_exit_5_and_restores_nothing(state_tree, bucket, s3_env, tmp_path,
                                                                                       pw, capsys):
    data = _create(capsys, state_tree.root, f"s3://{bucket}/p", pw)
    key = data["archive"].removeprefix(f"s3://{bucket}/") + ".key"
    wrong = write_passphrase(tmp_path / "wrong.txt", "not-the-passphrase")
    code, out, err = run(capsys, "backup", "verify", data["archive"], "--passphrase-file", wrong)
    assert code == 5 and len(err.strip().splitlines()) == 1 and data["archive"] + ".key" in err
    assert "not-the-passphrase" not in out + err and "Traceback" not in err

    client = s3_env.client()
    wrapped = bytearray(get(s3_env, bucket, key)["Body"].read())
    wrapped[-3] ^= 0x01
    client.put_object(Bucket=bucket, Key=key, Body=bytes(wrapped))  # type: ignore[attr-defined]
    code, _out, err = run(capsys, "backup", "verify", data["archive"], "--passphrase-file", pw)
    assert code == 5 and len(err.strip().splitlines()) == 1
    target = tmp_path / "never"
    code, _out, err = run(capsys, "backup", "restore", data["archive"], "--passphrase-file", pw, "--target", target, "--yes")
    assert code == 5, err
    assert not target.exists()

    client.delete_object(Bucket=bucket, Key=key)  # type: ignore[attr-defined]
    code, _out, err = run(capsys, "backup", "verify", data["archive"], "--passphrase-file", pw, "--json")
    assert code == 5 and "missing" in json.loads(_out)["error"]


@pytest.mark.skipif(not HAVE_AGE_TOOLS, reason=AGE_TOOLS_REASON)
def test_plain_age_recovers_an_offsite_archive_from_its_two_objects(state_tree, bucket, s3_env, tmp_path, pw, capsys):
    data = _create(capsys, state_tree.root, f"s3://{bucket}", pw)
    key = data["archive"].removeprefix(f"s3://{bucket}/")
    name = key.rpartition("/")[2]
    archive, wrapped = tmp_path / name, tmp_path / (name + ".key")
    archive.write_bytes(get(s3_env, bucket, key)["Body"].read())
    wrapped.write_bytes(get(s3_env, bucket, key + ".key")["Body"].read())
    code, shown = age_decrypt_under_pty(wrapped, archive, tmp_path / "plain.tar.zst", PASSPHRASE)
    assert code == 0, shown
    root = unpack_with_zstd_and_tar(tmp_path / "plain.tar.zst", tmp_path / "x")
    assert (root / "payload" / "state" / "credentials" / "oauth.json").read_bytes() == (
        state_tree.root / "credentials" / "oauth.json").read_bytes()
