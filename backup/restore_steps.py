"""What a restore does at one destination, whatever the archive format: the plan's unit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from statekit.fsutil import PRIVATE_FILE_MODE
from statekit.states import RestoreStepAction


class RestoreStep:
    """One destination of the plan. Compact (slots, the destination kept as str and given out as a Path): a restore
    holds one per file of the archive."""

    __slots__ = ("archive_path", "_destination", "kind", "action", "mode", "mtime", "sha256", "size", "link_target",
                 "link_scope", "_aside_rel", "base", "copy_from", "external_root")

    def __init__(
        self,
        archive_path: str,
        destination: Path,
        kind: str,  # "sqlite" | "file" | "dir" | "symlink"
        action: RestoreStepAction,
        mode: int,
        mtime: float,
        sha256: str | None = None,
        size: int = 0,
        link_target: str | None = None,
        link_scope: str | None = None,
        aside_rel: str | None = "",  # where the current entry goes below pre-restore/<ts>/; None: the archive path below
        # ``<root>/payload/`` (a statekit archive's own layout: ``state/<rel>``, ``external/<id>/<rel>``), not stored twice
        base: Path | None = None,  # the tree it belongs to (the state dir for state assets): no symlink is followed below it
        copy_from: str | None = None,  # an OpenClaw hard link: the archive path of the file whose bytes it shares
        external_root: str | None = None,  # statekit archives: the asset id ("config", "credentials", ...) of a tree kept outside the state dir
    ) -> None:
        self.archive_path = archive_path
        self._destination = str(destination)
        self.kind = kind
        self.action = action
        self.mode = mode
        self.mtime = mtime
        self.sha256 = sha256
        self.size = size
        self.link_target = link_target
        self.link_scope = link_scope
        self._aside_rel = aside_rel
        self.base = base
        self.copy_from = copy_from
        self.external_root = external_root

    @property
    def destination(self) -> Path:
        return Path(self._destination)

    @destination.setter
    def destination(self, value: Path) -> None:
        self._destination = str(value)

    @property
    def aside_rel(self) -> str:
        if self._aside_rel is not None:
            return self._aside_rel
        return self.archive_path.split("/payload/", 1)[1]

    @aside_rel.setter
    def aside_rel(self, value: str) -> None:
        self._aside_rel = value

    @property
    def destination_text(self) -> str:
        """The destination as str (no Path made)."""
        return self._destination

    def _fields(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RestoreStep) and self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"RestoreStep({self.archive_path!r} -> {self._destination!r}, {self.kind}, {self.action})"

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"archive_path": self.archive_path, "destination": self._destination, "kind": self.kind,
                                "action": self.action}
        if self.external_root is not None:
            data["external"] = self.external_root
        return data


def file_mode(kind: str, role: str, mode: int) -> int:
    return PRIVATE_FILE_MODE if kind == "sqlite" or role == "credentials" else mode & 0o777
