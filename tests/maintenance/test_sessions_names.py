"""Session maintenance and backups never share a public name (the old restore_archive / RestoreResult / list_archives clash)."""

from __future__ import annotations

import importlib
import pkgutil

import statekit.backup
import statekit.maintenance.sessions


def public_names(package_name: str) -> set[str]:
    """Public classes and functions defined in the package or any of its modules (module names aside)."""
    package = importlib.import_module(package_name)
    modules = [package] + [importlib.import_module(f"{package_name}.{info.name}") for info in pkgutil.iter_modules(package.__path__)]
    return {
        name
        for module in modules
        for name, value in vars(module).items()
        if not name.startswith("_") and str(getattr(value, "__module__", "")).startswith(package_name)
    }


def test_no_public_name_is_shared_with_backup() -> None:
    sessions = public_names("statekit.maintenance.sessions")
    backup = public_names("statekit.backup")
    assert {"restore_session_archive", "SessionRestoreResult", "list_session_archives"} <= sessions
    assert not sessions & backup, sorted(sessions & backup)


def test_sessions_is_a_package_of_small_modules() -> None:
    modules = {info.name for info in pkgutil.iter_modules(statekit.maintenance.sessions.__path__)}
    assert {"family", "archive_format", "transactions", "listing", "restore"} <= modules
    assert statekit.backup.__name__ == "statekit.backup"
