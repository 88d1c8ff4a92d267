"""The transcript fast path never accepts what the JSON Schema rejects."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from statekit.documents import validator as _validator
from statekit.legacy_readers.transcripts import conforms

values = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=5),
                   st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))
events = st.dictionaries(st.sampled_from(["type", "id", "parentId", "timestamp", "version", "message", "other"]), values)


@settings(max_examples=600, deadline=None)
@given(events)
def test_fast_path_agrees_with_the_schema(event: dict) -> None:
    valid = _validator("transcript-event").is_valid(event)
    if conforms(event):
        assert valid
