#!/usr/bin/env bash
# Create .venv and install denoisesum into it (idempotent). Extras: `bash scripts/setup.sh test`.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
# The CPU build of torch must come first: a plain `torch` requirement pulls a multi-GB CUDA build.
.venv/bin/python -m pip install -q --disable-pip-version-check "torch==2.13.0" 2>&1 \
  | grep -v "^WARNING: Location" || true
extras=${1:+[$1]}
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".$extras" 2>&1 \
  | grep -v "^WARNING: Location" || true
.venv/bin/python -c "import denoisesum, torch" || { echo "install failed" >&2; exit 1; }
