"""Other files under ``logs/``: stability bundles and diagnostic logs (all retained).

* ``logs/stability/*.json`` — Gateway stability bundles (diagnostic snapshots
  taken when the gateway misbehaved). OpenClaw now writes them as
  ``diagnostic_stability_bundles`` rows; that table is not part of statekit's
  schema v1 and a bundle is a point-in-time report, not state anything
  resumes from. Retained in place for the operator.
* ``logs/*.jsonl`` and ``logs/*.log`` (cache traces, payload/raw-stream
  diagnostics, timelines, gateway logs) — operator-facing logs; the seed keeps
  them file-backed. Retained in place. ``logs/config-audit.jsonl`` (imported
  by ``audit-jsonl``) and ``logs/commands.log`` (``command-log``) are excluded.

Nothing is read: retained files are only listed in the plan with the reason.
"""

from __future__ import annotations

from statekit.legacy_readers.base import Reader


class StabilityBundleReader(Reader):
    kind = "stability-bundle"
    family = "logs"
    description = "Gateway stability bundles logs/stability/*.json"
    patterns = ("logs/stability/*.json",)
    target_tables = ()
    action = "retain"
    reason = (
        "diagnostic stability bundle: a point-in-time report for operators; OpenClaw's diagnostic_stability_bundles "
        "table is not part of statekit's schema v1, so the file stays where it is"
    )

    def agent_for(self, rel: str) -> str | None:
        return None


class DiagnosticLogReader(Reader):
    kind = "diagnostic-log"
    family = "logs"
    description = "Operator-facing diagnostic logs logs/*.jsonl, logs/*.log"
    patterns = ("logs/*.jsonl", "logs/*.log")
    exclude = ("logs/config-audit.jsonl", "logs/commands.log")
    target_tables = ()
    action = "retain"
    reason = "operator-facing log: logs stay file-backed (no statekit table holds them)"

    def agent_for(self, rel: str) -> str | None:
        return None
