"""What happened to each source of a migrate run, kept as the run report's own text.

A run of 100,000 small files has 100,000 outcomes, each ~400 bytes as Python objects (the dataclass, its path
strings, its notices list), held until the run report is written at the end — the moment SQLite holds that
report twice. :class:`OutcomeLog` keeps each outcome as the UTF-8 JSON entry the report stores (``json.dumps``
of :meth:`SourceOutcome.to_json`, made once), in memory while the log is small, then in an unnamed temp file
(0600, gone with the log or the process) in statekit's own directory of the state dir. What stays in
memory is 8 bytes per outcome (where its entry ends) and a count per status.
"""

from __future__ import annotations

import json
import os
import tempfile
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, overload

from statekit.fsutil import ensure_private_dir

SPILL_BYTES = 1 << 20  # entries held in memory before the log moves them to its file (~4,000 outcomes)


@dataclass(slots=True)  # one per file: no __dict__ each
class SourceOutcome:
    kind: str
    rel: str
    agent_id: str | None
    status: str  # a statekit.states.SourceOutcome value
    records: int | None = None
    message: str | None = None
    retired_to: str | None = None
    notices: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "path": self.rel,
            "agent_id": self.agent_id,
            "status": self.status,
            "records": self.records,
            "message": self.message,
            "retired_to": self.retired_to,
            "notices": self.notices,
        }

    def report_entry(self) -> bytes:
        """The outcome as the run report stores it: ``json.dumps(to_json(), ensure_ascii=False, sort_keys=True)``, UTF-8."""
        return json.dumps(self.to_json(), ensure_ascii=False, sort_keys=True).encode("utf-8")

    @classmethod
    def from_entry(cls, entry: bytes) -> SourceOutcome:
        data = json.loads(entry)
        return cls(data["kind"], data["path"], data["agent_id"], data["status"], data["records"], data["message"],
                   data["retired_to"], data["notices"])


class OutcomeLog(Sequence[SourceOutcome]):
    """A run's outcomes in order, each kept as its report entry (:meth:`SourceOutcome.report_entry`), one per line.

    An outcome is final once appended: the log keeps its text, not the object (later changes to it are not seen).
    Reading gives new :class:`SourceOutcome` objects; :meth:`entries` gives the stored text without decoding it.
    ``spill_dir`` is where the temp file goes once the entries pass :data:`SPILL_BYTES` (the system's temp dir if None).
    """

    def __init__(self, spill_dir: Path | None = None) -> None:
        self._spill_dir = spill_dir
        self._held = bytearray()  # the entries after the file's (every entry while the log is small)
        self._file: BinaryIO | None = None
        self._in_file = 0  # bytes in the file
        self._ends = array("q")  # where each entry's line ends, counted over file and held bytes
        self._statuses: dict[str, int] = {}

    def append(self, outcome: SourceOutcome) -> None:
        entry = outcome.report_entry()
        self._held += entry
        self._held += b"\n"  # never inside an entry: json.dumps escapes every control character
        self._ends.append(self._in_file + len(self._held))
        self._statuses[outcome.status] = self._statuses.get(outcome.status, 0) + 1
        if len(self._held) >= SPILL_BYTES:
            self._spill()

    def counts(self) -> dict[str, int]:
        """How many outcomes have each status, by status."""
        return dict(sorted(self._statuses.items()))

    def entries(self) -> Iterator[bytes]:
        """Each outcome's report entry, in order, read back one at a time (nothing else is copied)."""
        for number in range(len(self._ends)):
            yield self._entry(number)

    def __len__(self) -> int:
        return len(self._ends)

    def __iter__(self) -> Iterator[SourceOutcome]:
        return map(SourceOutcome.from_entry, self.entries())

    @overload
    def __getitem__(self, index: int) -> SourceOutcome: ...

    @overload
    def __getitem__(self, index: slice) -> list[SourceOutcome]: ...

    def __getitem__(self, index: int | slice) -> SourceOutcome | list[SourceOutcome]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        return SourceOutcome.from_entry(self._entry(range(len(self))[index]))  # IndexError as a list gives it

    def _entry(self, number: int) -> bytes:
        """Entry ``number``'s bytes, without the newline after it."""
        start, end = self._ends[number - 1] if number else 0, self._ends[number] - 1
        if start >= self._in_file:
            return bytes(self._held[start - self._in_file:end - self._in_file])
        assert self._file is not None
        self._file.seek(start)  # within the file object's read buffer for the next entry: no system call
        entry = self._file.read(end - start)
        if len(entry) != end - start:
            raise OSError(f"outcome log: the temp file ends at {start + len(entry)}, before an entry's end ({end})")
        return entry

    def _spill(self) -> None:
        if self._file is None:
            if self._spill_dir is not None:
                ensure_private_dir(self._spill_dir)
            self._file = tempfile.TemporaryFile(dir=self._spill_dir)  # 0600; unnamed where the OS allows (O_TMPFILE)
        self._file.seek(0, os.SEEK_END)
        self._file.write(self._held)
        self._in_file += len(self._held)
        self._held = bytearray()


__all__ = ["OutcomeLog", "SourceOutcome"]
