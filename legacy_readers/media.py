"""Legacy media files: ``media/<subdir>/<id>`` -> ``global.media_blobs``.

OpenClaw's gateway kept attachment bytes as plain files under
``<state>/media`` (``inbound/``, ``outbound/``, ..., nested subdirs allowed,
also files directly in ``media/``). Its doctor imports every file into
``media_blobs`` and removes it. Here each file is one source and one row:

* ``subdir`` is the file's directory relative to ``media/`` (``""`` for a
  file directly in it, ``a/b`` for nested dirs), ``id`` its file name;
* ``blob`` holds the raw bytes (a BLOB, never base64), ``size_bytes`` their
  count, ``content_type`` is sniffed from the first bytes (magic numbers),
  then guessed from the extension, else NULL;
* ``created_at`` / ``updated_at`` are the file's mtime (ms), so a rerun
  writes the same row;
* a re-import of a changed file upserts the row by ``(subdir, id)``.

``media/outgoing/records/**`` is not media: it holds the managed outgoing
image records (their own table) and is never claimed here.

Memory: a media file becomes one BLOB value, so it is read whole. Files
larger than 512 MiB are refused with a clear error and stay in place (OpenClaw
itself never stored more than a few MiB per attachment).
"""

from __future__ import annotations

import mimetypes
import os
from pathlib import PurePosixPath
from typing import BinaryIO

from legacy_readers._small_stores import file_mtime_ms
from legacy_readers.base import ImportContext, Inspection, Reader, Source, WriteResult, upsert, validate
from statekit.errors import SourceError

TABLE = "media_blobs"
MAX_MEDIA_BYTES = 512 * 1024 * 1024
SNIFF_BYTES = 64


def media_identity(rel: str) -> tuple[str, str]:
    """(subdir, id) of ``media/...`` paths."""
    parts = PurePosixPath(rel).parts[1:]
    return "/".join(parts[:-1]), parts[-1]


def sniff_content_type(head: bytes, name: str) -> str | None:
    """MIME type from magic numbers, else from the file extension, else None."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return "image/webp"
    if head.startswith(b"RIFF") and head[8:12] == b"WAVE":
        return "audio/wav"
    if head.startswith(b"%PDF-"):
        return "application/pdf"
    if head.startswith(b"OggS"):
        return "audio/ogg"
    if head.startswith(b"fLaC"):
        return "audio/flac"
    if head.startswith(b"#!AMR"):
        return "audio/amr"
    if head.startswith(b"ID3") or head[:2] in (b"\xff\xfb", b"\xff\xf3", b"\xff\xf2"):
        return "audio/mpeg"
    if head[4:8] == b"ftyp":
        brand = head[8:12]
        if brand in (b"M4A ", b"M4B "):
            return "audio/mp4"
        if brand == b"qt  ":
            return "video/quicktime"
        if brand in (b"heic", b"heix", b"mif1", b"msf1"):
            return "image/heic"
        return "video/mp4"
    if head.startswith(b"\x1a\x45\xdf\xa3"):
        return "video/webm"
    if head.startswith(b"PK\x03\x04"):
        guessed = mimetypes.guess_type(name, strict=False)[0]
        return guessed or "application/zip"
    return mimetypes.guess_type(name, strict=False)[0]


class MediaReader(Reader):
    kind = "media-blob"
    family = "media"
    description = "Legacy media attachment files under media/ (raw bytes -> media_blobs)"
    patterns = ("media/**",)
    exclude = ("media/outgoing/records/**",)
    schema_name = "media-blob"
    target_tables = ("global.media_blobs",)
    action = "import"
    order = 62

    def agent_for(self, rel: str) -> str | None:
        return None

    def _identity(self, source: Source) -> tuple[str, str, int]:
        subdir, media_id = media_identity(source.rel)
        try:
            size = os.stat(source.path).st_size
        except OSError as exc:
            raise SourceError(source.rel, f"cannot stat: {exc.strerror}") from None
        if size > MAX_MEDIA_BYTES:
            raise SourceError(
                source.rel,
                f"media file is {size} bytes, above statekit's {MAX_MEDIA_BYTES // (1024 * 1024)} MiB limit for one BLOB; left in place",
            )
        validate({"subdir": subdir, "id": media_id, "size_bytes": size}, self.schema_name or "", source.rel)
        return subdir, media_id, size

    def inspect(self, source: Source, handle: BinaryIO) -> Inspection:
        subdir, media_id, _size = self._identity(source)
        head = handle.read(SNIFF_BYTES)
        return Inspection(record_count=1, details={"content_type": sniff_content_type(head, media_id)})

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        subdir, media_id, size = self._identity(source)
        data = handle.read(MAX_MEDIA_BYTES + 1)
        if len(data) > MAX_MEDIA_BYTES:
            raise SourceError(source.rel, f"media file grew above the {MAX_MEDIA_BYTES // (1024 * 1024)} MiB limit while being read; left in place")
        content_type = sniff_content_type(data[:SNIFF_BYTES], media_id)
        mtime = file_mtime_ms(source, ctx.now_ms)
        upsert(
            ctx.global_db,
            TABLE,
            {
                "subdir": subdir,
                "id": media_id,
                "content_type": content_type,
                "size_bytes": len(data),
                "blob": data,
                "created_at": mtime,
                "updated_at": mtime,
            },
            ("subdir", "id"),
        )
        result = WriteResult(records=1)
        result.expect("global", TABLE, "subdir = ? AND id = ? AND size_bytes = ?", (subdir, media_id, len(data)), 1)
        result.report.update({"subdir": subdir, "id": media_id, "size_bytes": len(data), "content_type": content_type})
        return result
