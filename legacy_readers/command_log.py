"""``logs/commands.log``: the bundled command-logger hook's audit log (one JSON object per line).

OpenClaw moved these lines into a ``command_log_entries`` table of its own
state database. statekit's schema version 1 (docs/target-schema.md) has no
such table, and parking the lines in ``plugin_state_entries`` under an
invented namespace would give OpenClaw nothing it reads. The seed keeps
"logs meant for operators" file-backed unless a specific log surface moves,
so the file is **retained**: listed in the plan with this reason and left
exactly where it is.
"""

from __future__ import annotations

from statekit.legacy_readers.base import Reader


class CommandLogReader(Reader):
    kind = "command-log"
    family = "logs"
    description = "Command-logger hook audit log logs/commands.log"
    patterns = ("logs/commands.log",)
    target_tables = ()
    action = "retain"
    reason = (
        "command audit log for operators: OpenClaw's command_log_entries table is not part of statekit's schema v1, "
        "so the file stays where it is"
    )

    def agent_for(self, rel: str) -> str | None:
        return None
