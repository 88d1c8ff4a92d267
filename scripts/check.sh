#!/bin/sh
# The checks CI runs, in order: the import layers (import-linter), the types (mypy), then the tests.
# Arguments go to pytest (one run, as given). Run from anywhere with the project's .venv installed ('.[test]').
#
# Without arguments the suite uses both cores: tests/interop (mostly the real OpenClaw's own node
# processes, about half of the suite's time) runs in a second pytest beside everything else. The
# OpenClaw install is found or made first, so neither half sees the cache appear mid-run. The
# interop half's output is printed after the other's; the exit status is non-zero if either failed.
set -eu
cd "$(dirname "$0")/.."
.venv/bin/python scripts/source_tree.py >/dev/null
(cd build/source-tree && ../../.venv/bin/lint-imports ../../pyproject.toml)
.venv/bin/mypy
if [ "$#" -gt 0 ]; then
    exec .venv/bin/pytest -q "$@"
fi
.venv/bin/python tests/interop/interop_setup.py
log=build/interop-tests.log
.venv/bin/pytest -q -p no:cacheprovider tests/interop >"$log" 2>&1 &
interop=$!
trap 'kill "$interop" 2>/dev/null || true' INT TERM
rest=0
.venv/bin/pytest -q --ignore=tests/interop || rest=$?
half=0
wait "$interop" || half=$?
trap - INT TERM
echo "================================ tests/interop ================================="
cat "$log"
if [ "$rest" -ne 0 ] || [ "$half" -ne 0 ]; then
    echo "check.sh: pytest failed (everything but tests/interop: exit $rest; tests/interop: exit $half)" >&2
    exit 1
fi
