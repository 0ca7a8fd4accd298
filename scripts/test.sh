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
# One process by default. BINLOGSCOPE_TEST_WORKERS=N (N >= 2) runs on N pytest-xdist workers
# (tests/conftest.py keeps each test file, and all Spark files, on one worker; every worker starts
# its own MariaDB): about twice as fast where it works, but not yet reliable - in the clean-clone
# run of 2026-11-28 a worker died on a proxy test that writes to a reset socket, xdist's
# loadgroup scheduler then waited for ever, and a real-terminal (tmux) test missed its toast
# under the load; CI stays on one process until those are fixed.
workers="${BINLOGSCOPE_TEST_WORKERS:-0}"
if [ "$workers" -ge 2 ] 2>/dev/null; then
    exec python -m pytest -q -n "$workers" --dist loadgroup "$@"
fi
exec python -m pytest -q "$@"
