"""One error hierarchy; each error carries the exit code of the contract.

The exit codes are defined here once (:class:`ExitCode` and its summaries); the CLI help texts are
rendered from them (:func:`describe_exit_codes`) and tests/core/test_exit_codes.py checks that the
README and docs say the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    FATAL = 1
    USAGE = 2
    WARNINGS = 3
    BUSY = 4
    VERIFY_FAILED = 5
    INTERRUPTED = 130  # SIGINT or SIGTERM, alike (the shell's 128 + SIGINT)

    @property
    def summary(self) -> str:
        """What the code means for every command ("finished with warnings")."""
        return EXIT_CODE_SUMMARIES[self]


EXIT_CODE_SUMMARIES: dict[ExitCode, str] = {
    ExitCode.OK: "success",
    ExitCode.FATAL: "fatal error",
    ExitCode.USAGE: "usage error (a bad option, or a path that does not exist)",
    ExitCode.WARNINGS: "finished with warnings",
    ExitCode.BUSY: "busy (lock held or gateway running)",
    ExitCode.VERIFY_FAILED: "verification failed",
    ExitCode.INTERRUPTED: "interrupted (SIGINT or SIGTERM; the run is recorded as interrupted)",
}


def describe_exit_codes(meanings: Mapping[ExitCode, str | None] | None = None) -> str:
    """One ``Exit codes: 0 success, 1 fatal error, ...`` sentence, in code order.

    ``meanings`` names the codes a command can return (a command-specific meaning, or None for the
    summary); without it, every code with its summary.
    """
    chosen: Mapping[ExitCode, str | None] = meanings if meanings is not None else dict.fromkeys(ExitCode)
    return "Exit codes: " + ", ".join(_describe_one(code, text) for code, text in sorted(chosen.items())) + "."


def _describe_one(code: ExitCode, meaning: str | None) -> str:
    """``3 finished with warnings (some sources are unreadable)``: the summary first, a command's meaning in brackets."""
    head = code.summary.split(" (")[0]
    if meaning is None:
        return f"{int(code)} {code.summary}"
    if meaning.startswith(head):
        return f"{int(code)} {meaning}"
    return f"{int(code)} {head} ({meaning})"


class StatekitError(Exception):
    """An expected failure: printed as one line, never as a traceback."""

    exit_code: ExitCode = ExitCode.FATAL

    def __init__(self, message: str, *, exit_code: ExitCode | None = None) -> None:
        super().__init__(message)
        self.message = message
        if exit_code is not None:
            self.exit_code = exit_code

    def __str__(self) -> str:
        return self.message


class UsageError(StatekitError):
    exit_code = ExitCode.USAGE


class NotFoundError(UsageError):
    """A path named on the command line (or its default) does not exist: a usage error, not damage."""


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived: raised in the main thread by the CLI's signal handlers.

    A ``KeyboardInterrupt`` so that every ``except KeyboardInterrupt`` / ``BaseException`` clean-up
    path runs for SIGTERM exactly as for Ctrl-C; ``str()`` is the signal's name (the recorded reason).
    """

    exit_code = ExitCode.INTERRUPTED

    def __init__(self, signal_name: str = "SIGINT") -> None:
        super().__init__(signal_name)
        self.signal_name = signal_name

    def __str__(self) -> str:
        return self.signal_name


def interruption_reason(exc: BaseException) -> str:
    """The reason to record for an interrupted run: the signal's name (``SIGINT`` for a bare Ctrl-C)."""
    return exc.signal_name if isinstance(exc, Interrupted) else "SIGINT"


class StateDirError(StatekitError):
    """The state directory is missing, unreadable or not a directory."""


class SchemaError(StatekitError):
    """A database cannot be used: too new, foreign, or missing needed columns."""


class BusyError(StatekitError):
    """Another statekit run holds the lock, or an OpenClaw gateway is running."""

    exit_code = ExitCode.BUSY


class VerificationError(StatekitError):
    exit_code = ExitCode.VERIFY_FAILED


class SourceError(StatekitError):
    """One legacy source cannot be read, parsed or validated.

    Caught per source by the apply loop: the source stays in place, its
    receipt records the reason and the run carries on.
    """

    exit_code = ExitCode.WARNINGS

    def __init__(self, path: str, problem: str, *, line: int | None = None, json_path: str | None = None) -> None:
        where = path
        if line is not None:
            where = f"{path}:{line}"
        detail = problem if json_path is None else f"{json_path}: {problem}"
        super().__init__(f"{where}: {detail}")
        self.path = path
        self.problem = problem
        self.line = line
        self.json_path = json_path
