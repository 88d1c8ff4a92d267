"""Backup test fixtures (helpers live in backup_helpers.py, importable from every backup test).

``tests/`` is on ``sys.path`` (tests/conftest.py), so this very directory would
be found as a namespace package named ``backup`` before the real one (the
editable-install finder runs after the path finder). Putting the repo root on
the path makes the regular package win for every later ``import backup``.
"""

import sys
from pathlib import Path

_REPO = str(Path(__file__).resolve().parents[2])
if _REPO not in sys.path:
    sys.path.append(_REPO)

from backup_helpers import corpus, state_tree  # noqa: E402,F401  (pytest fixtures)
