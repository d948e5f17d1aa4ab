"""Source loaders: one module per benchmark, each mapping its rows onto canonical items."""

from nabench.core.errors import SourceError
from nabench.sources._base import LoadedSplit, Source, item_table, read_split, require_columns
from nabench.sources.arc import ARCChallenge
from nabench.sources.gpqa import GPQA
from nabench.sources.hellaswag import HellaSwag
from nabench.sources.mmlu import MMLU

SOURCES: dict[str, Source] = {s.name: s for s in (MMLU(), ARCChallenge(), HellaSwag(), GPQA())}


def get_source(name: str) -> Source:
    """The registered source called `name`."""
    try:
        return SOURCES[name]
    except KeyError:
        raise SourceError(f"unknown source {name!r} (known: {', '.join(SOURCES)})") from None


__all__ = [
    "SOURCES",
    "LoadedSplit",
    "Source",
    "get_source",
    "item_table",
    "read_split",
    "require_columns",
]
