"""Offline session maintenance on the per-agent SQLite store: delete, reset, list, restore-archive.

The *artifact family* of a session entry (seed "Path 3 session artifact
family") is its ``sessionId``, every
``compactionCheckpoints[*].preCompaction.sessionId`` and
``.postCompaction.sessionId``, and every id in ``usageFamilySessionIds``:
empty strings dropped, duplicates removed, first occurrence wins.

``delete KEY`` removes the key's ``session_entries``/``session_routes``
rows; ``reset KEY`` keeps the key and routes it to a fresh session id. In
the same transaction, every family id that no remaining entry references
any more (the *reference set* is built from the family of every remaining
``session_entries`` row, plus the ``session_id`` column of every remaining
entry and route) has its transcript rows copied into an archive and its
``sessions`` row deleted (children are deleted explicitly too, so a foreign
shape without ``ON DELETE CASCADE`` converges the same way). Ids that are
still referenced are left untouched.

Archive files live under ``<state>/.statekit/session-archives/<agentId>/``
(directories 0700, files 0600): ``<name>.json.zst`` is the zstd-compressed
JSON document holding every removed row column by column, and
``<name>.receipt.json`` is its receipt (file SHA-256, size, counts,
status). The archive and a ``pending`` receipt are written and fsynced
*before* the transaction commits; after the commit the receipt becomes
``committed``. A crash in between leaves a ``pending`` receipt that the
next run on that agent settles: ``committed`` when the change is visible in
the database, otherwise the archive is an orphan (a copy of rows that are
still live) and is removed.

Nothing here reads a legacy JSONL file, a topic transcript variant or a
trajectory sidecar: SQLite rows are the only input.

The package, one module per concern:

- ``family``: the reference graph (which ids the remaining entries still point at);
- ``rows``: the rows of one session id, table by table, and their JSON-safe encoding;
- ``archive_format``: the ``.json.zst`` session archive and its receipt (write, read and verify, settle);
- ``common``: :class:`SessionChange`, the agent a key belongs to, the lock;
- ``transactions``: ``delete`` / ``reset`` (plan and the one transaction);
- ``listing``: ``list`` and ``list --archives``;
- ``restore``: ``restore-archive``.

The public names carry ``session`` (``restore_session_archive``, ``SessionRestoreResult``,
``list_session_archives``) so they cannot be confused with ``statekit.backup``'s archives.
"""

from __future__ import annotations

from statekit.maintenance.sessions.archive_format import archives_dir, read_session_archive, settle_pending
from statekit.maintenance.sessions.common import SessionChange
from statekit.maintenance.sessions.family import referenced_ids
from statekit.maintenance.sessions.listing import list_session_archives, list_sessions
from statekit.maintenance.sessions.restore import SessionRestoreResult, restore_session_archive
from statekit.maintenance.sessions.transactions import change_session, preview_change
from statekit.legacy_readers.session_family import family_of

__all__ = [
    "SessionChange",
    "SessionRestoreResult",
    "family_of",
    "referenced_ids",
    "change_session",
    "preview_change",
    "list_sessions",
    "list_session_archives",
    "restore_session_archive",
    "read_session_archive",
    "settle_pending",
    "archives_dir",
]
