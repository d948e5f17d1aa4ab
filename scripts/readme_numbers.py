"""Rewrite the README's MMLU exclusion paragraph from a real run of the audit.

    python scripts/readme_numbers.py ../shared/data/cais__mmlu

The paragraph sits between the `nabench:mmlu-exclusions` markers; tests/na_build/
test_audit_coverage.py renders it from a build and fails when the README disagrees.
"""

from __future__ import annotations

import sys
import tempfile
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nabench.pipelines.na import build
from nabench.pipelines.registry import load_recipe
from nabench.pipelines.skeleton import BuildOptions

README = Path(__file__).resolve().parents[1] / "README.md"
MARKERS = ("<!-- nabench:mmlu-exclusions:start -->", "<!-- nabench:mmlu-exclusions:end -->")


def render(exclusions: Mapping[str, Any], total_items: int) -> str:
    """The paragraph for `exclusion_counts(...)` of the MMLU test split."""
    by_reason: dict[str, int] = dict(exclusions["by_reason"])
    ordered = sorted(by_reason.items(), key=lambda kv: (-kv[1], kv[0]))
    parts = [f"{n:,} `{reason}`" for reason, n in ordered]
    listed = ", ".join(parts[:-1]) + f" and {parts[-1]}" if len(parts) > 1 else parts[0]
    subjects: Counter[str] = Counter()
    for per_subject in exclusions["by_reason_subject"].values():
        subjects.update(per_subject)
    top = [s.replace("_", " ") for s, _ in subjects.most_common(4)]
    share = 100 * exclusions["total"] / total_items
    return (
        f"On the MMLU test split, {exclusions['total']:,} of {total_items:,} items are excluded "
        f"({share:.1f} %): {listed}. They cluster in {', '.join(top[:-1])} and {top[-1]}."
    )


def replace_section(readme: str, paragraph: str) -> str:
    start, end = readme.index(MARKERS[0]), readme.index(MARKERS[1])
    return readme[: start + len(MARKERS[0])] + "\n" + paragraph + "\n" + readme[end:]


def section(readme: str) -> str:
    start, end = readme.index(MARKERS[0]), readme.index(MARKERS[1])
    return readme[start + len(MARKERS[0]) : end].strip()


def main(mmlu: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        result = build(
            load_recipe("mmlu-na"),
            BuildOptions(source=mmlu, out=Path(tmp) / "b", labels="none", progress=False),
        )
    total = sum(result.counts["original"].values()) + result.exclusions["total"]
    README.write_text(replace_section(README.read_text("utf-8"), render(result.exclusions, total)))
    print(section(README.read_text("utf-8")))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "../shared/data/cais__mmlu")
