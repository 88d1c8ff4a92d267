"""The words statekit writes for actions and statuses, defined once.

Each enum is a :class:`~enum.StrEnum` whose values are exactly the strings statekit has always
written (to ``migration_runs``, ``migration_sources``, ``backup_runs``, JSON reports and receipts):
a member compares equal to its string, formats as its string and serialises to JSON as its string,
so rows, reports and archives are byte-for-byte what they were with bare strings.
Core module: imports nothing from statekit.
"""

from __future__ import annotations

from enum import StrEnum


class ReaderAction(StrEnum):
    """What a legacy reader does with its source (``Reader.action``, the plan's ``action``)."""

    IMPORT = "import"
    IMPORT_ARCHIVE = "import+archive"
    DROP = "drop"
    DEFERRED = "deferred"
    RETAIN = "retain"


class PlanProblem(StrEnum):
    """Plan actions that replace the reader's action when a source cannot be migrated as it is."""

    UNREADABLE = "unreadable"
    CONFLICT = "conflict"


class ReceiptStatus(StrEnum):
    """``migration_sources.status``: a source's receipt."""

    COMPLETED = "completed"
    FAILED = "failed"


class RunStatus(StrEnum):
    """``migration_runs.status`` (migrate and recover runs) and the migrate report's ``status``.

    ``nothing-to-do`` is a report status only: no row is written for a run that had nothing to do.
    A run found still ``running`` by the next run under the lock was killed: it is marked ``failed``
    and its report gets ``"interrupted": true``.
    """

    RUNNING = "running"
    COMPLETED = "completed"
    WARNING = "warning"
    FAILED = "failed"
    NOTHING_TO_DO = "nothing-to-do"


class SourceOutcome(StrEnum):
    """What happened to one planned source in a migrate run (the report's per-source ``status``)."""

    IMPORTED = "imported"
    DROPPED = "dropped"  # moved byte-exact into the retired folder, not imported (regenerable state)
    RETIRED = "retired"
    FAILED = "failed"
    UNREADABLE = "unreadable"
    CONFLICT = "conflict"
    DEFERRED = "deferred"
    RETAIN = "retain"
    ALREADY_IMPORTED = "already-imported"
    LEFT_IN_PLACE = "left-in-place"  # unreadable or conflicting before, still so: a warning every run
    GONE = "gone"  # an SQLite -wal/-shm/-journal SQLite itself removed after the plan (folded into its database)


class BackupRunStatus(StrEnum):
    """``backup_runs.status``."""

    OK = "ok"
    FAILED = "failed"


class RecoverStatus(StrEnum):
    """One retired source in ``statekit recover``."""

    RECOVERED = "recovered"
    WOULD_RECOVER = "would-recover"
    ALREADY_IN_PLACE = "already-in-place"
    CONFLICT = "conflict"
    MISSING = "missing"
    HASH_MISMATCH = "hash-mismatch"
    ERROR = "error"


class SessionAction(StrEnum):
    """``statekit sessions delete|reset``."""

    DELETE = "delete"
    RESET = "reset"


class SessionReceiptStatus(StrEnum):
    """The ``status`` of a session archive's receipt: written pending, committed with the transaction,
    restored by ``sessions restore``."""

    PENDING = "pending"
    COMMITTED = "committed"
    RESTORED = "restored"


class RestoreStepAction(StrEnum):
    """What a restore does at one destination (the restore plan and its journal)."""

    CREATE = "create"
    REPLACE = "replace"
    UNCHANGED = "unchanged"  # plan only: nothing is staged or journaled for it
