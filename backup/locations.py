"""Where archives live: a local path or an ``s3://bucket/prefix`` location (parsing only, no I/O).

Offsite objects are keyed ``<prefix>/<install_id>/openclaw-backup-<UTC>.tar.zst[.age]``: one bucket holds
many installs, each under its own install id (``statekit.install``), and the name carries the time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from statekit.backup import manifest as mf
from statekit.backup.encryption import AGE_SUFFIX
from statekit.errors import UsageError

S3_SCHEME = "s3://"
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]$")
_INSTALL_ID = re.compile(r"^[0-9a-f]{32}$")


FETCH_SCRATCH_PREFIX = ".statekit-fetch-"  # the private dir holding an object fetched to be restored


def is_remote(text: object) -> bool:
    return isinstance(text, str) and text.startswith(S3_SCHEME)


@dataclass(frozen=True)
class S3Location:
    bucket: str
    prefix: str = ""  # without leading or trailing "/"

    @property
    def url(self) -> str:
        return f"{S3_SCHEME}{self.bucket}/{self.prefix}".rstrip("/")

    def key(self, *parts: str) -> str:
        return "/".join(p for p in (self.prefix, *parts) if p)

    def install_prefix(self, install_id: str | None) -> str:
        """The key prefix listing one install (``install_id``) or every install (None)."""
        return self.key(install_id or "") + "/" if (self.prefix or install_id) else ""

    def url_of(self, key: str) -> str:
        return f"{S3_SCHEME}{self.bucket}/{key}"


def parse_s3(text: str) -> S3Location:
    """``s3://bucket[/prefix]``; a malformed one is a usage error naming it."""
    if not is_remote(text):
        raise UsageError(f"{text}: not an s3://bucket/prefix location")
    bucket, _, prefix = text[len(S3_SCHEME) :].partition("/")
    if not _BUCKET.match(bucket):
        raise UsageError(f"{text}: {bucket!r} is not a valid S3 bucket name")
    prefix = prefix.strip("/")
    if "//" in prefix or any(part in (".", "..") for part in prefix.split("/")):
        raise UsageError(f"{text}: the prefix must not contain empty, '.' or '..' parts")
    return S3Location(bucket, prefix)


@dataclass(frozen=True)
class ArchiveKey:
    """What an offsite object's key says: install, creation time, encrypted or not."""

    key: str
    install_id: str
    name: str
    created: datetime
    encrypted: bool


def parse_archive_key(key: str) -> ArchiveKey | None:
    """``.../<install_id>/openclaw-backup-<UTC>.tar.zst[.age]``, or None for any other object."""
    head, _, name = key.rpartition("/")
    install_id = head.rpartition("/")[2]
    if not _INSTALL_ID.match(install_id):
        return None
    encrypted = name.endswith(AGE_SUFFIX)
    created = mf.parse_archive_time(name.removesuffix(AGE_SUFFIX))
    if created is None:
        return None
    return ArchiveKey(key, install_id, name, created, encrypted)
