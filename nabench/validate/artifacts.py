"""Invariants of artifact prompt tables (choices-only, memorization, individual prior,
question inference), plus their pandera schema.

The layouts are re-implemented here with plain f-strings, independently of the builders in
`nabench.perturb.artifacts`, so a builder bug cannot hide behind its own helper. Rules work on
whole columns (Arrow compute, numpy, list comprehensions) and name row, id and rule:

* `stop`: the stop string of the prompt type.
* `target`: the gold letter of `answer`; ``True``/``False`` by `choice_index == answer`
  (individual prior); null for `qi_step1` (the model writes a question).
* `test_example`: the prompt ends with the test example rebuilt from the row's own fields,
  which ends with ``Answer:`` (``Question:`` for `qi_step1`) — so the gold letter is never
  revealed in the test example (`gold_not_revealed` names that failure on its own).
* `fewshot_blocks`: the text before the test example is empty or k few-shot examples, each
  starting with the type's first label and ending with its answer line and a blank line;
  k equals `len(fewshot_ids)`, and (`fewshot_k`) every row of the table has the same k (or the
  k the caller expects).
* `fewshot_not_self`: an item is never its own few-shot example.
* `no_question_text` (question-free types `choices_only`, `prior_choice`): no ``Question:``
  label anywhere, and the item's question text does not occur in the prompt. Questions
  shorter than `MIN_QUESTION_CHARS` (20) characters after stripping are not searched for:
  MMLU has questions such as "Inflation", "Keynes" or "Real GDP" that legitimately occur inside
  option texts. Occurrences inside the option lines the prompt shows do not count either (MMLU
  has a truncated question that is a fragment of its own options, and "The infraorbital
  nerve" is a test question and a few-shot option): a leak is a question found more often in
  the prompt than in its option lines. With `questions` (id -> question, e.g. the few-shot
  pool) the few-shot items' questions are searched for too; `nabench validate` on a folder
  knows only the test items' questions.
* `mem_gold_lines_equal`: every option line of a `mem_gold_choices` test example shows the
  gold text.
* `prior_one_true`: an item's individual-prior rows cover each option once, one True.
* `inserted_question`: step-2 rows show a non-empty inserted question (or, kept without an
  inferred question, null `inserted_question` and `inserted_from` and an empty question);
  `qi_random_question` rows show another item's question (`inserted_from` != `item_id`).
* `inferred_question`: in step-1 outputs, the inferred question is the completion's text
  before ``Answer:``, stripped (null without ``Answer:``).
* `ids_unique`, `id_format` (`<item_id>#<choice_index>` for individual prior, else the item id).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from nabench.schemas import Violation, pandera_schema, schema_violations

if TYPE_CHECKING:
    import pandera.pandas as pdx

MIN_QUESTION_CHARS = 20
# How the build showed a source text (independent of the builders' own table).
SHOWN_TEXT: dict[str, Callable[[str], str]] = {"stripped": str.strip, "raw": lambda t: t}
_OPTION_LINE = re.compile(r"^(?:\([A-J]\)|Choice:) ([^\n]*)$", re.MULTILINE)
LETTERS = "ABCDEFGHIJ"


def _opts(choices: Sequence[str]) -> str:
    return "".join(f"({LETTERS[i]}) {c}\n" for i, c in enumerate(choices))


def _full(q: str, choices: Sequence[str], answer: int, ci: int) -> str:
    return f"Question: {q}\nChoices:\n{_opts(choices)}Answer:"


def _choices_only(q: str, choices: Sequence[str], answer: int, ci: int) -> str:
    return f"Choices:\n{_opts(choices)}Answer:"


def _mem_no(q: str, choices: Sequence[str], answer: int, ci: int) -> str:
    return f"Question: {q}\nAnswer:"


def _mem_gold(q: str, choices: Sequence[str], answer: int, ci: int) -> str:
    return f"Question: {q}\nChoices:\n{_opts([choices[answer]] * len(choices))}Answer:"


def _mem_empty(q: str, choices: Sequence[str], answer: int, ci: int) -> str:
    return f"Question: {q}\nChoices:\n{_opts([''] * len(choices))}Answer:"


def _prior(q: str, choices: Sequence[str], answer: int, ci: int) -> str:
    return f"Choice: {choices[ci]}\nAnswer:"


def _prior_q(q: str, choices: Sequence[str], answer: int, ci: int) -> str:
    return f"Question: {q}\nChoice: {choices[ci]}\nAnswer:"


def _qi1(q: str, choices: Sequence[str], answer: int, ci: int) -> str:
    return f"Choices:\n{_opts(choices)}Question:"


@dataclass(frozen=True)
class Layout:
    """What a prompt type must look like (independent of the builder code)."""

    stop: str
    target: str  # "letter", "bool" or "none"
    first_label: str  # every example (few-shot and test) starts with it
    example_end: str  # regex matching the end of one few-shot example + the separator
    test: Callable[[str, Sequence[str], int, int], str]
    question_free: bool = False
    per_choice: bool = False
    inserted: bool = False  # the test example shows `inserted_question`


_LETTER_END = r"\nAnswer: \([A-J]\)\n\n"
_BOOL_END = r"\nAnswer: (True|False)\n\n"

LAYOUTS: dict[str, Layout] = {
    "full": Layout("\nQuestion:", "letter", "Question: ", _LETTER_END, _full),
    "choices_only": Layout(
        "\nChoices:", "letter", "Choices:\n", _LETTER_END, _choices_only, question_free=True
    ),
    "mem_no_choices": Layout("\nQuestion:", "letter", "Question: ", _LETTER_END, _mem_no),
    "mem_gold_choices": Layout("\nQuestion:", "letter", "Question: ", _LETTER_END, _mem_gold),
    "mem_empty_choices": Layout("\nQuestion:", "letter", "Question: ", _LETTER_END, _mem_empty),
    "prior_choice": Layout(
        "\nChoice:", "bool", "Choice: ", _BOOL_END, _prior, question_free=True, per_choice=True
    ),
    "prior_choice_with_question": Layout(
        "\nQuestion:", "bool", "Question: ", _BOOL_END, _prior_q, per_choice=True
    ),
    "qi_step1": Layout("\nChoices:", "none", "Choices:\n", _LETTER_END, _qi1),
    "qi_step2": Layout("\nQuestion:", "letter", "Question: ", _LETTER_END, _full, inserted=True),
    "qi_random_question": Layout(
        "\nQuestion:", "letter", "Question: ", _LETTER_END, _full, inserted=True
    ),
}


@cache
def artifact_schema() -> pdx.DataFrameSchema:
    """pandera schema of an artifact table: derived from `schemas.rows.ArtifactPrompt` (with the
    question-inference columns allowed), plus the values this validator knows. `prompt`,
    `fewshot_ids` and `choices` are checked in Arrow (pandas copies of them are slow)."""
    import pandera.pandas as pdx

    targets = [*LETTERS, "True", "False"]
    stops = sorted({v.stop for v in LAYOUTS.values()})
    base = pandera_schema("artifact")
    return base.remove_columns(["prompt"]).update_columns(
        {
            "prompt_type": {"checks": [pdx.Check.isin(list(LAYOUTS))]},
            "target": {"checks": [pdx.Check.isin(targets)]},
            "stop": {"checks": [pdx.Check.isin(stops)]},
            "fewshot_ids": {"dtype": None, "checks": []},  # list<string>, checked in Arrow
            "choices": {"dtype": None, "checks": []},
        }
    )


def _schema_violations(table: pa.Table, where: str) -> list[Violation]:

    out: list[Violation] = []
    ids = table.column("id").to_pylist() if "id" in table.column_names else []
    if "prompt" not in table.column_names:
        return [Violation(where, -1, "-", "schema:prompt", "column 'prompt' is missing")]
    prompt = table.column("prompt")
    if not (pa.types.is_string(prompt.type) or pa.types.is_large_string(prompt.type)):
        return [Violation(where, -1, "-", "schema:prompt", f"prompt has type {prompt.type}")]
    for row in np.flatnonzero(prompt.is_null().to_numpy(zero_copy_only=False)):
        out.append(Violation(where, int(row), str(ids[row]), "schema:prompt", "prompt is null"))

    for name in ("fewshot_ids", "choices"):
        if name not in table.column_names:
            continue  # pandera reports the missing column
        col = table.column(name)
        if not (pa.types.is_list(col.type) and pa.types.is_string(col.type.value_type)):
            out.append(Violation(where, -1, "-", f"schema:{name}", f"{name} has type {col.type}"))
            continue
        for row in np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False)):
            out.append(Violation(where, int(row), str(ids[row]), f"schema:{name}", "null list"))

    def nullable_types(arrow_type: pa.DataType) -> object:
        return pd.Int64Dtype() if pa.types.is_int64(arrow_type) else None

    # list columns travel as a placeholder: their element types were checked above
    listless = table.drop_columns(
        [c for c in ("prompt", "fewshot_ids", "choices") if c in table.column_names]
    )
    frame = listless.to_pandas(types_mapper=nullable_types)
    for name in ("fewshot_ids", "choices"):
        if name in table.column_names:
            frame[name] = 0
    if "choice_index" in frame and frame["choice_index"].dtype == object:
        frame["choice_index"] = frame["choice_index"].astype("Int64")
    out.extend(schema_violations(artifact_schema(), frame, where))
    return out


Rule = tuple[str, np.ndarray, Callable[[int], str]]


def _rule(name: str, mask: np.ndarray | list[bool], explain: Callable[[int], str]) -> Rule:
    return (name, np.asarray(mask, dtype=bool), explain)


class _Rows:
    """The columns of an artifact table as the rules read them, with what several rules share
    (the rebuilt test examples, the few-shot prefix lengths) computed once, on first use."""

    def __init__(
        self,
        table: pa.Table,
        k: int | None,
        questions: Mapping[str, str] | None,
        text: str = "stripped",
    ):
        self.table, self.k, self.questions = table, k, questions
        self.shown = SHOWN_TEXT[text]
        self.n = table.num_rows
        self.names = set(table.column_names)
        self.ids = table.column("id").to_pylist()
        self.item_ids = table.column("item_id").to_pylist()
        self.ptype = table.column("prompt_type").to_pylist()
        self.prompts = table.column("prompt").to_pylist()
        self.targets = table.column("target").to_pylist()
        self.stops = table.column("stop").to_pylist()
        self.ci_raw = table.column("choice_index").to_pylist()
        self.questions_col = table.column("question").to_pylist()
        self.choices = _shown_choices(
            self.item_ids, table.column("choices").to_pylist(), self.shown
        )
        self.answer = table.column("answer").to_numpy().astype(np.int64)
        self.inserted = self.column_or_none("inserted_question")
        self.layouts = [LAYOUTS[t] for t in self.ptype]
        self.ci = np.array([-1 if v is None else v for v in self.ci_raw], dtype=np.int64)
        self.n_choices = np.array([len(c) for c in self.choices], dtype=np.int64)
        self.per_choice = np.array([lay.per_choice for lay in self.layouts])
        per, ci = self.per_choice, self.ci
        self.bad_index = per & ((ci < 0) | (ci >= self.n_choices)) | (~per & (ci != -1))
        self.bad_answer = (self.answer < 0) | (self.answer >= self.n_choices)
        self.ok = ~self.bad_index & ~self.bad_answer
        self.prompt_arr = table.column("prompt").combine_chunks()
        self.fewshot_col = table.column("fewshot_ids").combine_chunks()
        self.n_fewshot = (
            pc.list_value_length(self.fewshot_col).fill_null(0).to_numpy(zero_copy_only=False)
        )
        # few-shot ids without their `#<choice>` suffix
        self.flat_base = pc.replace_substring_regex(
            pc.list_flatten(self.fewshot_col), "#[^#]*$", ""
        )

    def column_or_none(self, name: str) -> list[Any]:
        return self.table.column(name).to_pylist() if name in self.names else [None] * self.n

    @cached_property
    def tests(self) -> list[str]:
        """The test example each row must end with, rebuilt from the row's own fields."""
        shown_q = [
            (ins if lay.inserted else q) or ""
            for q, ins, lay in zip(self.questions_col, self.inserted, self.layouts, strict=True)
        ]
        ok_list, answer_list, ci_list = self.ok.tolist(), self.answer.tolist(), self.ci.tolist()
        return [
            lay.test(self.shown(q), cs, a, c) if good else ""
            for lay, q, cs, a, c, good in zip(
                self.layouts, shown_q, self.choices, answer_list, ci_list, ok_list, strict=True
            )
        ]

    @cached_property
    def has_test(self) -> np.ndarray:
        return np.array(
            [
                good and p.endswith(t)
                for p, t, good in zip(self.prompts, self.tests, self.ok.tolist(), strict=True)
            ],
            dtype=bool,
        )

    @cached_property
    def prefix_len(self) -> list[int]:
        """Length of the few-shot part (everything before the test example); 0 without one."""
        return [
            len(p) - len(t) if h else 0
            for p, t, h in zip(self.prompts, self.tests, self.has_test.tolist(), strict=True)
        ]


def _shown_choices(
    item_ids: list[str], raw: list[list[str]], shown: Callable[[str], str]
) -> list[list[str]]:
    # per item: the rows of an individual prior share their (equal) choices
    stripped: dict[str, tuple[list[str], list[str]]] = {}
    out = []
    for item, cs in zip(item_ids, raw, strict=True):
        seen = stripped.get(item)
        if seen is None or seen[0] != cs:
            seen = stripped[item] = (cs, [shown(c) for c in cs])
        out.append(seen[1])
    return out


def _row_shape_rules(r: _Rows) -> list[Rule]:
    expected_target: list[str | None] = []
    for i, lay in enumerate(r.layouts):
        if not r.ok[i] or lay.target == "none":
            expected_target.append(None)
        elif lay.target == "bool":
            expected_target.append("True" if r.ci[i] == r.answer[i] else "False")
        else:
            expected_target.append(LETTERS[r.answer[i]])
    return [
        _rule(
            "stop",
            [s != lay.stop for s, lay in zip(r.stops, r.layouts, strict=True)],
            lambda i: f"stop {r.stops[i]!r}, expected {r.layouts[i].stop!r}",
        ),
        _rule(
            "choice_index",
            r.bad_index,
            lambda i: f"choice_index {r.ci_raw[i]!r} for {r.ptype[i]}",
        ),
        _rule(
            "answer_in_range",
            r.bad_answer,
            lambda i: f"answer {r.answer[i]} of {r.n_choices[i]} options",
        ),
        _rule(
            "target",
            [r.ok[i] and r.targets[i] != expected_target[i] for i in range(r.n)],
            lambda i: f"target {r.targets[i]!r}, expected {expected_target[i]!r}",
        ),
    ]


def _test_example_rules(r: _Rows) -> list[Rule]:
    ends = ["Question:" if lay.target == "none" else "Answer:" for lay in r.layouts]
    ends_ok = np.array([p.endswith(e) for p, e in zip(r.prompts, ends, strict=True)])
    return [
        _rule(
            "gold_not_revealed",
            ~ends_ok,
            lambda i: f"prompt must end with {ends[i]!r} (ends {r.prompts[i][-30:]!r})",
        ),
        _rule(
            "test_example",
            r.ok & ends_ok & ~r.has_test,
            lambda i: f"prompt does not end with the {r.ptype[i]} test example of this row",
        ),
    ]


def _fewshot_rules(r: _Rows) -> list[Rule]:
    # The few-shot part is not copied out: example ends are counted on the whole prompt minus
    # those inside the test example.
    counts = np.zeros(r.n, dtype=np.int64)
    for end in {lay.example_end for lay in r.layouts}:
        sel = np.array([lay.example_end == end for lay in r.layouts])
        whole = pc.count_substring_regex(r.prompt_arr, end).to_numpy(zero_copy_only=False)
        pattern = re.compile(end)
        in_test = np.array(
            [len(pattern.findall(t)) if f else 0 for t, f in zip(r.tests, sel, strict=True)]
        )
        counts[sel] = (whole - in_test)[sel]
    n_fewshot = r.n_fewshot
    shape_ok = np.array(
        [
            pl == 0 or (p.startswith(lay.first_label) and p[pl - 2 : pl] == "\n\n")
            for p, pl, lay in zip(r.prompts, r.prefix_len, r.layouts, strict=True)
        ]
    )
    empty = np.array(r.prefix_len) == 0
    expected_k = r.k if r.k is not None else int(np.bincount(n_fewshot).argmax())
    owner = pa.array(np.repeat(np.array(r.item_ids, dtype=object), n_fewshot), pa.string())
    is_self = pc.equal(r.flat_base, owner).to_numpy(zero_copy_only=False)
    parents = pc.list_parent_indices(r.fewshot_col).to_numpy(zero_copy_only=False)
    return [
        _rule(
            "fewshot_blocks",
            r.has_test & (~shape_ok | (counts != n_fewshot) | ((n_fewshot == 0) != empty)),
            lambda i: (
                f"{counts[i]} few-shot example(s) before the test example, "
                f"{n_fewshot[i]} fewshot_ids"
            ),
        ),
        _rule(
            "fewshot_k",
            n_fewshot != expected_k,
            lambda i: f"{n_fewshot[i]} few-shot examples, expected {expected_k}",
        ),
        _rule(
            "fewshot_not_self",
            np.bincount(parents, weights=is_self, minlength=r.n) > 0,
            lambda i: "the item is one of its own few-shot examples",
        ),
    ]


class _LeakSearch:
    """Question texts in question-free prompts: a leak is a question found more often in the
    prompt than in its option lines (see the module docstring). Few-shot parts repeat (one per
    subject in a build), so their option lines and counts are computed once per distinct part."""

    def __init__(self) -> None:
        self.prefix_ids: dict[str, int] = {}
        self.prefix_options: list[list[str]] = []
        self.prefix_counts: dict[tuple[int, str], int] = {}

    def part(self, prefix: str) -> int:
        pid = self.prefix_ids.setdefault(prefix, len(self.prefix_ids))
        if pid == len(self.prefix_options):
            self.prefix_options.append(_OPTION_LINE.findall(prefix))
        return pid

    def excess(self, q: str, pid: int, prefix: str, test: str, options: list[str]) -> bool:
        """Does `q` occur in prefix + test more often than in the shown option texts?"""
        outside = self.prefix_counts.get((pid, q))
        if outside is None:
            outside = prefix.count(q) - sum(o.count(q) for o in self.prefix_options[pid])
            self.prefix_counts[(pid, q)] = outside
        return outside + test.count(q) - sum(o.count(q) for o in options) > 0


def _question_leak_rules(r: _Rows) -> list[Rule]:
    free_rows = np.flatnonzero(np.array([lay.question_free for lay in r.layouts]))
    fs_base: dict[int, list[str]] = {}
    fs_questions = {f: q.strip() for f, q in (r.questions or {}).items()}
    if r.questions is not None:
        bases = r.flat_base.to_pylist()
        offsets = r.fewshot_col.offsets.to_numpy() - r.fewshot_col.offsets[0].as_py()
        fs_base = {int(i): bases[offsets[i] : offsets[i + 1]] for i in free_rows}
    labelled = pc.match_substring(r.prompt_arr, "Question:").to_numpy(zero_copy_only=False)
    search = _LeakSearch()
    leak_why: dict[int, str] = {}
    for i in free_rows:
        if labelled[i]:
            leak_why[i] = "the prompt has a 'Question:' label"
            continue
        prompt, pl = r.prompts[i], r.prefix_len[i]
        prefix, test = prompt[:pl], prompt[pl:]
        pid = search.part(prefix)
        options = _OPTION_LINE.findall(test)
        own = r.questions_col[i].strip()
        if (
            len(own) >= MIN_QUESTION_CHARS
            and own in prompt
            and search.excess(own, pid, prefix, test, options)
        ):
            leak_why[i] = "the item's question text occurs in the prompt"
            continue
        for f in fs_base.get(i, ()):
            fq = fs_questions.get(f, "")
            if len(fq) >= MIN_QUESTION_CHARS and search.excess(fq, pid, prefix, test, options):
                leak_why[i] = f"few-shot item {f}'s question text occurs in the prompt"
                break
    leak = np.zeros(r.n, dtype=bool)
    leak[list(leak_why)] = True
    return [_rule("no_question_text", leak, lambda i: leak_why[i])]


def _memorization_rules(r: _Rows) -> list[Rule]:
    gold_bad = np.zeros(r.n, dtype=bool)
    for i in np.flatnonzero(np.array([t == "mem_gold_choices" for t in r.ptype]) & r.ok):
        head = f"Question: {r.shown(r.questions_col[i])}\nChoices:\n"
        start = r.prompts[i].rfind(head)
        region = r.prompts[i][start + len(head) : len(r.prompts[i]) - len("Answer:")]
        gold = r.choices[i][r.answer[i]]
        gold_bad[i] = start < 0 or region != "".join(
            f"({LETTERS[j]}) {gold}\n" for j in range(r.n_choices[i])
        )
    return [
        _rule(
            "mem_gold_lines_equal", gold_bad, lambda i: "option lines do not all show the gold text"
        )
    ]


def _prior_rules(r: _Rows) -> list[Rule]:
    if not r.per_choice.any():
        return []
    frame = pd.DataFrame(
        {
            "item": r.item_ids,
            "ci": r.ci,
            "true": [t == "True" for t in r.targets],
            "n": r.n_choices,
        }
    )[r.per_choice]
    grouped = frame.groupby("item", sort=False).agg(
        rows=("ci", "size"), distinct=("ci", "nunique"), trues=("true", "sum"), n=("n", "first")
    )
    broken = grouped[
        (grouped["rows"] != grouped["n"])
        | (grouped["distinct"] != grouped["n"])
        | (grouped["trues"] != 1)
    ]
    bad_items = set(broken.index)
    return [
        _rule(
            "prior_one_true",
            [r.per_choice[i] and r.item_ids[i] in bad_items for i in range(r.n)],
            lambda i: "an item's individual-prior rows must cover each option once with one True",
        )
    ]


def _question_inference_rules(r: _Rows) -> list[Rule]:
    out: list[Rule] = []
    if "inserted_question" in r.names:
        inserted_from = r.column_or_none("inserted_from")
        is_ins = [lay.inserted for lay in r.layouts]
        out.append(
            _rule(
                "inserted_question",
                [
                    flag
                    and not (t == "qi_step2" and q is None and src is None)  # kept, none inferred
                    and (not (q or "").strip() or (t == "qi_random_question" and src == item))
                    for flag, q, t, src, item in zip(
                        is_ins, r.inserted, r.ptype, inserted_from, r.item_ids, strict=True
                    )
                ],
                lambda i: (
                    "step-2 rows need a non-empty inserted question "
                    "(from another item for qi_random_question)"
                ),
            )
        )
    if "completion" in r.names and "inferred_question" in r.names:
        inferred = r.table.column("inferred_question").to_pylist()
        expected_q = [_inferred(c) for c in r.table.column("completion").to_pylist()]
        out.append(
            _rule(
                "inferred_question",
                [a != b for a, b in zip(inferred, expected_q, strict=True)],
                lambda i: f"inferred question {inferred[i]!r}, expected {expected_q[i]!r}",
            )
        )
    return out


def _inferred(text: str | None) -> str | None:
    if text is None or "Answer:" not in text:
        return None
    return text.split("Answer:", 1)[0].strip() or None


def _id_rules(r: _Rows) -> list[Rule]:
    expected_id = [
        f"{item}#{r.ci[i]}" if r.per_choice[i] else item for i, item in enumerate(r.item_ids)
    ]
    return [
        _rule(
            "id_format",
            [a != b for a, b in zip(r.ids, expected_id, strict=True)],
            lambda i: f"id {r.ids[i]!r}, expected {expected_id[i]!r}",
        ),
        _rule(
            "ids_unique",
            pd.Series(r.ids).duplicated(keep="first").to_numpy(),
            lambda i: "id repeats an earlier row",
        ),
    ]


# The rule table, in report order: each entry returns its rules (name, broken rows, why).
RULES: tuple[Callable[[_Rows], list[Rule]], ...] = (
    _row_shape_rules,
    _test_example_rules,
    _fewshot_rules,
    _question_leak_rules,
    _memorization_rules,
    _prior_rules,
    _question_inference_rules,
    _id_rules,
)


def check_artifacts(
    table: pa.Table,
    where: str,
    *,
    k: int | None = None,
    questions: Mapping[str, str] | None = None,
    schema: bool = True,
    text: str = "stripped",
) -> list[Violation]:
    """Every invariant of an artifact table (see the module docstring).

    `text`: how the build showed source text, `stripped` (surrounding whitespace removed) or
    `raw` (exactly as the source has it; the `artifacts-paper` protocol).

    `k`: the expected number of few-shot examples (default: all rows agree). `questions`:
    few-shot item id -> question, to search question-free prompts for the few-shot items'
    questions as well. `schema=False` skips the pandera schema (a fixed ~tens of ms per call)
    for callers that built the table themselves, e.g. property tests.
    """
    if schema:
        failures = _schema_violations(table, where)
        if failures:
            return failures
    if table.num_rows == 0:
        return []
    rows = _Rows(table, k, questions, text)
    out: list[Violation] = []
    for rules in RULES:
        for name, mask, explain in rules(rows):
            for i in np.flatnonzero(mask):
                out.append(Violation(where, int(i), str(rows.ids[i]), name, explain(int(i))))
    return out


def prompt_type_counts(table: pa.Table) -> dict[str, int]:
    """Rows per prompt type (for `nabench validate` notes)."""
    values = pc.value_counts(table.column("prompt_type")).to_pylist()
    return {str(v["values"]): int(v["counts"]) for v in values}
