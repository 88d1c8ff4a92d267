"""The backup manifest: records, JSON Schema validation and (de)serialisation.

``manifest.json`` is the first member of every archive. It lists every asset
(file, directory, symlink or SQLite snapshot) with its size, SHA-256, mode and
mtime, so ``verify`` can prove each member and ``restore`` can plan without
reading the payload. It never holds file contents, so no secret value.
"""

from __future__ import annotations

import codecs
import io
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from functools import lru_cache
from importlib import resources
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from statekit import __version__
from statekit.errors import display_path
from statekit.fsutil import shared_mode
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
LINK_SCOPES = ("internal", "external")
# One str object per enum value, however many assets name it (a parsed manifest of 100,000 assets would otherwise
# hold 200,000 copies of "file" and "state").
_SHARED_WORDS = {word: word for word in KINDS + ROLES + LINK_SCOPES}
READ_CHUNK = 1 << 20


@dataclass(slots=True)
class Asset:
    """One archived filesystem entry, exactly as the manifest records it (slots: a backup holds one per file)."""

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
        data: dict[str, Any] = {name: getattr(self, name) for name in _ASSET_FIELDS}
        for optional in ("link_target", "link_scope"):
            if data[optional] is None:
                del data[optional]
        if self.kind == "sqlite":
            data["snapshot_method"] = "vacuum-into"
            data["integrity"] = "ok"
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Asset:
        values = {k: v for k, v in data.items() if k in _ASSET_FIELD_SET}
        for name in ("kind", "role", "link_scope"):
            word = values.get(name)
            if isinstance(word, str):
                values[name] = _SHARED_WORDS.get(word, word)
        if type(values.get("mode")) is int:
            values["mode"] = shared_mode(values["mode"])
        return cls(**values)


_ASSET_FIELDS = tuple(Asset.__dataclass_fields__)
_ASSET_FIELD_SET = frozenset(_ASSET_FIELDS)


class AssetDicts(Sequence[dict[str, Any]]):
    """The assets of a manifest as the JSON dicts it records, made one at a time on access: ``BackupResult.manifest``
    of a real backup holds its assets once (as :class:`Asset` records), not a second time as dicts.
    Compares equal to the list of those dicts; ``encode`` writes it as that list."""

    def __init__(self, assets: list[Asset]) -> None:
        self.assets = assets

    def __len__(self) -> int:
        return len(self.assets)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [a.to_json() for a in self.assets[index]]
        return self.assets[index].to_json()

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return (a.to_json() for a in self.assets)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, AssetDicts):
            return self.assets == other.assets
        return isinstance(other, list) and len(other) == len(self.assets) and all(a == b for a, b in zip(self, other))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"AssetDicts({len(self.assets)} assets)"


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
        if isinstance(data, dict) and isinstance(data.get("assets"), AssetDicts):  # a BackupResult.manifest
            data = {**data, "assets": list(data["assets"])}
        problems = schema_problems(data)
        if problems:
            raise ManifestError(problems)
        return cls._from_checked(data, [Asset.from_json(a) for a in data["assets"]])

    @classmethod
    def _from_checked(cls, data: dict[str, Any], assets: list[Asset]) -> Manifest:
        return cls(
            created_at=_parse_iso_utc(data["created_at"]),
            state_dir=data["state_dir"],
            options=dict(data["options"]),
            assets=assets,
            skipped=[Skipped(s["source_path"], s["reason"]) for s in data["skipped"]],
            statekit_version=data["statekit_version"],
            install_id=data.get("install_id"),
            declared_totals=dict(data["totals"]),
            declared_created_at=data["created_at"],
        )

    @classmethod
    def parse(cls, raw: bytes) -> Manifest:
        """A manifest from the bytes of ``manifest.json``; ValueError (ManifestError for the schema) with the reasons."""
        return cls.read(io.BytesIO(raw).read)

    @classmethod
    def read(cls, read: Callable[[int], bytes], known: Callable[[str], Asset | None] | None = None) -> Manifest:
        """A manifest from a reader of ``manifest.json``'s bytes, parsed and schema-checked one asset at a time: no
        copy of the whole text, no dict per asset is held (:func:`read_document`); the same checks and errors as
        :meth:`parse` of the whole. ``known(archive_path)``: an asset the caller already holds (``backup create``
        verifying what it wrote); one equal to the parsed record is used instead of a second copy."""
        assets: list[Asset] = []

        def keep(value: Any) -> None:
            asset = Asset.from_json(value)
            same = known(asset.archive_path) if known is not None and isinstance(asset.archive_path, str) else None
            assets.append(same if same is not None and same == asset else asset)

        return cls._from_checked(_read_checked(read, keep), assets)

    @property
    def archive_root(self) -> str | None:
        """The archive's root directory (every asset lives below it), None for an empty manifest."""
        return self.assets[0].archive_path.split("/", 1)[0] if self.assets else None

    @property
    def created_at_text(self) -> str:
        return self.declared_created_at if self.declared_created_at is not None else iso_utc(self.created_at)

    def totals(self) -> dict[str, int]:
        return totals_of((a.kind, a.size) for a in self.assets)

    def _head_json(self, document_format: str = FORMAT) -> dict[str, Any]:
        return {
            "format": document_format,
            "schema_version": SCHEMA_VERSION,
            "created_at": iso_utc(self.created_at),
            "statekit_version": self.statekit_version,
            "state_dir": self.state_dir,
            **({"install_id": self.install_id} if self.install_id is not None else {}),
            "options": dict(self.options),
        }

    def to_json(self) -> dict[str, Any]:
        return {
            **self._head_json(),
            "assets": [a.to_json() for a in self.assets],
            "skipped": [asdict(s) for s in self.skipped],
            "totals": self.totals(),
        }

    def summary_json(self) -> dict[str, Any]:
        """:meth:`to_json` with the assets as an :class:`AssetDicts` view of the records (no dict per asset held)."""
        return {**self._head_json(), "assets": AssetDicts(self.assets), "skipped": [asdict(s) for s in self.skipped],
                "totals": self.totals()}

    def encoded(self, document_format: str = FORMAT, after: Mapping[str, str] | None = None) -> Iterator[bytes]:
        """The bytes ``encode(self.to_json())`` returns, piece by piece (one asset's JSON at a time), so a manifest of
        any size is written without its whole text or a dict per asset in memory. ``document_format`` and ``after``
        (string members after ``totals``) make the document ``--format openclaw`` stores beside OpenClaw's manifest."""
        head = json.dumps(self._head_json(document_format), indent=1, ensure_ascii=False)
        yield json_text_bytes(head[: -len("\n}")] + ',\n "assets": ')
        yield from _encoded_list(a.to_json() for a in self.assets)
        yield b',\n "skipped": '
        yield from _encoded_list(asdict(s) for s in self.skipped)
        yield b',\n "totals": '
        yield json_text_bytes(json.dumps(self.totals(), indent=1, ensure_ascii=False).replace("\n", "\n "))
        for key, value in (after or {}).items():
            yield json_text_bytes(f",\n {json.dumps(key, ensure_ascii=False)}: {json.dumps(value, ensure_ascii=False)}")
        yield b"\n}\n"


@dataclass(frozen=True, slots=True)
class ManifestSummary:
    """What ``backup list`` shows of an archive's manifest: read through every asset, none of them kept."""

    install_id: str | None
    assets: int
    has_content: bool  # a file or database, not only directories and links


def read_summary(read: Callable[[int], bytes]) -> ManifestSummary:
    """The :class:`ManifestSummary` of a manifest read from ``read``, which must pass every check :meth:`Manifest.read`
    makes (ValueError, ManifestError otherwise): a manifest of 100,000 assets is counted without a record each."""
    count = 0
    content = False

    def tally(value: Any) -> None:
        nonlocal count, content
        count += 1
        content = content or value["kind"] in ("file", "sqlite")

    header = _read_checked(read, tally)
    _parse_iso_utc(header["created_at"])  # as Manifest.read refuses it
    install_id = header.get("install_id")
    return ManifestSummary(install_id if isinstance(install_id, str) else None, count, content)


def _read_checked(read: Callable[[int], bytes], on_asset: Callable[[Any], None]) -> dict[str, Any]:
    """The manifest's top-level object (``assets`` empty) read from ``read``, each asset schema-checked and, while
    every one so far passed, handed to ``on_asset``; ManifestError with every problem found (schema_problems' lines)."""
    errors = _SchemaErrors()
    check = _asset_checks()

    def take(value: Any, index: int) -> None:
        if errors.count or not check.fast(value):
            errors.add_asset(value, index, check)
            if errors.count:
                return
        on_asset(value)

    header = read_document(read, take)
    errors.add_header(header)
    if errors.count:
        raise ManifestError(errors.lines())
    return header


def totals_of(kinds_and_sizes: Iterable[tuple[str, int]]) -> dict[str, int]:
    """The manifest's ``totals`` of assets given as (kind, size)."""
    counts = {kind: 0 for kind in KINDS}
    assets = size = 0
    for kind, bytes_ in kinds_and_sizes:
        counts[kind] += 1
        assets += 1
        size += bytes_
    return {"assets": assets, "bytes": size, "files": counts["file"], "sqlite": counts["sqlite"], "dirs": counts["dir"],
            "symlinks": counts["symlink"]}


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
    return json_text_bytes(json.dumps(manifest, indent=1, ensure_ascii=False, sort_keys=False, default=_as_list) + "\n")


def _as_list(value: Any) -> Any:
    if isinstance(value, AssetDicts):
        return list(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _encoded_list(items: Iterator[Any]) -> Iterator[bytes]:
    """A list that is a value of the top-level object, as ``json.dumps(..., indent=1)`` writes it, item by item."""
    first = True
    for item in items:
        text = json.dumps(item, indent=1, ensure_ascii=False).replace("\n", "\n  ")
        yield json_text_bytes(("[\n  " if first else ",\n  ") + text)
        first = False
    yield b"[]" if first else b"\n ]"


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
    return _schema_lines([(list(e.absolute_path), e.message) for e in errors[:limit]], len(errors), limit)


def _schema_lines(shown: list[tuple[list[Any], str]], count: int, limit: int) -> list[str]:
    """One line per schema error shown (its path in the document, its message), then one for the ``count`` beyond ``limit``."""
    lines = [f"manifest fails its schema at {'/'.join(str(p) for p in path) or '(top level)'}: {message[:200]}" for path, message in shown]
    if count > limit:
        lines.append(f"manifest fails its schema in {count - limit} more places")
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


def _path_parts(path: str) -> tuple[str, ...]:
    """``PurePosixPath(path).parts``; a relative path without empty, ``.`` or trailing components (every archive
    path a checked manifest holds) split without making a path object."""
    if path and path[0] != "/" and "//" not in path and path[-1] != "/" and "/./" not in f"/{path}/":
        return tuple(path.split("/"))
    return PurePosixPath(path).parts


def payload_rel(archive_path: str, root: str) -> tuple[str, str] | None:
    """Split ``<root>/payload/state/<rel>`` → ("state", rel) and
    ``<root>/payload/external/<id>/<rel>`` → (id, rel); None for anything else."""
    parts = _path_parts(archive_path)
    if len(parts) < 3 or parts[0] != root or parts[1] != "payload":
        return None
    if parts[2] == "state":
        return "state", "/".join(parts[3:])
    if parts[2] == "external" and len(parts) >= 4:
        return parts[3], "/".join(parts[4:])
    return None


# --------------------------------------------------------------------------- reading one asset at a time

_WHITESPACE = " \t\n\r"
_DECODER = json.JSONDecoder()


class _JsonStream:
    """The text of one JSON document, decoded from a reader of UTF-8 bytes as far as the parse has got: only the
    value being parsed is held. Errors read as :func:`decode` words them (``not valid UTF-8`` / ``not valid JSON``)."""

    def __init__(self, read: Callable[[int], bytes]) -> None:
        self._read = read
        self._utf8 = codecs.getincrementaldecoder("utf-8")("strict")
        self._bytes_read = 0
        self._lines = 0  # newlines in the text already dropped
        self.text = ""
        self.pos = 0
        self.eof = False

    def _fill(self, at_least: int = READ_CHUNK) -> bool:
        """Read at least ``at_least`` more bytes (fewer at the end); False when the document has ended."""
        if self.eof:
            return False
        raw = self._read(at_least)
        try:
            more = self._utf8.decode(raw, final=not raw)
        except UnicodeDecodeError as exc:
            raise ValueError(f"manifest is not valid UTF-8 ({exc.reason} at byte {self._bytes_read + max(exc.start, 0)})") from None
        self._bytes_read += len(raw)
        self.eof = not raw
        if self.pos:
            self._lines += self.text.count("\n", 0, self.pos)
            self.text, self.pos = self.text[self.pos :], 0
        self.text += more
        return True

    def fail(self, message: str, pos: int | None = None) -> ValueError:
        where = self.pos if pos is None else pos
        line = self._lines + self.text.count("\n", 0, where) + 1
        return ValueError(f"manifest is not valid JSON (line {line}: {message})")

    def peek(self) -> str:
        """The next character that is not whitespace ("" at the end), without taking it."""
        while True:
            text, pos = self.text, self.pos
            while pos < len(text) and text[pos] in _WHITESPACE:
                pos += 1
            self.pos = pos
            if pos < len(text) or not self._fill():
                return text[pos] if pos < len(text) else ""

    def take(self, char: str, message: str) -> None:
        if self.peek() != char:
            raise self.fail(message)
        self.pos += 1

    def value(self) -> Any:
        """The next JSON value. One that may go on past the text read so far (a number at its end, a string cut off)
        is parsed again with more: the text read grows geometrically, so a long value costs linear time."""
        self.peek()
        while True:
            try:
                value, end = _DECODER.raw_decode(self.text, self.pos)
            except json.JSONDecodeError as exc:
                if self._fill(max(READ_CHUNK, len(self.text) - self.pos)):
                    continue
                raise self.fail(exc.msg, exc.pos) from None
            except RecursionError:
                raise ValueError("manifest is nested too deeply to be a statekit manifest") from None
            if end == len(self.text) and self._fill(max(READ_CHUNK, len(self.text) - self.pos)):
                continue
            self.pos = end
            return value


def read_document(read: Callable[[int], bytes], on_asset: Callable[[Any, int], None]) -> dict[str, Any]:
    """Parse the manifest JSON read from ``read``: the top-level object with every member but the items of an
    ``assets`` array, each of which is handed to ``on_asset(value, index)`` as it is parsed and not kept (``assets``
    is ``[]`` in the object returned). Raises ValueError with the reason, as :func:`decode` does; a top-level key
    given twice is refused (a reader that kept the last one would check one list and restore another)."""
    stream = _JsonStream(read)
    if stream.peek() != "{":
        stream.value()  # not JSON: its error; JSON: not an object
        if stream.peek():
            raise stream.fail("Extra data")
        raise ValueError("manifest is not a JSON object")
    stream.pos += 1
    header: dict[str, Any] = {}
    if stream.peek() == "}":
        stream.pos += 1
    else:
        while True:
            if stream.peek() != '"':
                raise stream.fail("Expecting property name enclosed in double quotes")
            key = stream.value()
            stream.take(":", "Expecting ':' delimiter")
            if key in header:
                raise ValueError(f"manifest is not valid JSON (key {display_path(key)!r} appears twice)")
            if key == "assets" and stream.peek() == "[":
                stream.pos += 1
                _read_items(stream, on_asset)
                header[key] = []
            else:
                header[key] = stream.value()
            if stream.peek() == "}":
                stream.pos += 1
                break
            stream.take(",", "Expecting ',' delimiter")
    if stream.peek():
        raise stream.fail("Extra data")
    return header


def _read_items(stream: _JsonStream, on_item: Callable[[Any, int], None]) -> None:
    if stream.peek() == "]":
        stream.pos += 1
        return
    index = 0
    while True:
        on_item(stream.value(), index)
        index += 1
        if stream.peek() == "]":
            stream.pos += 1
            return
        stream.take(",", "Expecting ',' delimiter")


@dataclass(frozen=True)
class _AssetChecks:
    fast: Callable[[Any], bool]
    schema: dict[str, Any]

    def errors(self, value: Any) -> Iterator[Any]:
        return _asset_validator().iter_errors(value)


@lru_cache(maxsize=1)
def _asset_checks() -> _AssetChecks:
    """The shipped schema's asset definition on its own: each asset is checked as it is parsed (the compiled check
    first, jsonschema to decide and word what it does not accept), the rest of the document once without them."""
    whole = schema()
    own = {"$schema": whole["$schema"], "$id": whole["$id"], "$defs": whole["$defs"], "$ref": "#/$defs/asset"}
    compiled = compile_check(own)
    return _AssetChecks(compiled if compiled is not None else (lambda _value: False), own)


ERROR_LINES = 5
_ERRORS_KEPT = 200


class _SchemaErrors:
    """The schema errors of a manifest read one asset at a time, worded as :func:`schema_problems` words them."""

    def __init__(self) -> None:
        self.count = 0
        self._kept: list[tuple[list[Any], str]] = []

    def _add(self, errors: Iterator[Any], prefix: list[Any]) -> None:
        for error in errors:
            self.count += 1
            if len(self._kept) < _ERRORS_KEPT:
                self._kept.append((prefix + list(error.absolute_path), error.message))

    def add_asset(self, value: Any, index: int, checks: _AssetChecks) -> None:
        self._add(checks.errors(value), ["assets", index])

    def add_header(self, header: dict[str, Any]) -> None:
        check = _fast_check()
        if check is None or not check(header):
            self._add(_validator().iter_errors(header), [])

    def lines(self) -> list[str]:
        kept = sorted(self._kept, key=lambda e: [str(p) if isinstance(p, str) else f"{p:020d}" for p in e[0]])
        return _schema_lines(kept[:ERROR_LINES], self.count, ERROR_LINES)


@lru_cache(maxsize=1)
def _asset_validator() -> jsonschema.protocols.Validator:
    import jsonschema.validators

    own = _asset_checks().schema
    return jsonschema.validators.validator_for(own)(own)
