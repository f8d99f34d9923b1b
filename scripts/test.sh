#!/usr/bin/env bash
# Install (into .venv) and run the checks: ruff, then the test suite.
# Tests that need ../shared/data are skipped, with the reason, when it is absent.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh test
.venv/bin/ruff check .
.venv/bin/ruff format --check .
# --durations: the slowest tests, to keep the suite within its 20 minutes
.venv/bin/python -m pytest -q -rs --durations=15 "$@"
