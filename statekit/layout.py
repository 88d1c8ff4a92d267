"""Where OpenClaw keeps its state: state-dir resolution and well-known paths.

Resolution follows OpenClaw: ``--state-dir``, else ``OPENCLAW_STATE_DIR``
(legacy alias ``CLAWDBOT_STATE_DIR``), else ``~/.openclaw`` when it exists,
else the first existing of ``~/.clawdbot``, ``~/.moldbot``, ``~/.moltbot``
(reported as a legacy root), else ``~/.openclaw``. Literal env values
``undefined`` and ``null`` count as unset. ``OPENCLAW_HOME`` replaces ``~``.

A state dir that is a symlink (or sits below one) is the directory it points
to: :class:`ResolvedStateDir` resolves its path once (``realpath``) and every
command reads, locks, backs up and restores that directory. The name as
given stays in ``given`` (relocation renames the link itself, see
``statekit.migrate.relocate``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

CANONICAL_DIR_NAME = ".openclaw"
LEGACY_DIR_NAMES = (".clawdbot", ".moldbot", ".moltbot")
CONFIG_NAME = "openclaw.json"
LEGACY_CONFIG_NAMES = ("clawdbot.json", "moldbot.json", "moltbot.json")
DEFAULT_AGENT_ID = "main"
STATEKIT_DIR_NAME = ".statekit"
BACKUP_DIR_ENV = "STATEKIT_BACKUP_DIR"  # names the backup output folder (flag > this > the per-install default)

GLOBAL_DB_REL = "state/openclaw.sqlite"
AGENT_DB_NAME = "openclaw-agent.sqlite"

_AGENT_ID_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,127}$")


def canonical_state_dir(path: str | os.PathLike[str]) -> Path:
    """The directory a state dir path names, every symlink resolved (absolute; need not exist yet)."""
    return Path(os.path.realpath(os.path.abspath(path)))


@dataclass(frozen=True)
class ResolvedStateDir:
    """A state dir: ``path`` is the real directory (symlinks resolved), ``given`` the path as it was named."""

    path: Path
    origin: str  # "flag" | "env" | "default" | "legacy"
    legacy: bool = False
    env_var: str | None = None
    given: Path | None = None

    def __post_init__(self) -> None:
        given = Path(os.path.abspath(self.given if self.given is not None else self.path))
        object.__setattr__(self, "given", given)
        object.__setattr__(self, "path", canonical_state_dir(given))

    @property
    def named(self) -> Path:
        """The path as given (a symlink stays a symlink): what relocation renames."""
        return self.given if self.given is not None else self.path

    @property
    def via_symlink(self) -> bool:
        return self.named != self.path


def _env_value(env: Mapping[str, str], *names: str) -> tuple[str, str] | None:
    for name in names:
        value = env.get(name)
        if value is None:
            continue
        value = value.strip()
        if value and value.lower() not in ("undefined", "null"):
            return name, value
    return None


def home_dir(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    found = _env_value(env, "OPENCLAW_HOME")
    if found:
        return Path(found[1]).expanduser()
    return Path(env.get("HOME") or Path.home())


def expand_user_path(raw: str, env: Mapping[str, str] | None = None) -> Path:
    """Expand ``~`` against the OpenClaw home (``OPENCLAW_HOME`` aware)."""
    if raw == "~" or raw.startswith("~/"):
        return home_dir(env) / raw[2:]
    return Path(raw)


def resolve_state_dir(flag: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None) -> ResolvedStateDir:
    env = os.environ if env is None else env
    if flag is not None and str(flag) != "":
        return ResolvedStateDir(Path(os.path.abspath(expand_user_path(str(flag), env))), "flag")
    found = _env_value(env, "OPENCLAW_STATE_DIR", "CLAWDBOT_STATE_DIR")
    if found:
        return ResolvedStateDir(Path(os.path.abspath(expand_user_path(found[1], env))), "env", env_var=found[0])
    home = home_dir(env)
    canonical = home / CANONICAL_DIR_NAME
    if canonical.is_dir():
        return ResolvedStateDir(canonical, "default")
    for name in LEGACY_DIR_NAMES:
        candidate = home / name
        if candidate.is_dir():
            return ResolvedStateDir(candidate, "legacy", legacy=True)
    return ResolvedStateDir(canonical, "default")


def normalize_agent_id(raw: str) -> str:
    return raw.strip().lower()


def is_valid_agent_id(agent_id: str) -> bool:
    return bool(_AGENT_ID_RE.match(agent_id))


def global_db_path(state_dir: Path) -> Path:
    return state_dir / GLOBAL_DB_REL


def agent_dir(state_dir: Path, agent_id: str) -> Path:
    return state_dir / "agents" / agent_id / "agent"


def agent_db_path(state_dir: Path, agent_id: str) -> Path:
    return agent_dir(state_dir, agent_id) / AGENT_DB_NAME


def statekit_dir(state_dir: Path) -> Path:
    return state_dir / STATEKIT_DIR_NAME


def migrated_dir(state_dir: Path, run_id: str) -> Path:
    return statekit_dir(state_dir) / "migrated" / run_id


def lock_path(state_dir: Path) -> Path:
    return statekit_dir(state_dir) / "lock"


def config_path(state_dir: Path, env: Mapping[str, str] | None = None) -> Path | None:
    """The active config file: ``OPENCLAW_CONFIG_PATH`` or the first existing name in the state dir."""
    env = os.environ if env is None else env
    found = _env_value(env, "OPENCLAW_CONFIG_PATH", "CLAWDBOT_CONFIG_PATH")
    if found:
        return expand_user_path(found[1], env)
    for name in (CONFIG_NAME, *LEGACY_CONFIG_NAMES):
        candidate = state_dir / name
        if candidate.is_file():
            return candidate
    return None


def relative_posix(path: Path, root: Path) -> str:
    return PurePosixPath(*path.relative_to(root).parts).as_posix()


def rebase_stale_path(raw: str, state_dir: Path) -> Path:
    """Read a path recorded in config or an index relative to where the state dir is now.

    Old installs store absolute paths under the home they were written in
    (``/home/admin/.clawdbot/workspace``). When such a path points inside a
    state-dir-shaped root (``.openclaw``, ``.clawdbot``, ``.moldbot``,
    ``.moltbot``, or the current state dir's own name), the part after that
    root is taken relative to the current state dir. Relative paths are
    relative to the state dir. Anything else is returned unchanged.
    """
    path = Path(raw)
    if not path.is_absolute():
        return state_dir / path
    try:
        path.relative_to(state_dir)
        return path
    except ValueError:
        pass
    parts = path.parts
    roots = {CANONICAL_DIR_NAME, *LEGACY_DIR_NAMES, state_dir.name}
    for index in range(len(parts) - 1, -1, -1):
        if parts[index] in roots:
            return state_dir.joinpath(*parts[index + 1 :])
    return path
