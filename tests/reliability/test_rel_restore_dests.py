"""Issue 11 item 4: a restore writes only where the operator said.

Every destination comes from the target / the state dir being restored (flag, ``OPENCLAW_STATE_DIR``,
``~/.openclaw``) or a path given on the command line, never from the ``state_dir`` or paths a manifest
records; a manifest whose destinations leave the target or collide fails verification (exit 5); assets kept
outside the state dir are restored only with ``--restore-external`` and listed by ``--dry-run``; an older
archive over newer state names the newer runs and ``recover`` still finds them. Each test fails on 308a7ed.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import tarfile
from pathlib import Path

import zstandard

from helpers import rows
from rel_harness import FIGURES, FIXTURES, archives, copy_world, fork_cli, next_archive_second


def _backup(state: Path, out: Path, env: dict[str, str] | None = None) -> Path:
    run = fork_cli("backup", "create", "--state-dir", state, "--output", out, env=env)
    assert run.returncode in (0, 3), run
    return sorted(archives(out))[-1]


def _rewrite(archive: Path, dest: Path, change) -> Path:  # type: ignore[no-untyped-def]
    """The archive with its manifest changed by ``change(manifest, members)`` (members: name -> bytes, may be added)."""
    raw = zstandard.ZstdDecompressor().stream_reader(open(archive, "rb"), read_across_frames=True).read()
    with tarfile.open(fileobj=io.BytesIO(raw), mode="r:") as tar:
        infos = [(info, tar.extractfile(info).read() if info.isreg() else b"") for info in tar]  # type: ignore[union-attr]
    manifest = json.loads(infos[0][1])
    extra: dict[str, bytes] = {}
    change(manifest, extra)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        head = infos[0][0]
        data = json.dumps(manifest).encode()
        head.size = len(data)
        tar.addfile(head, io.BytesIO(data))
        for info, body in infos[1:]:
            tar.addfile(info, io.BytesIO(body) if info.isreg() else None)
        for name, body in extra.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(body), 0o600
            tar.addfile(info, io.BytesIO(body))
    dest.write_bytes(zstandard.ZstdCompressor(level=3, write_checksum=True).compress(buffer.getvalue()))
    return dest


def _file_asset(manifest: dict, archive_path: str, source_path: str, body: bytes) -> dict:
    return {"id": archive_path.split("/payload/", 1)[1], "kind": "file", "role": "config", "agent_id": None,
            "schema_version": None, "source_path": source_path, "archive_path": archive_path, "size": len(body),
            "sha256": hashlib.sha256(body).hexdigest(), "mode": 0o600, "mtime": 0}


def test_in_place_restore_goes_to_the_resolved_state_dir_not_the_recorded_one(tmp_path: Path) -> None:
    """Fails on 308a7ed: without --state-dir the archive was restored over the state dir its manifest recorded."""
    recorded = copy_world("demo-install", tmp_path / "old-machine")
    archive = _backup(recorded, tmp_path / "out")
    (recorded / "openclaw.json").write_text('{"recorded": "must stay"}')
    home = tmp_path / "new-machine" / "home"
    (home / ".openclaw").mkdir(parents=True)
    run = fork_cli("backup", "restore", archive, "--yes", env={"HOME": str(home), "OPENCLAW_STATE_DIR": ""})
    assert run.returncode == 0, run
    assert (recorded / "openclaw.json").read_text() == '{"recorded": "must stay"}'
    assert (home / ".openclaw" / "openclaw.json").read_bytes() == (FIXTURES / "demo-install" / ".openclaw" / "openclaw.json").read_bytes()
    assert (home / ".openclaw" / "agents" / "main" / "sessions" / "sessions.json").is_file()
    FIGURES["restore destinations"]["recorded state dirs ignored"] += 1


def test_external_assets_are_restored_only_when_asked_and_where_told(tmp_path: Path) -> None:
    """Fails on 308a7ed: an in-place restore wrote the external config and credentials back to the absolute paths
    the manifest recorded, without being asked; ``--restore-external`` did not exist."""
    state = copy_world("demo-install", tmp_path)
    outside = tmp_path / "outside"
    (outside / "creds").mkdir(parents=True)
    config = outside / "openclaw.json"
    shutil.copy(state / "openclaw.json", config)
    (state / "openclaw.json").unlink()
    (outside / "creds" / "oauth.json").write_text('{"token": "archived"}')
    env = {"OPENCLAW_CONFIG_PATH": str(config), "OPENCLAW_OAUTH_DIR": str(outside / "creds")}
    archive = _backup(state, tmp_path / "out", env)
    original_config = config.read_bytes()
    config.write_text('{"changed": true}')
    (outside / "creds" / "oauth.json").write_text('{"token": "newer"}')

    dry = fork_cli("backup", "restore", archive, "--state-dir", state, "--dry-run", env=env)
    assert dry.returncode == 0, dry
    assert "not restored without --restore-external" in dry.stdout and "external/credentials/oauth.json" in dry.stdout
    plain = fork_cli("backup", "restore", archive, "--state-dir", state, "--yes", env=env)
    assert plain.returncode == 0, plain
    assert config.read_text() == '{"changed": true}' and (outside / "creds" / "oauth.json").read_text() == '{"token": "newer"}'
    assert "--restore-external" in plain.stdout + plain.stderr

    chosen = tmp_path / "chosen"
    told = fork_cli("backup", "restore", archive, "--state-dir", state, "--yes", "--restore-external",
                    "--config-path", chosen / "cfg.json", "--credentials-dir", chosen / "creds", env=env)
    assert told.returncode == 0, told
    assert (chosen / "cfg.json").read_bytes() == original_config
    assert (chosen / "creds" / "oauth.json").read_text() == '{"token": "archived"}'
    assert config.read_text() == '{"changed": true}'  # the recorded paths are never written
    FIGURES["restore destinations"]["external assets held back"] += 2


def test_a_recorded_source_path_never_redirects_a_restore(tmp_path: Path) -> None:
    """Fails on 308a7ed: an external asset whose recorded ``source_path`` names a file elsewhere was written there."""
    state = copy_world("demo-install", tmp_path)
    victim = tmp_path / "victim" / "important.txt"
    victim.parent.mkdir()
    victim.write_text("precious")
    archive = _backup(state, tmp_path / "out")
    root = archive.name.removesuffix(".tar.zst")
    body = b"overwritten by a hostile archive"

    def change(manifest: dict, extra: dict[str, bytes]) -> None:
        name = f"{root}/payload/external/credentials/important.txt"
        manifest["assets"].append(_file_asset(manifest, name, str(victim), body) | {"role": "credentials"})
        manifest["totals"]["assets"] += 1
        manifest["totals"]["bytes"] += len(body)
        extra[name] = body

    hostile = _rewrite(archive, tmp_path / "hostile.tar.zst", change)
    run = fork_cli("backup", "restore", hostile, "--state-dir", state, "--yes")
    assert run.returncode == 0 and "Traceback" not in run.stderr, run
    assert victim.read_text() == "precious"
    told = fork_cli("backup", "restore", hostile, "--state-dir", state, "--yes", "--restore-external",
                    "--credentials-dir", tmp_path / "creds-here")
    assert told.returncode == 0, told
    assert victim.read_text() == "precious" and (tmp_path / "creds-here" / "important.txt").read_bytes() == body
    FIGURES["restore destinations"]["recorded paths ignored"] += 1


def test_two_assets_for_one_destination_fail_verification(tmp_path: Path) -> None:
    """Fails on 308a7ed: two config assets (one destination: the config path) verified and restored, the second
    silently replacing the first."""
    state = copy_world("demo-install", tmp_path)
    archive = _backup(state, tmp_path / "out")
    root = archive.name.removesuffix(".tar.zst")

    def change(manifest: dict, extra: dict[str, bytes]) -> None:
        for name in ("a.json", "b.json"):
            body = f'{{"{name}": 1}}'.encode()
            path = f"{root}/payload/external/config/{name}"
            manifest["assets"].append(_file_asset(manifest, path, f"/etc/{name}", body))
            manifest["totals"]["assets"] += 1
            manifest["totals"]["bytes"] += len(body)
            extra[path] = body

    hostile = _rewrite(archive, tmp_path / "two-configs.tar.zst", change)
    verify = fork_cli("backup", "verify", hostile)
    assert verify.returncode == 5, verify
    before = sorted(p.name for p in state.rglob("*"))
    restore = fork_cli("backup", "restore", hostile, "--state-dir", state, "--yes", "--restore-external",
                       "--config-path", tmp_path / "cfg.json")
    assert restore.returncode == 5, restore
    assert not (tmp_path / "cfg.json").exists() and sorted(p.name for p in state.rglob("*")) == before
    FIGURES["restore destinations"]["colliding destinations refused"] += 1


def test_older_archive_over_newer_state_names_the_newer_run_and_recover_finds_it(tmp_path: Path) -> None:
    """Fails on 308a7ed: the restore said nothing of the later migration, and the restored database had lost its
    receipts, so ``statekit recover RUN`` no longer found the run (its retired files stranded in .statekit/migrated)."""
    state = copy_world("demo-install", tmp_path)
    cron = tmp_path / "cron-later"
    shutil.move(state / "cron", cron)
    first = fork_cli("migrate", "--state-dir", state, "--yes", "--backup-output", tmp_path / "pre")
    assert first.returncode in (0, 3), first
    archive = _backup(state, tmp_path / "out")
    shutil.move(cron, state / "cron")
    next_archive_second(tmp_path / "pre")
    second = fork_cli("migrate", "--state-dir", state, "--yes", "--backup-output", tmp_path / "pre")
    assert second.returncode in (0, 3), second
    db = state / "state" / "openclaw.sqlite"
    later = rows(db, "SELECT id FROM migration_runs ORDER BY started_at DESC LIMIT 1")[0][0]
    assert (state / ".statekit" / "migrated" / later).is_dir()

    dry = fork_cli("backup", "restore", archive, "--state-dir", state, "--dry-run")
    assert dry.returncode == 0, dry
    assert "newer data will be replaced" in dry.stdout and later in dry.stdout
    run = fork_cli("backup", "restore", archive, "--state-dir", state, "--yes")
    assert run.returncode == 0, run
    assert (state / ".statekit" / "migrated" / later).is_dir()
    recover = fork_cli("recover", later, "--state-dir", state, "--yes")
    assert recover.returncode in (0, 3), recover
    assert (state / "cron" / "jobs.json").is_file()  # the later run's retired source is back in place
    FIGURES["restore destinations"]["later runs kept recoverable"] += 1


def test_openclaw_archive_in_place_holds_back_what_lived_outside(tmp_path: Path) -> None:
    """Fails on 308a7ed: restoring an OpenClaw-format archive in place wrote the config it recorded outside the state
    dir into the state dir (``openclaw.json``) without being asked."""
    state = copy_world("demo-install", tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.move(state / "openclaw.json", outside / "openclaw.json")
    env = {"OPENCLAW_CONFIG_PATH": str(outside / "openclaw.json")}
    run = fork_cli("backup", "create", "--state-dir", state, "--output", tmp_path / "out", "--format", "openclaw", env=env)
    assert run.returncode in (0, 3), run
    [archive] = [p for p in (tmp_path / "out").iterdir() if p.name.endswith(".tar.gz")]
    dry = fork_cli("backup", "restore", archive, "--state-dir", state, "--dry-run", env=env)
    assert dry.returncode == 0 and "not restored without --restore-external" in dry.stdout, dry
    plain = fork_cli("backup", "restore", archive, "--state-dir", state, "--yes", env=env)
    assert plain.returncode == 0, plain
    assert not (state / "openclaw.json").exists()
    told = fork_cli("backup", "restore", archive, "--state-dir", state, "--yes", "--restore-external", env=env)
    assert told.returncode == 0, told
    assert (state / "openclaw.json").read_bytes() == (outside / "openclaw.json").read_bytes()
    FIGURES["restore destinations"]["external assets held back"] += 1
