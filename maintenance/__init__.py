"""Offline maintenance of an install that statekit migrated: health, run history, undoing retirement, sessions.

Usable from Python without the CLI::

    from statekit.maintenance.inspect import inspect_state
    from statekit.maintenance.recover import recover
    from statekit.maintenance.sessions import change_session, restore_session_archive

Each module is one command: ``inspect`` (health of every database and what
is left to do), ``history`` (the runs recorded in ``migration_runs``),
``recover`` (putting retired sources back) and ``sessions`` (listing,
deleting or resetting a session with its transcript family archived).
They depend on ``migrate`` and ``backup``, never the other way round.
"""
