#!/usr/bin/env bash
# The main job on a fresh clone with ../shared beside it: install what `nabench build` needs
# (the core package: no model, harness or browser extras) into .venv, build the full MMLU
# test split into build/mmlu-na and validate it. Extra arguments go to `nabench build`.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
. .venv/bin/activate
python -m pip install --quiet --disable-pip-version-check -e .
nabench build mmlu-na --source ../shared/data/cais__mmlu --labels none --out build/mmlu-na "$@"
nabench validate build/mmlu-na
