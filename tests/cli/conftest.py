from __future__ import annotations

from pathlib import Path

import pytest

from cli_installed import Installed, install_like_pipx


@pytest.fixture(scope="session")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """statekit installed from its wheel into a pipx-like venv (built once per session)."""
    return install_like_pipx(tmp_path_factory.mktemp("installed"))
