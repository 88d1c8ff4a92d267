"""``backup verify s3://...`` streams the object through the verifier: no copy of the archive on disk (issue 14).

The proof is a file-size limit (RLIMIT_FSIZE) on the verifying process below the archive's size but above its
largest database member (the one thing verify still copies, for ``integrity_check``): on 2ef7472 the object was
first streamed into a scratch copy of the whole archive, and the write failed (EFBIG, exit 1). The object's size
and recorded SHA-256 are still checked.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from pyrage import x25519

from s3_helpers import S3Server
from statekit.cli import main

REPO = Path(__file__).resolve().parents[3]
LIMIT = 2 << 20  # bytes: no file the verifier writes may be larger


def _verify_capped(server: S3Server, *args: object) -> subprocess.CompletedProcess[str]:
    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))

    env = {**os.environ, **server.env(), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, "-m", "statekit", "backup", "verify", *map(str, args)], capture_output=True,
                          text=True, preexec_fn=cap, env=env, timeout=300, cwd=REPO)


@pytest.mark.parametrize("encrypted", [False, True], ids=["plain", "age"])
def test_verify_of_an_object_writes_no_copy_of_the_archive(state_tree, bucket, s3_env, tmp_path, capsys, encrypted):
    (state_tree.root / "media").mkdir()
    (state_tree.root / "media" / "big.bin").write_bytes(os.urandom(6 << 20))  # incompressible: the archive is > 6 MiB
    identity = x25519.Identity.generate()
    key = tmp_path / "key.txt"
    key.write_text(f"{identity}\n")
    enc = ("--recipient", str(identity.to_public())) if encrypted else ()
    ident = ("--identity", key) if encrypted else ()
    code = main(["backup", "create", "--state-dir", str(state_tree.root), "--to", f"s3://{bucket}/fleet", "--json", *enc])
    url = json.loads(capsys.readouterr().out)["archive"]
    assert code == 0
    object_key = url.removeprefix(f"s3://{bucket}/")
    size = s3_env.client().head_object(Bucket=bucket, Key=object_key)["ContentLength"]  # type: ignore[attr-defined]
    largest_db = max(p.stat().st_size for p in state_tree.root.rglob("*.sqlite"))
    assert largest_db < LIMIT < size

    proc = _verify_capped(s3_env, url, "--json", *ident)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["ok"] and report["archive"] == url and report["assets_verified"] == report["assets"]
    assert any("no local copy" in note for note in report["notes"])

    # the size and SHA-256 recorded at upload still hold: a flipped byte with the metadata kept is exit 5
    client = s3_env.client()
    got = client.get_object(Bucket=bucket, Key=object_key)  # type: ignore[attr-defined]
    body = bytearray(got["Body"].read())
    body[len(body) // 3] ^= 0x20
    client.put_object(Bucket=bucket, Key=object_key, Body=bytes(body), Metadata=got["Metadata"])  # type: ignore[attr-defined]
    proc = _verify_capped(s3_env, url, *ident)
    assert proc.returncode == 5 and url in proc.stderr and "Traceback" not in proc.stderr
    expected = "failed authentication" if encrypted else "differ from the SHA-256 recorded at upload"
    assert expected in proc.stderr


def test_a_shorter_object_than_recorded_is_named(state_tree, bucket, s3_env, capsys):
    """An object cut short (with the recorded SHA-256 of the whole) is exit 5, naming the object."""
    code = main(["backup", "create", "--state-dir", str(state_tree.root), "--to", f"s3://{bucket}/p", "--json"])
    url = json.loads(capsys.readouterr().out)["archive"]
    assert code == 0
    object_key = url.removeprefix(f"s3://{bucket}/")
    client = s3_env.client()
    got = client.get_object(Bucket=bucket, Key=object_key)  # type: ignore[attr-defined]
    data = got["Body"].read()
    client.put_object(Bucket=bucket, Key=object_key, Body=data[: len(data) // 2], Metadata=got["Metadata"])  # type: ignore[attr-defined]
    code = main(["backup", "verify", url])
    err = capsys.readouterr().err
    assert code == 5 and url in err and len(err.strip().splitlines()) >= 1 and "Traceback" not in err


def test_objects_of_other_formats_are_still_judged(state_tree, bucket, s3_env, tmp_path, capsys):
    """An OpenClaw ``.tar.gz`` object (whose verify seeks) is spooled and verified; a non-archive is exit 5 naming it."""
    from statekit.backup.create import create_backup

    archive = create_backup(state_tree.root, tmp_path / "oc", record=False, fmt="openclaw").archive_path
    client = s3_env.client()
    client.put_object(Bucket=bucket, Key=f"x/{archive.name}", Body=archive.read_bytes())  # type: ignore[attr-defined]
    client.put_object(Bucket=bucket, Key="x/notes.tar.zst", Body=b"not an archive at all")  # type: ignore[attr-defined]
    code = main(["backup", "verify", f"s3://{bucket}/x/{archive.name}", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["ok"] and report["format"] == "openclaw-tar.gz"
    code = main(["backup", "verify", f"s3://{bucket}/x/notes.tar.zst"])
    err = capsys.readouterr().err
    assert code == 5 and f"s3://{bucket}/x/notes.tar.zst: not a statekit .tar.zst or OpenClaw .tar.gz" in err
    assert ".statekit-" not in err and "/.statekit-remote" not in err
