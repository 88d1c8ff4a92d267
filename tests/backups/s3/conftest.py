"""A real S3 HTTP endpoint for the offsite tests: moto's server mode on 127.0.0.1, on a free port, once per session.

Never a mocked client: statekit's boto3 client talks HTTP to the server through ``AWS_ENDPOINT_URL``, exactly as it
would to MinIO or R2. Each test gets its own bucket and the AWS environment pointing at the server.
"""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

boto3 = pytest.importorskip("boto3")
moto_server = pytest.importorskip("moto.server")

_REPO = str(Path(__file__).resolve().parents[3])
if _REPO not in sys.path:
    sys.path.append(_REPO)

from backup_helpers import corpus, state_tree  # noqa: E402,F401  (pytest fixtures)
from s3_helpers import S3Server, free_port  # noqa: E402

AWS_VARS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_REGION",
            "AWS_ENDPOINT_URL", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE")
_bucket_numbers = itertools.count()


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=free_port(), verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield S3Server(f"http://{host}:{port}")
    finally:
        server.stop()


@pytest.fixture
def s3_env(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> S3Server:
    for name in AWS_VARS:
        monkeypatch.delenv(name, raising=False)
    for name, value in s3_server.env().items():
        monkeypatch.setenv(name, value)
    return s3_server


@pytest.fixture
def bucket(s3_env: S3Server) -> str:
    name = f"statekit-test-{os.getpid()}-{next(_bucket_numbers)}"
    s3_env.client().create_bucket(Bucket=name)  # type: ignore[attr-defined]
    return name
