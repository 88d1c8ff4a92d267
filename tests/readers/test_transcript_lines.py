"""A transcript is split into lines as its bytes say, whatever the read blocks (issue 16: one pass, read in blocks).

``transcripts._lines`` reads 1 MiB blocks and joins a line that spans blocks once. Against the
plain reading of the whole stream (``split(b"\\n")``, blanks stripped, a byte order mark dropped from
the first line, line numbers counting blank lines, the last line torn when no newline ends it), for
any bytes and block sizes down to one byte.
"""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings, strategies as st

from statekit.legacy_readers import transcripts

BOM = b"\xef\xbb\xbf"


def read_whole(data: bytes) -> list[tuple[int, bytes, bool]]:
    raws = data.split(b"\n")
    if data.endswith(b"\n"):
        raws.pop()  # nothing after the last newline
    out = []
    for number, raw in enumerate(raws, 1):
        line = raw.strip()
        if number == 1 and line.startswith(BOM):
            line = line[3:].strip()
        if line:
            out.append((number, line, number < len(raws) or data.endswith(b"\n")))
    return out


pieces = st.sampled_from([b"a", b"{}", b"\n", b"\n\n", b" ", b"\r", b"\t", BOM, b"\xef\xbb", b"\xbf", b"\xff", b"\r\n"])


@settings(max_examples=600, deadline=None)
@given(st.lists(pieces, max_size=40), st.sampled_from([1, 2, 3, 5, 8, 64, 1 << 20]))
def test_lines_are_the_bytes_split_at_newlines(chunks: list[bytes], block: int) -> None:
    data = b"".join(chunks)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(transcripts, "READ_BLOCK", block)
        assert list(transcripts._lines(io.BytesIO(data))) == read_whole(data), (data, block)


def test_a_line_longer_than_a_block_and_a_torn_last_line() -> None:
    data = BOM + b" " + b"x" * 50 + b"\n\n  y \n" + b"z" * 30
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(transcripts, "READ_BLOCK", 7)
        assert list(transcripts._lines(io.BytesIO(data))) == [(1, b"x" * 50, True), (3, b"y", True), (4, b"z" * 30, False)]
