"""Exit codes are defined once (statekit.errors.ExitCode); help texts are rendered from it, docs agree with it."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

from statekit.errors import EXIT_CODE_SUMMARIES, ExitCode, describe_exit_codes

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
CLI_DIR = ROOT / "statekit" / "cli"
COMMAND_MODULES = sorted(p.stem for p in CLI_DIR.glob("*_cmd.py"))

# "Exit codes: ..." up to the full stop that ends the sentence (a '.' before whitespace or the end).
PASSAGE = re.compile(r"Exit codes\b[^:]*:(?P<body>.*?)\.(?=\s|$)", re.DOTALL)
ITEM = re.compile(r"^`?(?P<code>\d+)`?\s+(?P<text>.+)$", re.DOTALL)
SINGLE = re.compile(r"[Ee]xit code `?(?P<code>\d+)`? from `(?P<command>[a-z]+)`")


def split_items(body: str) -> list[str]:
    """Split on ',' and '·' outside parentheses."""
    items, depth, current = [], 0, []
    for char in body:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0 and char in ",·":
            items.append("".join(current))
            current = []
        else:
            current.append(char)
    items.append("".join(current))
    return [" ".join(item.split()) for item in items if item.strip()]


def passages(text: str) -> list[list[tuple[int, str]]]:
    found = []
    for match in PASSAGE.finditer(text):
        pairs = []
        for item in split_items(match.group("body")):
            parsed = ITEM.match(item)
            assert parsed, f"cannot read exit-code item {item!r} in {match.group(0)!r}"
            pairs.append((int(parsed.group("code")), parsed.group("text")))
        found.append(pairs)
    return found


def check_passage(pairs: list[tuple[int, str]], where: str) -> None:
    codes = [code for code, _ in pairs]
    assert codes == sorted(set(codes)), f"{where}: exit codes out of order or repeated: {codes}"
    valid = {int(code) for code in ExitCode}
    for code, text in pairs:
        assert code in valid, f"{where}: {code} is not an ExitCode ({sorted(valid)})"
        head = ExitCode(code).summary.split(" (")[0]
        assert text.startswith(head), f"{where}: exit code {code} is {ExitCode(code).summary!r} in statekit.errors, not {text!r}"


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_docs_exit_codes_agree_with_exitcode(path: Path) -> None:
    for pairs in passages(path.read_text(encoding="utf-8")):
        check_passage(pairs, path.name)


def test_readme_lists_every_exit_code() -> None:
    found = passages((ROOT / "README.md").read_text(encoding="utf-8"))
    assert len(found) == 1
    assert [code for code, _ in found[0]] == [int(code) for code in ExitCode]


def test_single_exit_code_mentions_name_a_code_the_command_returns() -> None:
    mentioned = 0
    for path in DOCS:
        for match in SINGLE.finditer(path.read_text(encoding="utf-8")):
            module = importlib.import_module(f"statekit.cli.{match.group('command')}_cmd")
            assert ExitCode(int(match.group("code"))) in module.EXIT_CODES, f"{path.name}: {match.group(0)}"
            mentioned += 1
    assert mentioned >= 1  # docs/upgrade.md: "Exit code 3 from `plan`"


def test_checker_rejects_a_wrong_line() -> None:
    with pytest.raises(AssertionError, match="exit code 4"):
        for pairs in passages("Exit codes: 0 success, 4 verification failed."):
            check_passage(pairs, "sample")
    with pytest.raises(AssertionError, match="not an ExitCode"):
        for pairs in passages("Exit codes: 0 success, 7 busy."):
            check_passage(pairs, "sample")


def test_every_code_has_a_summary_and_the_full_sentence_checks() -> None:
    assert set(EXIT_CODE_SUMMARIES) == set(ExitCode)
    [pairs] = passages(describe_exit_codes())
    check_passage(pairs, "describe_exit_codes()")
    assert [code for code, _ in pairs] == [int(code) for code in ExitCode]


@pytest.mark.parametrize("name", COMMAND_MODULES)
def test_command_help_is_rendered_from_exitcode(name: str) -> None:
    """Each command module declares EXIT_CODES; no help text spells exit codes out by hand."""
    module = importlib.import_module(f"statekit.cli.{name}")
    declared = getattr(module, "EXIT_CODES", None)
    assert declared is not None, f"statekit/cli/{name}.py declares no EXIT_CODES"
    texts = {key: value for key, value in vars(module).items() if key.endswith("HELP") and isinstance(value, str)}
    assert texts, name
    for key, text in texts.items():
        if "Exit codes" not in text:
            continue
        # X_HELP renders X_EXIT_CODES (issue 12: each subcommand lists only the codes it returns), else EXIT_CODES
        own = getattr(module, key.removesuffix("HELP") + "EXIT_CODES", declared)
        assert {ExitCode.OK, ExitCode.FATAL, ExitCode.USAGE} <= set(own), f"{name}.{key}"  # every command can fail and be misused
        assert describe_exit_codes(own) in text, f"{name}.{key}"
    tree = ast.parse((CLI_DIR / f"{name}.py").read_text(encoding="utf-8"))
    literals = [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)]
    assert not [text for text in literals if re.search(r"Exit codes?\W+\d", text)], f"{name}: exit codes written by hand"


def test_root_help_lists_every_code() -> None:
    from statekit.cli import HELP

    assert describe_exit_codes() in HELP
