"""docs/cli.md is generated from the Typer app (scripts/gen_cli_docs.py) and must be fresh.

Fails on 308a7ed: there was no generated CLI reference.
"""

from __future__ import annotations

import subprocess
import sys

from helpers import REPO

SCRIPT = REPO / "scripts" / "gen_cli_docs.py"
DOC = REPO / "docs" / "cli.md"


def test_committed_cli_reference_is_fresh() -> None:
    result = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, "docs/cli.md is stale: run `.venv/bin/python scripts/gen_cli_docs.py` and commit it"


def test_reference_covers_every_option_of_every_command() -> None:
    import typer.main

    from statekit.cli import build_app

    text = DOC.read_text(encoding="utf-8")
    root = typer.main.get_command(build_app())
    for group in root.commands.values():
        leaves = getattr(group, "commands", None) or {group.name: group}
        for command in leaves.values():
            for param in command.params:
                for opt in getattr(param, "opts", []):
                    if opt.startswith("-"):
                        assert f"`{opt}`" in text, (command.name, opt)


def test_check_mode_notices_a_stale_file(tmp_path, monkeypatch) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("gen_cli_docs", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    stale = tmp_path / "cli.md"
    stale.write_text(module.render().replace("--no-progress", "--no-bar"), encoding="utf-8")
    monkeypatch.setattr(module, "OUTPUT", stale)
    assert module.main(["--check"]) == 1
