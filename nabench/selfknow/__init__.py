"""Self-knowledge ("Line of Duty", Kale & Nadadur 2025): taxonomy, table loader and metrics."""

from nabench.selfknow.metrics import (
    ConfusionMatrix,
    DataQuality,
    MismatchPair,
    SelfKnowledgeMetrics,
    TypeMetrics,
    selfknow_metrics,
)
from nabench.selfknow.report import (
    format_metrics_text,
    metrics_to_dict,
    render_markdown,
    write_report,
)
from nabench.selfknow.scores import SelfKnowledgeCounts, SelfKnowledgeScores, score_counts
from nabench.selfknow.table import (
    CANONICAL_COLUMNS,
    LINE_OF_DUTY_COLUMNS,
    REQUIRED_COLUMNS,
    canonicalise_table,
    load_selfknow_table,
    parse_column_mapping,
    read_table_file,
)
from nabench.selfknow.taxonomy import (
    Reason,
    SelfKnowledgeType,
    Taxonomy,
    load_taxonomy,
    normalise_reason,
    reason_to_type,
)

__all__ = [
    "CANONICAL_COLUMNS",
    "LINE_OF_DUTY_COLUMNS",
    "REQUIRED_COLUMNS",
    "ConfusionMatrix",
    "DataQuality",
    "MismatchPair",
    "Reason",
    "SelfKnowledgeCounts",
    "SelfKnowledgeMetrics",
    "SelfKnowledgeScores",
    "SelfKnowledgeType",
    "Taxonomy",
    "TypeMetrics",
    "canonicalise_table",
    "format_metrics_text",
    "load_selfknow_table",
    "load_taxonomy",
    "metrics_to_dict",
    "normalise_reason",
    "parse_column_mapping",
    "read_table_file",
    "reason_to_type",
    "render_markdown",
    "score_counts",
    "selfknow_metrics",
    "write_report",
]
