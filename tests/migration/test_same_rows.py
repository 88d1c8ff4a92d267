"""The rows statekit writes are the rows statekit wrote before the performance work (it changes how, not what).

``data/same-rows.json`` was written by main at 2ef7472 (``same_rows.py --write``; the rows of every
data table are the ones 308a7ed wrote, the receipts and run report carry main's later additions): for each world
(demo, every-family, the reliability mutants, each corpus tree) the migrate outcome, every table of
every database (row count and a digest of the sorted rows; run ids, the state path and import times
masked; the run report's database digests too) and every retired file's bytes. A parse, plan or durability change that alters one row fails here.
"""

from __future__ import annotations

import json

import pytest

from same_rows import GOLDEN, assert_same_as_golden, world_names

EXPECTED = json.loads(GOLDEN.read_text(encoding="utf-8"))


@pytest.mark.parametrize("world", world_names())
def test_same_rows_as_before(world: str) -> None:
    if world not in EXPECTED:
        pytest.skip(f"no recorded dump for {world}")
    assert_same_as_golden(world, EXPECTED)
