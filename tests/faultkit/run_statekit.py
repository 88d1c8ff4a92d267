"""The test entry point: ``statekit`` with the fault layer armed from the environment.

``python tests/faultkit/run_statekit.py ARGS`` behaves as ``python -m statekit ARGS``
except that it first loads statekit's command modules, then installs what
``STATEKIT_CRASHPOINT``, ``STATEKIT_KILL_AFTER_MS`` and ``STATEKIT_IOFAULT`` ask for
(see :mod:`faultkit`), then calls :func:`statekit.cli.main`. The product itself
never reads these variables.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make ``faultkit`` importable, not the script's own folder
    here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]
    sys.path.insert(0, str(here.parent))


def load_statekit() -> None:
    """Import the CLI and every command module (and so the library behind them), as ``main`` would."""
    import statekit.cli

    for info in pkgutil.iter_modules(statekit.cli.__path__):
        if info.name.endswith("_cmd"):
            importlib.import_module(f"statekit.cli.{info.name}")


def run(argv: list[str]) -> int:
    import faultkit
    from statekit.cli import main

    load_statekit()
    faultkit.arm_from_env(os.environ)  # the kill timer runs from here: statekit's code is loaded
    return main(argv)


if __name__ == "__main__":
    raise SystemExit(run(sys.argv[1:]))
