"""statekit backups: create, verify, restore, list and prune OpenClaw state archives.

The public API (used by ``migrate`` for its verified pre-migration backup)::

    from statekit.backup import create_backup, verify_archive, restore_archive, BackupResult
"""

from statekit.backup.create import BackupResult, create_backup, default_output_dir
from statekit.backup.restore import RestoreResult, restore_archive
from statekit.backup.runs import record_backup_run
from statekit.backup.verify import VerifyReport, verify_archive

__all__ = [
    "BackupResult",
    "RestoreResult",
    "VerifyReport",
    "create_backup",
    "default_output_dir",
    "record_backup_run",
    "restore_archive",
    "verify_archive",
]
