"""What a restore does at one destination, whatever the archive format: the plan's unit."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from statekit.fsutil import PRIVATE_FILE_MODE
from statekit.states import RestoreStepAction


@dataclass(slots=True)
class RestoreStep:
    """One destination of the plan. Compact (slots, the destination kept as str and given out as a Path): a restore
    holds one per file of the archive."""

    archive_path: str
    destination_text: str  # the destination, as str (a Path is made on access: ``destination``)
    kind: str  # "sqlite" | "file" | "dir" | "symlink"
    action: RestoreStepAction
    mode: int
    mtime: float
    sha256: str | None = None
    size: int = 0
    link_target: str | None = None
    link_scope: str | None = None
    aside: str | None = ""  # where the current entry goes below pre-restore/<ts>/; None: the archive path below
    # ``<root>/payload/`` (a statekit archive's own layout: ``state/<rel>``, ``external/<id>/<rel>``), not stored twice
    base: Path | None = None  # the tree it belongs to (the state dir for state assets): no symlink is followed below it
    copy_from: str | None = None  # an OpenClaw hard link: the archive path of the file whose bytes it shares
    external_root: str | None = None  # statekit archives: the asset id ("config", "credentials", ...) of a tree kept outside the state dir

    @property
    def destination(self) -> Path:
        return Path(self.destination_text)

    @property
    def aside_rel(self) -> str:
        return self.aside if self.aside is not None else self.archive_path.split("/payload/", 1)[1]

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"archive_path": self.archive_path, "destination": self.destination_text, "kind": self.kind,
                                "action": self.action}
        if self.external_root is not None:
            data["external"] = self.external_root
        return data


def file_mode(kind: str, role: str, mode: int) -> int:
    return PRIVATE_FILE_MODE if kind == "sqlite" or role == "credentials" else mode & 0o777
