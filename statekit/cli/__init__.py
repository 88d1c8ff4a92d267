"""The ``statekit`` command line: a thin layer that parses, calls the library and renders.

Each ``*_cmd.py`` module in this package defines ``register(app)`` and is
picked up automatically, one module per command or command group.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys

import typer

from statekit import __version__
from statekit.db import engine_description
from statekit.errors import describe_exit_codes

HELP = f"""Upgrade OpenClaw's legacy JSON/JSONL state to SQLite, and back that state up safely.

Run it offline, with the gateway stopped. Start with `statekit plan`.

{describe_exit_codes()}
"""


def _version(value: bool) -> None:
    if value:
        typer.echo(f"statekit {__version__} ({engine_description()})")
        raise typer.Exit(0)


def build_app() -> typer.Typer:
    from statekit.cli.backup_cmd import PendingRestoreGroup  # an interrupted in-place restore is settled first

    app = typer.Typer(
        cls=PendingRestoreGroup,
        name="statekit",
        help=HELP,
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
        context_settings={"help_option_names": ["-h", "--help"]},
    )

    @app.callback()
    def _root(
        version: bool = typer.Option(
            False, "--version", "-V", callback=_version, is_eager=True, help="Print the version (and the SQLite it uses) and exit."
        ),
    ) -> None:
        """statekit: OpenClaw state migration and backups."""

    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.endswith("_cmd"):
            importlib.import_module(f"{__name__}.{info.name}").register(app)
    return app


def main(argv: list[str] | None = None) -> int:
    app = build_app()
    try:
        app(args=argv if argv is not None else sys.argv[1:], prog_name="statekit", standalone_mode=True)
    except SystemExit as exc:
        return int(exc.code or 0) if not isinstance(exc.code, str) else 1
    return 0
