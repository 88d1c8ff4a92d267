"""The install id: created once, 0600, stable, never through a symlink, a damaged one is refused."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from statekit.errors import StatekitError
from statekit.install import ensure_install_id, install_id_path, is_install_id, read_install_id


def test_created_once_private_and_stable(tmp_path: Path) -> None:
    assert read_install_id(tmp_path) is None
    first = ensure_install_id(tmp_path)
    assert is_install_id(first)
    assert ensure_install_id(tmp_path) == first == read_install_id(tmp_path)
    path = install_id_path(tmp_path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert path.read_text() == first + "\n"


def test_two_installs_get_different_ids(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert ensure_install_id(tmp_path / "a") != ensure_install_id(tmp_path / "b")


def test_symlink_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep")
    state = tmp_path / "state"
    (state / ".statekit").mkdir(parents=True)
    install_id_path(state).symlink_to(victim)
    with pytest.raises(StatekitError, match="symlink"):
        ensure_install_id(state)
    assert victim.read_text() == "keep"


def test_damaged_id_is_refused_not_replaced(tmp_path: Path) -> None:
    path = install_id_path(tmp_path)
    path.parent.mkdir()
    path.write_text("not-an-id\n")
    with pytest.raises(StatekitError, match="not an install id"):
        ensure_install_id(tmp_path)
    assert path.read_text() == "not-an-id\n"
