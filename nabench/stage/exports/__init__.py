"""Exports of a build for other harnesses: lm-evaluation-harness tasks (written into every
build by `stage`) and the inspect_ai task ``nabench/mcq`` (:mod:`.inspect_mcq`, loaded only
through the ``inspect_ai`` entry point because it imports inspect_ai)."""

from nabench.stage.exports.lm_eval_tasks import (
    LM_EVAL_DIR,
    HubData,
    LmEvalSpec,
    LocalData,
    lm_eval_card_section,
    lm_eval_files,
)

__all__ = [
    "LM_EVAL_DIR",
    "HubData",
    "LmEvalSpec",
    "LocalData",
    "lm_eval_card_section",
    "lm_eval_files",
]
