"""The run lock beside the archives: two backup runs never write to one output dir at once.

A kernel ``flock`` (``statekit.locking.exclusive_lock``) on
``<output>/.statekit-backup.lock``: released by the kernel when a run dies, so
a killed cron job never blocks the next one; the loser exits 4 (busy).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from statekit.fsutil import ensure_private_dir
from statekit.locking import exclusive_lock

LOCK_NAME = ".statekit-backup.lock"


def lock_path(output_dir: Path) -> Path:
    return output_dir / LOCK_NAME


@contextmanager
def backup_lock(output_dir: Path) -> Iterator[Path]:
    ensure_private_dir(output_dir)
    with exclusive_lock(lock_path(output_dir), f"backup output dir {output_dir}") as path:
        yield path
