"""Discover, plan and apply the migration of OpenClaw legacy state files into SQLite.

Usable from Python without the CLI::

    from statekit.migrate import build_plan, migrate
    plan = build_plan(Path("~/.openclaw").expanduser())
    report = migrate(Path("~/.openclaw").expanduser())
"""

from statekit.migrate.apply import MigrateOptions, MigrationReport, migrate
from statekit.migrate.plan import Plan, PlannedSource, build_plan

__all__ = ["MigrateOptions", "MigrationReport", "Plan", "PlannedSource", "build_plan", "migrate"]
