"""A recipe means what it says: a `true`, a quoted number or a float where a count or a
number is expected is refused, not read as 1, 7 or 2 (every recipe section shares one strict
config, `schemas.model.SPEC_CONFIG`); an inserted text is an option a model can read; a
setting that can only build nothing is refused (a hostile-user review found each)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from nabench.cli import main
from nabench.core.safe_load import load_yaml_file
from nabench.pipelines.registry import RecipeError, load_recipe, shipped_recipes


def _mmlu_na_with(tmp_path: Path, variant: int, **fields: object) -> Path:
    """The shipped mmlu-na recipe with fields of one variant entry replaced, as a file."""
    data = load_yaml_file(shipped_recipes()["mmlu-na"])
    data["variants"][variant].update(fields)
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


# (recipe, override, the field the one-line error names)
COERCED = [
    ("mmlu-na", "labels.llm.max_error_share=true", "labels.llm.max_error_share"),
    ("mmlu-na", "labels.llm.max_error_share='0.5'", "labels.llm.max_error_share"),
    ("mmlu-na", "labels.llm.concurrency=true", "labels.llm.concurrency"),
    ("mmlu-na", "labels.llm.concurrency='7'", "labels.llm.concurrency"),
    ("mmlu-na", "labels.llm.concurrency=2.0", "labels.llm.concurrency"),
    ("mmlu-na", "publish.private='yes'", "publish.private"),
    ("mmlu-na", "publish.private=1", "publish.private"),
    ("mmlu-na-train", "sampler.n=true", "sampler.n"),
    ("mmlu-na-train", "sampler.temperature=true", "sampler.temperature"),
    ("mmlu-na-train", "sampler.temperature=.inf", "sampler.temperature"),
    ("mmlu-na-train", "sampler.chunk_size='3'", "sampler.chunk_size"),
    ("selfknow", "generator.n_per_class=true", "generator.n_per_class"),
    ("selfknow", "generator.n_per_class=50.0", "generator.n_per_class"),
    ("selfknow", "classifier.same_as_generator='no'", "classifier.same_as_generator"),
    ("mmlu-artifacts", "fewshot.k=true", "fewshot.k"),
    ("mmlu-artifacts", "fewshot.k='5'", "fewshot.k"),
    ("mmlu-artifacts", "fewshot.exclude_eval_records='yes'", "fewshot.exclude_eval_records"),
]


@pytest.mark.parametrize(("recipe", "override", "field"), COERCED, ids=[c[1] for c in COERCED])
def test_a_coercible_value_is_refused(recipe: str, override: str, field: str) -> None:
    with pytest.raises(RecipeError, match=f"field '{field}'"):
        load_recipe(recipe, [override])


def test_the_strict_values_written_as_such_still_load() -> None:
    assert load_recipe("mmlu-na", ["labels.llm.concurrency=7"]).labels.llm.concurrency == 7
    assert load_recipe("mmlu-na-train", ["sampler.temperature=1"]).sampler.temperature == 1.0


def test_one_sample_per_set_is_refused() -> None:
    """A set is kept only when it holds a right and a wrong answer: with n = 1 every set is
    discarded and the build wrote no sft or dpo row."""
    with pytest.raises(RecipeError, match=r"field 'sampler\.n'.*greater than or equal to 2"):
        load_recipe("mmlu-na-train", ["sampler.n=1"])


NA_TEXTS = [
    (["None of the above", "none of the above"], "repeat a phrasing"),
    (["  None of the above  "], "not an option text"),
    (["None of the above", "???"], "not an option text"),
    ([""], "not an option text"),
]


@pytest.mark.parametrize(("texts", "message"), NA_TEXTS, ids=[repr(t[0]) for t in NA_TEXTS])
def test_na_texts_are_distinct_readable_options(
    tmp_path: Path, texts: list[str], message: str
) -> None:
    path = _mmlu_na_with(tmp_path, 1, na_texts=texts)
    with pytest.raises(RecipeError, match=f"variants.1.na_keyed.na_texts.*{message}"):
        load_recipe(str(path))


def test_the_appended_text_is_not_an_na_phrasing(tmp_path: Path) -> None:
    """An NA phrasing appended as a wrong option is an NA distractor named all_of_the_above."""
    path = _mmlu_na_with(tmp_path, 4, text="None of the above")
    with pytest.raises(RecipeError, match="None-of-the-above phrasing"):
        load_recipe(str(path))


def test_a_split_given_twice_is_refused() -> None:
    """It was `internal error: ValueError: ... is staged twice`."""
    with pytest.raises(RecipeError, match=r"field 'source\.splits'.*repeat \['test'\]"):
        load_recipe("mmlu-na", ["source.splits=[test, test]"])


def test_an_empty_redux_location_is_refused() -> None:
    """`''` read the working folder as the Redux annotations (0 rows, build succeeded)."""
    with pytest.raises(RecipeError, match=r"field 'audit\.redux\.location'"):
        load_recipe("mmlu-na", ["audit.redux.location=''"])


def test_the_card_names_the_appended_text(mmlu_dir: Path, tmp_path: Path) -> None:
    """The all_of_the_above config's card line said "All of the above" whatever was appended."""
    out = tmp_path / "b"
    recipe = _mmlu_na_with(tmp_path, 4, text="All of these")
    args = ["build", str(recipe), "--source", str(mmlu_dir), "--labels", "none", "--limit", "20"]
    args += ["--out", str(out)]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    card = (out / "README.md").read_text()
    assert '`all_of_the_above`: "All of these" is appended as a new last option' in card
    assert '"All of the above" is appended' not in card
