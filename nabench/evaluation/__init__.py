"""Evaluation: answer parsing, scoring, statistics, reliability, reference strategies.

The evaluator (`runner`), the report (`report`, `plots`) and the `eval`/`report` click
commands (`cli`) are imported from their modules, not here, so that this package stays
free of model-layer imports.
"""

from nabench.evaluation.categories import (
    MMLU_CATEGORIES,
    UnknownSubjectError,
    mmlu_category,
    mmlu_subject_categories,
)
from nabench.evaluation.parsing import (
    INVALID,
    codes_to_letters,
    letters_to_codes,
    parse_answer,
    parse_answer_code,
    parse_answers,
    parse_bool,
)
from nabench.evaluation.scoring import (
    BaselineTest,
    baseline_test,
    individual_prior_score,
    individual_prior_scores,
    majority_baseline,
    score_codes,
    score_generation,
)
from nabench.evaluation.strategies import (
    STRATEGIES,
    ItemBatch,
    Strategy,
    get_strategy,
    register_strategy,
)
from nabench.stats.inference import (
    AccuracyCI,
    AnovaResult,
    Correlation,
    KappaResult,
    accuracy_ci,
    anova_oneway,
    bootstrap_mean_ci,
    cohen_kappa,
    pearson,
    spearman,
    wilson_interval,
)
from nabench.stats.reliability import (
    DiscriminationGroups,
    cronbach_alpha,
    discrimination_groups,
    discrimination_index,
    item_rest_correlation,
    kr20,
    kr20_by_group,
)

__all__ = [
    "INVALID",
    "MMLU_CATEGORIES",
    "STRATEGIES",
    "AccuracyCI",
    "AnovaResult",
    "BaselineTest",
    "Correlation",
    "DiscriminationGroups",
    "ItemBatch",
    "KappaResult",
    "Strategy",
    "UnknownSubjectError",
    "accuracy_ci",
    "anova_oneway",
    "baseline_test",
    "bootstrap_mean_ci",
    "codes_to_letters",
    "cohen_kappa",
    "cronbach_alpha",
    "discrimination_groups",
    "discrimination_index",
    "get_strategy",
    "individual_prior_score",
    "individual_prior_scores",
    "item_rest_correlation",
    "kr20",
    "kr20_by_group",
    "letters_to_codes",
    "majority_baseline",
    "mmlu_category",
    "mmlu_subject_categories",
    "parse_answer",
    "parse_answer_code",
    "parse_answers",
    "parse_bool",
    "pearson",
    "register_strategy",
    "score_codes",
    "score_generation",
    "spearman",
    "wilson_interval",
]
