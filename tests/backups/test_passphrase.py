"""The passphrase mode of encrypted archives (``--passphrase-file``, issue 14 item 1): each archive is streamed to a
fresh age key and only that key is wrapped with the passphrase (scrypt) into ``<archive>.key`` beside it.

Create, list, verify, restore and prune end to end; a wrong passphrase and any tampered byte of the archive or of
its key fail with exit 5 before anything is restored; a renamed or swapped pair is refused; plain ``age`` (typing
the passphrase at its prompt) + ``zstd`` + ``tar`` recover an archive; the passphrase never appears in any output
or file; memory does not grow with the archive.

Every test here fails on 2ef7472: ``backup create/verify/restore`` had no ``--passphrase-file``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
import pyrage.passphrase

from backup_helpers import SECRET, rows_digest
from helpers import rows, run_cli_peak_rss
from passphrase_helpers import (
    AGE_TOOLS_REASON, HAVE_AGE_TOOLS, age_decrypt_under_pty, scrypt_memory_mb, unpack_with_zstd_and_tar, write_passphrase,
)
from statekit.backup import create_backup
from statekit.backup.encryption import AGE_MAGIC
from statekit.backup.passphrase import AGE_WORK_FACTOR, PASSPHRASE_ENV, PassphraseRecipients, key_path, passphrase_recipients, work_factor
from statekit.cli import main

RUNNER = Path(__file__).resolve().parents[1] / "faultkit" / "run_statekit.py"


def run(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def canary_passphrase() -> str:
    return f"CANARY-PASS-{uuid.uuid4().hex}"


def files_under(*roots: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for root in roots if root.exists() for p in root.rglob("*") if p.is_file() and not p.is_symlink()}


def assert_restored(state: Path, target: Path, dbs: list[Path]) -> None:
    for rel in ("credentials/oauth.json", "openclaw.json", "agents/main/sessions/s1.jsonl", "weird name ü.txt"):
        assert (target / rel).read_bytes() == (state / rel).read_bytes(), rel
    for db in dbs:
        assert rows_digest(target / db.relative_to(state)) == rows_digest(db)


def small_state(root: Path) -> Path:
    state = root / ".openclaw"
    (state / "agents" / "main" / "sessions").mkdir(parents=True)
    (state / "openclaw.json").write_text('{"models": {"providers": {"x": {"apiKey": "%s"}}}}' % SECRET)
    (state / "agents" / "main" / "sessions" / "s1.jsonl").write_text('{"type":"session"}\n')
    return state


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Two passphrase-mode archives of a small state (made once: scrypt takes a second or two per key)."""
    tmp = tmp_path_factory.mktemp("passphrase")
    value = canary_passphrase()
    pw = write_passphrase(tmp / "pw.txt", value)
    state = small_state(tmp)
    first = create_backup(state, tmp / "out", recipients=passphrase_recipients(pw), record=False).archive_path
    second = create_backup(state, tmp / "out", recipients=passphrase_recipients(pw), record=False).archive_path
    assert first is not None and second is not None and first != second
    return {"tmp": tmp, "pw": pw, "value": value, "state": state, "archives": (first, second)}


def copy_pair(archive: Path, dest_dir: Path, key_from: Path | None = None, name: str | None = None) -> Path:
    dest_dir.mkdir(parents=True, exist_ok=True)
    copy = dest_dir / (name or archive.name)
    shutil.copyfile(archive, copy)
    shutil.copyfile(key_path(key_from or archive), key_path(copy))
    return copy


# --------------------------------------------------------------------------- end to end


def test_create_list_verify_restore_prune_end_to_end(state_tree, tmp_path, capsys):
    value = canary_passphrase()
    pw = write_passphrase(tmp_path / "secrets" / "pw.txt", value)
    out = tmp_path / "out"
    outputs: dict[str, str] = {}
    code, stdout, err = run(capsys, "backup", "create", "--state-dir", state_tree.root, "--output", out, "--passphrase-file", pw, "--json")
    assert code == 0, err
    outputs["create --json"] = stdout + err
    data = json.loads(stdout)
    archive = Path(data["archive"])
    assert archive.name.endswith(".tar.zst.age") and data["key_file"] == str(key_path(archive))
    key = key_path(archive)
    assert sorted(p.name for p in out.iterdir() if not p.name.endswith(".lock")) == sorted(
        [archive.name, key.name, archive.name + ".verify.json"])
    assert (archive.stat().st_mode & 0o777) == 0o600 and (key.stat().st_mode & 0o777) == 0o600
    # the archive is age to an X25519 key; the key file is age with one scrypt stanza, and holds that key
    body = archive.read_bytes()
    assert body.startswith(AGE_MAGIC) and b"-> X25519 " in body[:200] and SECRET.encode() not in body
    wrapped = key.read_bytes()
    assert wrapped.startswith(AGE_MAGIC) and b"\n-> scrypt " in wrapped and len(wrapped) < 1024
    plain = pyrage.passphrase.decrypt(wrapped, value).decode()
    assert f"# archive: {archive.name}\n" in plain and "\nAGE-SECRET-KEY-1" in plain

    code, stdout, err = run(capsys, "backup", "list", "--output", out, "--json")
    assert code == 0, err
    outputs["list --json"] = stdout + err
    assert [Path(a["archive"]).name for a in json.loads(stdout)["archives"]] == [archive.name]
    code, stdout, err = run(capsys, "backup", "list", "--output", out)
    outputs["list"] = stdout + err
    assert code == 0 and archive.name in stdout and key.name not in stdout

    code, stdout, err = run(capsys, "backup", "verify", archive, "--passphrase-file", pw)
    outputs["verify"] = stdout + err
    assert code == 0, err
    assert "OK" in stdout
    code, stdout, err = run(capsys, "backup", "verify", archive, "--passphrase-file", pw, "--json")
    outputs["verify --json"] = stdout + err
    assert code == 0 and json.loads(stdout)["ok"] is True

    target = tmp_path / "restored"
    code, stdout, err = run(capsys, "backup", "restore", archive, "--passphrase-file", pw, "--target", target, "--yes")
    outputs["restore"] = stdout + err
    assert code == 0, err
    assert_restored(state_tree.root, target, [state_tree.global_db, state_tree.agent_db, state_tree.tasks_db])

    # an older pair beside it (a copy under an earlier time): prune takes the archive, its sidecar and its key
    older = copy_pair(archive, out, name="openclaw-backup-20200101T000000Z.tar.zst.age")
    (older.parent / (older.name + ".verify.json")).write_text((out / (archive.name + ".verify.json")).read_text())
    code, stdout, err = run(capsys, "backup", "prune", "--state-dir", state_tree.root, "--output", out, "--keep-last", "1", "--json")
    outputs["prune --json"] = stdout + err
    assert code == 0, err
    assert not older.exists() and not key_path(older).exists() and not (out / (older.name + ".verify.json")).exists()
    assert archive.exists() and key.exists()

    # the passphrase appears nowhere: no output, no file statekit wrote (in clear or not), no database row
    for label, text in outputs.items():
        assert value not in text, label
    for path, content in files_under(out, state_tree.root, target, state_tree.home).items():
        assert value.encode() not in content, path
        assert b"AGE-SECRET-KEY-1" not in content.upper(), path  # the archive's key exists only wrapped
    assert value not in json.dumps(rows(state_tree.global_db, "SELECT * FROM backup_runs"), default=str)


def test_trailing_newline_is_stripped_and_the_env_var_names_the_file(state_tree, tmp_path, capsys, monkeypatch):
    """``printf 'pw\\n' > f`` and ``printf 'pw' > f`` are one passphrase; ``$STATEKIT_PASSPHRASE_FILE`` stands for the flag."""
    value = canary_passphrase()
    with_newline = write_passphrase(tmp_path / "a.txt", value, "\r\n")
    without = write_passphrase(tmp_path / "b.txt", value, "")
    monkeypatch.setenv(PASSPHRASE_ENV, str(with_newline))
    out = tmp_path / "out"
    code, _stdout, err = run(capsys, "backup", "create", "--state-dir", state_tree.root, "--output", out)
    assert code == 0, err
    (archive,) = out.glob("*.tar.zst.age")
    assert key_path(archive).is_file()
    monkeypatch.setenv(PASSPHRASE_ENV, str(without))
    code, stdout, err = run(capsys, "backup", "verify", archive)
    assert code == 0 and "OK" in stdout, err
    # a flag beats the variable: --recipient makes a public-key archive (no wrapped key)
    from pyrage import x25519

    code, stdout, err = run(capsys, "backup", "create", "--state-dir", state_tree.root, "--output", tmp_path / "pub",
                            "--recipient", str(x25519.Identity.generate().to_public()))
    assert code == 0, err
    assert len(list((tmp_path / "pub").glob("*.age"))) == 1 and not list((tmp_path / "pub").glob("*.key"))


# --------------------------------------------------------------------------- refusals: exit 5


def test_wrong_passphrase_is_exit_5_in_one_line_and_restores_nothing(made, tmp_path, capsys):
    archive = made["archives"][0]
    wrong = write_passphrase(tmp_path / "wrong.txt", "not-the-passphrase")
    code, stdout, err = run(capsys, "backup", "verify", archive, "--passphrase-file", wrong)
    assert code == 5 and stdout == ""
    assert len(err.strip().splitlines()) == 1 and str(key_path(archive)) in err and "passphrase" in err
    assert "Traceback" not in err and "not-the-passphrase" not in err and made["value"] not in err
    code, stdout, _err = run(capsys, "backup", "verify", archive, "--passphrase-file", wrong, "--json")
    assert code == 5 and json.loads(stdout)["exit_code"] == 5 and json.loads(stdout)["ok"] is False
    target = tmp_path / "never"
    code, _stdout, err = run(capsys, "backup", "restore", archive, "--passphrase-file", wrong, "--target", target, "--yes")
    assert code == 5 and len(err.strip().splitlines()) == 1
    assert not target.exists()


@pytest.mark.parametrize("where", ["archive-header", "archive-middle", "archive-last", "archive-truncated", "key-stanza",
                                   "key-body", "key-truncated"])
def test_any_tampered_byte_of_archive_or_key_fails_with_exit_5_before_anything_is_restored(made, tmp_path, capsys, where):
    archive = copy_pair(made["archives"][0], tmp_path / "bad")
    victim = archive if where.startswith("archive") else key_path(archive)
    data = bytearray(victim.read_bytes())
    if where.endswith("truncated"):
        del data[-20:]
    else:
        stanza = data.index(b"\n-> ") + 12  # inside the stanza line (X25519 share, or scrypt salt)
        data[{"header": stanza, "stanza": stanza, "middle": len(data) // 2, "last": len(data) - 1,
              "body": len(data) - 1}[where.split("-")[1]]] ^= 0x01
    victim.write_bytes(bytes(data))
    code, _stdout, err = run(capsys, "backup", "verify", archive, "--passphrase-file", made["pw"])
    assert code == 5, err
    assert err.strip() and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert ".statekit-decrypt" not in err
    target = tmp_path / "never"
    code, _stdout, err = run(capsys, "backup", "restore", archive, "--passphrase-file", made["pw"], "--target", target, "--yes")
    assert code == 5, err
    assert not target.exists() or not any(target.iterdir())


def test_a_renamed_or_swapped_pair_is_refused(made, tmp_path, capsys):
    """The wrapped key names its archive: another archive's key, or a pair renamed to another time, does not open."""
    first, second = made["archives"]
    swapped = copy_pair(first, tmp_path / "swap", key_from=second)
    code, _stdout, err = run(capsys, "backup", "verify", swapped, "--passphrase-file", made["pw"])
    assert code == 5 and "belongs to" in err and second.name in err
    renamed = copy_pair(first, tmp_path / "renamed", name="openclaw-backup-20990101T000000Z.tar.zst.age")
    code, _stdout, err = run(capsys, "backup", "restore", renamed, "--passphrase-file", made["pw"], "--target", tmp_path / "t", "--yes")
    assert code == 5 and "belongs to" in err
    assert not (tmp_path / "t").exists()


def test_archive_without_its_key_is_exit_5_naming_the_missing_key(made, tmp_path, capsys):
    lonely = tmp_path / "lonely" / made["archives"][0].name
    lonely.parent.mkdir()
    shutil.copyfile(made["archives"][0], lonely)
    code, _stdout, err = run(capsys, "backup", "verify", lonely, "--passphrase-file", made["pw"])
    assert code == 5 and str(key_path(lonely)) in err and "missing" in err and len(err.strip().splitlines()) == 1


# --------------------------------------------------------------------------- refusals: exit 2 (before any work)


@pytest.mark.parametrize("case", ["with-recipient", "value-on-command-line", "empty-file", "only-a-newline", "missing-file",
                                  "a-directory", "two-lines", "not-utf8", "too-large"])
def test_bad_passphrase_options_are_usage_errors_naming_the_file_never_the_value(tmp_path, capsys, case):
    state = small_state(tmp_path)
    pw = tmp_path / "pw.txt"
    args: list[object] = ["--passphrase-file", pw]
    contents = {"empty-file": b"", "only-a-newline": b"\n", "two-lines": b"CANARY-one\nCANARY-two\n", "not-utf8": b"\xffCANARY\xfe",
                "too-large": b"CANARY" * 1000}
    if case in contents:
        pw.write_bytes(contents[case])
    elif case == "a-directory":
        pw.mkdir()
    elif case == "with-recipient":
        write_passphrase(pw, "CANARY-pw")
        args += ["--recipient", "age1qyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqs3290gq"]
    elif case == "value-on-command-line":
        args = ["--passphrase", "CANARY-on-the-command-line"]
    code, stdout, err = run(capsys, "backup", "create", "--state-dir", state, "--output", tmp_path / "out", *args)
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "CANARY" not in stdout + err
    if case not in ("with-recipient", "value-on-command-line"):
        assert str(pw) in err
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").glob("openclaw-backup-*"))


def test_verify_and_restore_refuse_a_passphrase_value_and_identity_with_passphrase(made, tmp_path, capsys):
    archive = made["archives"][0]
    identity = tmp_path / "id.txt"
    identity.write_text("AGE-SECRET-KEY-1QQQ\n")
    for command in (("verify", archive), ("restore", archive, "--target", tmp_path / "t", "--yes")):
        code, stdout, err = run(capsys, "backup", *command, "--passphrase", "CANARY-value")
        assert code == 2 and "--passphrase-file" in err and "CANARY" not in stdout + err
        code, _stdout, err = run(capsys, "backup", *command, "--passphrase-file", made["pw"], "--identity", identity)
        assert code == 2 and "either --identity or --passphrase-file" in err
    assert not (tmp_path / "t").exists()


# --------------------------------------------------------------------------- killed runs, orphans, listing


def test_killed_between_key_and_archive_publishes_nothing_and_the_rerun_removes_the_orphan_key(tmp_path):
    state = small_state(tmp_path)
    out = tmp_path / "out"
    pw = write_passphrase(tmp_path / "pw.txt", canary_passphrase())
    args = [sys.executable, str(RUNNER), "backup", "create", "--state-dir", str(state), "--output", str(out), "--passphrase-file", str(pw)]
    killed = subprocess.run(args, env={**os.environ, "STATEKIT_CRASHPOINT": "backup-encrypted"}, capture_output=True, timeout=300)
    assert killed.returncode == -9
    assert not list(out.glob("*.tar.zst.age")) and len(list(out.glob("*.tar.zst.age.key"))) == 1  # the key is written first
    listed = subprocess.run([sys.executable, str(RUNNER), "backup", "list", "--output", str(out), "--json"],
                            capture_output=True, text=True, timeout=300)
    assert listed.returncode == 0 and json.loads(listed.stdout)["archives"] == []  # a key alone is no archive
    again = subprocess.run(args, capture_output=True, timeout=300, text=True)
    assert again.returncode == 0, again.stderr
    (archive,) = out.glob("*.tar.zst.age")
    assert [p.name for p in out.glob("*.key")] == [key_path(archive).name]
    assert not list(out.rglob("*.partial")) and not list(out.rglob("*.tar.zst"))


# --------------------------------------------------------------------------- without statekit


@pytest.mark.skipif(not HAVE_AGE_TOOLS, reason=AGE_TOOLS_REASON)
def test_plain_age_zstd_tar_recover_a_passphrase_mode_archive(made, tmp_path):
    """``age -d -i X.tar.zst.age.key X.tar.zst.age`` (age asks for the passphrase on the terminal) | zstd -d | tar -x."""
    archive = made["archives"][0]
    plain = tmp_path / "plain.tar.zst"
    code, shown = age_decrypt_under_pty(key_path(archive), archive, plain, made["value"])
    assert code == 0, shown
    assert b"passphrase" in shown.lower()  # it did ask, on the terminal
    root = unpack_with_zstd_and_tar(plain, tmp_path / "x")
    assert (root / "manifest.json").is_file()
    assert (root / "payload" / "state" / "openclaw.json").read_bytes() == (made["state"] / "openclaw.json").read_bytes()
    wrong = tmp_path / "wrong.tar.zst"
    code, _shown = age_decrypt_under_pty(key_path(archive), archive, wrong, "not-the-passphrase")
    assert code != 0 and (not wrong.exists() or wrong.stat().st_size == 0)


# --------------------------------------------------------------------------- memory


def test_memory_does_not_grow_with_the_archive(tmp_path):
    """96 MiB of incompressible state: create and verify stay within scrypt's own fixed cost (128 * 8 * 2**logN bytes,
    256 MiB at age's usual logN 18) plus the public-key mode's flat streaming allowance. Encrypting the archive with
    the passphrase itself (``pyrage.passphrase`` takes whole buffers) would hold the archive twice on top of that."""
    state = small_state(tmp_path)
    size_mb = 96
    with open(state / "blob.bin", "wb") as handle:
        for _ in range(size_mb):
            handle.write(os.urandom(1 << 20))
    pw = write_passphrase(tmp_path / "pw.txt", canary_passphrase())
    out = tmp_path / "out"
    proc, create_mb = run_cli_peak_rss("backup", "create", "--state-dir", state, "--output", out, "--passphrase-file", pw, "--quiet")
    assert proc.returncode == 0, proc.stderr
    (archive,) = out.glob("*.tar.zst.age")
    assert archive.stat().st_size > size_mb << 20  # incompressible: the archive is as large as the state
    scrypt_mb = scrypt_memory_mb(key_path(archive))
    proc, verify_mb = run_cli_peak_rss("backup", "verify", archive, "--passphrase-file", pw, "--quiet")
    assert proc.returncode == 0, proc.stderr
    allowance = 110  # recipient mode's create peaks near 95 MB here: the zstd and tar buffers, Python, apsw
    assert create_mb < scrypt_mb + allowance, (create_mb, scrypt_mb)
    assert verify_mb < scrypt_mb + allowance, (verify_mb, scrypt_mb)
    assert create_mb < scrypt_mb + 2 * size_mb and verify_mb < scrypt_mb + 2 * size_mb  # what buffering would need


def test_a_work_factor_below_ages_is_noted_with_what_it_costs(made):
    """pyrage calibrates scrypt to about a second on the machine at that moment (2^17 on a busy 2-core machine, 2^19
    on an idle one): below age's own 2^18 the create prints a note (exit 0), never the passphrase."""
    wrapped = key_path(made["archives"][0]).read_bytes()
    assert work_factor(wrapped) == int(wrapped.split(b"\n")[1].split()[-1]) >= 10
    weak = PassphraseRecipients(work_factors=[AGE_WORK_FACTOR, AGE_WORK_FACTOR - 1])
    note = weak.weak_work_note()
    assert note is not None and "2^17" in note and "2x cheaper" in note
    assert PassphraseRecipients(work_factors=[AGE_WORK_FACTOR, AGE_WORK_FACTOR + 1]).weak_work_note() is None


def test_a_key_above_rages_work_bound_is_not_called_a_wrong_passphrase(made, tmp_path, capsys):
    """rage refuses a work factor it estimates as too costly on this machine *now* (str4d/rage#38): say so, exit 5.

    The stanza's work factor raised to 2^30 (rage checks it before any scrypt work or MAC): the one line names
    the key, the work factor and what to do, never "does not open" or the passphrase; nothing is restored.
    """
    archive = copy_pair(made["archives"][0], tmp_path / "costly")
    key = key_path(archive)
    data = key.read_bytes()
    found = re.search(rb"-> scrypt (\S+) (\d+)", data)
    assert found is not None
    key.write_bytes(data.replace(found.group(0), b"-> scrypt " + found.group(1) + b" 30", 1))
    code, stdout, err = run(capsys, "backup", "verify", archive, "--passphrase-file", made["pw"])
    assert code == 5 and stdout == "" and len(err.strip().splitlines()) == 1, err
    assert str(key) in err and "2^30" in err and "not tried" in err and "idle" in err
    assert "does not open" not in err and made["value"] not in err and "Traceback" not in err
    target = tmp_path / "never"
    code, _stdout, err = run(capsys, "backup", "restore", archive, "--passphrase-file", made["pw"], "--target", target, "--yes")
    assert code == 5 and "not tried" in err and not target.exists()
