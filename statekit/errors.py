"""One error hierarchy; each error carries the exit code of the contract.

Exit codes (all commands): 0 success, 1 fatal error, 2 usage error,
3 finished with warnings, 4 busy (lock held or gateway running),
5 verification failed (backup/restore integrity).
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    FATAL = 1
    USAGE = 2
    WARNINGS = 3
    BUSY = 4
    VERIFY_FAILED = 5


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
