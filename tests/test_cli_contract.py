"""The CLI contract: every command has --json, --quiet and a runnable example in its help."""

from __future__ import annotations

from typing import Any

import pytest
import typer.main

from helpers import run_cli
from statekit.cli import build_app


def leaf_commands() -> list[tuple[str, Any]]:
    group = typer.main.get_command(build_app())
    found: list[tuple[str, Any]] = []

    def walk(prefix: str, command: Any) -> None:
        if hasattr(command, "commands"):
            for name, sub in command.commands.items():
                walk(f"{prefix} {name}".strip(), sub)
        else:
            found.append((prefix, command))

    walk("", group)
    return found


COMMANDS = leaf_commands()


def test_core_commands_exist() -> None:
    names = {name for name, _ in COMMANDS}
    assert {"plan", "migrate"} <= names


@pytest.mark.parametrize(("name", "command"), COMMANDS, ids=[n for n, _ in COMMANDS])
def test_every_command_has_json_quiet_and_an_example(name: str, command: Any) -> None:
    options = {opt for param in command.params for opt in getattr(param, "opts", [])}
    assert "--json" in options, name
    assert "--quiet" in options or "-q" in options, name
    help_text = command.help or ""
    assert "Example" in help_text and f"statekit {name}" in help_text, name


def test_usage_error_exits_2_without_traceback() -> None:
    result = run_cli("plan", "--no-such-flag")
    assert result.returncode == 2 and "Traceback" not in result.stderr


def test_version_and_help() -> None:
    assert run_cli("--version").stdout.startswith("statekit ")
    assert "plan" in run_cli("--help").stdout
