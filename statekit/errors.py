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

    @property
    def summary(self) -> str:
        """What the code means for every command ("finished with warnings")."""
        return EXIT_CODE_SUMMARIES[self]


EXIT_CODE_SUMMARIES: dict[ExitCode, str] = {
    ExitCode.OK: "success",
    ExitCode.FATAL: "fatal error",
    ExitCode.USAGE: "usage error",
    ExitCode.WARNINGS: "finished with warnings",
    ExitCode.BUSY: "busy (lock held or gateway running)",
    ExitCode.VERIFY_FAILED: "verification failed",
}


def describe_exit_codes(meanings: Mapping[ExitCode, str | None] | None = None) -> str:
    """One ``Exit codes: 0 success, 1 fatal error, ...`` sentence, in code order.

    ``meanings`` names the codes a command can return (a command-specific meaning, or None for the
    summary); without it, every code with its summary.
    """
    chosen: Mapping[ExitCode, str | None] = meanings if meanings is not None else dict.fromkeys(ExitCode)
    parts = [f"{int(code)} {text or code.summary}" for code, text in sorted(chosen.items())]
    return "Exit codes: " + ", ".join(parts) + "."


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
