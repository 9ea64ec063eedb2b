#!/usr/bin/env bash
# Set up everything on a fresh machine, then run the whole test suite (and lint).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh test,train,viz,sym,docs
.venv/bin/ruff check .
# worksteal: an idle worker takes half of the other's queue, so neither waits at the end
# behind a few long tests (with the default `load`, one sat idle ~20-30s of a loaded run)
.venv/bin/python -m pytest -n 2 --dist worksteal -p no:cacheprovider "$@"
