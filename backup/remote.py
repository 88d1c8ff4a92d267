"""Offsite archives on S3-compatible object storage (boto3; AWS S3, MinIO, R2, B2, Wasabi).

* **Create**: the archive is built and verified locally exactly as ``backup create`` does (in a private
  staging dir beside the state dir), then uploaded as one multipart upload: parts of :data:`PART_SIZE`
  read in order, at most :data:`WORKERS` in flight (memory stays flat), each with its SHA-256 checksum.
  Completing the upload is the publish: an interrupted run leaves only an incomplete upload, which no
  listing shows and ``prune`` aborts. After completion the object's size and S3's SHA-256 checksum (the
  checksum of the part checksums) are compared with what was sent.
* **Keys**: ``<prefix>/<install_id>/openclaw-backup-<UTC>.tar.zst[.age]`` (:mod:`backup.locations`). The
  object's user metadata (``x-amz-meta-statekit-*``: install, created, SHA-256 of the object, asset count,
  encrypted) holds no secret and is read with a HEAD, without downloading or decrypting.
* **Verify**: one forward pass over the ``GetObject`` body (decrypted on the fly when it is age-encrypted):
  the verifier of ``statekit_format`` reads it as it arrives, with no copy of the archive on disk; the bytes
  received are then compared with the object's size and recorded SHA-256.
* **Restore**: the object streams into a private scratch copy (decrypted on the fly when it is age-encrypted:
  the ciphertext never lands on disk), its size and SHA-256 are compared with the recorded ones, and the local
  restore (which verifies the copy before writing anything) runs on that copy.
* **Configuration**: boto3's standard chain (``AWS_ACCESS_KEY_ID``..., ``AWS_PROFILE``, ``AWS_ENDPOINT_URL``);
  errors say which bucket and what failed, never a credential.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import boto3
import botocore.exceptions
from botocore.config import Config
from s3transfer.utils import ReadFileChunk

from statekit.backup import manifest as mf
from statekit.backup.create import BackupResult, create_backup
from statekit.backup.decrypt_reader import decrypting_reader
from statekit.backup.encryption import AGE_SUFFIX, Identities, Recipients, decrypt_stream, require_identities
from statekit.backup.locations import FETCH_SCRATCH_PREFIX, ArchiveKey, S3Location, parse_archive_key
from statekit.backup.passphrase import KEY_SUFFIX, WRAPPED_KEY_LIMIT, is_key_name, key_path
from statekit.backup.restore import RestoreResult, restore_archive
from statekit.backup.runs import mark_interrupted, record_in_state_dir
from statekit.backup.retention import ArchiveInfo, PruneDecision, plan_prune
from statekit.backup.verify import VerifyReport, verify_stream
from statekit.errors import StatekitError, UsageError, VerificationError
from statekit.fsutil import CHUNK, atomic_write_bytes, create_file, open_regular_file, read_regular_file
from statekit.install import ensure_install_id, read_install_id
from statekit.seams import checkpoint
from statekit.states import BackupRunStatus

PART_SIZE = 8 << 20  # boto3's own multipart_chunksize default
WORKERS = 8
META = "statekit-"  # x-amz-meta-statekit-*
MAX_PARTS = 10_000
DELETE_BATCH = 1000  # DeleteObjects' limit
STALE_UPLOAD_HOURS = 24.0
STAGING_PREFIX = ".statekit-offsite-"
RUN_ID_FILE = "run-id"
RUN_ID_LIMIT = 4096
REMOTE_PLACEHOLDER = Path("/.statekit-remote")  # stands for the URL in a report (the CLI shows the URL there)


class RemoteError(StatekitError):
    """The object store refused or could not be reached (one line, no credentials)."""


_AUTH_CODES = {"InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "ExpiredToken", "InvalidToken",
               "AuthorizationHeaderMalformed", "InvalidClientTokenId", "403"}


def describe(exc: BaseException, where: str) -> RemoteError:
    """One line for a boto/botocore failure, naming the bucket or object and the cause (never a secret)."""
    if isinstance(exc, botocore.exceptions.NoCredentialsError):
        return RemoteError(f"{where}: no AWS credentials found (set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or AWS_PROFILE)")
    if isinstance(exc, botocore.exceptions.EndpointConnectionError):
        return RemoteError(f"{where}: cannot reach the S3 endpoint ({exc.kwargs.get('endpoint_url', '?')})")
    if isinstance(exc, botocore.exceptions.ClientError):
        code = str(exc.response.get("Error", {}).get("Code", "?"))
        if code in ("NoSuchBucket",) or (code == "404" and "/" not in where[5:]):
            return RemoteError(f"{where}: the bucket does not exist")
        if code in ("NoSuchKey", "404"):
            return RemoteError(f"{where}: no such object")
        if code in _AUTH_CODES:
            return RemoteError(f"{where}: the S3 credentials were rejected ({code}); check AWS_ACCESS_KEY_ID/AWS_PROFILE")
        return RemoteError(f"{where}: S3 request failed ({code})")
    if isinstance(exc, botocore.exceptions.BotoCoreError):
        return RemoteError(f"{where}: S3 request failed ({type(exc).__name__})")
    return RemoteError(f"{where}: {exc}")


def make_client() -> Any:
    """An S3 client from the standard AWS configuration chain (``AWS_ENDPOINT_URL`` included)."""
    config = Config(retries={"max_attempts": 5, "mode": "standard"}, max_pool_connections=WORKERS * 2,
                    request_checksum_calculation="when_required", response_checksum_validation="when_required")
    return boto3.session.Session().client("s3", config=config)


@contextmanager
def _s3_errors(where: str) -> Iterator[None]:
    try:
        yield
    except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as exc:
        raise describe(exc, where) from None


# --------------------------------------------------------------------------- upload


def _b64(digest: bytes) -> str:
    return base64.b64encode(digest).decode("ascii")


@dataclass
class Uploaded:
    key: str
    size: int
    sha256: str  # hex, of the whole object
    parts: int
    requests: int = 0


def upload_file(client: Any, loc: S3Location, key: str, path: Path, metadata: dict[str, str], *,
                part_size: int = PART_SIZE, workers: int = WORKERS) -> Uploaded:
    """One multipart upload of ``path`` (see module doc); aborted on any failure in this process.

    One read pass hashes the file (the object's SHA-256 for its metadata, and each part's); then each worker streams
    its own byte range to the server, so no part is ever held in memory whole: memory stays flat whatever the size."""
    where = loc.url_of(key)
    size = path.stat().st_size
    part_size = max(part_size, -(-size // MAX_PARTS))  # S3 allows 10,000 parts
    whole, part_digests = hash_parts(path, part_size)
    metadata = {**metadata, f"{META}sha256": whole}
    ranges = [(number, offset, min(part_size, size - offset)) for number, offset in enumerate(range(0, max(size, 1), part_size), 1)]
    if len(part_digests) != len(ranges):
        raise StatekitError(f"{path}: changed size while being uploaded")
    with _s3_errors(where):
        upload_id = client.create_multipart_upload(Bucket=loc.bucket, Key=key, Metadata=metadata,
                                                   ChecksumAlgorithm="SHA256")["UploadId"]
    done: list[dict[str, Any]] = []
    try:
        with _s3_errors(where), ThreadPoolExecutor(max_workers=workers) as pool:
            pending: list[Future[dict[str, Any]]] = []
            for number, offset, length in ranges:
                pending.append(pool.submit(_put_part, client, loc.bucket, key, upload_id, path, number, offset, length,
                                           _b64(part_digests[number - 1])))
                while len(pending) >= 2 * workers:  # keep the queue short: an interrupted run sends little more
                    done.append(pending.pop(0).result())
                    checkpoint("s3-part-uploaded")
            for future in pending:
                done.append(future.result())
                checkpoint("s3-part-uploaded")
            checkpoint("s3-upload-parts-sent")
            client.complete_multipart_upload(
                Bucket=loc.bucket, Key=key, UploadId=upload_id,
                MultipartUpload={"Parts": sorted(done, key=lambda p: int(p["PartNumber"]))})
    except BaseException:
        try:
            client.abort_multipart_upload(Bucket=loc.bucket, Key=key, UploadId=upload_id)
        except Exception:  # best effort: prune aborts what is left
            pass
        raise
    checkpoint("s3-upload-completed")
    result = Uploaded(key, size, metadata[f"{META}sha256"], len(ranges), requests=len(ranges) + 3)
    try:
        _check_uploaded(client, loc, result, part_digests)
    except VerificationError:
        with _s3_errors(where):
            client.delete_object(Bucket=loc.bucket, Key=key)  # never leave a published archive that differs from the sent one
        raise
    return result


def hash_parts(path: Path, part_size: int) -> tuple[str, list[bytes]]:
    """The file's SHA-256 (hex) and the SHA-256 of each ``part_size`` range, in one read pass."""
    whole = hashlib.sha256()
    parts: list[bytes] = []
    with open_regular_file(path) as handle:  # the archive statekit wrote (never a planted symlink, FIFO or device)
        while True:
            part = hashlib.sha256()
            left = part_size
            while left > 0 and (block := handle.read(min(CHUNK, left))):
                whole.update(block)
                part.update(block)
                left -= len(block)
            if left == part_size and parts:
                break
            parts.append(part.digest())
            if left > 0:
                break
    return whole.hexdigest(), parts


def _put_part(client: Any, bucket: str, key: str, upload_id: str, path: Path, number: int, offset: int, length: int,
              checksum: str) -> dict[str, Any]:
    with ReadFileChunk.from_filename(str(path), offset, length, enable_callbacks=False) as body:
        response = client.upload_part(Bucket=bucket, Key=key, UploadId=upload_id, PartNumber=number, Body=body,
                                      ContentLength=length, ChecksumAlgorithm="SHA256", ChecksumSHA256=checksum)
    return {"PartNumber": number, "ETag": response["ETag"], "ChecksumSHA256": checksum}


def composite_sha256(part_digests: list[bytes]) -> str:
    """S3's checksum of a multipart object: SHA-256 of the concatenated part SHA-256s, then ``-<parts>``."""
    return f"{_b64(hashlib.sha256(b''.join(part_digests)).digest())}-{len(part_digests)}"


def _check_uploaded(client: Any, loc: S3Location, up: Uploaded, part_digests: list[bytes]) -> None:
    """The published object has the size and SHA-256 that were sent (S3's checksum, else a re-read)."""
    where = loc.url_of(up.key)
    with _s3_errors(where):
        head = client.head_object(Bucket=loc.bucket, Key=up.key, ChecksumMode="ENABLED")
    up.requests += 1
    if int(head["ContentLength"]) != up.size:
        raise VerificationError(f"{where}: uploaded object has {head['ContentLength']} bytes, {up.size} were sent")
    stored = head.get("ChecksumSHA256")
    if stored:
        composite = composite_sha256(part_digests)
        # AWS reports ``<b64>-<parts>``; some S3-compatible servers leave the part count off
        if stored not in (composite, composite.rpartition("-")[0], _b64(bytes.fromhex(up.sha256))):
            raise VerificationError(f"{where}: uploaded object's SHA-256 checksum differs from what was sent")
        return
    digest = hashlib.sha256()
    with _s3_errors(where):
        body = client.get_object(Bucket=loc.bucket, Key=up.key)["Body"]
        for block in iter(lambda: body.read(CHUNK), b""):
            digest.update(block)
    up.requests += 1
    if digest.hexdigest() != up.sha256:
        raise VerificationError(f"{where}: uploaded object's bytes differ from what was sent (re-read)")


def check_bucket(client: Any, loc: S3Location) -> None:
    """Fail early (one line) when the bucket is missing or the credentials are refused."""
    with _s3_errors(f"s3://{loc.bucket}"):
        client.head_bucket(Bucket=loc.bucket)


def archive_metadata(result: BackupResult, install_id: str, encrypted: bool) -> dict[str, str]:
    totals = result.manifest.get("totals") or {}
    return {
        f"{META}install-id": install_id,
        f"{META}created": str(result.manifest.get("created_at", "")),
        f"{META}assets": str(totals.get("assets", "")),
        f"{META}bytes": str(totals.get("bytes", "")),
        f"{META}encrypted": "true" if encrypted else "false",
        f"{META}run-id": result.run_id,
    }


@dataclass
class RemoteCreate:
    result: BackupResult
    url: str
    uploaded: Uploaded | None


def create_remote(state_dir: Path, url_loc: S3Location, *, recipients: Recipients | None = None,
                  client: Any = None, dry_run: bool = False, **options: Any) -> RemoteCreate:
    """``backup create --to s3://...``: build + verify locally (staging beside the state dir), upload, check."""
    state_dir = Path(os.path.abspath(state_dir))
    if options.get("fmt", "statekit") != "statekit":
        raise UsageError("--to s3:// takes statekit archives (.tar.zst[.age]), not --format openclaw")
    client = client or make_client()
    check_bucket(client, url_loc)
    install_id = (read_install_id(state_dir) or "<install-id>") if dry_run else ensure_install_id(state_dir)
    remove_dead_staging(state_dir.parent, state_dir)
    staging = Path(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{os.getpid()}-", dir=state_dir.parent))
    try:
        result = create_backup(state_dir, staging, recipients=recipients, dry_run=dry_run, **options)
        if not dry_run:
            atomic_write_bytes(staging / RUN_ID_FILE, result.run_id.encode("utf-8"))  # for the next run, should this one be killed
        if dry_run:
            assert result.planned_path is not None
            return RemoteCreate(result, url_loc.url_of(url_loc.key(install_id, result.planned_path.name)), None)
        try:
            uploaded = send_archive(client, url_loc, install_id, result)
        except BaseException as exc:
            # the run's ``ok`` row (written before the snapshots, as for a local backup) becomes ``failed``
            if options.get("record", True):
                record_in_state_dir(state_dir, result, BackupRunStatus.FAILED,
                                    error=str(exc) if isinstance(exc, StatekitError) else type(exc).__name__)
            raise
        return RemoteCreate(result, url_loc.url_of(uploaded.key), uploaded)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def send_archive(client: Any, loc: S3Location, install_id: str, result: BackupResult) -> Uploaded:
    """Upload the finished local archive of ``result`` under ``<prefix>/<install_id>/<name>`` (never over an existing one)."""
    assert result.archive_path is not None
    key = loc.key(install_id, result.archive_path.name)
    if _exists(client, loc, key):
        raise RemoteError(f"refusing to overwrite existing backup archive {loc.url_of(key)}")
    encrypted = result.archive_path.name.endswith(AGE_SUFFIX)
    metadata = archive_metadata(result, install_id, encrypted)
    wrapped = key_path(result.archive_path)
    if not wrapped.exists():
        return upload_file(client, loc, key, result.archive_path, metadata)
    send_wrapped_key(client, loc, key + KEY_SUFFIX, wrapped, metadata)  # before the archive: never an archive without its key
    try:
        return upload_file(client, loc, key, result.archive_path, {**metadata, f"{META}key": "passphrase"})
    except BaseException:
        try:
            client.delete_object(Bucket=loc.bucket, Key=key + KEY_SUFFIX)
        except Exception:  # best effort: prune removes a key whose archive never came
            pass
        raise


def send_wrapped_key(client: Any, loc: S3Location, key: str, path: Path, metadata: dict[str, str]) -> None:
    """The passphrase-wrapped key of an archive, as one object beside it (a few hundred bytes, with its SHA-256)."""
    data = read_regular_file(path, limit=WRAPPED_KEY_LIMIT)
    with _s3_errors(loc.url_of(key)):
        client.put_object(Bucket=loc.bucket, Key=key, Body=data, ChecksumSHA256=_b64(hashlib.sha256(data).digest()),
                          Metadata={k: v for k, v in metadata.items() if k in (f"{META}install-id", f"{META}created")})


def copy_offsite(state_dir: Path, url: str, result: BackupResult) -> str:
    """A copy of an already published local archive (``migrate --backup-to``): the local one stays for ``undo``."""
    from statekit.backup.locations import parse_s3

    loc = parse_s3(url)
    client = make_client()
    check_bucket(client, loc)
    return loc.url_of(send_archive(client, loc, ensure_install_id(state_dir), result).key)


def _exists(client: Any, loc: S3Location, key: str) -> bool:
    try:
        client.head_object(Bucket=loc.bucket, Key=key)
    except botocore.exceptions.ClientError as exc:
        if str(exc.response.get("Error", {}).get("Code")) in ("404", "NoSuchKey", "NotFound"):
            return False
        raise describe(exc, loc.url_of(key)) from None
    return True


def remove_dead_staging(parent: Path, state_dir: Path) -> None:
    """Remove the staging dirs of offsite runs that were killed (their pid is gone: a clear archive may be inside),
    and mark their ``ok`` rows in ``state_dir`` failed (a run id of another install beside it matches no row)."""
    interrupted = []
    for path in parent.glob(f"{STAGING_PREFIX}*"):
        pid = path.name[len(STAGING_PREFIX) :].split("-", 1)[0]
        if not pid.isdigit() or not path.is_dir() or path.is_symlink():
            continue
        try:
            os.kill(int(pid), 0)
            continue  # still running (or another user's: not ours to remove)
        except ProcessLookupError:
            try:
                with open_regular_file(path / RUN_ID_FILE) as handle:  # no symlink, FIFO or device; a run id is 32 bytes
                    interrupted.append(handle.read(RUN_ID_LIMIT).decode("utf-8").strip())
            except (OSError, UnicodeDecodeError):
                pass
            shutil.rmtree(path, ignore_errors=True)
        except PermissionError:
            continue
    mark_interrupted(state_dir, [run_id for run_id in interrupted if len(run_id) == 32])


# --------------------------------------------------------------------------- list / prune


@dataclass
class RemoteArchive:
    key: ArchiveKey
    size: int
    url: str
    metadata: dict[str, str] = field(default_factory=dict)

    def info(self) -> ArchiveInfo:
        """The local retention's view (the object name as the path): published objects were verified."""
        assets = self.metadata.get(f"{META}assets", "")
        return ArchiveInfo(Path(self.key.name), self.key.created, self.size, int(assets) if assets.isdigit() else None, True)

    def to_json(self) -> dict[str, Any]:
        return {"archive": self.url, "install_id": self.key.install_id, "created_at": mf.iso_utc(self.key.created),
                "size": self.size, "encrypted": self.key.encrypted,
                "sha256": self.metadata.get(f"{META}sha256"), "assets": self.metadata.get(f"{META}assets")}


@dataclass
class Listing:
    archives: list[RemoteArchive]
    incomplete: list[dict[str, Any]]  # incomplete multipart uploads (Key, UploadId, Initiated)
    requests: int = 0
    wrapped_keys: dict[str, datetime] = field(default_factory=dict)  # passphrase mode's ``<archive>.key`` objects: LastModified


def list_remote(client: Any, loc: S3Location, install_id: str | None, *, heads: bool = False, page_size: int = 1000) -> Listing:
    """Archives under ``loc`` of one install (or all when ``install_id`` is None), newest first; paginated.

    ``heads`` also reads each object's statekit metadata (one HEAD each)."""
    prefix = loc.install_prefix(install_id)
    listing = Listing([], [])
    with _s3_errors(loc.url):
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=loc.bucket, Prefix=prefix,
                                                                       PaginationConfig={"PageSize": page_size}):
            listing.requests += 1
            for item in page.get("Contents", []):
                parsed = parse_archive_key(item["Key"])
                if parsed is not None and parsed.key[len(prefix):].count("/") == (0 if install_id else 1):
                    listing.archives.append(RemoteArchive(parsed, int(item["Size"]), loc.url_of(parsed.key)))
                elif is_key_name(item["Key"]) and (of := parse_archive_key(item["Key"].removesuffix(KEY_SUFFIX))) is not None \
                        and of.key[len(prefix):].count("/") == (0 if install_id else 1):
                    listing.wrapped_keys[item["Key"]] = item["LastModified"]
        for page in client.get_paginator("list_multipart_uploads").paginate(Bucket=loc.bucket, Prefix=prefix):
            listing.requests += 1
            listing.incomplete += page.get("Uploads", [])
        if heads:
            for archive in listing.archives:
                head = client.head_object(Bucket=loc.bucket, Key=archive.key.key)
                archive.metadata = {k.lower(): v for k, v in head.get("Metadata", {}).items()}
                listing.requests += 1
    listing.archives.sort(key=lambda a: (a.key.created, a.key.name), reverse=True)
    return listing


@dataclass
class RemotePrune:
    decisions: list[tuple[RemoteArchive, PruneDecision]]
    aborted: list[str]
    requests: int
    orphan_keys: list[str] = field(default_factory=list)  # wrapped keys whose archive never came, removed (or, dry run, to remove)


def prune_remote(client: Any, loc: S3Location, install_id: str | None, rules: dict[str, Any], *, dry_run: bool = False,
                 stale_hours: float = STALE_UPLOAD_HOURS, now: datetime | None = None) -> RemotePrune:
    """:func:`plan_prune` per install (each install keeps its own newest archives); deletes in batches of 1,000;
    aborts incomplete uploads started more than ``stale_hours`` ago."""
    plan_prune([], **rules)  # reject a call without rules before any request
    listing = list_remote(client, loc, install_id)
    requests = listing.requests
    by_install: dict[str, list[RemoteArchive]] = {}
    for archive in listing.archives:
        by_install.setdefault(archive.key.install_id, []).append(archive)
    decisions: list[tuple[RemoteArchive, PruneDecision]] = []
    for group in by_install.values():
        by_info = [(a, a.info()) for a in group]
        infos = {id(info): a for a, info in by_info}
        for decision in plan_prune([info for _a, info in by_info], **rules):
            decisions.append((infos[id(decision.archive)], decision))
    doomed = [a.key.key for a, d in decisions if not d.keep]
    cutoff = (now or datetime.now(timezone.utc)) - timedelta(hours=stale_hours)
    stale = [u for u in listing.incomplete if u["Initiated"] <= cutoff]
    # passphrase mode: a wrapped key goes with its archive; one whose archive never came (a killed upload) once stale
    going, archives = set(doomed), {a.key.key for a in listing.archives}
    orphans = [k for k, t in sorted(listing.wrapped_keys.items()) if k.removesuffix(KEY_SUFFIX) not in archives and t <= cutoff]
    doomed += [k for k in sorted(listing.wrapped_keys) if k.removesuffix(KEY_SUFFIX) in going] + orphans
    aborted: list[str] = []
    if not dry_run:
        with _s3_errors(loc.url):
            for start in range(0, len(doomed), DELETE_BATCH):
                batch = doomed[start : start + DELETE_BATCH]
                response = client.delete_objects(Bucket=loc.bucket, Delete={"Objects": [{"Key": k} for k in batch], "Quiet": True})
                requests += 1
                if response.get("Errors"):
                    first = response["Errors"][0]
                    raise RemoteError(f"{loc.url_of(first['Key'])}: delete failed ({first.get('Code')})")
            for upload in stale:
                client.abort_multipart_upload(Bucket=loc.bucket, Key=upload["Key"], UploadId=upload["UploadId"])
                requests += 1
                aborted.append(loc.url_of(upload["Key"]))
    else:
        aborted = [loc.url_of(u["Key"]) for u in stale]
    return RemotePrune(decisions, aborted, requests, [loc.url_of(k) for k in orphans])


# --------------------------------------------------------------------------- download: verify / restore


def split_url(url: str) -> tuple[S3Location, str]:
    from statekit.backup.locations import parse_s3

    loc = parse_s3(url)
    if not loc.prefix:
        raise StatekitError(f"{url}: name an archive object (s3://bucket/prefix/<install>/openclaw-backup-...)")
    return S3Location(loc.bucket), loc.prefix


class _HashingReader:
    """An object body, hashed and counted as it is read; a failure of the connection is kept in :attr:`error`
    (whoever reads through it, pyrage included, may turn it into something else: the caller raises this one)."""

    def __init__(self, raw: Any) -> None:
        self._raw = raw
        self.digest = hashlib.sha256()
        self.size = 0
        self.error: BaseException | None = None

    def read(self, n: int = -1) -> bytes:
        try:
            data: bytes = self._raw.read(CHUNK if n is None or n < 0 else n)
        except Exception as exc:
            self.error = exc
            raise
        self.digest.update(data)
        self.size += len(data)
        return data

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


@contextmanager
def fetched(url: str, identities: Identities | None, *, client: Any = None, parent: Path | None = None) -> Iterator[Path]:
    """A private scratch copy of the archive object at ``url`` (plaintext: an ``.age`` object is decrypted while it
    streams in), after checking the bytes received against the object's size and recorded SHA-256."""
    loc, key = split_url(url)
    encrypted = key.endswith(AGE_SUFFIX)
    keys = require_identities(url, identities) if encrypted else None
    client = client or make_client()
    scratch = Path(tempfile.mkdtemp(prefix=FETCH_SCRATCH_PREFIX, dir=parent))
    try:
        name = key.rpartition("/")[2]
        plain = scratch / (name.removesuffix(AGE_SUFFIX) if encrypted else name)
        with _s3_errors(url):
            response = client.get_object(Bucket=loc.bucket, Key=key)
            body = _HashingReader(response["Body"])
            with os.fdopen(create_file(plain), "wb") as out:
                if keys is not None:
                    decrypt_stream(body, out, keys, url)  # type: ignore[arg-type]
                else:
                    shutil.copyfileobj(body, out, CHUNK)
        received = _received_problem(url, response, body)
        if received:
            raise VerificationError(received)
        yield plain
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _received_problem(url: str, response: dict[str, Any], body: _HashingReader) -> str | None:
    """The bytes received against the object's size and the SHA-256 recorded at upload (None: they match)."""
    if body.size != int(response["ContentLength"]):
        return f"{url}: received {body.size} of {response['ContentLength']} bytes"
    recorded = {k.lower(): v for k, v in response.get("Metadata", {}).items()}.get(f"{META}sha256")
    if recorded and recorded != body.digest.hexdigest():
        return f"{url}: object bytes differ from the SHA-256 recorded at upload"
    return None


def verify_remote(url: str, identities: Identities | None, *, client: Any = None) -> VerifyReport:
    """Verify an offsite archive in one forward pass over the ``GetObject`` body (an ``.age`` object decrypted on
    the fly): no copy of the archive is written anywhere (a database member is copied to a private scratch file
    for its ``integrity_check``). The bytes received must also match the object's size and recorded SHA-256."""
    loc, key = split_url(url)
    encrypted = key.endswith(AGE_SUFFIX)
    keys = require_identities(url, identities) if encrypted else None
    client = client or make_client()
    shown = REMOTE_PLACEHOLDER / key.rpartition("/")[2].removesuffix(AGE_SUFFIX)
    with _s3_errors(url):
        response = client.get_object(Bucket=loc.bucket, Key=key)
        body = _HashingReader(response["Body"])
        try:
            if keys is not None:
                with decrypting_reader(body, keys, url) as plain:
                    report = verify_stream(shown, plain)
                report.notes.append("age-encrypted archive: decrypted and authenticated")
            else:
                report = verify_stream(shown, body)
        except VerificationError as exc:
            if body.error is not None:
                raise body.error from None
            return VerifyReport(path=REMOTE_PLACEHOLDER / url.rpartition("/")[2], format="remote", problems=[str(exc)])
        except BaseException as exc:
            if body.error is not None:
                raise body.error from None
            if isinstance(exc, StatekitError):  # a scratch failure: name the object, not its placeholder
                exc.message = exc.message.replace(str(shown), url)
            raise
        if body.error is not None:
            raise body.error
    received = _received_problem(url, response, body)
    if received:
        return VerifyReport(path=REMOTE_PLACEHOLDER / url.rpartition("/")[2], format="remote", problems=[received])
    report.problems = [p.replace(str(shown), url) for p in report.problems]
    report.ok = not report.problems
    report.notes.append(f"streamed from {url} (no local copy)")
    return report


def restore_remote(url: str, identities: Identities | None, *, client: Any = None, **options: Any) -> RestoreResult:
    """Restore an offsite archive from its scratch copy; ``result.archive`` is the copy's path (callers show ``url``)."""
    with fetched(url, identities, client=client) as plain:
        try:
            return restore_archive(plain, origin=url, **options)
        except StatekitError as exc:
            exc.message = exc.message.replace(str(plain), url)
            raise
