"""Retired SQLite sidecar databases: recognised, never imported here.

Discovery files any SQLite file under "databases" unless a reader claims it; these
readers claim the sidecars OpenClaw retired so they are planned with a reason, together
with their ``-wal``/``-shm``/``-journal`` siblings.

Decisions (design seed, "Inventaire de migration"; formats doc §2.7):

* ``tasks/runs.sqlite``, ``tasks/flows/registry.sqlite`` (also ``flows/registry.sqlite``)
  and ``plugin-state/state.sqlite``: "the unshipped sidecar importer … is removed" and
  "unpublished SQLite sidecars … get no doctor import allowance". They are not imported;
  the target schema keeps ``task_runs``/``flow_runs`` minimal because no legacy file feeds
  them. ``retain``: left where they are, listed in every plan, so nothing is lost.
* ``memory/<agentId>.sqlite``: the builtin memory-search index, regenerable from the
  workspace memory files (OpenClaw reindexes into the agent database). ``drop``: moved
  byte-exact into the run's retired folder, not imported.
* ``debug-proxy/capture.sqlite`` (and ``debug-proxy/blobs/``): shipped, and OpenClaw's
  doctor imports it into ``capture_*`` tables, which statekit's schema v1 does not have.
  ``retain`` so OpenClaw can still import it; the proxy's CA material under
  ``debug-proxy/`` is left intact as well.
"""

from __future__ import annotations

from legacy_readers.base import Reader

SIDECAR_SUFFIXES = ("", "-wal", "-shm", "-journal")


def with_siblings(*paths: str) -> tuple[str, ...]:
    return tuple(p + s for p in paths for s in SIDECAR_SUFFIXES)


class _Sidecar(Reader):
    family = "sqlite-sidecars"
    order = 95


class TaskRunsSidecar(_Sidecar):
    kind = "tasks-runs-sqlite"
    description = "Task registry sidecar database tasks/runs.sqlite (+ -wal/-shm/-journal); OpenClaw now uses global task_runs"
    patterns = with_siblings("tasks/runs.sqlite")
    action = "retain"
    reason = "retired task-registry sidecar: OpenClaw never shipped an importer for it (design seed); not imported, left in place"


class TaskFlowsSidecar(_Sidecar):
    kind = "task-flows-sqlite"
    description = "Task Flow registry sidecar database (tasks/flows/registry.sqlite, flows/registry.sqlite); now global flow_runs"
    patterns = with_siblings("tasks/flows/registry.sqlite", "flows/registry.sqlite")
    action = "retain"
    reason = "retired Task Flow sidecar: OpenClaw never shipped an importer for it (design seed); not imported, left in place"


class PluginStateSidecar(_Sidecar):
    kind = "plugin-state-sqlite"
    description = "Plugin-state sidecar database plugin-state/state.sqlite; now global plugin_state_entries"
    patterns = with_siblings("plugin-state/state.sqlite")
    action = "retain"
    reason = "never-shipped plugin-state sidecar: no import allowance (design seed); not imported, left in place"


class MemoryIndexSidecar(_Sidecar):
    kind = "memory-index-sqlite"
    description = "Builtin memory-search index memory/<agentId>.sqlite; now the agent database's memory_index_* tables"
    patterns = ("memory/*.sqlite", "memory/*.sqlite-wal", "memory/*.sqlite-shm", "memory/*.sqlite-journal")
    action = "drop"
    reason = "regenerable memory-search index: OpenClaw reindexes the workspace memory into the agent database"


class DebugProxyCapture(_Sidecar):
    kind = "debug-proxy-capture-sqlite"
    description = "Debug proxy capture database debug-proxy/capture.sqlite and its payload blobs"
    patterns = with_siblings("debug-proxy/capture.sqlite") + ("debug-proxy/blobs/**",)
    action = "retain"
    reason = ("shipped debug-proxy captures: OpenClaw's doctor imports them into capture_* tables, which are not part of"
              " statekit's schema v1; left in place for it")


class DebugProxyFiles(_Sidecar):
    kind = "debug-proxy-files"
    description = "Other debug proxy files (CA certificate and key)"
    patterns = ("debug-proxy/**",)
    action = "retain"
    reason = "debug proxy CA material: the user's trust setup, left intact"
    order = 96
