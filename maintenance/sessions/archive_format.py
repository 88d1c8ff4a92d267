"""The session archive format: ``<name>.json.zst`` (zstd JSON of the removed rows) and its receipt."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import zstandard

from statekit.maintenance.sessions.common import SessionChange
from statekit.maintenance.sessions.rows import RESTORE_ORDER
from statekit import __version__
from statekit.db import Connection, table_names
from statekit.errors import StatekitError, VerificationError
from statekit.fsutil import PRIVATE_FILE_MODE, atomic_write_bytes, create_file, read_regular_file, chmod_best_effort, ensure_private_dir, fsync_dir, sha256_bytes
from statekit.layout import statekit_dir
from statekit.states import SessionAction, SessionReceiptStatus


ARCHIVE_FORMAT = "statekit-session-archive"


ARCHIVE_VERSION = 1


ARCHIVE_SUFFIX = ".json.zst"


RECEIPT_SUFFIX = ".receipt.json"


ZSTD_LEVEL = 10


MAX_ARCHIVE_BYTES = 1 << 30  # decompressed size cap for restore (1 GiB)


def archives_dir(state_dir: Path, agent_id: str) -> Path:
    return statekit_dir(state_dir) / "session-archives" / agent_id


def _slug(text: str, limit: int = 48) -> str:
    slug = re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip("-.")
    return slug[:limit].rstrip("-.") or "session"


def receipt_path_for(archive: Path) -> Path:
    name = archive.name
    stem = name[: -len(ARCHIVE_SUFFIX)] if name.endswith(ARCHIVE_SUFFIX) else name
    return archive.with_name(stem + RECEIPT_SUFFIX)


def _write_private(path: Path, data: bytes) -> None:
    """Create ``path`` (0600, must not exist), write, fsync file and directory."""
    fd = create_file(path, PRIVATE_FILE_MODE)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    chmod_best_effort(path, PRIVATE_FILE_MODE)
    fsync_dir(path.parent)


def write_receipt(path: Path, receipt: dict[str, Any]) -> None:
    atomic_write_bytes(path, (json.dumps(receipt, indent=2, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8"))


def build_document(change: SessionChange, entry: dict[str, Any], tables: dict[str, dict[str, Any]], now_ms: int) -> dict[str, Any]:
    document: dict[str, Any] = {
        "format": ARCHIVE_FORMAT,
        "version": ARCHIVE_VERSION,
        "statekit_version": __version__,
        "created_at": now_ms,
        "agent_id": change.agent_id,
        "reason": change.reason,
        "session_key": change.session_key,
        "session_id": change.session_id,
        "new_session_id": change.new_session_id,
        "family": change.family,
        "archived_session_ids": change.archived,
        "kept_session_ids": change.kept,
        "tables": {t: tables[t] for t in RESTORE_ORDER if t in tables},
    }
    if change.action == SessionAction.RESET:
        # The entry itself stays live (pointing at the new id); its previous value is kept for the record only.
        document["previous_entry"] = entry
    return document


def write_archive(state_dir: Path, change: SessionChange, document: dict[str, Any], now_ms: int) -> tuple[Path, Path, dict[str, Any]]:
    """Write the compressed archive and a ``pending`` receipt (both fsynced) and return their paths."""
    payload = json.dumps(document, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode("utf-8")
    data = zstandard.ZstdCompressor(level=ZSTD_LEVEL, write_checksum=True).compress(payload)
    digest = sha256_bytes(data)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now_ms / 1000))
    directory = ensure_private_dir(archives_dir(state_dir, change.agent_id))
    archive = directory / f"{stamp}-{change.reason}-{_slug(change.session_key)}-{digest[:16]}{ARCHIVE_SUFFIX}"
    if archive.exists():
        archive.unlink()  # identical name means identical bytes (hash in the name): rewrite cleanly
    _write_private(archive, data)
    receipt = {
        "format": ARCHIVE_FORMAT + "-receipt",
        "version": ARCHIVE_VERSION,
        "archive": archive.name,
        "sha256": digest,
        "payload_sha256": sha256_bytes(payload),
        "size": len(data),
        "created_at": now_ms,
        "agent_id": change.agent_id,
        "reason": change.reason,
        "session_key": change.session_key,
        "session_id": change.session_id,
        "new_session_id": change.new_session_id,
        "archived_session_ids": change.archived,
        "kept_session_ids": change.kept,
        "rows": change.rows,
        "status": SessionReceiptStatus.PENDING,
    }
    receipt_path = receipt_path_for(archive)
    write_receipt(receipt_path, receipt)
    return archive, receipt_path, receipt


def load_receipt(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(read_regular_file(path).decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def iter_receipts(state_dir: Path, agent_id: str | None = None) -> Iterator[tuple[Path, dict[str, Any]]]:
    root = statekit_dir(state_dir) / "session-archives"
    if not root.is_dir():
        return
    agents = [agent_id] if agent_id else sorted(p.name for p in root.iterdir() if p.is_dir())
    for agent in agents:
        directory = root / agent
        if not directory.is_dir():
            continue
        for path in sorted(directory.glob("*" + RECEIPT_SUFFIX)):
            receipt = load_receipt(path)
            if receipt is not None:
                yield path, receipt


def _change_visible(conn: Connection, receipt: dict[str, Any]) -> bool:
    """True when the database shows the change a pending receipt describes (its transaction committed)."""
    key = receipt.get("session_key")
    tables = table_names(conn)
    if "session_entries" not in tables:
        return False
    row = conn.execute("SELECT session_id FROM session_entries WHERE session_key = ?", (key,)).fetchone()
    if receipt.get("reason") == "reset":
        return row is not None and row[0] == receipt.get("new_session_id")
    if row is not None:
        return False
    return all(
        conn.execute("SELECT 1 FROM sessions WHERE session_id = ?", (sid,)).fetchone() is None
        for sid in receipt.get("archived_session_ids") or []
    )


def settle_pending(state_dir: Path, agent_id: str, conn: Connection) -> list[str]:
    """Settle receipts left ``pending`` by a crash: mark committed, or remove the orphan archive."""
    notes: list[str] = []
    for path, receipt in list(iter_receipts(state_dir, agent_id)):
        if receipt.get("status") != SessionReceiptStatus.PENDING:
            continue
        archive = path.with_name(str(receipt.get("archive", "")))
        if _change_visible(conn, receipt):
            receipt["status"] = SessionReceiptStatus.COMMITTED
            write_receipt(path, receipt)
            notes.append(f"{archive.name}: interrupted earlier after commit; receipt completed")
        else:
            archive.unlink(missing_ok=True)
            path.unlink(missing_ok=True)
            fsync_dir(path.parent)
            notes.append(f"{archive.name}: orphan archive from an interrupted run removed (its rows are still live)")
    return notes


def read_session_archive(path: Path) -> tuple[dict[str, Any], str]:
    """Verify the archive's hash (against its receipt, else the hash in its name) and decode it."""
    try:
        data = read_regular_file(path, 1 << 32)  # never blocks on a FIFO; an archive of a huge transcript still fits
    except OSError as exc:
        raise StatekitError(f"{path}: cannot read archive: {exc.strerror or exc}") from None
    digest = sha256_bytes(data)
    receipt = load_receipt(receipt_path_for(path))
    if receipt is not None and receipt.get("archive") == path.name:
        if receipt.get("sha256") != digest:
            raise VerificationError(f"{path}: SHA-256 does not match its receipt; archive left alone")
        verified_by = "receipt"
    else:
        match = re.search(r"-([0-9a-f]{16})" + re.escape(ARCHIVE_SUFFIX) + "$", path.name)
        if match is None:
            raise VerificationError(f"{path}: no receipt beside it and no hash in its name; cannot verify it")
        if not digest.startswith(match.group(1)):
            raise VerificationError(f"{path}: SHA-256 does not match the hash in its name; archive left alone")
        verified_by = "file name"
    try:
        reader = zstandard.ZstdDecompressor().stream_reader(data)
        payload = reader.read(MAX_ARCHIVE_BYTES + 1)
    except zstandard.ZstdError as exc:
        raise VerificationError(f"{path}: not a zstd archive ({exc})") from None
    if len(payload) > MAX_ARCHIVE_BYTES:
        raise VerificationError(f"{path}: archive expands beyond {MAX_ARCHIVE_BYTES} bytes; refused")
    if receipt is not None and verified_by == "receipt" and receipt.get("payload_sha256") not in (None, sha256_bytes(payload)):
        raise VerificationError(f"{path}: content does not match its receipt")
    try:
        document = json.loads(payload)
    except (ValueError, RecursionError):
        raise VerificationError(f"{path}: archive content is not JSON") from None
    if not isinstance(document, dict) or document.get("format") != ARCHIVE_FORMAT:
        raise VerificationError(f"{path}: not a statekit session archive")
    if document.get("version") != ARCHIVE_VERSION:
        raise StatekitError(f"{path}: archive version {document.get('version')!r} is not supported")
    return document, verified_by
