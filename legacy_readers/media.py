"""Legacy media files under ``media/`` (``inbound/``, ``outbound/``, nested dirs, files directly in ``media/``).

OpenClaw 2026.9.6 keeps attachment bytes as plain files in ``<state>/media``:
its media store reads and writes ``media/<subdir>/<id>`` itself, its own
migration of a legacy tree leaves these files where they are, and its upgrade
of a version-1 database drops ``media_blobs`` as a dead table (with its rows).
Importing them into ``media_blobs`` and retiring the files would lose every
attachment once 9.6 upgrades the database, so statekit keeps them in place
(``retain``), as 9.6 does.

``media/outgoing/records/**`` is not media: it holds the managed outgoing
image records (another reader's family) and is never claimed here.
"""

from __future__ import annotations

from statekit.legacy_readers.base import Reader

REASON = (
    "OpenClaw 2026.9.6 keeps media as files in media/ and reads them there (its upgrade drops "
    "media_blobs as a dead table); left in place"
)


class MediaReader(Reader):
    kind = "media-blob"
    family = "media"
    description = "Legacy media attachment files under media/ (kept as files, where OpenClaw reads them)"
    patterns = ("media/**",)
    exclude = ("media/outgoing/records/**",)
    action = "retain"
    reason = REASON

    def agent_for(self, rel: str) -> str | None:
        return None
