"""statekit backups: create, verify, restore, list and prune OpenClaw state archives.

The public API (used by ``migrate`` for its verified pre-migration backup)::

    from statekit.backup import create_backup, verify_archive, restore_archive, BackupResult

The names are loaded on first use (PEP 562), so importing one submodule (``statekit.backup.journal``)
does not load the archive code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from statekit.lazy import lazy_exports

if TYPE_CHECKING:
    from statekit.backup.create import BackupResult, create_backup, default_output_dir
    from statekit.backup.restore import RestoreResult, restore_archive
    from statekit.backup.runs import record_backup_run
    from statekit.backup.verify import VerifyReport, verify_archive

_WHERE = {
    "BackupResult": "create", "create_backup": "create", "default_output_dir": "create",
    "RestoreResult": "restore", "restore_archive": "restore",
    "record_backup_run": "runs",
    "VerifyReport": "verify", "verify_archive": "verify",
}

__all__ = sorted(_WHERE)

__getattr__ = lazy_exports(__name__, _WHERE)
