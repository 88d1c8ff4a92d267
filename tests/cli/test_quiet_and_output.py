"""Issue 12 (1, 6, 9, 11): --quiet still shows warnings (exit 3), migrate --dry-run, tables fit, closed pipes, units, help, -V.

Each test names what it pins; all fail on 308a7ed.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from cli_helpers import clean_env, statekit_argv, transcript
from helpers import make_state, open_db, run_cli

BROKEN = "this is not json {"


def unreadable_state(tmp_path: Path) -> Path:
    return make_state(tmp_path, {"agents/main/sessions/good.jsonl": transcript("good", 2),
                                 "agents/main/sessions/sessions.json": BROKEN})


@pytest.mark.parametrize("command", [("plan",), ("migrate", "--dry-run")])
def test_plan_quiet_names_each_warning_and_exits_3(tmp_path: Path, command: tuple[str, ...]) -> None:
    """Fails on 308a7ed: `plan --quiet` exited 3 with no output at all (and there was no `migrate --dry-run`)."""
    state = unreadable_state(tmp_path)
    result = run_cli(*command, "--state-dir", state, "--quiet")
    assert result.returncode == 3 and result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("statekit: warning: ") and "sessions.json" in lines[0], result.stderr


def test_inspect_quiet_names_findings_and_prints_integrity_once(tmp_path: Path) -> None:
    """Fails on 308a7ed: `inspect` printed the integrity_check output twice; `--quiet` printed nothing."""
    state = make_state(tmp_path, {"agents/main/sessions/s.jsonl": transcript("s", 4)})
    assert run_cli("migrate", "--state-dir", state, "--yes", "--no-backup").returncode == 0
    db = state / "agents/main/agent/openclaw-agent.sqlite"
    conn = open_db(db)
    conn.execute("PRAGMA writable_schema = ON")  # the index now claims another column: integrity_check fails, reads work
    conn.execute("UPDATE sqlite_master SET sql = 'CREATE INDEX idx_agent_sessions_session_key ON sessions(session_id)'"
                 " WHERE name = 'idx_agent_sessions_session_key'")
    conn.close()
    human = run_cli("inspect", "--state-dir", state)
    assert human.returncode == 5, human.stderr
    assert human.stdout.count("missing from index idx_agent_sessions_session_key") == 1, human.stdout  # once, not in the header too
    assert "integrity=FAILED" in human.stdout
    quiet = run_cli("inspect", "--state-dir", state, "--quiet")
    assert quiet.returncode == 5 and quiet.stdout == ""
    assert quiet.stderr.count("statekit: warning: ") >= 1 and "integrity_check" in quiet.stderr


def test_migrate_rerun_with_an_unreadable_source_exits_3(tmp_path: Path) -> None:
    """Fails on 308a7ed: the rerun (nothing new to do, the unreadable source still in place) exited 0."""
    state = unreadable_state(tmp_path)
    assert run_cli("migrate", "--state-dir", state, "--yes", "--no-backup").returncode == 3
    rerun = run_cli("migrate", "--state-dir", state, "--yes", "--no-backup", "--quiet")
    assert rerun.returncode == 3 and rerun.stdout == ""
    assert "sessions.json" in rerun.stderr and rerun.stderr.startswith("statekit: warning: ")


def test_backup_create_quiet_shows_warnings_and_exits_3(tmp_path: Path) -> None:
    """Fails on 308a7ed: `backup create --quiet` hid its warnings and always exited 0."""
    state = make_state(tmp_path, {"openclaw.json": "{ not json"})  # archived as it is, with a warning
    result = run_cli("backup", "create", "--state-dir", state, "--output", tmp_path / "o", "--quiet")
    assert result.returncode == 3 and result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("statekit: warning: ") and "openclaw.json" in lines[0], result.stderr
    assert len(list((tmp_path / "o").glob("*.tar.zst"))) == 1  # the archive is written all the same


def test_migrate_dry_run_is_the_plan_and_the_refusal_says_so(tmp_path: Path) -> None:
    """Fails on 308a7ed: there was no --dry-run, yet the refusal told the operator to use it."""
    state = make_state(tmp_path, {"agents/main/sessions/a.jsonl": transcript("a", 2)})
    dry = run_cli("migrate", "--state-dir", state, "--dry-run", "--json")
    plan = run_cli("plan", "--state-dir", state, "--json")
    assert dry.returncode == plan.returncode == 0
    strip = lambda text: re.sub(r'"(generated_at|now_ms)": [^,\n]+', "", text)  # noqa: E731
    assert strip(dry.stdout) == strip(plan.stdout)
    assert (state / "agents/main/sessions/a.jsonl").exists() and not (state / "state").exists()  # wrote nothing
    refused = run_cli("migrate", "--state-dir", state)
    assert refused.returncode == 2 and "--dry-run shows what it would do" in refused.stderr
    help_text = run_cli("migrate", "--help").stdout
    assert "--dry-run" in help_text


def test_tables_fit_the_terminal_width(tmp_path: Path) -> None:
    """Fails on 308a7ed: plan's table was as wide as its longest path (202-column lines)."""
    deep = "agents/main/sessions/" + "d" * 150 + ".jsonl"
    state = make_state(tmp_path, {deep: transcript("d", 2)})
    for columns in ("80", "120"):
        result = subprocess.run(statekit_argv("plan", "--state-dir", state), capture_output=True, text=True,
                                env=clean_env(COLUMNS=columns), timeout=300)
        assert result.returncode == 0
        table_lines = [line for line in result.stdout.splitlines()
                       if not line.startswith(("State dir:", "Config:", "Summary:", "  note:"))]
        assert max(len(line) for line in table_lines) <= int(columns), max(table_lines, key=len)
        assert "d" * 40 in result.stdout  # the path is still there, wrapped inside its column


def test_sizes_are_labelled_iec() -> None:
    """Fails on 308a7ed: 1024-based sizes were labelled KB/MB."""
    from statekit.output import human_size

    assert human_size(1536) == "1.5 KiB" and human_size(5 * 1024 * 1024) == "5.0 MiB" and human_size(10) == "10 B"


def test_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    """`statekit plan | head`: the reader is gone before statekit writes; no "Broken pipe", no traceback, exit 0.

    The read end is closed before the plan is printed (deterministic: pipes here buffer far more than a
    plan, so a reader that leaves after one line may never be noticed). Fails on 308a7ed: exit 1,
    "statekit: error: Broken pipe".
    """
    state = make_state(tmp_path, {f"agents/main/sessions/s{i:04d}.jsonl": transcript(f"s{i:04d}", 1) for i in range(50)})
    proc = subprocess.Popen(statekit_argv("plan", "--state-dir", state), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=clean_env(), cwd=tmp_path)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # what `head` does once it has its lines
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == 0 and err == "", err


def test_restore_dry_run_summarises_per_top_level_entry(tmp_path: Path) -> None:
    """Fails on 308a7ed: the dry run listed every file and directory."""
    files = {f"agents/main/sessions/s{i}.jsonl": transcript(f"s{i}", 1) for i in range(30)}
    state = make_state(tmp_path, {"openclaw.json": {"agents": {}}, **files})
    assert run_cli("backup", "create", "--state-dir", state, "--output", tmp_path / "o", "--quiet").returncode == 0
    (archive,) = (tmp_path / "o").glob("*.tar.zst")
    summary = run_cli("backup", "restore", archive, "--target", tmp_path / "t", "--dry-run")
    assert summary.returncode == 0
    assert "s17.jsonl" not in summary.stdout and re.search(r"^agents/\s+\d+", summary.stdout, re.M), summary.stdout
    assert len(summary.stdout.splitlines()) < 15
    verbose = run_cli("backup", "restore", archive, "--target", tmp_path / "t", "--dry-run", "--verbose")
    assert "s17.jsonl" in verbose.stdout


@pytest.mark.parametrize(("command", "absent"), [(("backup", "list"), "4 busy"), (("backup", "verify"), "4 busy"),
                                                 (("history",), "3 finished")])
def test_help_lists_only_the_exit_codes_that_apply(command: tuple[str, ...], absent: str) -> None:
    """Fails on 308a7ed: every backup subcommand's help listed `4 busy`, `5 verification failed` alike."""
    text = " ".join(run_cli(*command, "--help").stdout.split())
    assert "Exit codes: 0 " in text and absent not in text


@pytest.mark.parametrize("args", [("-V",), ("--version",), ("backup", "-V"), ("plan", "-V")])
def test_version_flag_works_everywhere(args: tuple[str, ...]) -> None:
    """Fails on 308a7ed: `statekit plan -V` was refused (No such option)."""
    result = run_cli(*args)
    assert result.returncode == 0 and result.stdout.startswith("statekit ")


def test_no_traceback_without_statekit_debug(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "statekit", "plan", "--state-dir", str(tmp_path / "missing")],
                            capture_output=True, text=True, env=clean_env(), timeout=300)
    assert result.returncode == 2 and "Traceback" not in result.stderr
