#!/bin/sh
# The checks CI runs, in order: the import layers (import-linter), the types (mypy), then the tests.
# Arguments go to pytest (one run, as given). Run from anywhere with the project's .venv installed ('.[test]').
#
# Without arguments the suite uses both cores. The OpenClaw install is found or made once first, so no
# run sees the cache appear mid-run. tests/interop (mostly the real OpenClaw's own node processes, about
# half of the suite's time) runs in two pytest runs beside a third that runs the other tests. The tests
# that reach ../shared/corpus run in a fourth, after tests/interop has ended: its live copies of the
# corpus trees sit at the absolute paths those trees name (scripts/test_phases.py). The interop output
# is printed after the first phase's; the exit status is non-zero if any run failed.
set -eu
cd "$(dirname "$0")/.."
# The suite starts statekit in thousands of child processes: each one reads cached bytecode (under build/,
# outside the source tree) instead of compiling every module again, even where the shell says not to write it.
PYTHONPYCACHEPREFIX="$(pwd)/build/pycache"
PYTHONDONTWRITEBYTECODE=
export PYTHONPYCACHEPREFIX PYTHONDONTWRITEBYTECODE
.venv/bin/python scripts/source_tree.py >/dev/null
(cd build/source-tree && ../../.venv/bin/lint-imports ../../pyproject.toml)
.venv/bin/mypy
if [ "$#" -gt 0 ]; then
    exec .venv/bin/pytest -q "$@"
fi
.venv/bin/python tests/interop/interop_setup.py
beside=$(.venv/bin/python scripts/test_phases.py beside)
after=$(.venv/bin/python scripts/test_phases.py after)
# tests/interop in two pytest runs (the corpus trees; the demo install and the rest): the real OpenClaw
# waits on its gateway and on child processes a good part of the time, so two runs keep both cores busy.
# Each claims the HOME of the trees it runs (the marker convention of tests/interop/interop_trees.py).
.venv/bin/pytest -q -p no:cacheprovider tests/interop -k "2026" >build/interop-corpus.log 2>&1 &
interop_corpus=$!
.venv/bin/pytest -q -p no:cacheprovider tests/interop -k "not 2026" >build/interop-rest.log 2>&1 &
interop_rest=$!
trap 'kill "$interop_corpus" "$interop_rest" 2>/dev/null || true' INT TERM
first=0
# shellcheck disable=SC2086  # one argument per test file
.venv/bin/pytest -q $beside || first=$?
half=0
for run in "$interop_corpus" "$interop_rest"; do
    status=0
    wait "$run" || status=$?
    [ "$status" -eq 5 ] || [ "$status" -eq 0 ] || half=$status  # 5: no test selected (a clone without ../shared)
done
trap - INT TERM
echo "======================== tests/interop: the corpus trees ========================"
cat build/interop-corpus.log
echo "================== tests/interop: the demo install and the rest =================="
cat build/interop-rest.log
echo "============================ tests reaching the corpus ============================"
last=0
# shellcheck disable=SC2086
.venv/bin/pytest -q $after || last=$?
if [ "$first" -ne 0 ] || [ "$half" -ne 0 ] || [ "$last" -ne 0 ]; then
    echo "check.sh: pytest failed (beside tests/interop: exit $first; tests/interop: exit $half; after it: exit $last)" >&2
    exit 1
fi
