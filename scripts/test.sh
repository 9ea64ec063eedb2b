#!/usr/bin/env bash
# Set up everything on a fresh machine, then run the whole test suite (and lint).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh test,train,viz,sym,docs
.venv/bin/ruff check .
.venv/bin/python -m pytest -n 2 -p no:cacheprovider "$@"
