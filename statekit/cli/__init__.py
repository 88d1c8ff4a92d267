"""The ``statekit`` command line: a thin layer that parses, calls the library and renders.

Each ``*_cmd.py`` module in this package defines ``register(app)`` and is picked up
automatically, one module per command or command group. The command modules import the
library (``statekit.migrate``, ``statekit.backup`` ...) inside the command bodies, so
``statekit --help`` and small commands load only what they use.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import sys
from types import ModuleType

import typer

from statekit import __version__
from statekit.errors import ExitCode, describe_exit_codes

HELP = f"""Upgrade OpenClaw's legacy JSON/JSONL state to SQLite, and back that state up safely.

Run it offline, with the gateway stopped. Start with `statekit plan`.

{describe_exit_codes()}
"""

VERSION_FLAGS = ("-V", "--version")


def version_line() -> str:
    from statekit.db import engine_description

    return f"statekit {__version__} ({engine_description()})"


def _version(value: bool) -> None:
    if value:
        typer.echo(version_line())
        raise typer.Exit(0)


def command_modules() -> list[str]:
    return sorted(info.name for info in pkgutil.iter_modules(__path__) if info.name.endswith("_cmd"))


def build_app() -> typer.Typer:
    from statekit.cli.pending import PendingRestoreGroup  # an interrupted in-place restore is settled first

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

    for name in command_modules():
        importlib.import_module(f"{__name__}.{name}").register(app)
    return app


def _wants_version(args: list[str]) -> bool:
    """``-V`` / ``--version`` anywhere before ``--`` (``statekit backup -V`` too)."""
    for arg in args:
        if arg == "--":
            return False
        if arg in VERSION_FLAGS:
            return True
    return False


def _click_exceptions() -> ModuleType:
    """The click exceptions typer raises (typer 0.2x vendors click as ``typer._click``; older typer uses click itself)."""
    try:
        return importlib.import_module("typer._click.exceptions")
    except ImportError:  # pragma: no cover - typer before the vendored click
        return importlib.import_module("click.exceptions")


def _usage_failure(args: list[str], exc: Exception, code: int) -> int:
    """A click usage error (unknown option, missing argument): click's lines, or one JSON document."""
    click = _click_exceptions()

    if "--json" in args:
        message = exc.format_message() if isinstance(exc, click.ClickException) else str(exc)
        sys.stdout.write(json.dumps({"ok": False, "error": message, "exit_code": code}, indent=2) + "\n")
        sys.stderr.write(f"statekit: error: {message}\n")
    elif isinstance(exc, click.ClickException):
        exc.show()
    return code


def main(argv: list[str] | None = None) -> int:
    click = _click_exceptions()

    args = list(argv if argv is not None else sys.argv[1:])
    if _wants_version(args):
        print(version_line())
        return 0
    command = typer.main.get_command(build_app())
    try:
        result = command.main(args=args, prog_name="statekit", standalone_mode=False)
    except typer.Exit as exc:
        return int(exc.exit_code)
    except click.UsageError as exc:
        return _usage_failure(args, exc, int(ExitCode.USAGE))
    except click.ClickException as exc:
        return _usage_failure(args, exc, exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        sys.stderr.write("statekit: error: interrupted\n")
        return int(ExitCode.INTERRUPTED)
    except BrokenPipeError:
        from statekit.output import silence_stdout

        silence_stdout()
        return 0
    finally:
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            from statekit.output import silence_stdout

            silence_stdout()
    return int(result) if isinstance(result, int) else 0
