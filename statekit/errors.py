"""One error hierarchy; each error carries the exit code of the contract.

The exit codes are defined here once (:class:`ExitCode` and its summaries); the CLI help texts are
rendered from them (:func:`describe_exit_codes`) and tests/core/test_exit_codes.py checks that the
README and docs say the same.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Mapping
from enum import IntEnum
from pathlib import Path


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
        problem = redact(problem)  # a reader's problem may quote what the file holds (a key, a value)
        json_path = redact(json_path) if json_path is not None else None
        detail = problem if json_path is None else f"{json_path}: {problem}"
        super().__init__(f"{where}: {detail}")
        self.path = path
        self.problem = problem
        self.line = line
        self.json_path = json_path


# --- what an error says about the machine (not about the source being read) -----------------
#
# A full disk, a lock another process holds, too many open files, no memory: none is a property of a
# legacy file, so none may mark a source failed for good. The apply loop stops the run on them (the
# sources imported before are committed, the rest stay in place, the rerun carries on) and the
# message names what is actually there (a directory or a link where a database or its journal
# should be is not "check the disk").

TRANSIENT_ERRNOS: frozenset[int] = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM})
"""Exhausted process or machine resources: wait, raise the limit, or stop something, then rerun."""

TRANSIENT_SQLITE_CODES: tuple[str, ...] = ("SQLITE_BUSY", "SQLITE_LOCKED", "SQLITE_NOMEM", "SQLITE_IOERR_NOMEM")
"""SQLite result codes (and their extended forms) of a lock another connection holds or memory running out."""

_ERRNO_CAUSES: dict[int, str] = {
    errno.EMFILE: "too many open files in this process (EMFILE): raise the limit (ulimit -n) and",
    errno.ENFILE: "too many open files on this machine (ENFILE): close some programs and",
    errno.ENOMEM: "out of memory (ENOMEM): free some memory and",
    errno.ENOSPC: "no space left on the device (ENOSPC): free some space and",
    errno.EDQUOT: "disk quota exceeded (EDQUOT): free some space and",
    errno.EROFS: "the file system is read-only (EROFS): remount it read-write and",
}


def transient_sqlite_name(name: str) -> bool:
    """True for ``SQLITE_BUSY``/``SQLITE_LOCKED``/``SQLITE_NOMEM`` and their extended codes."""
    return name.startswith(TRANSIENT_SQLITE_CODES)


def transient_os_error(exc: BaseException) -> bool:
    """True for an ``OSError`` of exhausted resources (``EMFILE``, ``ENFILE``, ``ENOMEM``)."""
    return isinstance(exc, OSError) and exc.errno in TRANSIENT_ERRNOS


def sqlite_cause(name: str, text: str) -> str:
    """What an SQLite error that stopped a run means, and what to do, from its result code name."""
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return ("another process holds a lock on a database (SQLITE_BUSY/SQLITE_LOCKED): stop it (a running gateway,"
                " another statekit, an sqlite3 shell) and")
    if name in ("SQLITE_NOMEM", "SQLITE_IOERR_NOMEM"):
        return "SQLite ran out of memory (SQLITE_NOMEM): free some memory and"
    if name == "SQLITE_FULL" or "full" in text:
        return "the disk is full (SQLITE_FULL): free some space and"
    if name.startswith("SQLITE_READONLY"):
        return "a database is read-only (SQLITE_READONLY): make it writable and"
    if name.startswith("SQLITE_CANTOPEN") and out_of_file_descriptors():
        return _ERRNO_CAUSES[errno.EMFILE]
    if name.startswith("SQLITE_CANTOPEN"):
        return "a database file cannot be opened (SQLITE_CANTOPEN): check its path and permissions and"
    return "check the disk and"


def database_path_problem(path: Path) -> str | None:
    """What is wrong at a database path or beside it, looked at on disk (``lstat``, nothing followed); None when nothing is.

    A directory where the database or its ``-wal``/``-shm``/``-journal`` should be, a symbolic link there
    (SQLite refuses a journal that is a link), or a database that is not writable.
    """
    for candidate, what in ((path, "the database"), *((path.with_name(path.name + s), f"its {s[1:]} file") for s in ("-wal", "-shm", "-journal"))):
        try:
            st = os.lstat(candidate)
        except OSError:
            continue
        if stat.S_ISLNK(st.st_mode):
            return f"{candidate}: {what} is a symbolic link; SQLite refuses it (replace it with the real file, or remove it)"
        if stat.S_ISDIR(st.st_mode):
            return f"{candidate}: {what} is a directory, not a file (move it away)"
        if not stat.S_ISREG(st.st_mode):
            return f"{candidate}: {what} is not a regular file (move it away)"
        if not os.access(candidate, os.R_OK | os.W_OK):
            return f"{candidate}: {what} is not readable and writable by this user (fix its owner or mode)"
    try:
        parent = os.lstat(path.parent)
    except OSError:
        return None
    if stat.S_ISDIR(parent.st_mode) and not os.access(path.parent, os.W_OK | os.X_OK):
        return f"{path.parent}: the database's directory is not writable by this user (fix its owner or mode)"
    return None


def os_cause(exc: OSError) -> str:
    """What an ``OSError`` that stopped a run means, and what to do (ends with "and": the caller says what next)."""
    return _ERRNO_CAUSES.get(exc.errno or 0) or f"{exc.strerror or exc}: check the disk and"


def out_of_file_descriptors(margin: int = 8) -> bool:
    """True when this process has (nearly) as many files open as ``RLIMIT_NOFILE`` lets it: why SQLite "cannot open"."""
    import resource

    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        used = len(os.listdir("/proc/self/fd"))
    except OSError as exc:
        return exc.errno in TRANSIENT_ERRNOS  # not even this directory can be opened
    return soft != resource.RLIM_INFINITY and used >= soft - margin


# --- no secret in any message ---------------------------------------------------------------------
#
# A message may quote what a file holds only through :func:`redact`: a legacy file can hold a secret
# anywhere, a JSON object key included (a map of profiles keyed by a token, a session index keyed by a
# secret-looking string). What looks like a credential -- a run of 20+ letters/digits with both kinds in
# it, or a well-known token prefix -- becomes ``<redacted sha256:…>`` (8 hex: never reversible, still
# comparable between two lines). Names (``lastGood``, ``transcript_event_identities``), paths, UUID run
# ids and short ids stay readable.

_SECRET_RUN = re.compile(r"[A-Za-z0-9_+=]{20,}")  # not across "/": path segments stay apart
_SECRET_PREFIXED = re.compile(
    r"\b(?:sk|pk|rk)-[A-Za-z0-9_-]{8,}|\bgh[pousr]_[A-Za-z0-9]{10,}|\bgithub_pat_[A-Za-z0-9_]{10,}|\bxox[abposr]-[A-Za-z0-9-]{8,}"
    r"|\beyJ[A-Za-z0-9_-]{6,}(?:\.[A-Za-z0-9_-]+)*|\bglpat-[A-Za-z0-9_-]{10,}|\bAKIA[A-Z0-9]{12,}|\bAIza[A-Za-z0-9_-]{20,}"
)


def _mask(match: re.Match[str]) -> str:
    import hashlib

    return "<redacted sha256:" + hashlib.sha256(match.group().encode("utf-8")).hexdigest()[:8] + ">"


def _looks_secret(match: re.Match[str]) -> str:
    found = match.group()
    if any(c.isdigit() for c in found) and any(c.isalpha() for c in found):
        return _mask(match)
    return found


def redact(text: str) -> str:
    """``text`` with everything that looks like a credential replaced by a short fingerprint."""
    if len(text) < 20:
        return text
    return _SECRET_RUN.sub(_looks_secret, _SECRET_PREFIXED.sub(_mask, text))


def redact_json(value: object) -> object:
    """A JSON value (a reader's report) with :func:`redact` applied to every string and every object key."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact(str(k)): redact_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_json(v) for v in value]
    return value


_NAME_KEY = re.compile(r"^(?:[A-Za-z_$/.~][A-Za-z0-9_$:.@+/~-]{0,127}|-?[0-9]{1,20})$")  # names, paths, numeric ids


def shown_key(key: str) -> str:
    """An object key as a message may show it: a field-like name as it is, anything else (an id, a token, a
    session key that holds one) as ``<key sha256:…>``. For JSON paths, where a data key is never needed."""
    import hashlib

    if _NAME_KEY.match(key) and (key.lstrip("-").isdigit() or sum(c.isdigit() for c in key) <= 12) and redact(key) == key:
        return key
    return "<key sha256:" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:8] + ">"


def display_path(text: str) -> str:
    """A name for a one-line message: a byte that is not UTF-8 (a ``surrogateescape`` code point) as ``\\xNN``,
    control characters (newlines) escaped; everything else as it is."""
    if text.isprintable():
        return text
    out = []
    for char in text:
        code = ord(char)
        if 0xDC80 <= code <= 0xDCFF:
            out.append(f"\\x{code - 0xDC00:02x}")
        elif char.isprintable():
            out.append(char)
        else:
            out.append(repr(char)[1:-1])
    return "".join(out)


class ValueRangeError(StatekitError):
    """A value no SQLite column can hold (an integer beyond 64 bits): the source is refused, named, left in place."""


def int64_overflow_message(table: str, columns: "list[str] | tuple[str, ...]", rows: "list[list[object]] | list[tuple[object, ...]]") -> str:
    """One line naming the column(s) whose integer is beyond SQLite's 64-bit range (never the value)."""
    bad = sorted({columns[i] for row in rows for i, v in enumerate(row) if i < len(columns) and isinstance(v, int)
                  and not isinstance(v, bool) and not -(2**63) <= v < 2**63})
    where = ", ".join(f"{table}.{c}" for c in bad) or table
    return (f"a number beyond SQLite's 64-bit integer range (±2^63) for {where}; OpenClaw could not read it either,"
            " so the file is left in place (correct or remove that value)")
