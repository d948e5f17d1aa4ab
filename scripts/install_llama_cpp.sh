#!/usr/bin/env bash
# Install llama-cpp-python[server] into the active Python environment, compiled from source for
# a portable x86-64-v3 CPU (AVX2/FMA/F16C), not with -march=native.
#
#   PYTHON=/path/to/python scripts/install_llama_cpp.sh      (default: python on PATH)
#
# Why not native: on a CPU that advertises AMX, ggml's native build runs AMX tile instructions
# (`tilezero`) during prompt evaluation, which die with SIGILL ("Illegal instruction") on
# virtual machines that do not grant AMX state to the process. pip's own wheel cache keys a
# built wheel by the sdist alone, not by CMAKE_ARGS, so a native wheel cached earlier would be
# reused: this script keeps its own wheel, named by version and flags, in
# ${NABENCH_WHEEL_CACHE:-$HOME/.cache/nabench-wheels} and builds it only once per machine.
set -euo pipefail
PY="${PYTHON:-python}"
VERSION=0.3.36
FLAGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
tag=$(printf '%s' "$VERSION $FLAGS" | sha256sum | cut -c1-12)
cache="${NABENCH_WHEEL_CACHE:-$HOME/.cache/nabench-wheels}/llama-cpp-python-$tag"
mkdir -p "$cache"
whl=$(ls "$cache"/llama_cpp_python-"$VERSION"-*.whl 2>/dev/null | head -n 1 || true)
if [ -z "$whl" ]; then
  echo "building llama-cpp-python $VERSION ($FLAGS); ~5 min on two cores"
  tmp=$(mktemp -d)
  CMAKE_ARGS="$FLAGS" "$PY" -m pip wheel --quiet --no-deps --no-cache-dir --no-binary llama-cpp-python \
    -w "$tmp" "llama-cpp-python==$VERSION"
  mv "$tmp"/llama_cpp_python-*.whl "$cache"/
  rmdir "$tmp"
  whl=$(ls "$cache"/llama_cpp_python-"$VERSION"-*.whl | head -n 1)
fi
# --force-reinstall --no-deps replaces a native build already installed; the second call brings
# the [server] extra's dependencies (the wheel itself is then already in place).
"$PY" -m pip install --quiet --force-reinstall --no-deps "$whl"
"$PY" -m pip install --quiet "$whl[server]"
