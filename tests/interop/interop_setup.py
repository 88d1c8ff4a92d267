"""Find or install the real OpenClaw 2026.9.6, and run its commands (and statekit's) with a log of each.

Where the install comes from, in order:

1. ``STATEKIT_OPENCLAW_BIN`` (an ``openclaw`` binary) and optionally ``STATEKIT_NODE_BIN`` (a directory
   holding node 26, put first on PATH);
2. the cache ``${STATEKIT_INTEROP_CACHE:-~/.cache/statekit-interop}`` laid out as
   ``node26/node_modules/.bin/node`` and ``openclaw-2026.9.6/node_modules/.bin/openclaw``;
3. a fresh install into that cache: ``npm install node@26`` into ``node26/``, then, with that node first
   on PATH, ``npm install --no-audit --no-fund --ignore-scripts openclaw@2026.9.6`` into
   ``openclaw-2026.9.6/``. npm must run under node 26, or it silently skips the native package
   ``@openclaw/fs-safe-<platform>`` and every ``doctor`` fails. Each install goes to a temporary
   directory that is renamed into place only when complete, under a lock file, so a killed install
   never leaves half a cache and two runs never install at once.

When npm or its registry cannot be reached, :class:`InteropUnavailable` says why (the tests skip);
any other problem is an :class:`InteropSetupError` (the tests error, naming the log).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

OPENCLAW_VERSION = "2026.9.6"
NODE_SPEC = "node@26"
OPENCLAW_SPEC = f"openclaw@{OPENCLAW_VERSION}"
NPM_TIMEOUT_S = 1800
REGISTRY_PING_TIMEOUT_S = 60
VERSION_TIMEOUT_S = 120
# words in npm's output that mean the registry could not be reached (not a broken package)
NETWORK_FAILURE = re.compile(r"ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH|"
                             r"network|socket hang up|request to .* failed", re.I)
# OpenClaw stays on this machine: no mDNS advertising, no self-update, no tool downloads
QUIET_ENV = {"OPENCLAW_DISABLE_BONJOUR": "1", "OPENCLAW_NO_AUTO_UPDATE": "1", "OPENCLAW_OFFLINE": "1"}
ERROR_LINE = re.compile(r"error|fail|refus|invalid|noncanonical|incomplete|constraint|unsupported|cannot", re.I)


class InteropUnavailable(Exception):
    """OpenClaw cannot be had on this machine (no npm, or the registry is unreachable): interop tests skip."""


class InteropSetupError(Exception):
    """An OpenClaw install that is broken or could not be made: interop tests error with this message."""


@dataclass(frozen=True)
class OpenClawInstall:
    openclaw: Path
    node_bin: Path | None  # directory put first on PATH for every openclaw call
    version: str
    source: str  # "STATEKIT_OPENCLAW_BIN", "cache" or "installed now"


@dataclass(frozen=True)
class CacheLayout:
    root: Path

    @property
    def node_dir(self) -> Path:
        return self.root / "node26"

    @property
    def node_bin(self) -> Path:
        return self.node_dir / "node_modules" / ".bin"

    @property
    def openclaw_dir(self) -> Path:
        return self.root / f"openclaw-{OPENCLAW_VERSION}"

    @property
    def openclaw_bin(self) -> Path:
        return self.openclaw_dir / "node_modules" / ".bin" / "openclaw"

    @property
    def lock(self) -> Path:
        return self.root / ".install.lock"

    @property
    def logs(self) -> Path:
        return self.root / "install-logs"


def cache_root(env: Mapping[str, str]) -> Path:
    configured = env.get("STATEKIT_INTEROP_CACHE")
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "statekit-interop"


def native_fs_safe(openclaw_bin: Path) -> Path | None:
    """The platform package ``@openclaw/fs-safe-<os>-<arch>...`` in the node_modules holding openclaw."""
    for parent in Path(os.path.realpath(openclaw_bin)).parents:
        if parent.name == "node_modules":
            hits = sorted(p for p in (parent / "@openclaw").glob("fs-safe-*") if p.is_dir())
            if hits:
                return hits[0]
    return None


def find_or_install(env: Mapping[str, str] = os.environ) -> OpenClawInstall:
    """The OpenClaw install to use: from the environment, the cache, or installed now into the cache."""
    given = env.get("STATEKIT_OPENCLAW_BIN")
    if given:
        node = env.get("STATEKIT_NODE_BIN")
        return _verified(Path(given).expanduser(), Path(node).expanduser() if node else None, "STATEKIT_OPENCLAW_BIN")
    layout = CacheLayout(cache_root(env))
    if _cache_complete(layout):
        return _verified(layout.openclaw_bin, layout.node_bin, "cache")
    layout.root.mkdir(parents=True, exist_ok=True)
    with _exclusive(layout.lock):
        source = "cache"
        if not (layout.node_bin / "node").exists():
            _npm_install(layout, layout.node_dir, [NODE_SPEC], path_first=None, log_name="npm-node.txt")
            source = "installed now"
        if not (layout.openclaw_bin.exists() and native_fs_safe(layout.openclaw_bin)):
            _npm_install(layout, layout.openclaw_dir, ["--ignore-scripts", OPENCLAW_SPEC],
                         path_first=layout.node_bin, log_name="npm-openclaw.txt")
            source = "installed now"
    return _verified(layout.openclaw_bin, layout.node_bin, source)


def _cache_complete(layout: CacheLayout) -> bool:
    return ((layout.node_bin / "node").exists() and layout.openclaw_bin.exists()
            and native_fs_safe(layout.openclaw_bin) is not None)


@contextmanager
def _exclusive(lock: Path) -> Iterator[None]:
    with open(lock, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _npm_install(layout: CacheLayout, dest: Path, specs: list[str], path_first: Path | None, log_name: str) -> None:
    npm = shutil.which("npm", path=_path_with(path_first, os.environ.get("PATH", "")))
    if not npm:
        raise InteropUnavailable(f"npm is not on PATH, so OpenClaw {OPENCLAW_VERSION} cannot be installed "
                                 f"(or set STATEKIT_OPENCLAW_BIN)")
    env = dict(os.environ, PATH=_path_with(path_first, os.environ.get("PATH", "")))
    layout.logs.mkdir(parents=True, exist_ok=True)
    log = layout.logs / log_name
    ping = _run_logged([npm, "ping"], env, layout.root, REGISTRY_PING_TIMEOUT_S, log.with_suffix(".ping.txt"))
    if ping.returncode != 0:
        raise InteropUnavailable(f"the npm registry is unreachable (npm ping rc {ping.returncode}; log "
                                 f"{log.with_suffix('.ping.txt')}): OpenClaw {OPENCLAW_VERSION} cannot be installed")
    partial = dest.with_name(f"{dest.name}.partial-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    (partial / "package.json").write_text(json.dumps({"name": f"statekit-interop-{dest.name}", "version": "1.0.0",
                                                      "private": True}), encoding="utf-8")
    done = _run_logged([npm, "install", "--no-audit", "--no-fund", *specs], env, partial, NPM_TIMEOUT_S, log)
    output = done.stdout + done.stderr
    if done.returncode != 0:
        shutil.rmtree(partial, ignore_errors=True)
        if NETWORK_FAILURE.search(output):
            raise InteropUnavailable(f"npm could not reach the registry installing {' '.join(specs)} (log {log})")
        raise InteropSetupError(f"npm install {' '.join(specs)} failed rc {done.returncode}: "
                                f"{first_error_line(done.stderr, done.stdout)} (log {log})")
    if dest == layout.openclaw_dir and not native_fs_safe(partial / "node_modules" / ".bin" / "openclaw"):
        shutil.rmtree(partial, ignore_errors=True)
        raise InteropSetupError(f"npm installed {OPENCLAW_SPEC} without its native package @openclaw/fs-safe-<platform> "
                                f"(npm must run under node 26; log {log})")
    old = dest.with_name(f"{dest.name}.old-{os.getpid()}")
    if dest.exists():
        dest.rename(old)
    partial.rename(dest)
    shutil.rmtree(old, ignore_errors=True)


def _run_logged(argv: list[str], env: dict[str, str], cwd: Path, timeout: float,
                log: Path) -> subprocess.CompletedProcess[str]:
    try:
        done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        done = subprocess.CompletedProcess(argv, 124, _text(exc.stdout), _text(exc.stderr) + f"\ntimed out after {timeout} s")
    log.write_text(f"$ {' '.join(argv)}\ncwd={cwd} rc={done.returncode}\n--- stdout ---\n{done.stdout}\n"
                   f"--- stderr ---\n{done.stderr}", encoding="utf-8")
    return done


def _verified(openclaw: Path, node_bin: Path | None, source: str) -> OpenClawInstall:
    if not openclaw.exists():
        raise InteropSetupError(f"{source}: no openclaw binary at {openclaw}")
    if node_bin is not None and not (node_bin / "node").exists():
        raise InteropSetupError(f"{source}: no node binary in {node_bin}")
    if native_fs_safe(openclaw) is None:
        raise InteropSetupError(f"the native package @openclaw/fs-safe-<platform> is missing beside {openclaw}: "
                                f"npm skipped it (it must run under node 26), and every doctor would fail")
    env = dict(os.environ, PATH=_path_with(node_bin, os.environ.get("PATH", "")), NO_COLOR="1",
               OPENCLAW_NO_UPDATE_CHECK="1")
    try:
        done = subprocess.run([str(openclaw), "--version"], env=env, capture_output=True, text=True,
                              timeout=VERSION_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InteropSetupError(f"cannot run {openclaw} --version: {exc}") from exc
    version = (done.stdout + done.stderr).strip()
    if OPENCLAW_VERSION not in version:
        raise InteropSetupError(f"{openclaw} --version says {version[:120]!r}, expected {OPENCLAW_VERSION}")
    return OpenClawInstall(openclaw=openclaw, node_bin=node_bin, version=version, source=source)


def _path_with(first: Path | None, path: str) -> str:
    return f"{first}{os.pathsep}{path}" if first else path


def _text(value: str | bytes | None) -> str:
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    return value or ""


# ------------------------------------------------------------------------------------------ running commands
def first_error_line(*texts: str) -> str:
    """The most telling line of a command's output: the first that looks like an error, else the last."""
    for text in texts:
        for line in text.splitlines():
            if ERROR_LINE.search(line) and len(line.strip()) > 8:
                return shorten(line.strip(), 240)
    for text in texts:
        lines = [line for line in text.splitlines() if line.strip()]
        if lines:
            return shorten(lines[-1].strip(), 240)
    return "(no output)"


def shorten(text: str, limit: int = 240) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def parse_json_document(text: str) -> Any | None:
    """The JSON document in a command's stdout, tolerating log lines before it."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    decoder = json.JSONDecoder()
    for opener in ("{", "["):
        start = text.find(opener)
        while start != -1:
            try:
                return decoder.raw_decode(text[start:])[0]
            except ValueError:
                start = text.find(opener, start + 1)
    return None


@dataclass(frozen=True)
class CommandResult:
    name: str
    argv: tuple[str, ...]
    rc: int | None  # None: could not start; 124: timed out
    stdout: str
    stderr: str
    seconds: float
    log: Path
    note: str = ""

    @property
    def ok(self) -> bool:
        return self.rc == 0

    def json(self) -> Any | None:
        return parse_json_document(self.stdout)

    def why(self) -> str:
        """One line for an assertion message: rc, the telling line of the output, and the log to open."""
        if self.rc is None or self.note:
            return f"{self.note or 'did not run'} (log {self.log})"
        return f"rc={self.rc}: {first_error_line(self.stderr, self.stdout)} (log {self.log})"


class CommandLog:
    """Runs commands, writing each one's argv, env, rc, wall time, stdout and stderr to its own file."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self._count = len(list(directory.glob("[0-9][0-9][0-9]_*.txt")))

    def next_path(self, name: str, suffix: str = ".txt") -> Path:
        self._count += 1
        return self.directory / f"{self._count:03d}_{re.sub(r'[^A-Za-z0-9_.-]+', '-', name)}{suffix}"

    def run(self, name: str, argv: list[str], *, env: Mapping[str, str], cwd: Path, timeout: float) -> CommandResult:
        log = self.next_path(name)
        started = time.monotonic()
        note = ""
        try:
            done = subprocess.run(argv, env=dict(env), cwd=cwd, capture_output=True, text=True, timeout=timeout,
                                  stdin=subprocess.DEVNULL)
            rc, out, err = done.returncode, done.stdout, done.stderr
        except subprocess.TimeoutExpired as exc:
            rc, out, err, note = 124, _text(exc.stdout), _text(exc.stderr), f"timed out after {timeout:.0f} s"
        except OSError as exc:
            rc, out, err, note = None, "", "", f"could not start: {exc}"
        seconds = time.monotonic() - started
        log.write_text(f"$ HOME={env.get('HOME')} OPENCLAW_STATE_DIR={env.get('OPENCLAW_STATE_DIR')} {' '.join(argv)}\n"
                       f"cwd={cwd} rc={rc} wall={seconds:.1f}s {note}\n\n--- stdout ---\n{out}\n--- stderr ---\n{err}",
                       encoding="utf-8")
        with open(self.directory / "commands.tsv", "a", encoding="utf-8") as index:
            index.write(f"{log.name}\t{rc}\t{seconds:.1f}\t{' '.join(argv)}\n")
        return CommandResult(name, tuple(argv), rc, out, err, seconds, log, note)


def openclaw_env(install: OpenClawInstall, home: Path, state: Path | None = None,
                 base: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The environment of every OpenClaw call: this HOME and state dir, no colour, no update check, no API keys."""
    env = {k: v for k, v in base.items() if not k.endswith("_API_KEY") and not k.startswith("OPENCLAW_")}
    env.update(HOME=str(home), OPENCLAW_STATE_DIR=str(state or home / ".openclaw"), NO_COLOR="1", CI="1",
               OPENCLAW_NO_UPDATE_CHECK="1", PATH=_path_with(install.node_bin, base.get("PATH", "")), **QUIET_ENV)
    return env


class OpenClaw:
    """The real OpenClaw CLI, every call logged. ``run("A-doctor", ["doctor", "--fix"], home=...)``."""

    def __init__(self, install: OpenClawInstall, log: CommandLog) -> None:
        self.install = install
        self.log = log

    def with_log(self, log: CommandLog) -> OpenClaw:
        return OpenClaw(self.install, log)

    def env(self, home: Path, state: Path | None = None) -> dict[str, str]:
        return openclaw_env(self.install, home, state)

    def argv(self, args: list[str]) -> list[str]:
        return [str(self.install.openclaw), *args]

    def run(self, name: str, args: list[str], *, home: Path, state: Path | None = None,
            timeout: float = 300) -> CommandResult:
        return self.log.run(name, self.argv(args), env=self.env(home, state), cwd=home, timeout=timeout)


class Statekit:
    """``python -m statekit`` of this checkout, with HOME set to the tree's home; every call logged."""

    def __init__(self, log: CommandLog) -> None:
        self.log = log

    def run(self, name: str, args: list[str], *, home: Path, timeout: float = 600) -> CommandResult:
        env = {k: v for k, v in os.environ.items()
               if not k.endswith("_API_KEY") and not k.startswith(("OPENCLAW_", "STATEKIT_"))}  # no fault injection
        env["HOME"] = str(home)
        return self.log.run(name, [sys.executable, "-m", "statekit", *args], env=env, cwd=home, timeout=timeout)


def main() -> int:
    """``python tests/interop/interop_setup.py``: find or install OpenClaw now, one line saying which.

    scripts/check.sh runs it before the parts of the suite start side by side, so that none of them
    sees the cache appear in the middle of its run. Unavailable is not a failure (the tests skip);
    a broken install is (exit 1, the tests would error on it too).
    """
    try:
        install = find_or_install()
    except InteropUnavailable as exc:
        print(f"interop: OpenClaw {OPENCLAW_VERSION} unavailable, tests/interop will skip: {exc}")
        return 0
    except InteropSetupError as exc:
        print(f"interop: OpenClaw {OPENCLAW_VERSION} install is broken: {exc}", file=sys.stderr)
        return 1
    print(f"interop: {install.version} from {install.source}: {install.openclaw}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
