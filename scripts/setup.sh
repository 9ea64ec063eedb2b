#!/usr/bin/env bash
# Create .venv and install retrograd with the given extras (default: all of them).
# Also installs Graphviz's `dot` (and, with the docs extra, Chromium) where apt-get can.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-test,train,viz,sym,docs}"
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".[${extras}]" 2>&1 \
  | grep -v "^WARNING: Location" || true
.venv/bin/python -c "import retrograd" || { echo "retrograd failed to install" >&2; exit 1; }
# System packages: Graphviz's `dot` (pictures), and for the docs extra Chromium and its
# WebDriver (the documentation site's browser test).
need=()
command -v dot >/dev/null 2>&1 || need+=(graphviz)
if [[ ",${extras}," == *",docs,"* ]]; then
  command -v chromium >/dev/null 2>&1 || need+=(chromium)
  command -v chromedriver >/dev/null 2>&1 || need+=(chromium-driver)
fi
if [ "${#need[@]}" -gt 0 ]; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}") \
      >/dev/null 2>&1 || echo "note: could not install ${need[*]} with apt-get"
  else
    echo "note: not found: ${need[*]} (graph pictures fall back to DOT text; the docs" \
      "browser test needs chromium and chromium-driver)"
  fi
fi
