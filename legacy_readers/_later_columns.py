"""Columns OpenClaw adds to version-1 tables on its own upgrade, added by statekit only when a value needs one.

Some legacy fields have no column in the canonical version-1 layout that
OpenClaw 2026.7.35 creates (``statekit/schema/global.sql``), yet the release
that reads statekit's databases keeps them: OpenClaw 2026.9.6's upgrade of a
v1 state database runs ``ensureColumns(db, ORDERED_STARTUP_ADDITIVE_STATE_COLUMNS
.cronRunLogs)``, an ``ALTER TABLE ... ADD COLUMN`` for each column below that
the table lacks, and afterwards rebuilds the tables into their canonical
column order. A column that already exists is left as it is, with its values.

So a legacy value whose only home is one of these columns is written there:
the column is added first, with exactly the name and type 2026.9.6 gives it
(nullable, no default, appended as OpenClaw appends it). Tables whose files
carry no such value keep the exact v1 shape. Verified against the real
release: a v1 database with some or all of these columns added upgrades to
v18 with ``openclaw database preflight`` reporting ``exact`` and the values
intact (see docs/readers/devices.md).

The node-host columns are of the same kind by another route: 2026.9.6's
upgrade folds ``node_host_config`` into ``config_machine_state``
(``migrateSingletonStateFoldInV12``) and reads ``gateway_context_path``,
``gateway_cloudflare_access_json`` and ``installed_apps_sharing`` when the
table has them (columns of the schema versions between 1 and 12).

The registry itself, ``LATER_COLUMNS``, lives with the schema data
(:mod:`statekit.schema`), so that ``statekit inspect`` allows these columns.

Where the data came from, for each column (2026.9.6 field -> column):

* ``device_pairing_pending``: ``refreshedAtMs``, ``browserOrigin``;
* ``device_pairing_paired``: ``approvedVia``, ``browserOrigin``,
  ``operatorLabel``, ``nodeSurface`` (a node's approved surface, which
  2026.9.6 folds ``nodes/paired.json`` into), ``pendingNodeSurface``;
* ``apns_registrations``: ``relayOrigin`` of relay registrations;
* ``node_host_config``: ``gateway.contextPath``, ``gateway.cloudflareAccess``,
  ``installedAppsSharing`` of ``node.json``.

The v1 tables ``node_pairing_pending`` / ``node_pairing_paired`` are not an
alternative home: 2026.9.6's upgrade drops both without reading them
(``dropLegacyStateTables``).
"""

from __future__ import annotations

from statekit.schema import LATER_COLUMNS


def later_columns_of(table: str) -> list[str]:
    """The registered later columns of ``table``; the writer adds them (``DatabaseWriter.fit`` / ``add_later_column``)."""
    return [column for (name, column) in LATER_COLUMNS if name == table]
