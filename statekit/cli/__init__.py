"""The ``statekit`` command line: a thin layer that parses, calls the library and renders.

Each ``*_cmd.py`` module in this package defines ``register(app)``, one module per command or command
group, and has its entry in :data:`COMMANDS` (a test fails when one is missing). The root group loads a
command's module only when that command runs or its own help is shown: ``statekit --help`` lists every
command from :data:`COMMANDS` alone. The command modules import the library (``statekit.migrate``,
``statekit.backup`` ...) inside the command bodies, so ``--help`` and small commands load only what they use.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import sys
from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import typer
import typer.main
from typer.core import TyperCommand

from statekit import __version__
from statekit.cli.pending import PendingRestoreGroup  # an interrupted in-place restore is settled first
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


@dataclass(frozen=True)
class CommandEntry:
    """One command of the root: the module whose ``register(app)`` defines it, and its help's first paragraph."""

    module: str
    summary: str  # what `statekit --help` shortens into its line (click reads only the first paragraph)


# Every root command, in the order `statekit --help` lists them (typer's: single commands, then groups).
# tests/cli/test_lazy_commands.py checks each entry against the command its module defines.
COMMANDS: dict[str, CommandEntry] = {
    "history": CommandEntry("history_cmd", "Show the migration runs (migrate, recover) and backup runs recorded in state/openclaw.sqlite. Read-only."),
    "inspect": CommandEntry("inspect_cmd", "Check every statekit database of a state dir. Read-only: no lock, no WAL/SHM file."),
    "migrate": CommandEntry("migrate_cmd", "Import legacy state files into SQLite (gateway stopped, offline)."),
    "plan": CommandEntry("plan_cmd", "Show what `statekit migrate` would do. Read-only: writes nothing, not even a lock."),
    "recover": CommandEntry("recover_cmd", "Put the sources a migration run retired back at their original paths, byte-identical."),
    "undo": CommandEntry("undo_cmd", "Put the install back exactly as it was before migration run RUN_ID."),
    "backup": CommandEntry("backup_cmd", "Back up, verify, restore, list and prune OpenClaw state archives."),
    "sessions": CommandEntry("sessions_cmd", "Delete, reset, list and restore sessions in the per-agent SQLite store (gateway stopped)."),
}


def _typer_app(**settings: Any) -> typer.Typer:
    """A Typer with the root's conversion settings (a command converted under another app renders the same)."""
    return typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None, **settings)


def load_module_commands(module: str) -> dict[str, Any]:
    """The click commands ``statekit.cli.<module>`` registers, converted by typer as the root would convert them."""
    app = _typer_app()
    importlib.import_module(f"{__name__}.{module}").register(app)
    return dict(typer.main.get_group(app).commands)


class LazyCommands(MutableMapping[str, Any]):
    """The root's commands by name, in listing order; a command's module is imported and converted on first use."""

    def __init__(self, entries: dict[str, CommandEntry], loaded: MutableMapping[str, Any]) -> None:
        self._entries = entries
        self._order = list(dict.fromkeys([*entries, *loaded]))
        self._loaded: dict[str, Any] = dict(loaded)

    def __getitem__(self, name: str) -> Any:
        if name not in self._loaded:
            entry = self._entries.get(name)
            if entry is None:
                raise KeyError(name)
            for found, command in load_module_commands(entry.module).items():
                self._loaded.setdefault(found, command)
            if name not in self._loaded:
                raise KeyError(name)
        return self._loaded[name]

    def __setitem__(self, name: str, command: Any) -> None:
        self._loaded[name] = command
        if name not in self._order:
            self._order.append(name)

    def __delitem__(self, name: str) -> None:
        self._order.remove(name)
        self._loaded.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._order)

    def listing(self) -> dict[str, Any]:
        """Every command as far as a list of them needs: the loaded ones, a stand-in with its summary for the rest."""
        return {name: self._loaded[name] if name in self._loaded else TyperCommand(name=name, help=self._entries[name].summary)
                for name in self._order}


class RootGroup(PendingRestoreGroup):
    """The root group: its commands load lazily (:class:`LazyCommands`); its help lists them without loading."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = LazyCommands(COMMANDS, self.commands)

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.commands)

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        lazy = self.commands
        if isinstance(lazy, LazyCommands):
            self.commands = lazy.listing()
        try:
            super().format_commands(ctx, formatter)
        finally:
            self.commands = lazy


def build_app() -> typer.Typer:
    app = _typer_app(
        cls=RootGroup,
        name="statekit",
        help=HELP,
        no_args_is_help=True,
        context_settings={"help_option_names": ["-h", "--help"]},
    )

    @app.callback()
    def _root(
        version: bool = typer.Option(
            False, "--version", "-V", callback=_version, is_eager=True, help="Print the version (and the SQLite it uses) and exit."
        ),
    ) -> None:
        """statekit: OpenClaw state migration and backups."""

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
