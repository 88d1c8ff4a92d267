"""``s3://`` parsing and offsite key names (backup/locations.py), and listing pagination on the real server.

New in issue 14: none of this existed at 308a7ed (the imports fail there).
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from statekit.backup import remote
from statekit.backup.locations import S3Location, is_remote, parse_archive_key, parse_s3
from statekit.errors import UsageError

INSTALL = "0123456789abcdef" * 2


def test_parse_s3_bucket_and_prefix():
    assert parse_s3("s3://my-bucket") == S3Location("my-bucket", "")
    assert parse_s3("s3://my-bucket/a/b/") == S3Location("my-bucket", "a/b")
    assert parse_s3("s3://my-bucket/a/b").key(INSTALL, "x") == f"a/b/{INSTALL}/x"
    assert S3Location("b0b", "").install_prefix(None) == "" and S3Location("b0b", "p").install_prefix(INSTALL) == f"p/{INSTALL}/"
    assert is_remote("s3://x") and not is_remote("/tmp/s3://x") and not is_remote(None)


@pytest.mark.parametrize("bad", ["s3://", "s3://A_B", "s3://ok-bucket/a//b", "s3://ok-bucket/../x", "/local/path"])
def test_malformed_locations_are_usage_errors(bad):
    with pytest.raises(UsageError):
        parse_s3(bad)


def test_archive_keys_say_install_time_and_encryption():
    key = parse_archive_key(f"fleet/{INSTALL}/openclaw-backup-20261201T030000Z.tar.zst.age")
    assert key is not None and key.install_id == INSTALL and key.encrypted
    assert key.created == datetime(2026, 12, 1, 3, 0, tzinfo=timezone.utc)
    assert parse_archive_key(f"{INSTALL}/openclaw-backup-20261201T030000Z.tar.zst") is not None
    for other in (f"fleet/{INSTALL}/notes.txt", "fleet/not-an-id/openclaw-backup-20261201T030000Z.tar.zst",
                  f"fleet/{INSTALL}/openclaw-backup-2026.tar.zst"):
        assert parse_archive_key(other) is None


def test_listing_follows_every_page(bucket, s3_env):
    client = s3_env.client()
    names = [f"offsite/{INSTALL}/openclaw-backup-2026010{d}T000000Z.tar.zst" for d in range(1, 8)]
    for key in names:
        client.put_object(Bucket=bucket, Key=key, Body=b"x")  # type: ignore[attr-defined]
    client.put_object(Bucket=bucket, Key=f"offsite/{INSTALL}/README", Body=b"not an archive")  # type: ignore[attr-defined]
    listing = remote.list_remote(remote.make_client(), S3Location(bucket, "offsite"), INSTALL, page_size=3)
    assert [a.key.key for a in listing.archives] == names[::-1]
    assert listing.requests >= 3 + 1  # three pages of objects, one of uploads
