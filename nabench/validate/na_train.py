"""Invariants of an `na-train` build: training rows are right where they must be right, wrong
where they must be wrong, traceable to a source id and a sample seed, and never an evaluation
question.

The answer parser is passed in (the evaluation protocol's `parse_answer`): this layer sits
below `evaluation/` and must not import it.
"""

from __future__ import annotations

import string
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

import pyarrow as pa

from nabench.audit.contamination import EvalIndex
from nabench.validate.invariants import Violation

Parse = Callable[[str, int], "str | None"]
CONFIGS = ("sft", "dpo", "samples", "discarded")
LETTERS = string.ascii_uppercase


def _where(config: str, split: str) -> str:
    return f"{config}/{split}-00000-of-00001.parquet"


def _only(messages: Any, role: str) -> str | None:
    """The content of a one-message list with `role`, else None."""
    if not isinstance(messages, list) or len(messages) != 1:
        return None
    msg = messages[0]
    return msg.get("content") if msg.get("role") == role else None


class _Samples:
    """The `samples` table indexed by (id, variant, seed) and by (id, variant)."""

    def __init__(self, table: pa.Table) -> None:
        rows = table.to_pylist()
        self.by_seed = {(r["id"], r["variant"], r["seed"]): r for r in rows}
        self.sets: dict[tuple[str, str], list[bool]] = {}
        self.question = {r["id"]: r["question"] for r in rows}
        for r in rows:
            self.sets.setdefault((r["id"], r["variant"]), []).append(bool(r["correct"]))

    def mixed(self, key: tuple[str, str]) -> bool:
        got = self.sets.get(key, [])
        return any(got) and not all(got)


def check_samples(table: pa.Table, parse: Parse, where: str) -> list[Violation]:
    """Each sample's `parsed` and `correct` agree with the parser and the gold letter, its
    gold is the letter of its `answer`, and each (id, variant) set has the sample indices
    0..n-1 once each, n the same for every set."""
    out: list[Violation] = []
    rows = table.to_pylist()
    sets: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for i, r in enumerate(rows):
        sets.setdefault((r["id"], r["variant"]), []).append((i, r["sample_index"]))
    sizes = Counter(len(v) for v in sets.values())
    n = sizes.most_common(1)[0][0] if sizes else 0
    for (item_id, variant), got in sets.items():
        if sorted(j for _, j in got) != list(range(n)):
            out.append(
                Violation(
                    where,
                    got[0][0],
                    item_id,
                    "sample_set",
                    f"{variant} set has sample indices {sorted(j for _, j in got)}, "
                    f"expected 0..{n - 1} once each",
                )
            )
    for i, r in enumerate(rows):
        a = r["answer"]
        if not (isinstance(a, int) and 0 <= a < len(r["choices"])) or r["gold"] != LETTERS[a]:
            out.append(
                Violation(
                    where, i, r["id"], "sample_gold", f"gold {r['gold']} but answer {r['answer']}"
                )
            )
        parsed = parse(r["response"], len(r["choices"]))
        if parsed != r["parsed"] or r["correct"] != (parsed == r["gold"]):
            out.append(
                Violation(
                    where,
                    i,
                    r["id"],
                    "sample_scored",
                    f"response parses to {parsed!r} but the row says parsed={r['parsed']!r}, "
                    f"correct={r['correct']} (gold {r['gold']})",
                )
            )
    return out


def check_sft(table: pa.Table, samples: _Samples, parse: Parse, where: str) -> list[Violation]:
    out: list[Violation] = []
    for i, r in enumerate(table.to_pylist()):
        msgs = r["messages"] or []
        roles = [m.get("role") for m in msgs]
        v = _Violations(out, where, i, r["id"])
        if roles != ["user", "assistant"]:
            v.add("sft_messages", f"messages roles are {roles}, expected user then assistant")
            continue
        sample = samples.by_seed.get((r["id"], r["variant"], r["seed"]))
        if sample is None:
            v.add("traceable", f"no sample of {r['variant']} with seed {r['seed']}")
            continue
        if (msgs[0]["content"], msgs[1]["content"]) != (sample["prompt"], sample["response"]):
            v.add("traceable", "messages differ from the sample they name")
        if parse(msgs[1]["content"], len(sample["choices"])) != r["gold"]:
            v.add("sft_correct", f"assistant answer does not parse to the gold {r['gold']}")
        if not samples.mixed((r["id"], r["variant"])):
            v.add("keep_rule", "sample set is not mixed (all right or all wrong)")
    return out


def check_dpo(table: pa.Table, samples: _Samples, parse: Parse, where: str) -> list[Violation]:
    out: list[Violation] = []
    for i, r in enumerate(table.to_pylist()):
        v = _Violations(out, where, i, r["id"])
        prompt = _only(r["prompt"], "user")
        chosen = _only(r["chosen"], "assistant")
        rejected = _only(r["rejected"], "assistant")
        if prompt is None or chosen is None or rejected is None:
            v.add("dpo_messages", "prompt must be one user message, chosen/rejected one assistant")
            continue
        for side, text, seed in (
            ("chosen", chosen, r["chosen_seed"]),
            ("rejected", rejected, r["rejected_seed"]),
        ):
            sample = samples.by_seed.get((r["id"], r["variant"], seed))
            if sample is None:
                v.add("traceable", f"{side}: no sample of {r['variant']} with seed {seed}")
                continue
            if (prompt, text) != (sample["prompt"], sample["response"]):
                v.add("traceable", f"{side}: text differs from the sample it names")
            right = parse(text, len(sample["choices"])) == r["gold"]
            if side == "chosen" and not right:
                v.add("dpo_chosen_correct", f"chosen does not parse to the gold {r['gold']}")
            if side == "rejected" and right:
                v.add("dpo_rejected_incorrect", f"rejected parses to the gold {r['gold']}")
        if not samples.mixed((r["id"], r["variant"])):
            v.add("keep_rule", "sample set is not mixed (all right or all wrong)")
    return out


def check_discarded(table: pa.Table, samples: _Samples, where: str) -> list[Violation]:
    out: list[Violation] = []
    for i, r in enumerate(table.to_pylist()):
        got = samples.sets.get((r["id"], r["variant"]), [])
        expected = "all_correct" if got and all(got) else "all_incorrect" if got else None
        if samples.mixed((r["id"], r["variant"])) or expected != r["reason"]:
            out.append(
                Violation(where, i, r["id"], "keep_rule", f"set discarded as {r['reason']!r}")
            )
    return out


def check_contamination(
    tables: Mapping[str, pa.Table], index: EvalIndex, samples: _Samples, split: str
) -> list[Violation]:
    """No row of any config is an evaluation question (exact or normalised match)."""
    out: list[Violation] = []
    for config in CONFIGS:
        table = tables.get(config)
        if table is None:
            continue
        ids = table.column("id").to_pylist()
        for i, item_id in enumerate(ids):
            question = samples.question.get(item_id)
            how = None if question is None else index.match(question)
            if how is not None:
                out.append(
                    Violation(
                        _where(config, split),
                        i,
                        item_id,
                        "not_in_eval",
                        f"question appears in the evaluation split(s) ({how} match)",
                    )
                )
    return out


class _Violations:
    def __init__(self, out: list[Violation], where: str, row: int, item_id: str) -> None:
        self.out, self.where, self.row, self.id = out, where, row, item_id

    def add(self, rule: str, message: str) -> None:
        self.out.append(Violation(self.where, self.row, self.id, rule, message))


def check_na_train(
    tables: Mapping[str, pa.Table],
    parse: Parse,
    eval_index: EvalIndex | None,
    split: str = "train",
) -> list[Violation]:
    """Every invariant of an `na-train` build's configs (`sft`, `dpo`, `samples`, `discarded`)."""
    samples = _Samples(tables["samples"])
    out = check_samples(tables["samples"], parse, _where("samples", split))
    if "sft" in tables:
        out += check_sft(tables["sft"], samples, parse, _where("sft", split))
    if "dpo" in tables:
        out += check_dpo(tables["dpo"], samples, parse, _where("dpo", split))
    if "discarded" in tables:
        out += check_discarded(tables["discarded"], samples, _where("discarded", split))
    if eval_index is not None:
        out += check_contamination(tables, eval_index, samples, split)
    return out
