"""Streaming archive I/O: PAX tar inside zstd (write), and tar.zst / tar.gz (read).

Writing never holds an asset in memory: members are copied in chunks through
tarfile's stream mode into a multi-threaded zstd compressor (frame content
checksums on) and on into the file. Reading counts decompressed bytes so a
decompression bomb is cut off at a bound instead of filling the disk.
"""

from __future__ import annotations

import errno
import gzip
import hashlib
import io
import os
import tarfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, BinaryIO, cast

import zstandard

from statekit.fsutil import PRIVATE_FILE_MODE, CHUNK, create_file, open_regular_file
from statekit.progress import ProgressFn, ProgressReader

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
GZIP_MAGIC = b"\x1f\x8b"
TAR_READ_BUFSIZE = 64 << 10  # tarfile's stream reader re-slices its buffer on every header read


class BombError(Exception):
    """Decompressed data exceeded the allowed bound."""


EXTENDED_HEADER_MAX = 1 << 20  # bytes: a PAX / GNU long-name header; tarfile reads one into memory whole


class OversizedHeader(tarfile.TarError):
    """A tar extended header (PAX, GNU long name) declaring more bytes than any sound archive has: refused unread."""


class BoundedTarInfo(tarfile.TarInfo):
    """tarfile reads a PAX or GNU long-name header's data into memory in one piece: one declaring 2^60 bytes would
    balloon until the decompression bound. Such a header (and a sparse member, which no backup holds) is refused
    from its header alone, before a byte of it is read."""

    def _proc_member(self, tarfile_: tarfile.TarFile) -> tarfile.TarInfo:
        extended = (tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE, tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK)
        if self.type in extended and self.size > EXTENDED_HEADER_MAX:
            raise OversizedHeader(f"an extended tar header declares {self.size} bytes (at most {EXTENDED_HEADER_MAX}); "
                                  "rejected before reading it")
        if self.type == tarfile.GNUTYPE_SPARSE:
            raise OversizedHeader(f"member {self.name!r} is a sparse file (no backup holds one); rejected before reading it")
        return super()._proc_member(tarfile_)  # type: ignore[misc]


def write_all(fd: int, data: bytes) -> None:
    """``os.write`` until every byte is written (short writes happen on pipes and full-ish disks)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class SinkFile:
    """The bottom of the write stack: an exclusive-create 0600 file, fsynced on close.

    Kept as a tiny class so tests can simulate a full disk by patching ``write``.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = create_file(path, PRIVATE_FILE_MODE)
        self.bytes_written = 0
        self.digest = hashlib.sha256()  # of every byte written: the archive digest trailer is built from it

    def write(self, data: bytes) -> int:
        write_all(self._fd, data)
        self.digest.update(data)
        self.bytes_written += len(data)
        return len(data)

    @property
    def fd(self) -> int:
        return self._fd

    def flush(self) -> None:  # os.write is unbuffered
        pass

    def fsync_close(self) -> None:
        try:
            os.fsync(self._fd)
        finally:
            self.close()

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


# The job each zstd worker compresses at a time. zstd's own choice at level 3 (four times its 2 MiB window, and
# the window again as overlap) held ~40 MB of buffers over two workers, whatever the archive's size; 1 MiB jobs
# hold ~8 MB, compress as fast and lose ~2 % of the ratio (a 391 MB agent database: 17.9 -> 18.2 MB).
ZSTD_JOB_BYTES = 1 << 20


def zstd_parameters(level: int, threads: int) -> zstandard.ZstdCompressionParameters:
    """Level ``level`` with a frame checksum; with worker threads (``threads`` != 0), jobs of ``ZSTD_JOB_BYTES``."""
    if threads == 0:
        return zstandard.ZstdCompressionParameters.from_level(level, write_checksum=True)
    return zstandard.ZstdCompressionParameters.from_level(level, threads=threads, job_size=ZSTD_JOB_BYTES, write_checksum=True)


class ArchiveWriter:
    """Append tar members to a new ``.tar.zst`` file (``.tar.gz`` with ``compression="gzip"``); :meth:`finish` fsyncs it."""

    def __init__(self, path: Path, *, level: int = 3, threads: int = -1, progress: Callable[[int], None] | None = None,
                 compression: str = "zstd") -> None:
        self.sink = SinkFile(path)
        self._compression = compression
        try:
            if compression == "gzip":
                # One gzip member (mtime 0: the bytes depend on the content only); members concatenate like zstd frames.
                self._zstd: gzip.GzipFile | zstandard.ZstdCompressionWriter = gzip.GzipFile(
                    filename="", mode="wb", fileobj=self.sink, compresslevel=level, mtime=0)
            else:
                self._compressor = zstandard.ZstdCompressor(compression_params=zstd_parameters(level, threads))
                self._zstd = self._compressor.stream_writer(cast(IO[bytes], self.sink), closefd=False, write_size=CHUNK)
            # Plain "w" mode over a tell()-able writer: tarfile writes headers and data straight
            # through (its "w|" stream buffer re-copies its whole buffer on every small write).
            self._tar = tarfile.TarFile(fileobj=cast(IO[bytes], _Offset(self._zstd)), mode="w", format=tarfile.PAX_FORMAT, copybufsize=CHUNK)
        except BaseException:
            self.sink.close()
            raise
        self._progress = progress or (lambda _n: None)

    @staticmethod
    def _info(name: str, kind: bytes, mode: int, mtime: float, size: int = 0) -> tarfile.TarInfo:
        info = tarfile.TarInfo(name)
        info.type = kind
        info.mode = mode & 0o7777
        info.mtime = int(mtime)
        info.size = size
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        return info

    def add_bytes(self, name: str, data: bytes, *, mode: int = PRIVATE_FILE_MODE, mtime: float = 0) -> None:
        self._tar.addfile(self._info(name, tarfile.REGTYPE, mode, mtime, len(data)), io.BytesIO(data))
        _forget_members(self._tar)
        self._progress(len(data))

    def add_dir(self, name: str, *, mode: int, mtime: float) -> None:
        self._tar.addfile(self._info(name, tarfile.DIRTYPE, mode, mtime))
        _forget_members(self._tar)

    def add_symlink(self, name: str, target: str, *, mtime: float) -> None:
        info = self._info(name, tarfile.SYMTYPE, 0o777, mtime)
        info.linkname = target
        self._tar.addfile(info)
        _forget_members(self._tar)

    def add_stream(self, name: str, handle: BinaryIO, size: int, *, mode: int, mtime: float) -> str:
        """Copy exactly ``size`` bytes of ``handle``; returns their SHA-256. A short read raises OSError (file shrank)."""
        reader = _ProgressReader(handle, self._progress)
        self._tar.addfile(self._info(name, tarfile.REGTYPE, mode, mtime, size), reader)
        _forget_members(self._tar)
        return reader.digest.hexdigest()

    def finish(self, *, durable: bool = True, end_of_archive: bool = True) -> None:
        """End the tar stream (its end-of-archive blocks unless ``end_of_archive`` is False: more members
        follow in a later frame) and the compressed frame; fsync unless the file is only a temp payload."""
        if end_of_archive:
            self._tar.close()
        else:
            self._tar.closed = True  # type: ignore[attr-defined]  # tarfile would write the end-of-archive blocks on close
        if self._compression == "gzip":
            self._zstd.close()
        else:
            self._zstd.flush(zstandard.FLUSH_FRAME)
            self._zstd.close()
        if durable:
            self.sink.fsync_close()
        else:
            self.sink.close()

    def abort(self) -> None:
        self.sink.close()


class _Offset:
    """A write-only file over the compressor that knows its uncompressed position (for tarfile)."""

    def __init__(self, raw: gzip.GzipFile | zstandard.ZstdCompressionWriter) -> None:
        self._raw = raw
        self._pos = 0

    def write(self, data: bytes) -> int:
        self._raw.write(data)
        self._pos += len(data)
        return len(data)

    def tell(self) -> int:
        return self._pos


class _ProgressReader:
    """Hashes and reports every byte tarfile copies into the archive."""

    def __init__(self, handle: BinaryIO, progress: Callable[[int], None]) -> None:
        self._handle = handle
        self._progress = progress
        self.digest = hashlib.sha256()

    def read(self, n: int = -1) -> bytes:
        data = self._handle.read(n)
        self.digest.update(data)
        self._progress(len(data))
        return data


def member_bytes(name: str, data: bytes, *, mode: int, mtime: float) -> bytes:
    """One complete tar member (PAX header, data, padding) — no end-of-archive blocks."""
    header = ArchiveWriter._info(name, tarfile.REGTYPE, mode, mtime, len(data)).tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")
    padding = (-len(data)) % tarfile.BLOCKSIZE
    return header + data + b"\0" * padding


# A zstd skippable frame (ignored by every decompressor) closing the archive: the SHA-256 of the
# compressed manifest frame and of the compressed payload. zstd content checksums cover what the
# frames decode to; a flipped bit that decodes to the same bytes (unused entropy-coder bits) is
# invisible to them, so verify also compares these digests: every byte of the archive is covered.
DIGEST_MAGIC = 0x184D2A5A
DIGEST_TAG = b"statekit-archive-sha256\0"


def digest_trailer(head_sha256: bytes, payload_sha256: bytes) -> bytes:
    content = DIGEST_TAG + head_sha256 + payload_sha256
    return DIGEST_MAGIC.to_bytes(4, "little") + len(content).to_bytes(4, "little") + content


def parse_digest_trailer(content: bytes) -> tuple[bytes, bytes] | None:
    if len(content) != len(DIGEST_TAG) + 64 or not content.startswith(DIGEST_TAG):
        return None
    body = content[len(DIGEST_TAG) :]
    return body[:32], body[32:]


@dataclass(frozen=True)
class MemberFile:
    """A tar member whose data is a file (the manifest, spooled as it was encoded): written without reading it whole."""

    name: str
    data: Path
    mode: int
    mtime: float

    def header(self, size: int) -> bytes:
        return ArchiveWriter._info(self.name, tarfile.REGTYPE, self.mode, self.mtime, size).tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")


def write_joined(path: Path, head: MemberFile, payload: Path, *, level: int, payload_sha256: bytes | None = None) -> None:
    """Write ``path`` (exclusive, 0600) as a zstd frame of the ``head`` member, the frames of ``payload``, and a digest
    trailer; fsync.

    zstd frames and tar members both concatenate, so the result is one valid
    .tar.zst whose first member is ``head``'s. ``payload_sha256`` is the digest of
    the payload file's bytes as they were written. The head member's data streams from its file in chunks.
    """
    sink = SinkFile(path)
    try:
        with _member_of_file(head) as (size, pieces):
            compressor = zstandard.ZstdCompressor(level=level, write_checksum=True)
            with compressor.stream_writer(cast(IO[bytes], sink), size=size, closefd=False, write_size=CHUNK) as frame:
                for piece in pieces:  # the frame ends when the writer closes (one flush: a second would add an empty frame)
                    frame.write(piece)
        head_sha256 = sink.digest.digest()  # nothing but the head frame is written yet
        with open(payload, "rb") as source:
            _copy_fd(source.fileno(), sink)
        if payload_sha256 is not None:
            sink.write(digest_trailer(head_sha256, payload_sha256))
        sink.fsync_close()
    except BaseException:
        sink.close()
        raise


# The gzip counterpart of the digest trailer: a last, empty gzip member whose header comment (FCOMMENT, skipped
# by every gunzip) holds the SHA-256 of every byte before it. gzip's CRC covers what the members decode to; a
# flipped bit that decodes to the same bytes (deflate has redundant encodings: a few percent of random flips
# in a small archive) is caught only by this. The member must be byte-for-byte the canonical one for its digest.
GZIP_TRAILER_TAG = b"statekit-archive-sha256:"


def gzip_trailer(sha256: bytes) -> bytes:
    header = b"\x1f\x8b\x08\x10" + b"\0\0\0\0" + b"\x00\xff"  # deflate, FCOMMENT, mtime 0, no flags, OS unknown
    empty = b"\x03\x00"  # a final, empty fixed-Huffman block
    return header + GZIP_TRAILER_TAG + sha256.hex().encode("ascii") + b"\0" + empty + b"\0" * 8  # CRC32 0, ISIZE 0


GZIP_TRAILER_LEN = len(gzip_trailer(bytes(32)))


@contextmanager
def _member_of_file(member: MemberFile) -> Iterator[tuple[int, Iterator[bytes]]]:
    """``member`` as tar bytes (PAX header, the file's data in chunks, padding): their length and the pieces."""
    with open_regular_file(member.data) as data:
        size = os.fstat(data.fileno()).st_size
        header = member.header(size)
        padding = b"\0" * ((-size) % tarfile.BLOCKSIZE)

        def pieces() -> Iterator[bytes]:
            yield header
            copied = 0
            while block := data.read(CHUNK):
                copied += len(block)
                yield block
            if copied != size:
                raise OSError(errno.EIO, f"{member.data}: changed size while it was archived")
            yield padding

        yield len(header) + size + len(padding), pieces()


class _HashedSink:
    """Writes to ``sink`` that also feed ``digest`` (the gzip member after the payload, into the archive's SHA-256)."""

    def __init__(self, sink: SinkFile, digest: Any) -> None:
        self.sink, self.digest = sink, digest

    def write(self, data: bytes) -> int:
        self.digest.update(data)
        return self.sink.write(data)

    def flush(self) -> None:
        pass


def write_payload_then_tail(path: Path, payload: Path, first: MemberFile, rest: bytes, *, level: int, payload_hash: Any) -> None:
    """Write ``path`` (exclusive, 0600) as the gzip members of ``payload``, one gzip member of the tar members
    ``first`` (streamed from its file) and ``rest``, and the digest trailer member; fsync. ``payload_hash`` is a
    SHA-256 object fed with the payload file's bytes as they were written (the payload itself is copied in the
    kernel, never re-read).

    gzip members and tar members both concatenate: the result is one valid
    ``.tar.gz`` ending with the tail's members (OpenClaw's manifest is the last one).
    """
    sink = SinkFile(path)
    try:
        with open(payload, "rb") as source:
            _copy_fd(source.fileno(), sink)
        whole = payload_hash.copy()
        with _member_of_file(first) as (_size, pieces), \
                gzip.GzipFile(filename="", mode="wb", compresslevel=level, fileobj=_HashedSink(sink, whole), mtime=0) as member:
            for piece in pieces:
                member.write(piece)
            member.write(rest)
        sink.write(gzip_trailer(whole.digest()))
        sink.fsync_close()
    except BaseException:
        sink.close()
        raise


END_OF_ARCHIVE = b"\0" * (2 * tarfile.BLOCKSIZE)


def _copy_fd(source_fd: int, sink: SinkFile) -> None:
    try:
        while os.copy_file_range(source_fd, sink.fd, 1 << 30):
            pass
        return
    except OSError as exc:
        if exc.errno not in (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
            raise
    while block := os.read(source_fd, CHUNK):
        sink.write(block)


# --------------------------------------------------------------------------- reading


def sniff_format(path: Path) -> str | None:
    """``"zstd"``, ``"gzip"`` or None, from the first bytes of the file."""
    with open(path, "rb") as handle:
        head = handle.read(4)
    if head.startswith(ZSTD_MAGIC):
        return "zstd"
    if head.startswith(GZIP_MAGIC):
        return "gzip"
    return None


class CountingReader:
    """Counts decompressed bytes; raises :class:`BombError` past ``limit`` (adjustable while reading)."""

    def __init__(self, raw: BinaryIO, limit: int) -> None:
        self._raw = raw
        self.limit = limit
        self.count = 0

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0:
            n = CHUNK
        data = self._raw.read(n)
        self.count += len(data)
        if self.count > self.limit:
            raise BombError(f"decompressed data exceeds {self.limit} bytes")
        return data


@contextmanager
def open_tar_stream(
    path: Path, compression: str, limit: int, progress: ProgressFn | None = None
) -> Iterator[tuple[tarfile.TarFile, CountingReader]]:
    """A streaming (``r|``) tar reader over the decompressed bytes, counted against ``limit``.

    ``progress`` (a TTY bar) is told the compressed bytes read."""
    with open(path, "rb") as opened:
        raw: BinaryIO = opened if progress is None else ProgressReader(opened, progress)  # type: ignore[assignment]
        with tar_over_stream(raw, compression, limit) as pair:
            yield pair


@contextmanager
def tar_over_stream(raw: Any, compression: str, limit: int) -> Iterator[tuple[tarfile.TarFile, CountingReader]]:
    """:func:`open_tar_stream` over an already open, possibly non-seekable binary stream of compressed bytes."""
    if compression == "zstd":
        decompressed: BinaryIO = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True, read_size=CHUNK, closefd=False)
    else:
        decompressed = gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[assignment]
    counter = CountingReader(decompressed, limit)
    try:
        with tarfile.open(fileobj=counter, mode="r|", bufsize=TAR_READ_BUFSIZE, tarinfo=BoundedTarInfo,  # type: ignore[call-overload]
                          encoding="utf-8", errors="surrogateescape") as tar:
            yield tar, counter
    finally:
        decompressed.close()


def members_of(tar: tarfile.TarFile) -> Iterator[tarfile.TarInfo]:
    """The members of a tar stream one at a time, none kept: iterating a TarFile keeps every TarInfo it has read
    (about 600 bytes each: 60 MB for an archive of 100,000 files), which a one-pass reader never looks at again."""
    while (member := tar.next()) is not None:
        _forget_members(tar)
        yield member


def _forget_members(tar: tarfile.TarFile) -> None:
    """Drop the TarInfo objects tarfile keeps of every member it read or wrote (its ``members`` list)."""
    tar.members.clear()  # type: ignore[attr-defined]  # set in TarFile.__init__, missing from the stubs


def copy_member(source: IO[bytes], sink: Callable[[bytes], object], size: int) -> int:
    """Feed ``size`` bytes of a member to ``sink`` in chunks; returns the bytes actually read."""
    done = 0
    while done < size:
        block = source.read(min(CHUNK, size - done))
        if not block:
            break
        sink(block)
        done += len(block)
    return done
