"""Issue 12 (3): the operator install and the documented schedules work as installed, under cron's environment.

Both tests use statekit installed from its wheel into a pipx-style venv (``cli_installed``), not the
development checkout: what an operator's cron job runs.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from cli_installed import Installed
from helpers import REPO, make_state, write_files

CRON_ENV_PATH = "/usr/bin:/bin"  # what cron gives a job (with HOME, LOGNAME, SHELL=/bin/sh)


def documented_cron_command() -> str:
    """The command of the crontab line in docs/backups.md (the five time fields dropped)."""
    text = (REPO / "docs" / "backups.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```cron\n(.*?)```", text, re.DOTALL)
    lines = [line for block in blocks for line in block.splitlines() if line.strip() and not line.startswith("#")]
    assert len(lines) == 1, lines
    return lines[0].split(None, 5)[5]


def cron_env(home: Path) -> list[str]:
    return ["env", "-i", f"PATH={CRON_ENV_PATH}", f"HOME={home}", "SHELL=/bin/sh", "LOGNAME=statekit-test"]


def test_readme_operator_install_follows_the_two_setup_commands() -> None:
    """The README's first block is still exactly the two set-up commands; an operator install (pipx) follows."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```sh\n(.*?)```", text, re.DOTALL)
    assert [line for line in blocks[0].splitlines() if line.strip()] == [
        "python3 -m venv .venv && .venv/bin/pip install -q -e . && .venv/bin/python scripts/demo.py",
        "python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]' && scripts/check.sh",
    ]
    assert blocks[1].lstrip().startswith("pipx install ")  # fails on 308a7ed: no operator install


def test_documented_cron_line_runs_under_cron_path(installed: Installed, tmp_path: Path) -> None:
    """The docs' crontab line, under `env -i PATH=/usr/bin:/bin HOME=...`: exit 0 and a verified archive on disk.

    Fails on 308a7ed: the line called a bare `statekit` (`statekit: not found`, exit 127 under cron).
    """
    home = installed.home
    state = make_state(home, {"openclaw.json": {"agents": {}}, "notes.txt": "hello"}, name=".openclaw")
    write_files(state, {"agents/main/sessions/sessions.json": {}})
    command = documented_cron_command()
    assert "$HOME/.local/bin/statekit" in command or "~/.local/bin/statekit" in command
    result = subprocess.run([*cron_env(home), "/bin/sh", "-c", command], capture_output=True, text=True, timeout=300, cwd=home)
    assert result.returncode == 0, (result.returncode, result.stderr)
    assert result.stdout == "" and result.stderr == ""  # --quiet: cron mails nothing on success
    archives = [p for p in home.rglob("openclaw-backup-*.tar.zst") if state not in p.parents]
    assert len(archives) == 1 and archives[0].stat().st_size > 0
    verify = subprocess.run([*cron_env(home), str(installed.command), "backup", "verify", str(archives[0]), "--json"],
                            capture_output=True, text=True, timeout=300, cwd=home)
    assert verify.returncode == 0 and json.loads(verify.stdout)["ok"] is True


def test_installed_package_validates_its_own_plan_output(installed: Installed, tmp_path: Path) -> None:
    """docs/plan.schema.json ships in the package: the installed tool's `plan --json` validates against it.

    Fails on 308a7ed: the schema was only in docs/, not in the wheel.
    """
    state = make_state(tmp_path, {"agents/main/sessions/sessions.json": {"agent:main:main": {"sessionId": "s1", "updatedAt": 1}}})
    plan = subprocess.run([*cron_env(installed.home), str(installed.command), "plan", "--state-dir", str(state), "--json"],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert plan.returncode in (0, 3), plan.stderr
    script = (
        "import json, sys, jsonschema, statekit.schema as s\n"
        "assert s.__file__.startswith(sys.prefix), s.__file__\n"
        "jsonschema.validate(json.load(sys.stdin), s.plan_schema())\n"
        "print('valid')\n"
    )
    check = subprocess.run([str(installed.python), "-c", script], input=plan.stdout, capture_output=True, text=True, timeout=300,
                           cwd=tmp_path)
    assert check.returncode == 0 and check.stdout.strip() == "valid", check.stderr
