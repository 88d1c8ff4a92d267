"""A seeded mutator: malformed variants of valid legacy files (and hostile file-system entries).

Each mutator takes the original bytes and a ``random.Random`` and returns the
mutant bytes, or None when it does not apply (e.g. no number to turn into NaN).
``FS_MUTATORS`` replace the file itself (symlink loop, link leaving the state
dir, FIFO, a file the reader may not open).
"""

from __future__ import annotations

import codecs
import json
import random
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

Mutator = Callable[[bytes, random.Random], "bytes | None"]

HUGE = 3 << 20  # a 3 MiB string / line
DEEP = 100_000  # nesting levels: far past Python's recursion limit


# --------------------------------------------------------------------------- helpers


def _parse(data: bytes) -> Any:
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return _NOT_JSON


_NOT_JSON = object()


def is_json(data: bytes) -> bool:
    return _parse(data) is not _NOT_JSON


def is_jsonl(data: bytes) -> bool:
    lines = [line for line in data.splitlines() if line.strip()]
    return len(lines) >= 1 and all(_parse(line) is not _NOT_JSON for line in lines) and not is_json(data)


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    """Every JSON path below ``value`` (dict keys / list indexes)."""
    found = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            found += _paths(child, prefix + (key,))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found += _paths(child, prefix + (index,))
    return found


def _get(value: Any, path: tuple) -> Any:
    for part in path:
        value = value[part]
    return value


def _set(value: Any, path: tuple, new: Any) -> Any:
    if not path:
        return new
    parent = _get(value, path[:-1])
    parent[path[-1]] = new
    return value


def _dump(value: Any, original: bytes) -> bytes:
    indent = 2 if b"\n " in original else None
    return json.dumps(value, indent=indent, ensure_ascii=False, allow_nan=True).encode("utf-8")


def _scan(text: str) -> tuple[list[tuple[int, int]], list[int]]:
    """One pass over JSON text: (offset just after ``{``/``[``, depth) for every bracket outside strings,
    and the offset just after every opening quote."""
    brackets: list[tuple[int, int]] = []
    strings: list[int] = []
    depth = 0
    in_string = escaped = False
    for index, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
            strings.append(index + 1)
        elif ch in "{[":
            depth += 1
            brackets.append((index + 1, depth))
        elif ch in "}]":
            depth -= 1
    return brackets, strings


def _structure_positions(text: str) -> list[tuple[int, int]]:
    return _scan(text)[0]


def _string_positions(text: str) -> list[int]:
    return _scan(text)[1]


def _per_line(data: bytes, rng: random.Random, change: Callable[[bytes, random.Random], bytes | None]) -> bytes | None:
    """Apply a document mutator to one non-blank line of a JSONL file."""
    lines = data.split(b"\n")
    candidates = [i for i, line in enumerate(lines) if line.strip()]
    if not candidates:
        return None
    index = rng.choice(candidates)
    new = change(lines[index], rng)
    if new is None or new == lines[index]:
        return None
    lines[index] = new
    return b"\n".join(lines)


# --------------------------------------------------------------------------- document mutators


def truncate_at_depth(data: bytes, rng: random.Random) -> bytes | None:
    """Cut right after an opening bracket at a chosen nesting depth (every depth is reachable)."""
    text = data.decode("utf-8", "surrogateescape")
    positions = _structure_positions(text)
    if not positions:
        return None
    depths = sorted({d for _, d in positions})
    depth = rng.choice(depths)
    offset = rng.choice([o for o, d in positions if d == depth])
    return text[:offset].encode("utf-8", "surrogateescape")


def truncate_random(data: bytes, rng: random.Random) -> bytes | None:
    return data[: rng.randrange(1, len(data))] if len(data) > 1 else None


def bit_flips(data: bytes, rng: random.Random) -> bytes | None:
    if not data:
        return None
    out = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        position = rng.randrange(len(out))
        out[position] ^= 1 << rng.randrange(8)
    return bytes(out)


def invalid_utf8(data: bytes, rng: random.Random) -> bytes | None:
    text = data.decode("utf-8", "surrogateescape")
    spots = _string_positions(text) or [0]
    offset = len(text[: rng.choice(spots)].encode("utf-8", "surrogateescape"))
    junk = rng.choice([b"\xff\xfe", b"\xc3\x28", b"\xe2\x82", b"\xf0\x28\x8c\x28", b"\xc0\xaf", b"\xed\xa0\x80"])
    return data[:offset] + junk + data[offset:]


def wrong_type(data: bytes, rng: random.Random) -> bytes | None:
    value = _parse(data)
    if value is _NOT_JSON:
        return None
    paths = _paths(value)
    path = rng.choice(paths)
    current = _get(value, path)
    options: list[Any] = [12345, "a string", [1, 2], {"unexpected": True}, None, True, -1.5]
    options = [o for o in options if type(o) is not type(current)]
    return _dump(_set(value, path, rng.choice(options)), data)


def huge_string(data: bytes, rng: random.Random) -> bytes | None:
    value = _parse(data)
    if value is _NOT_JSON:
        return None
    strings = [p for p in _paths(value) if isinstance(_get(value, p), str)] or [p for p in _paths(value) if p]
    if not strings:
        return None
    return _dump(_set(value, rng.choice(strings), "A" * HUGE), data)


def deep_nesting(data: bytes, rng: random.Random) -> bytes | None:
    value = _parse(data)
    if value is _NOT_JSON or not isinstance(value, (dict, list)):
        return b"[" * DEEP + b"]" * DEEP
    marker = "__statekit_deep__"
    path = rng.choice([p for p in _paths(value) if p] or [()])
    text = _dump(_set(value, path, marker) if path else [marker], data).decode("utf-8")
    return text.replace(json.dumps(marker), "[" * DEEP + "]" * DEEP, 1).encode("utf-8")


def duplicate_key(data: bytes, rng: random.Random) -> bytes | None:
    value = _parse(data)
    if not isinstance(value, dict) or not value:
        return None
    key = rng.choice(list(value))
    text = data.decode("utf-8").rstrip()
    if not text.endswith("}"):
        return None
    clash = json.dumps(rng.choice([12345, "duplicate", [], {"dup": 1}, None]))
    return f"{text[:-1].rstrip()}, {json.dumps(key)}: {clash}}}\n".encode("utf-8")


def nan_infinity(data: bytes, rng: random.Random) -> bytes | None:
    value = _parse(data)
    if value is _NOT_JSON:
        return None
    token = rng.choice([float("nan"), float("inf"), float("-inf")])
    numbers = [p for p in _paths(value) if isinstance(_get(value, p), (int, float)) and not isinstance(_get(value, p), bool)]
    if numbers:
        return _dump(_set(value, rng.choice(numbers), token), data)
    if isinstance(value, dict):
        value["statekitNaN"] = token
        return _dump(value, data)
    return None


def huge_number(data: bytes, rng: random.Random) -> bytes | None:
    text = data.decode("utf-8", "surrogateescape")
    matches = [m for m in re.finditer(r"(?<![\w.\"])-?\d+(\.\d+)?(?![\w.\"])", text)]
    if not matches:
        return None
    m = rng.choice(matches)
    big = rng.choice(["1e999", "-1e999", "123456789012345678901234567890", "9" * 400, "1e-999"])
    return (text[: m.start()] + big + text[m.end() :]).encode("utf-8", "surrogateescape")


def lone_surrogate(data: bytes, rng: random.Random) -> bytes | None:
    text = data.decode("utf-8", "surrogateescape")
    spots = _string_positions(text)
    if not spots:
        return None
    at = rng.choice(spots)
    return (text[:at] + rng.choice(["\\ud800", "\\udfff", "\\u0000"]) + text[at:]).encode("utf-8", "surrogateescape")


def utf8_bom(data: bytes, rng: random.Random) -> bytes | None:
    return codecs.BOM_UTF8 + data


def utf16(data: bytes, rng: random.Random) -> bytes | None:
    try:
        return data.decode("utf-8").encode(rng.choice(["utf-16", "utf-16-be"]))
    except UnicodeDecodeError:
        return None


def crlf(data: bytes, rng: random.Random) -> bytes | None:
    return data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n") if b"\n" in data else data + b"\r\n"


def empty(data: bytes, rng: random.Random) -> bytes | None:
    return b""


def whitespace_only(data: bytes, rng: random.Random) -> bytes | None:
    return rng.choice([b" ", b"\n\n", b"\t \r\n "])


def null_document(data: bytes, rng: random.Random) -> bytes | None:
    return rng.choice([b"null", b"true", b"0", b'"a string"'])


def wrong_top_level(data: bytes, rng: random.Random) -> bytes | None:
    value = _parse(data)
    if isinstance(value, dict):
        return rng.choice([b"[]", b"[{}]", b'["x"]'])
    return rng.choice([b"{}", b'{"unexpected": true}'])


def trailing_garbage(data: bytes, rng: random.Random) -> bytes | None:
    return data + rng.choice([b"\n}garbage{", b"\x00\x00", b"][", b' {"second": "document"}'])


def concatenated(data: bytes, rng: random.Random) -> bytes | None:
    return data + data


def nul_bytes(data: bytes, rng: random.Random) -> bytes | None:
    at = rng.randrange(len(data) + 1)
    return data[:at] + b"\x00" * rng.randint(1, 32) + data[at:]


def control_chars(data: bytes, rng: random.Random) -> bytes | None:
    text = data.decode("utf-8", "surrogateescape")
    spots = _string_positions(text)
    if not spots:
        return None
    at = rng.choice(spots)
    return (text[:at] + rng.choice(["\x01", "\x1b[31m", "\x7f", "\u2028"]) + text[at:]).encode("utf-8", "surrogateescape")


# --------------------------------------------------------------------------- JSONL mutators


def jsonl_torn_last_line(data: bytes, rng: random.Random) -> bytes | None:
    body = data.rstrip(b"\n")
    last = body.rfind(b"\n") + 1
    if len(body) - last < 2:
        return None
    return body[: last + rng.randrange(1, len(body) - last)]


def jsonl_bad_middle_line(data: bytes, rng: random.Random) -> bytes | None:
    lines = data.split(b"\n")
    full = [i for i, line in enumerate(lines) if line.strip()]
    if len(full) < 2:
        return None
    index = rng.choice(full[:-1])
    lines[index] = lines[index][: max(1, len(lines[index]) // 2)]
    return b"\n".join(lines)


def jsonl_blank_lines(data: bytes, rng: random.Random) -> bytes | None:
    lines = data.split(b"\n")
    at = rng.randrange(len(lines) + 1)
    return b"\n".join(lines[:at] + [rng.choice([b"", b"   ", b"\t"])] * rng.randint(1, 3) + lines[at:])


def jsonl_huge_line(data: bytes, rng: random.Random) -> bytes | None:
    line = json.dumps({"type": "message", "text": "B" * HUGE}).encode()
    return data.rstrip(b"\n") + b"\n" + line + b"\n"


def jsonl_deep_line(data: bytes, rng: random.Random) -> bytes | None:
    return data.rstrip(b"\n") + b"\n" + b"[" * DEEP + b"]" * DEEP + b"\n"


def jsonl_wrong_line_type(data: bytes, rng: random.Random) -> bytes | None:
    return _per_line(data, rng, lambda line, r: r.choice([b"[1, 2, 3]", b"42", b'"text"', b"null"]))


def jsonl_line_mutator(inner: Mutator) -> Mutator:
    def mutate(data: bytes, rng: random.Random) -> bytes | None:
        return _per_line(data, rng, inner)

    mutate.__name__ = f"line_{inner.__name__}"
    return mutate


# --------------------------------------------------------------------------- registry

BYTE_MUTATORS: list[Mutator] = [truncate_random, bit_flips, empty, nul_bytes, trailing_garbage, utf8_bom, crlf, concatenated]
JSON_MUTATORS: list[Mutator] = [
    truncate_at_depth, truncate_random, bit_flips, invalid_utf8, wrong_type, huge_string, deep_nesting, duplicate_key,
    nan_infinity, huge_number, lone_surrogate, utf8_bom, utf16, crlf, empty, whitespace_only, null_document,
    wrong_top_level, trailing_garbage, concatenated, nul_bytes, control_chars,
]
JSONL_MUTATORS: list[Mutator] = [
    jsonl_torn_last_line, jsonl_bad_middle_line, jsonl_blank_lines, jsonl_huge_line, jsonl_deep_line, jsonl_wrong_line_type,
    jsonl_line_mutator(truncate_at_depth), jsonl_line_mutator(wrong_type), jsonl_line_mutator(duplicate_key),
    jsonl_line_mutator(nan_infinity), jsonl_line_mutator(invalid_utf8), jsonl_line_mutator(huge_number),
    jsonl_line_mutator(lone_surrogate), bit_flips, utf8_bom, utf16, crlf, empty, whitespace_only, nul_bytes, trailing_garbage,
]
FS_MUTATORS = ("symlink_loop", "symlink_outside", "fifo", "unreadable")


def mutators_for(data: bytes) -> list[Mutator]:
    if is_json(data):
        return JSON_MUTATORS
    if is_jsonl(data):
        return JSONL_MUTATORS
    return BYTE_MUTATORS


def name_of(mutator: Mutator | str) -> str:
    return mutator if isinstance(mutator, str) else mutator.__name__


def jsonl_mutants(paths: list[Path], rng: random.Random) -> Iterator[bytes]:
    """Each file's bytes under every JSONL mutator and every JSON mutator applied per line (where one applies)."""
    for path in paths:
        data = path.read_bytes()
        for mutator in JSONL_MUTATORS + [jsonl_line_mutator(m) for m in JSON_MUTATORS]:
            mutated = mutator(data, rng)
            if mutated is not None:
                yield mutated
