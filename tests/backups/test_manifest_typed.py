"""The manifest is read back through one typed constructor (Manifest.parse / from_json), never as a raw dict."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from statekit.backup.create import create_backup
from statekit.backup.manifest import Asset, Manifest, ManifestError, ManifestSummary, encode
from statekit.backup.retention import read_manifest_head, read_manifest_summary
from statekit.backup.verify import verify_archive

ROOT = Path(__file__).resolve().parents[2]
# Modules that read archives back: no subscript or .get() on a ``manifest``, no schema check of their own.
READERS = ["backup/verify.py", "backup/checks.py", "backup/statekit_format.py", "backup/restore.py", "backup/retention.py",
]  # (statekit/cli/backup_cmd.py renders BackupResult.manifest: the document create wrote, not a read-back)


def test_written_manifest_reads_back_typed_and_round_trips(state_tree, tmp_path: Path) -> None:
    result = create_backup(state_tree.root, tmp_path / "out", record=False)
    manifest = Manifest.parse(encode(result.manifest))
    assert manifest.to_json() == result.manifest
    assert all(isinstance(a, Asset) for a in manifest.assets) and manifest.declared_totals == result.manifest["totals"]
    assert manifest.created_at_text == result.manifest["created_at"] and manifest.created_at.tzinfo is not None
    report = verify_archive(result.archive_path)
    assert report.ok and isinstance(report.manifest, Manifest)
    assert report.manifest.to_json() == result.manifest
    head = read_manifest_head(result.archive_path)
    assert head is not None and [a.id for a in head.assets] == [a["id"] for a in result.manifest["assets"]]
    summary = read_manifest_summary(result.archive_path)  # what `backup list` reads: the counts, no record per asset
    assert summary == ManifestSummary(result.manifest["install_id"], len(result.manifest["assets"]),
                                   any(a["kind"] in ("file", "sqlite") for a in result.manifest["assets"]))
    assert summary.assets > 1 and summary.has_content


def test_invalid_manifest_is_refused_with_the_schema_reasons(state_tree, tmp_path: Path) -> None:
    data = create_backup(state_tree.root, tmp_path / "out", record=False).manifest
    assert Manifest.from_json(data).to_json() == data
    broken = {**data, "totals": {"assets": -1, "bytes": 0}}
    with pytest.raises(ManifestError) as caught:
        Manifest.from_json(broken)
    assert any("totals" in line for line in caught.value.problems)
    with pytest.raises(ValueError, match="not valid JSON"):
        Manifest.parse(b"{")


def _raw_manifest_access(source: str) -> list[int]:
    found = []
    for node in ast.walk(ast.parse(source)):
        target = None
        if isinstance(node, ast.Subscript):
            target = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
            target = node.func.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "schema_problems":
            found.append(node.lineno)
        if isinstance(target, ast.Attribute) and target.attr == "manifest" or isinstance(target, ast.Name) and target.id == "manifest":
            found.append(node.lineno)
    return sorted(found)


@pytest.mark.parametrize("rel", READERS)
def test_readers_do_not_touch_the_manifest_as_a_dict(rel: str) -> None:
    assert _raw_manifest_access((ROOT / rel).read_text(encoding="utf-8")) == [], rel


def test_the_scan_sees_dict_access() -> None:
    assert _raw_manifest_access('x = report.manifest["assets"]\ny = manifest.get("totals")\nmf.schema_problems(d)\n') == [1, 2, 3]


def test_the_shipped_manifest_schema_is_a_valid_schema() -> None:
    """The schema is checked against its metaschema here, once, instead of in every verify and restore process."""
    import jsonschema

    from statekit.backup.manifest import schema

    cls = jsonschema.validators.validator_for(schema())
    cls.check_schema(schema())  # raises SchemaError for a broken schema
    broken = {**schema(), "type": 17}
    with pytest.raises(jsonschema.exceptions.SchemaError):
        cls.check_schema(broken)


def test_the_manifest_written_one_asset_at_a_time_is_the_bytes_encode_gives(state_tree, tmp_path: Path) -> None:
    """create writes the manifest piece by piece (Manifest.encoded): the same bytes as the whole document encoded at
    once, so archives from before and after read the same; a name that is not UTF-8 is kept as its JSON escape."""
    (state_tree.root / "notes-\udcff.txt").write_bytes(b"x")  # surrogateescape: the byte 0xff in a file name
    result = create_backup(state_tree.root, tmp_path / "out", record=False)
    manifest = Manifest.parse(encode(result.manifest))
    assert b"".join(manifest.encoded()) == encode(manifest.to_json()) == encode(result.manifest)
    assert b"\\udcff" in encode(result.manifest)
    empty = Manifest(manifest.created_at, manifest.state_dir, manifest.options)
    assert b"".join(empty.encoded()) == encode(empty.to_json())
    # --format openclaw's digest record: the same document under its own format, OpenClaw's manifest digest after totals
    after = {"openclaw_manifest_sha256": "ab" * 32}
    for record in (manifest, empty):
        assert b"".join(record.encoded("statekit-openclaw-digests", after)) == encode(
            {**record.to_json(), "format": "statekit-openclaw-digests", **after})
