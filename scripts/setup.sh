#!/usr/bin/env bash
# Create (or reuse) a virtual environment and install the pinned stack plus this package.
# Usage: bash scripts/setup.sh [VENV_DIR]   (default: .venv)
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${1:-.venv}"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet -r requirements.txt
"$venv/bin/python" -m pip install --quiet --no-deps -e .
echo "environment ready: $venv"
