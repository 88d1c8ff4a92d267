"""The backup manifest: records, JSON Schema validation and (de)serialisation.

``manifest.json`` is the first member of every archive. It lists every asset
(file, directory, symlink or SQLite snapshot) with its size, SHA-256, mode and
mtime, so ``verify`` can prove each member and ``restore`` can plan without
reading the payload. It never holds file contents, so no secret value.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from functools import lru_cache
from importlib import resources
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from statekit import __version__
from statekit.fast_schema import compile_check
from statekit.values import datetime_to_iso, parse_iso

if TYPE_CHECKING:
    import jsonschema

FORMAT = "statekit-backup"
SCHEMA_VERSION = 1
MANIFEST_NAME = "manifest.json"
ARCHIVE_PREFIX = "openclaw-backup-"
ARCHIVE_SUFFIX = ".tar.zst"
TIMESTAMP_FORMAT = "%Y%m%dT%H%M%SZ"

KINDS = ("sqlite", "file", "dir", "symlink")
ROLES = ("global", "agent", "sqlite", "config", "credentials", "workspace", "state")


@dataclass
class Asset:
    """One archived filesystem entry, exactly as the manifest records it."""

    id: str
    kind: str
    role: str
    source_path: str
    archive_path: str
    size: int = 0
    sha256: str | None = None
    mode: int = 0o600
    mtime: float = 0.0
    agent_id: str | None = None
    schema_version: int | None = None
    link_target: str | None = None
    link_scope: str | None = None  # "internal": a tar symlink member; "external": a text member

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        for optional in ("link_target", "link_scope"):
            if data[optional] is None:
                del data[optional]
        if self.kind == "sqlite":
            data["snapshot_method"] = "vacuum-into"
            data["integrity"] = "ok"
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Asset:
        names = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass
class Skipped:
    source_path: str
    reason: str


class ManifestError(ValueError):
    """A manifest that is not a statekit manifest: each way it fails, as a human line."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__(problems[0] if problems else "manifest is invalid")
        self.problems = problems


@dataclass
class Manifest:
    """The manifest: built by ``create`` and written with :meth:`to_json`; read back only through
    :meth:`parse` / :meth:`from_json`, which validate it against manifest.schema.json first."""

    created_at: datetime
    state_dir: str
    options: dict[str, Any]
    assets: list[Asset] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    statekit_version: str = __version__
    install_id: str | None = None  # statekit.install: the install the archive belongs to (None: an archive older than the field)
    # Read back only: the totals and timestamp exactly as the archive declares them (verify compares them).
    declared_totals: dict[str, int] | None = None
    declared_created_at: str | None = None

    @classmethod
    def from_json(cls, data: Any) -> Manifest:
        """A manifest from its JSON document; raises :class:`ManifestError` unless it passes the schema."""
        problems = schema_problems(data)
        if problems:
            raise ManifestError(problems)
        return cls(
            created_at=_parse_iso_utc(data["created_at"]),
            state_dir=data["state_dir"],
            options=dict(data["options"]),
            assets=[Asset.from_json(a) for a in data["assets"]],
            skipped=[Skipped(s["source_path"], s["reason"]) for s in data["skipped"]],
            statekit_version=data["statekit_version"],
            install_id=data.get("install_id"),
            declared_totals=dict(data["totals"]),
            declared_created_at=data["created_at"],
        )

    @classmethod
    def parse(cls, raw: bytes) -> Manifest:
        """A manifest from the bytes of ``manifest.json``; ValueError (ManifestError for the schema) with the reasons."""
        return cls.from_json(decode(raw))

    @property
    def archive_root(self) -> str | None:
        """The archive's root directory (every asset lives below it), None for an empty manifest."""
        return self.assets[0].archive_path.split("/", 1)[0] if self.assets else None

    @property
    def created_at_text(self) -> str:
        return self.declared_created_at if self.declared_created_at is not None else iso_utc(self.created_at)

    def totals(self) -> dict[str, int]:
        counts = {kind: 0 for kind in KINDS}
        for asset in self.assets:
            counts[asset.kind] += 1
        return {
            "assets": len(self.assets),
            "bytes": sum(a.size for a in self.assets),
            "files": counts["file"],
            "sqlite": counts["sqlite"],
            "dirs": counts["dir"],
            "symlinks": counts["symlink"],
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "schema_version": SCHEMA_VERSION,
            "created_at": iso_utc(self.created_at),
            "statekit_version": self.statekit_version,
            "state_dir": self.state_dir,
            **({"install_id": self.install_id} if self.install_id is not None else {}),
            "options": dict(self.options),
            "assets": [a.to_json() for a in self.assets],
            "skipped": [asdict(s) for s in self.skipped],
            "totals": self.totals(),
        }


def display_path(text: str) -> str:
    """A name for a one-line message: a byte that is not UTF-8 (a ``surrogateescape`` code point) as ``\\xNN``,
    control characters (newlines) escaped; everything else as it is."""
    if text.isprintable():
        return text
    out = []
    for char in text:
        code = ord(char)
        if 0xDC80 <= code <= 0xDCFF:
            out.append(f"\\x{code - 0xDC00:02x}")
        elif char.isprintable():
            out.append(char)
        else:
            out.append(repr(char)[1:-1])
    return "".join(out)


iso_utc = datetime_to_iso  # the manifest's times: ``toISOString`` form


def _parse_iso_utc(text: str) -> datetime:
    """``YYYY-mm-ddTHH:MM:SS[.fff...]Z`` (the schema's pattern) as an aware UTC datetime (the one parser: values.parse_iso)."""
    moment = parse_iso(text)
    if moment is None:
        raise ValueError(f"created_at {text!r} is not an ISO-8601 time")
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)


def archive_stem(moment: datetime) -> str:
    """``openclaw-backup-<YYYYmmddTHHMMSSZ>``: the file stem and the archive root directory."""
    return ARCHIVE_PREFIX + moment.astimezone(timezone.utc).strftime(TIMESTAMP_FORMAT)


def parse_archive_time(name: str) -> datetime | None:
    """The UTC time encoded in an archive file name, or None when the name is not ours."""
    if not (name.startswith(ARCHIVE_PREFIX) and name.endswith(ARCHIVE_SUFFIX)):
        return None
    stamp = name[len(ARCHIVE_PREFIX) : -len(ARCHIVE_SUFFIX)]
    try:
        return datetime.strptime(stamp, TIMESTAMP_FORMAT).replace(tzinfo=timezone.utc)
    except ValueError:
        return None


_SURROGATE = re.compile("[\ud800-\udfff]")


def json_text_bytes(text: str) -> bytes:
    """JSON text as UTF-8, a name that is not UTF-8 kept exactly: Python reads such a name with ``surrogateescape``
    (byte 0xNN becomes the lone code point U+DCNN), which UTF-8 cannot hold; each one is written as the JSON escape
    ``\\udcNN``. JSON readers give back the same string, ``os.fsencode`` the same bytes (only code points inside
    JSON strings can be surrogates)."""
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text).encode("utf-8")


def encode(manifest: dict[str, Any]) -> bytes:
    return json_text_bytes(json.dumps(manifest, indent=1, ensure_ascii=False, sort_keys=False) + "\n")


@lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    text = resources.files(__package__).joinpath("manifest.schema.json").read_text(encoding="utf-8")
    return json.loads(text)


@lru_cache(maxsize=1)
def _validator() -> jsonschema.protocols.Validator:
    """The validator of the shipped schema. The schema itself is checked against its metaschema by the test suite
    (tests/backups/test_manifest_typed.py), not in every process: that check cost 0.12 s CPU per verify.
    jsonschema is imported here, only for a manifest the compiled check does not accept (0.06 s CPU to import)."""
    import jsonschema.validators

    return jsonschema.validators.validator_for(schema())(schema())


@lru_cache(maxsize=1)
def _fast_check() -> Callable[[Any], bool] | None:
    """The shipped schema compiled (``statekit.fast_schema``): ~20x faster than jsonschema per asset (0.35 ms there,
    so 35 s CPU for a manifest of 100,000 files). It only ever says "valid": a document it does not accept goes to
    jsonschema, which decides and words the errors (tests/backups/test_manifest_fast.py)."""
    return compile_check(schema())


def schema_problems(data: Any, limit: int = 5) -> list[str]:
    """Human lines for each way ``data`` fails the manifest schema (empty when valid)."""
    check = _fast_check()
    if check is not None and check(data):
        return []
    errors = sorted(_validator().iter_errors(data), key=lambda e: list(e.absolute_path))
    lines = []
    for error in errors[:limit]:
        where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
        lines.append(f"manifest fails its schema at {where}: {error.message[:200]}")
    if len(errors) > limit:
        lines.append(f"manifest fails its schema in {len(errors) - limit} more places")
    return lines


def decode(raw: bytes) -> dict[str, Any]:
    """Parse manifest bytes (strict UTF-8 JSON object); raises ValueError with a reason."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"manifest is not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"manifest is not valid JSON (line {exc.lineno}: {exc.msg})") from None
    except RecursionError:
        raise ValueError("manifest is nested too deeply to be a statekit manifest") from None
    if not isinstance(data, dict):
        raise ValueError("manifest is not a JSON object")
    return data


def payload_rel(archive_path: str, root: str) -> tuple[str, str] | None:
    """Split ``<root>/payload/state/<rel>`` → ("state", rel) and
    ``<root>/payload/external/<id>/<rel>`` → (id, rel); None for anything else."""
    parts = PurePosixPath(archive_path).parts
    if len(parts) < 3 or parts[0] != root or parts[1] != "payload":
        return None
    if parts[2] == "state":
        return "state", "/".join(parts[3:])
    if parts[2] == "external" and len(parts) >= 4:
        return parts[3], "/".join(parts[4:])
    return None
