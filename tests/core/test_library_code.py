"""Issue 12 (libraries): well-kept libraries instead of hand-written code.

* Ed25519 checks in legacy_readers/identity.py use ``cryptography``: no curve arithmetic or signing code of our own.
* Whole-file hashes stream through ``hashlib.file_digest``.
* ISO-8601 is parsed in one place (statekit.values.parse_iso): the manifest's times too.

Fails on 308a7ed: identity.py carried a pure-Python RFC 8032 implementation, sha256_file looped over
blocks in Python, and backup/manifest.py had its own strptime parser.
"""

from __future__ import annotations

import ast
import hashlib
from pathlib import Path

from helpers import REPO

from statekit.fsutil import sha256_file
from statekit.legacy_readers import identity


def _source(rel: str) -> str:
    return (REPO / rel).read_text(encoding="utf-8")


def test_identity_uses_cryptography_and_no_curve_code() -> None:
    text = _source("legacy_readers/identity.py")
    tree = ast.parse(text)
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    assert any(name.startswith("cryptography.hazmat.primitives.asymmetric.ed25519") for name in imported)
    assert "2**255" not in text and "pow(" not in text and "_recover_x" not in text
    # RFC 8032 test 1: the library gives the known public key and signature
    seed = bytes.fromhex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
    public = identity.ed25519_public_key(seed)
    assert public.hex() == "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
    signature = identity.ed25519_sign(seed, b"")
    assert signature.hex().startswith("e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e06522490155")
    assert identity.ed25519_verify(public, b"", signature) and not identity.ed25519_verify(public, b"x", signature)


def test_sha256_file_streams_through_hashlib_file_digest(tmp_path: Path) -> None:
    """A file of CHUNK or more streams through hashlib's own loop; a smaller one is one read (tests/core/test_small_reads.py)."""
    tree = ast.parse(_source("statekit/fsutil.py"))

    def calls_of(name: str) -> set[str]:
        [func] = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name]
        return {ast.unparse(n.func) for n in ast.walk(func) if isinstance(n, ast.Call)}

    assert "_sha256_rest" in calls_of("sha256_file") and "_sha256_rest" in calls_of("protect_and_hash")
    assert "hashlib.file_digest" in calls_of("_sha256_rest")
    data = b"statekit\n" * 200_000  # 1.8 MB: the hashlib.file_digest branch
    path = tmp_path / "f"
    path.write_bytes(data)
    assert sha256_file(path) == hashlib.sha256(data).hexdigest()


def test_manifest_times_use_the_one_iso_parser() -> None:
    tree = ast.parse(_source("backup/manifest.py"))
    [func] = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "_parse_iso_utc"]
    calls = {ast.unparse(n.func) for n in ast.walk(func) if isinstance(n, ast.Call)}
    assert "parse_iso" in calls and not any(c.endswith("strptime") for c in calls)
