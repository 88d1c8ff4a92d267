#!/usr/bin/env python3
"""Print the schema a real OpenClaw release wrote into a database, as statekit's schema data.

    python scripts/canonical_schema.py STATE_OR_AGENT.sqlite > part.sql

Reads ``sqlite_master`` of a database written by the release (read-only,
``immutable``), in creation order, and prints each table, index and trigger
statement as ``CREATE ... IF NOT EXISTS ...;``. This is how the release
parts of ``statekit/schema/global.sql`` and ``agent.sql`` were made, from the
databases OpenClaw 2026.7.35 (the last release writing schema version 1)
left in ``corpus/generated/legacy-2026.7.35-std.tar``; ``tests/core/
test_canonical_schema.py`` checks that they still match.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from statekit.db import read_only_view  # noqa: E402

_CREATE = re.compile(r"^CREATE (TABLE|UNIQUE INDEX|INDEX|TRIGGER) ", re.I)


def release_statements(path: Path) -> list[str]:
    """Every user table, index and trigger of the database, as idempotent statements in creation order."""
    with read_only_view(path) as conn:
        rows = conn.execute(
            "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY rowid"
        ).fetchall()
    statements: list[str] = []
    for (sql,) in rows:
        match = _CREATE.match(sql)
        if match is None:
            raise SystemExit(f"{path}: unexpected schema object: {sql[:60]}")
        statements.append(f"CREATE {match.group(1).upper()} IF NOT EXISTS {sql[match.end():]};")
    return statements


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    print("\n\n".join(release_statements(Path(argv[1]))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
