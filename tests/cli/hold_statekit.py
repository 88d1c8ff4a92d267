"""``python hold_statekit.py FIFO CHECKPOINT ARGS...``: statekit that stops at a checkpoint until told to go on.

At the first ``checkpoint(CHECKPOINT)`` it opens FIFO for reading (the test, opening it for writing,
learns that the run is there) and blocks reading it: the test then signals the process. A test seam
(statekit.seams), no sleep: the run is held exactly mid-source.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: faultkit


def main(argv: list[str]) -> int:
    fifo, point, *args = argv
    from faultkit.run_statekit import load_statekit
    from statekit import seams
    from statekit.cli import main as statekit_main

    load_statekit()

    def hold(name: str) -> None:
        if name == point:
            seams.install_checkpoint_hook(None)
            with open(fifo, "rb") as held:
                held.read()  # blocks until the test writes or closes; a signal interrupts it

    seams.install_checkpoint_hook(hold)
    return statekit_main(args)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
