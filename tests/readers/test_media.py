"""Legacy media files media/<subdir>/<id> stay where OpenClaw 2026.9.6 reads them (no media_blobs rows: 9.6 drops that table)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from small_store_harness import MTIME, new_state, query, run
from helpers import FIXTURES, run_cli
from statekit.legacy_readers import reader_for
from statekit.legacy_readers.media import REASON

FIX = FIXTURES / "readers" / "media"


def test_claims():
    assert reader_for("media/inbound/a.png").kind == "media-blob"
    assert reader_for("media/a.png").kind == "media-blob"
    assert reader_for("media/outgoing/records/x.json") is None or reader_for("media/outgoing/records/x.json").kind != "media-blob"


def test_media_files_are_retained_byte_exact(tmp_path: Path):
    files = {
        "media/inbound/3f0c-photo.png": (FIX / "pixel.png").read_bytes(),
        "media/outbound/nested/voice-note.ogg": (FIX / "voice-note.ogg").read_bytes(),
        "media/notes.txt": (FIX / "notes.txt").read_bytes(),
        # something to import, so the run really opens the database
        "tui/last-session.json": (FIXTURES / "readers" / "tui" / "last-session.json").read_bytes(),
    }
    state, originals = new_state(tmp_path, files)
    plan = json.loads(run_cli("plan", "--state-dir", state, "--json").stdout)
    media = {s["path"]: (s["action"], s["reason"]) for s in plan["sources"] if s["path"].startswith("media/")}
    assert media == {rel: ("retain", REASON) for rel in files if rel.startswith("media/")}
    report = run(state)
    assert report.exit_code == 0, report.warnings
    assert {o.rel: o.status for o in report.outcomes if o.kind == "media-blob"} == {rel: "retain" for rel in files if rel.startswith("media/")}
    for rel in files:
        if rel.startswith("media/"):
            assert (state / rel).read_bytes() == originals[rel]
            assert os.stat(state / rel).st_mtime_ns == MTIME * 1_000_000
    assert query(state, "SELECT count(*) AS n FROM media_blobs") == [{"n": 0}]
    assert query(state, "SELECT count(*) AS n FROM migration_sources WHERE source_path LIKE 'media/%'") == [{"n": 0}]


def test_symlinked_media_is_never_followed(tmp_path: Path):
    state, _ = new_state(tmp_path, {"elsewhere.bin": b"x"})
    (state / "media").mkdir()
    (state / "media" / "link.bin").symlink_to(state / "elsewhere.bin")
    report = run(state)
    assert [o.status for o in report.outcomes if o.rel == "media/link.bin"] != ["imported"]
    assert (state / "media" / "link.bin").is_symlink() and (state / "elsewhere.bin").read_bytes() == b"x"
