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
exec python -m pytest -q "$@"
