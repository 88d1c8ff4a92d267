#!/usr/bin/env python3
"""Generate docs/cli.md, the command reference, from the Typer app itself.

Every command and subcommand of ``statekit`` (``statekit.cli.build_app()``) becomes one section:
its help text (with its examples and the exit codes rendered from statekit.errors), its usage
line and a table of its arguments and options. Nothing depends on the terminal width.

    python scripts/gen_cli_docs.py          # rewrite docs/cli.md
    python scripts/gen_cli_docs.py --check  # exit 1 when the committed file is stale
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
OUTPUT = REPO / "docs" / "cli.md"

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

HEADER = """# statekit command reference

Generated from the command line itself by `scripts/gen_cli_docs.py`; do not edit by hand
(`tests/cli/test_cli_docs.py` fails when this file is stale). `statekit COMMAND --help` prints
the same text. Every command takes `--json` (one JSON document on stdout, also on failure:
`{"ok": false, "error": ..., "exit_code": ...}`) and `--quiet` (nothing on success; warnings and
errors still go to stderr). `-V` / `--version` prints the version anywhere on the command line.
"""


def _cell(text: str) -> str:
    return " ".join(text.replace("|", "\\|").split())


def _help_block(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.strip("\n").splitlines() if line.strip() != "\b"]
    return ["```text", *lines, "```"]


def _param_row(param: Any) -> tuple[str, str]:
    if param.param_type_name == "argument":
        name = f"`{param.human_readable_name}`"
        required = "" if param.required else " (optional)"
        return name + required, _cell(getattr(param, "help", None) or "")
    opts = ", ".join(f"`{opt}`" for opt in [*param.opts, *param.secondary_opts])
    if not param.is_flag:
        metavar = param.make_metavar(None) if _metavar_needs_ctx(param) else param.make_metavar()
        opts += f" `{metavar}`"
    meaning = _cell(param.help or "")
    default = param.default
    if not param.is_flag and default not in (None, "", ()) and getattr(param, "show_default", True) is not False:
        meaning += f" (default: `{default}`)"
    return opts, meaning


def _metavar_needs_ctx(param: Any) -> bool:
    import inspect

    return "ctx" in inspect.signature(param.make_metavar).parameters


def _section(path: str, command: Any) -> list[str]:
    lines = [f"## `statekit {path}`", ""]
    if command.help:
        lines += [*_help_block(command.help), ""]
    pieces = [p for p in command.collect_usage_pieces(_context(command, path))]
    lines += [f"Usage: `statekit {path} {' '.join(pieces)}`".rstrip(), ""]
    rows = [_param_row(p) for p in command.params if not getattr(p, "hidden", False)]
    rows.append(("`-h`, `--help`", "Show this help and exit."))
    lines += ["| Argument / option | Meaning |", "| --- | --- |", *[f"| {a} | {b} |" for a, b in rows], ""]
    return lines


def _context(command: Any, path: str) -> Any:
    return command.context_class(command, info_name=f"statekit {path}")


def render() -> str:
    import typer.main

    from statekit.cli import build_app

    root = typer.main.get_command(build_app())
    lines = [HEADER]
    walk: list[tuple[str, Any]] = []

    def visit(prefix: str, command: Any) -> None:
        subcommands = getattr(command, "commands", None)
        if subcommands is not None:
            for name in sorted(subcommands):
                visit(f"{prefix} {name}".strip(), subcommands[name])
        else:
            walk.append((prefix, command))

    visit("", root)
    lines += ["## Commands", "", "| Command | What it does |", "| --- | --- |"]
    for path, command in walk:
        first = (command.help or "").strip().splitlines()[0] if command.help else ""
        anchor = "statekit-" + path.replace(" ", "-")
        lines.append(f"| [`statekit {path}`](#{anchor}) | {_cell(first)} |")
    lines.append("")
    lines += ["## `statekit`", "", *_help_block(root.help or ""), ""]
    for path, command in walk:
        lines += _section(path, command)
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when docs/cli.md is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else ""
        if current != text:
            print("docs/cli.md is stale: run `python scripts/gen_cli_docs.py`", file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
