"""Discover, plan and apply the migration of OpenClaw legacy state files into SQLite.

Usable from Python without the CLI::

    from statekit.migrate import build_plan, migrate
    plan = build_plan(Path("~/.openclaw").expanduser())
    report = migrate(Path("~/.openclaw").expanduser())

The names are loaded on first use (PEP 562): ``statekit.migrate.plan`` alone does not load the apply loop.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from statekit.lazy import lazy_exports

if TYPE_CHECKING:
    from statekit.migrate.apply import MigrateOptions, MigrationReport, migrate
    from statekit.migrate.plan import Plan, PlannedSource, build_plan

_WHERE = {
    "MigrateOptions": "apply", "MigrationReport": "apply", "migrate": "apply",
    "Plan": "plan", "PlannedSource": "plan", "build_plan": "plan",
}

__all__ = sorted(_WHERE)

__getattr__ = lazy_exports(__name__, _WHERE)
