#!/usr/bin/env bash
# Set up everything on a fresh machine, then run retrograd's main job:
# train on the handwritten digits (extra flags are passed to `retrograd train`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh train,viz,fast
.venv/bin/retrograd train "$@"
