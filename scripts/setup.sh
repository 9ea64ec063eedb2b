#!/usr/bin/env bash
# Create .venv and install retrograd with the given extras (default: all of them).
# Also installs Graphviz's `dot` where apt-get can (pictures fall back to DOT text without it).
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-test,train,viz,sym}"
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".[${extras}]" 2>&1 \
  | grep -v "^WARNING: Location" || true
.venv/bin/python -c "import retrograd" || { echo "retrograd failed to install" >&2; exit 1; }
if ! command -v dot >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    (apt-get update -qq && apt-get install -y -qq graphviz) >/dev/null 2>&1 \
      || echo "note: could not install graphviz; graph pictures will be written as DOT text"
  else
    echo "note: Graphviz 'dot' not found; graph pictures will be written as DOT text"
  fi
fi
