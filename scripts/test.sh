#!/usr/bin/env bash
# Install (into .venv) and run the checks: ruff, then the test suite.
# Tests that need ../shared/data are skipped, with the reason, when it is absent.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh test
.venv/bin/ruff check .
.venv/bin/ruff format --check .
# -n: one test process per CPU, at most 4 (pytest-xdist; each holds torch and a few models,
# up to about 1.5 GB), or TEST_PROCESSES of them (0: in pytest's own process); every test works
# in a tmp_path of its own. --durations: the slowest tests, to keep the suite short
processes=$(nproc)
[ "$processes" -le 4 ] || processes=4
processes=${TEST_PROCESSES:-$processes}
.venv/bin/python -m pytest -q -rs -n "$processes" --durations=15 "$@"
