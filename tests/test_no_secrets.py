"""No secret ever reaches an output, a report or a backup manifest.

A copy of the every-family fixture gets a unique canary (``CANARY-<uuid>``) in
every secret-bearing field: provider API keys and tokens, OAuth access/refresh
tokens, device and VAPID private keys, device/node/bootstrap tokens, web-push
auth secrets, Matrix credentials and recovery keys, Teams SSO/delegated tokens,
MCP OAuth tokens and PKCE verifier, the exec-approvals socket token and the
gateway token in ``openclaw.json``. Then ``plan`` (JSON and human),
``migrate`` (JSON and human) and ``backup create --json`` run, and no canary may
appear in stdout, stderr, ``migration_runs.report_json``,
``migration_sources.report_json``, the archive's ``manifest.json`` or
``backup_runs.manifest_json``. The secrets themselves must still be imported.
"""

from __future__ import annotations

import io
import json
import shutil
import tarfile
import uuid
from pathlib import Path
from typing import Any

import pytest

from helpers import FIXTURES, global_db, open_db, run_cli

EVERY = FIXTURES / "every-family" / ".openclaw"

# Field names that hold a secret wherever they appear.
SECRET_NAMES = {
    "token", "accessToken", "access_token", "refreshToken", "refresh_token", "apiKey", "api_key", "botToken",
    "privateKeyPem", "privateKey", "private_key", "password", "secret", "clientSecret", "client_secret",
    "codeVerifier", "code_verifier", "encodedPrivateKey", "privateKeyBase64", "sendGrant",
}
# Names that are secrets only in some files (elsewhere they are ids or counters).
SCOPED_NAMES = {
    "key": ("agents/main/agent/auth", "credentials/oauth.json"),
    "access": ("agents/main/agent/auth", "credentials/oauth.json"),
    "refresh": ("agents/main/agent/auth", "credentials/oauth.json"),
    "auth": ("push/",),
}
# Fields that must have been planted, so the test keeps covering them.
REQUIRED = {
    "openclaw.json": "token",
    "exec-approvals.json": "token",
    "identity/device.json": "privateKeyPem",
    "identity/device-auth.json": "token",
    "devices/paired.json": "token",
    "agents/main/agent/auth-profiles.json": None,
    "credentials/oauth.json": None,
    "push/vapid-keys.json": "privateKey",
    "push/web-push-subscriptions.json": "auth",
    "credentials/matrix/credentials-ops.json": "accessToken",
    "matrix/accounts/ops/matrix.example.org__bot/0123456789abcdef/recovery-key.json": "encodedPrivateKey",
    "msteams-sso-tokens.json": "accessToken",
    "mcp-oauth/linear.json": "access_token",
    "node.json": "token",
}


def _secret_field(rel: str, name: str) -> bool:
    if name in SECRET_NAMES:
        return True
    return any(rel.startswith(prefix) for prefix in SCOPED_NAMES.get(name, ()))


def _plant(value: Any, rel: str, planted: list[tuple[str, str, str]]) -> Any:
    if isinstance(value, dict):
        out = {}
        for name, item in value.items():
            if isinstance(item, str) and item and _secret_field(rel, name):
                canary = f"CANARY-{uuid.uuid4()}"
                planted.append((rel, name, canary))
                out[name] = canary
            else:
                out[name] = _plant(item, rel, planted)
        return out
    if isinstance(value, list):
        return [_plant(item, rel, planted) for item in value]
    return value


def plant_canaries(state: Path) -> list[tuple[str, str, str]]:
    planted: list[tuple[str, str, str]] = []
    for path in sorted(state.rglob("*")):
        if not path.is_file() or path.suffix not in (".json", ".jsonl"):
            continue
        rel = path.relative_to(state).as_posix()
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".jsonl":
            lines = [json.dumps(_plant(json.loads(line), rel, planted)) if line.strip() else line for line in text.split("\n")]
            path.write_text("\n".join(lines), encoding="utf-8")
        else:
            path.write_text(json.dumps(_plant(json.loads(text), rel, planted), indent=2) + "\n", encoding="utf-8")
    return planted


def _copy(tmp_path: Path, name: str) -> tuple[Path, list[tuple[str, str, str]]]:
    state = tmp_path / name / ".openclaw"
    shutil.copytree(EVERY, state, symlinks=True)
    return state, plant_canaries(state)


def _leaks(text: str, canaries: list[str]) -> list[str]:
    return [c for c in canaries if c in text]


def _db_texts(state: Path, sql: str) -> str:
    conn = open_db(global_db(state), "ro")
    try:
        return "\n".join(row[0] for row in conn.execute(sql))
    finally:
        conn.close()


@pytest.fixture(scope="module")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp_path = tmp_path_factory.mktemp("no-secrets")
    state, planted = _copy(tmp_path, "a")
    outputs = {}
    for label, args in [("plan --json", ("plan", "--json")), ("plan", ("plan",))]:
        proc = run_cli(*args, "--state-dir", state)
        assert proc.returncode in (0, 3), proc.stderr
        outputs[label] = proc.stdout + proc.stderr
    proc = run_cli("migrate", "--state-dir", state, "--yes", "--no-backup", "--json")
    assert proc.returncode in (0, 3), proc.stderr
    outputs["migrate --json"] = proc.stdout + proc.stderr
    human_state, human_planted = _copy(tmp_path, "b")
    proc = run_cli("migrate", "--state-dir", human_state, "--yes", "--no-backup")
    assert proc.returncode in (0, 3), proc.stderr
    outputs["migrate"] = proc.stdout + proc.stderr
    return {"state": state, "planted": planted, "outputs": outputs, "human_state": human_state, "human_planted": human_planted,
            "tmp": tmp_path}


def test_canaries_cover_every_secret_kind(migrated: dict[str, Any]) -> None:
    planted = migrated["planted"]
    fields = {(rel, name) for rel, name, _c in planted}
    for rel, name in REQUIRED.items():
        if name is None:
            assert any(r == rel for r, _n in fields), rel
        else:
            assert (rel, name) in fields, (rel, name)
    assert len(planted) >= 25


def test_no_canary_in_outputs(migrated: dict[str, Any]) -> None:
    canaries = [c for _r, _n, c in migrated["planted"]] + [c for _r, _n, c in migrated["human_planted"]]
    for label, text in migrated["outputs"].items():
        assert _leaks(text, canaries) == [], label


def test_no_canary_in_migration_reports(migrated: dict[str, Any]) -> None:
    for state, planted in ((migrated["state"], migrated["planted"]), (migrated["human_state"], migrated["human_planted"])):
        canaries = [c for _r, _n, c in planted]
        assert _leaks(_db_texts(state, "SELECT report_json FROM migration_runs"), canaries) == []
        assert _leaks(_db_texts(state, "SELECT report_json FROM migration_sources"), canaries) == []


def test_secrets_were_imported_not_dropped(migrated: dict[str, Any]) -> None:
    """The canaries are in the data tables: the secret-free reports are not a side effect of skipping secrets."""
    state = migrated["state"]
    by_field = {(rel, name): canary for rel, name, canary in migrated["planted"]}
    assert by_field[("agents/main/agent/auth-profiles.json", "token")] in _db_texts(state, "SELECT value_json FROM config_machine_state")
    assert by_field[("credentials/oauth.json", "refresh")] in _db_texts(state, "SELECT value_json FROM config_machine_state")
    assert by_field[("devices/paired.json", "token")] in _db_texts(state, "SELECT tokens_json FROM device_pairing_paired")
    assert by_field[("identity/device-auth.json", "token")] in _db_texts(state, "SELECT token FROM device_auth_tokens")
    assert by_field[("push/vapid-keys.json", "privateKey")] in _db_texts(state, "SELECT private_key FROM web_push_vapid_keys")
    assert by_field[("exec-approvals.json", "token")] in _db_texts(state, "SELECT raw_json FROM exec_approvals_config")
    assert by_field[("mcp-oauth/linear.json", "refresh_token")] in _db_texts(state, "SELECT value_json FROM plugin_state_entries")
    # state of plugins OpenClaw 2026.9.6 does not bundle stays in place for the plugin's own doctor, secret included
    for rel, name in (("credentials/matrix/credentials-ops.json", "accessToken"), ("msteams-sso-tokens.json", "accessToken")):
        assert by_field[(rel, name)] in (state / rel).read_text(encoding="utf-8"), rel
    # and no planted secret is gone: each is in a row, in a file kept in place, or in the run's byte-exact retired copy
    retired = [p for p in (state / ".statekit" / "migrated").rglob("*") if p.is_file()]
    for (rel, name), canary in by_field.items():
        places = [state / rel, *(p for p in retired if p.as_posix().endswith("/" + rel))]
        kept = any(p.exists() and canary in p.read_text(encoding="utf-8", errors="replace") for p in places)
        assert kept or canary in _all_db_text(state), (rel, name)


def _all_db_text(state: Path) -> str:
    from statekit.db import connect

    parts: list[str] = []
    for db in sorted(state.rglob("openclaw*.sqlite")):
        conn = connect(db, mode="ro")
        try:
            for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
                parts.extend(" ".join(str(v) for v in row) for row in conn.execute(f'SELECT * FROM "{table}"'))
        finally:
            conn.close()
    return "\n".join(parts)


def test_no_canary_in_backup_manifest(migrated: dict[str, Any]) -> None:
    state = migrated["state"]
    probe = run_cli("backup", "create", "--help")
    if probe.returncode != 0:
        pytest.skip("`statekit backup create` is not available yet")
    canaries = [c for _r, _n, c in migrated["planted"]]
    output = migrated["tmp"] / "backups"
    proc = run_cli("backup", "create", "--state-dir", state, "--output", output, "--json")
    assert proc.returncode == 0, proc.stderr
    assert _leaks(proc.stdout + proc.stderr, canaries) == []
    archives = sorted(output.glob("*.tar.zst"))
    assert len(archives) == 1
    manifest = _archive_manifest(archives[0])
    assert manifest and _leaks(manifest, canaries) == []
    assert _leaks(_db_texts(state, "SELECT manifest_json FROM backup_runs"), canaries) == []


def _archive_manifest(archive: Path) -> str:
    import zstandard

    with open(archive, "rb") as raw:
        reader = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
        with tarfile.open(fileobj=io.BufferedReader(reader), mode="r|") as tar:
            for member in tar:
                if member.name.endswith("/manifest.json") and member.name.count("/") == 1:
                    handle = tar.extractfile(member)
                    assert handle is not None
                    return handle.read().decode("utf-8")
                break
    raise AssertionError(f"{archive}: no manifest.json first member")


# --- secrets as JSON object keys (issue 11 item 9) ------------------------------------------------
#
# Maps keyed by a secret are real: an auth-profiles file whose profile id is a token, a sessions.json keyed
# by a secret-looking string, bootstrap tokens as keys. A copy of the every-family fixture gets, in every
# JSON object of every legacy JSON/JSONL file, one more key that is a canary: its value a copy of a sibling
# value (so a map gains one more plausible entry), or for half the objects a malformed value (so the reader
# complains about that very entry). Then plan, migrate and inspect run, and no canary key may appear in
# any output line or any receipt or run report. Fails on 308a7ed (validation paths and per-entry warnings
# quoted the key).


def _plant_key(value: Any, planted: list[str], malformed: bool) -> Any:
    if isinstance(value, dict):
        out = {name: _plant_key(item, planted, malformed) for name, item in value.items()}
        canary = f"CANARY{uuid.uuid4().hex}"
        planted.append(canary)
        sibling = next(iter(value.values()), "x")
        out[canary] = 7 if malformed else json.loads(json.dumps(sibling))
        return out
    if isinstance(value, list):
        return [_plant_key(item, planted, malformed) for item in value]
    return value


def plant_key_canaries(state: Path, malformed: bool) -> list[str]:
    planted: list[str] = []
    from statekit.migrate.discover import discover

    for entry, _reader in discover(state).legacy:
        path = state / entry.rel
        if path.is_symlink() or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
            if entry.rel.endswith(".jsonl"):
                lines = [json.dumps(_plant_key(json.loads(line), planted, malformed)) if line.strip() else line for line in text.split("\n")]
                path.write_text("\n".join(lines), encoding="utf-8")
            else:
                path.write_text(json.dumps(_plant_key(json.loads(text), planted, malformed), indent=2) + "\n", encoding="utf-8")
        except (UnicodeDecodeError, ValueError):
            continue  # not JSON (a JSON5 file with comments, a binary sidecar): left as it is
    return planted


@pytest.mark.parametrize("malformed", [False, True], ids=["plausible-entry", "malformed-entry"])
def test_no_secret_key_in_any_message(tmp_path: Path, malformed: bool) -> None:
    state = tmp_path / "keys" / ".openclaw"
    shutil.copytree(EVERY, state, symlinks=True)
    planted = plant_key_canaries(state, malformed)
    assert len(planted) >= 200
    texts: dict[str, str] = {}
    for label, args in [("plan --json", ("plan", "--json")), ("plan", ("plan",)), ("migrate", ("migrate", "--yes", "--no-backup")),
                        ("inspect", ("inspect",)), ("inspect --json", ("inspect", "--json"))]:
        proc = run_cli(*args, "--state-dir", state)
        assert proc.returncode in (0, 3), (label, proc.stderr[-2000:])
        texts[label] = proc.stdout + proc.stderr
    texts["migration_runs"] = _db_texts(state, "SELECT report_json FROM migration_runs")
    texts["migration_sources"] = _db_texts(state, "SELECT report_json FROM migration_sources")
    leaks = {label: [line for line in text.splitlines() if "CANARY" in line][:3] for label, text in texts.items()}
    assert {label: lines for label, lines in leaks.items() if lines} == {}
