"""``python -m statekit``: same as the ``statekit`` console script."""

from statekit.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
