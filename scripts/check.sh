#!/bin/sh
# The checks CI runs, in order: the import layers (import-linter), the types (mypy), then the tests.
# Arguments go to pytest. Run from anywhere with the project's .venv installed ('.[test]').
set -eu
cd "$(dirname "$0")/.."
.venv/bin/python scripts/source_tree.py >/dev/null
(cd build/source-tree && ../../.venv/bin/lint-imports ../../pyproject.toml)
.venv/bin/mypy
.venv/bin/pytest -q "$@"
