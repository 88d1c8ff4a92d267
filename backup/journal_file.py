"""Where an in-place restore keeps its journal: the one name every command checks before it starts.

Kept apart from :mod:`statekit.backup.journal` (which reads, writes and settles journals) so the check
that there is none, done before every command, loads nothing but the state-dir layout.
"""

from __future__ import annotations

from pathlib import Path

from statekit.layout import statekit_dir

JOURNAL_NAME = "restore-journal.json"


def journal_path(state_dir: Path) -> Path:
    return statekit_dir(state_dir) / JOURNAL_NAME
