#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run calls exactly this).
# Installs what is missing (MariaDB, tshark, a JVM, Python test deps), then lint, types, tests.
# Tests that need MariaDB start their own throw-away server (scripts/mariadb.sh) on a free port.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
. scripts/venv.sh   # the venv install-deps.sh installed into (the active one, else .venv)
echo "== ruff";   python -m ruff check src tests mock_master bench
echo "== mypy";   python -m mypy
echo "== import contracts"; lint-imports
echo "== pytest"
# One process by default (about 45 minutes on the shared 2-core machine, 2026-11-29).
#   BINLOGSCOPE_TEST_WORKERS=N   (N >= 2) N pytest-xdist workers, --dist loadgroup (tests/conftest.py
#                                keeps each test file, and all Spark files, on one worker; every
#                                worker starts its own MariaDB): 36 minutes in the last measured
#                                run (the Spark group on one worker bounds it). A crashed
#                                worker fails the run at once (--max-worker-restart 0: xdist 3.8's
#                                loadgroup scheduler hangs when it replaces one).
#   BINLOGSCOPE_TEST_DEADLINE=S  the whole pytest run's limit in seconds (default 4800, under CI's
#                                90 minutes; 0: none): past it, where it stood is printed and the
#                                run fails (tests/suite_guards.py) instead of hanging until CI's limit
# Each test has a 600 s timeout (pyproject.toml). Arguments go to pytest: the fast loop (all but
# Spark and the tests marked slow or listed in tests/slow_cases.txt, ~1/4 of the time) is
#   bash scripts/test.sh -m 'not slow'      (or, in the venv: pytest -m 'not slow')
# A junit file for scripts/slow_cases.py:  bash scripts/test.sh --junitxml=/tmp/suite.xml
export BINLOGSCOPE_TEST_DEADLINE="${BINLOGSCOPE_TEST_DEADLINE:-4800}"
workers="${BINLOGSCOPE_TEST_WORKERS:-0}"
if [ "$workers" -ge 2 ] 2>/dev/null; then
    exec python -m pytest -q -n "$workers" --dist loadgroup --max-worker-restart 0 "$@"
fi
exec python -m pytest -q "$@"
