"""Issue 16 "fast start", session 2: the root lists its commands without loading them, and runs one loading only it.

``statekit.cli.COMMANDS`` stands in for every command module at start: each entry must name the module that
defines the command and carry its help's first paragraph, or `statekit --help` would list a wrong line.
The sys.modules checks run in a fresh interpreter each (tests/cli/test_fast_start.py's probe). They fail on
d01e35f, where every command module was imported and converted by typer at start, and where `plan` loaded the
restore-journal code to see that there was no journal.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import typer.main

from statekit import cli
from test_fast_start import loaded_modules

COMMAND_MODULES = {f"statekit.cli.{name}" for name in cli.command_modules()}


def eager_commands() -> dict[str, object]:
    """Every command as the root had them before: each module registered into one app, in module order."""
    found: dict[str, object] = {}
    for module in cli.command_modules():
        found.update(cli.load_module_commands(module))
    return found


def test_commands_names_every_command_module_and_every_command() -> None:
    assert sorted({entry.module for entry in cli.COMMANDS.values()}) == cli.command_modules()
    assert set(cli.COMMANDS) == set(eager_commands())


def test_each_summary_is_its_commands_first_paragraph() -> None:
    for name, command in eager_commands().items():
        stand_in = cli.LazyCommands(cli.COMMANDS, {}).listing()[name]
        for limit in range(20, 200, 7):  # what `--help` prints at any terminal width
            assert stand_in.get_short_help_str(limit) == command.get_short_help_str(limit), (name, limit)


def test_root_lists_commands_in_typers_order() -> None:
    """typer lists single commands first, then groups, each in registration (module) order."""
    eager = eager_commands()
    singles = [n for n, c in eager.items() if not hasattr(c, "commands")]
    groups = [n for n, c in eager.items() if hasattr(c, "commands")]
    root = typer.main.get_command(cli.build_app())
    assert list(root.commands) == singles + groups


def test_a_loaded_command_is_the_one_its_module_defines() -> None:
    root = typer.main.get_command(cli.build_app())
    plan = root.commands["plan"]
    assert plan.callback.__module__ == "statekit.cli.plan_cmd"
    assert {p.name for p in plan.params} >= {"state_dir", "json_out", "quiet"}
    with pytest.raises(KeyError):
        root.commands["no-such-command"]


@pytest.mark.parametrize("args", [("--help",), ("-h",)])
def test_root_help_loads_no_command_module(args: tuple[str, ...], tmp_path: Path) -> None:
    assert sorted(loaded_modules(*args, cwd=tmp_path) & COMMAND_MODULES) == []


def test_a_command_loads_only_its_own_module(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    modules = loaded_modules("plan", "--state-dir", str(empty), "--quiet", cwd=tmp_path)
    assert sorted(modules & COMMAND_MODULES) == ["statekit.cli.plan_cmd"]
    assert "statekit.backup.journal" not in modules  # no journal there: the journal code stays unloaded


def test_backup_create_and_verify_of_a_good_archive_load_no_jsonschema(tmp_path: Path) -> None:
    """The compiled manifest check accepts a good manifest; jsonschema (0.06 s to import) is only for wording errors."""
    state = tmp_path / "state-dir"
    (state / "state").mkdir(parents=True)
    (state / "state" / "notes.json").write_text('{"a": 1}\n', encoding="utf-8")
    out = tmp_path / "out"
    created = loaded_modules("backup", "create", "--state-dir", str(state), "--output", str(out), "--quiet", cwd=tmp_path)
    archives = sorted(out.glob("*.tar.zst"))
    assert len(archives) == 1
    verified = loaded_modules("backup", "verify", str(archives[0]), "--quiet", cwd=tmp_path)
    assert "statekit.backup.verify" in created and "statekit.backup.verify" in verified
    assert not any(m == "jsonschema" or m.startswith("jsonschema.") for m in created | verified)
