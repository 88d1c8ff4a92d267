"""Legacy media files media/<subdir>/<id> -> media_blobs (raw bytes as BLOBs)."""

from __future__ import annotations

import os
from pathlib import Path

from b2_harness import MTIME, assert_imported, new_state, place, query, run
from helpers import FIXTURES
from legacy_readers import reader_for
from legacy_readers.media import MAX_MEDIA_BYTES, sniff_content_type

FIX = FIXTURES / "readers" / "media"


def test_claims():
    assert reader_for("media/inbound/a.png").kind == "media-blob"
    assert reader_for("media/a.png").kind == "media-blob"
    assert reader_for("media/outgoing/records/x.json") is None or reader_for("media/outgoing/records/x.json").kind != "media-blob"


def test_sniffing():
    assert sniff_content_type((FIX / "pixel.png").read_bytes()[:64], "x.bin") == "image/png"
    assert sniff_content_type(b"\xff\xd8\xff\xe0", "a") == "image/jpeg"
    assert sniff_content_type(b"RIFF\x00\x00\x00\x00WEBPVP8 ", "a") == "image/webp"
    assert sniff_content_type(b"\x00\x00\x00\x20ftypM4A ", "a") == "audio/mp4"
    assert sniff_content_type(b"%PDF-1.7", "a") == "application/pdf"
    assert sniff_content_type(b"hello", "notes.txt") == "text/plain"
    assert sniff_content_type(b"\x00\x01", "blob") is None


def test_round_trip_bytes_are_blobs(tmp_path: Path):
    files = {
        "media/inbound/3f0c-photo.png": (FIX / "pixel.png").read_bytes(),
        "media/outbound/nested/voice-note.ogg": (FIX / "voice-note.ogg").read_bytes(),
        "media/notes.txt": (FIX / "notes.txt").read_bytes(),
    }
    state, originals = new_state(tmp_path, files)
    report = run(state)
    assert report.status == "completed", report.warnings
    for rel in files:
        assert_imported(state, report, rel, originals[rel], records=1)
    got = {(r["subdir"], r["id"]): r for r in query(state, "SELECT *, typeof(blob) AS t FROM media_blobs")}
    png = got[("inbound", "3f0c-photo.png")]
    assert png == {
        "subdir": "inbound",
        "id": "3f0c-photo.png",
        "content_type": "image/png",
        "size_bytes": len(files["media/inbound/3f0c-photo.png"]),
        "blob": files["media/inbound/3f0c-photo.png"],
        "created_at": MTIME,
        "updated_at": MTIME,
        "t": "blob",
    }
    ogg = got[("outbound/nested", "voice-note.ogg")]
    assert (ogg["content_type"], ogg["blob"], ogg["t"]) == ("audio/ogg", files["media/outbound/nested/voice-note.ogg"], "blob")
    text = got[("", "notes.txt")]
    assert (text["content_type"], text["blob"]) == ("text/plain", files["media/notes.txt"])
    assert not (state / "media").exists()


def test_reimport_of_changed_file_upserts(tmp_path: Path):
    state, _ = new_state(tmp_path, {"media/inbound/a.bin": b"one"})
    run(state)
    place(state, "media/inbound/a.bin", b"two-two", MTIME + 5)
    assert run(state).status == "completed"
    assert query(state, "SELECT blob, size_bytes, updated_at FROM media_blobs") == [{"blob": b"two-two", "size_bytes": 7, "updated_at": MTIME + 5}]


def test_file_above_the_limit_stays_in_place(tmp_path: Path):
    state, originals = new_state(tmp_path, {"media/inbound/ok.bin": b"ok"})
    big = state / "media" / "inbound" / "huge.mp4"
    with open(big, "wb") as handle:
        handle.truncate(MAX_MEDIA_BYTES + 1)  # sparse: nothing is written or read
    report = run(state)
    assert report.exit_code == 3
    result = [o for o in report.outcomes if o.rel == "media/inbound/huge.mp4"][0]
    assert result.status == "unreadable"
    assert result.message.startswith("media/inbound/huge.mp4: media file is 536870913 bytes, above statekit's 512 MiB limit")
    assert big.stat().st_size == MAX_MEDIA_BYTES + 1 and os.path.exists(big)
    assert_imported(state, report, "media/inbound/ok.bin", originals["media/inbound/ok.bin"])


def test_symlinked_media_is_refused(tmp_path: Path):
    state, _ = new_state(tmp_path, {"elsewhere.bin": b"x"})
    (state / "media").mkdir()
    (state / "media" / "link.bin").symlink_to(state / "elsewhere.bin")
    report = run(state)
    assert [o.status for o in report.outcomes if o.rel == "media/link.bin"] != ["imported"]
    assert (state / "media" / "link.bin").is_symlink()
    assert query(state, "SELECT count(*) AS n FROM media_blobs") == [{"n": 0}] if (state / "state").exists() else True
