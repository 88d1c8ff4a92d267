"""What a restore does at one destination, whatever the archive format: the plan's unit."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from statekit.fsutil import PRIVATE_FILE_MODE
from statekit.states import RestoreStepAction


@dataclass
class RestoreStep:
    archive_path: str
    destination: Path
    kind: str  # "sqlite" | "file" | "dir" | "symlink"
    action: RestoreStepAction
    mode: int
    mtime: float
    sha256: str | None = None
    size: int = 0
    link_target: str | None = None
    link_scope: str | None = None
    aside_rel: str = ""  # where the current entry goes below pre-restore/<ts>/
    base: Path | None = None  # the tree it belongs to (the state dir for state assets): no symlink is followed below it
    copy_from: str | None = None  # an OpenClaw hard link: the archive path of the file whose bytes it shares
    external_root: str | None = None  # statekit archives: the asset id ("config", "credentials", ...) of a tree kept outside the state dir

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"archive_path": self.archive_path, "destination": str(self.destination), "kind": self.kind,
                                "action": self.action}
        if self.external_root is not None:
            data["external"] = self.external_root
        return data


def file_mode(kind: str, role: str, mode: int) -> int:
    return PRIVATE_FILE_MODE if kind == "sqlite" or role == "credentials" else mode & 0o777
