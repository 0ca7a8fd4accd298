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
# Two workers (pytest-xdist): much of the suite waits on servers, sockets and child processes,
# so two halve much of the wait on a 2-core box (tests/conftest.py keeps each test file, and all
# Spark files, on one worker; every worker starts its own MariaDB on its own free port).
# BINLOGSCOPE_TEST_WORKERS=0 runs in one process; more workers suit a bigger machine.
exec python -m pytest -q -n "${BINLOGSCOPE_TEST_WORKERS:-2}" --dist loadgroup "$@"
