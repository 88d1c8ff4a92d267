"""reader_for (one expression for every reader's patterns) names the reader trying each one in plan order would."""

from __future__ import annotations

import random
from pathlib import Path

from statekit.legacy_readers import all_readers, reader_for
from statekit.legacy_readers.base import Reader

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
PIECES = ("main", "work", "a", "x.json", "s-1.jsonl", "b.jsonl.deleted.2026", "logs", "sessions", "agents", "é",
          "sessions.json", "run.trajectory.jsonl", "q.acp-stream.jsonl", "c.checkpoint.1.jsonl", "", ".bak", "1")


def linear(rel: str) -> Reader | None:
    return next((reader for reader in all_readers() if reader.claims(rel)), None)


def from_patterns(rng: random.Random) -> list[str]:
    """Paths made from every reader's patterns and excludes, wildcards filled with sample names."""
    out: list[str] = []
    for reader in all_readers():
        for pattern in (*reader.patterns, *reader.exclude, *reader.workspace_patterns):
            for _ in range(6):
                rel = pattern.replace("**", "/".join(rng.sample(PIECES[:9], rng.randint(0, 2))))
                while "*" in rel or "?" in rel:
                    rel = rel.replace("*", rng.choice(PIECES), 1).replace("?", rng.choice("a1."), 1)
                out.append(rel.strip("/").replace("//", "/"))
    return out


def test_reader_for_matches_the_linear_scan_on_fixture_and_pattern_paths() -> None:
    rels = [p.relative_to(root).as_posix() for root in FIXTURES.glob("*") for p in root.rglob("*") if p.is_file()]
    rels += from_patterns(random.Random(16))
    rels += ["agents//main/sessions/x.jsonl", "sessions/x.jsonl\n", "media", "media/", "matrix/a/b/c/sync-store.json", "",
             "agents/main/sessions/", "/agents/main/sessions/x.jsonl", "agents/main/sessions/skills-prompts/sha256/a/b.txt"]
    claimed = 0
    for rel in rels:
        expected = linear(rel)
        assert reader_for(rel) is expected, rel
        claimed += expected is not None
    assert claimed > 200  # the paths reach most readers, not only the unclaimed case


def test_an_excluded_path_falls_to_the_next_reader_or_none() -> None:
    for reader in all_readers():
        for pattern in reader.exclude:
            rel = pattern.replace("**", "agents/main/sessions/x").replace("*", "1")
            assert reader_for(rel) is linear(rel)
            assert reader_for(rel) is not reader


def test_the_agent_of_a_path_is_the_one_its_parts_name() -> None:
    from statekit.legacy_readers.base import _agent_id, agent_id_from_rel

    rels = ["agents/main/sessions/x.jsonl", "agents/Main/x", "agents/main/.", "agents/main/", "agents/main", "agents/./main/x",
            "agents//main/x", "sessions/x.jsonl", "sessions", "agent/x", "/agents/main/x", "agents/../main/x", "agents/bad id!/x",
            "agents/main/..", "x", "", "agents/main/sub/deeper/file.json"]
    for rel in rels * 2:  # the second round from the cache
        assert agent_id_from_rel(rel) == _agent_id(rel), rel
