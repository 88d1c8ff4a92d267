"""The reference graph: which session ids the remaining entries and routes still point at."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from statekit.legacy_readers.session_family import family_of
from statekit.db import Connection, table_names


@dataclass
class References:
    """Session ids that remaining entries and routes still need."""

    ids: set[str] = field(default_factory=set)
    unparsed_texts: list[str] = field(default_factory=list)  # entry_json that is not a JSON object

    def __contains__(self, session_id: str) -> bool:
        if session_id in self.ids:
            return True
        # An entry we cannot parse might still name the id: keep it (never delete on a guess).
        return any(session_id in text for text in self.unparsed_texts)


def referenced_ids(conn: Connection, exclude_key: str | None = None) -> References:
    """The reference set: the family of every ``session_entries`` row (except ``exclude_key``) plus route targets."""
    refs = References()
    tables = table_names(conn)
    if "session_entries" in tables:
        for key, session_id, text in conn.execute("SELECT session_key, session_id, entry_json FROM session_entries"):
            if key == exclude_key:
                continue
            try:
                entry = json.loads(text) if isinstance(text, str) else None
            except (ValueError, RecursionError):
                entry = None
            if not isinstance(entry, dict):
                refs.unparsed_texts.append(text if isinstance(text, str) else "")
            refs.ids.update(family_of(entry, session_id))
    if "session_routes" in tables:
        for key, session_id in conn.execute("SELECT session_key, session_id FROM session_routes"):
            if key != exclude_key and isinstance(session_id, str):
                refs.ids.add(session_id)
    return refs
