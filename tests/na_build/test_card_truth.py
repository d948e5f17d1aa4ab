"""The card of the full MMLU build says what the build did: its statement of the per-item
draws, evaluated as written, gives every drawn row of the build; no file of the build names a
path of the building machine; the card says the items were not screened (`--labels none`)."""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections import defaultdict
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from nabench.perturb.foreign_key import _norm
from nabench.pipelines.na import build
from nabench.pipelines.registry import load_recipe, parse_recipe
from nabench.pipelines.skeleton import BuildOptions, BuildResult
from nabench.publish.plan import make_plan

PARQUET = "test-00000-of-00001.parquet"


def _stated(card: str, purpose: str, name: str) -> str:
    """The Python text the card gives for `name = ...` of one draw purpose."""
    line = next(x for x in card.splitlines() if x.strip().startswith(f"- `{purpose}` draw:"))
    found = re.search(rf"`{name} = (.+?)`;", line)
    assert found, line
    return found.group(1)


def _rows(build: BuildResult, config: str) -> list[dict]:
    return pq.read_table(build.out / config / PARQUET).to_pylist()


def test_card_states_the_na_distractor_draw(mmlu_na_full: BuildResult) -> None:
    card = (mmlu_na_full.out / "README.md").read_text("utf-8")
    seed = json.loads((mmlu_na_full.out / "build.json").read_text())["seed"]
    text = _stated(card, "na_distractor", "H")
    rows = _rows(mmlu_na_full, "na_distractor")
    assert len(rows) > 10_000
    for row in rows:
        h = eval(text, {"hashlib": hashlib, "seed": seed, "item_id": row["id"]})
        d = h % (len(row["original_choices"]) - 1)
        d += d >= row["original_answer"]
        assert row["replaced_index"] == d, row["id"]


@pytest.fixture(scope="module")
def sampled(tmp_path_factory: pytest.TempPathFactory, mmlu_dir: Path) -> BuildResult:
    """mmlu-na with the foreign-key ablation, on a 600-item `--sample`: two more draws."""
    data = load_recipe("mmlu-na").model_dump()
    data["variants"] = [{"kind": "original"}, {"kind": "foreign_key"}]
    out = tmp_path_factory.mktemp("drawn") / "mmlu-fk"
    opts = BuildOptions(source=str(mmlu_dir), out=out, labels="none", sample=600, progress=False)
    return build(parse_recipe(data, "test"), opts)


def _card_and_seed(result: BuildResult) -> tuple[str, int]:
    seed = json.loads((result.out / "build.json").read_text())["seed"]
    return (result.out / "README.md").read_text("utf-8"), int(seed)


def test_card_states_the_foreign_key_draw(sampled: BuildResult, mmlu_na_full: BuildResult) -> None:
    card, seed = _card_and_seed(sampled)
    text = _stated(card, "foreign_key", "rng")
    # the donor pool: the audited whole split (not the sample), gold texts by subject
    pools: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for row in _rows(mmlu_na_full, "original"):  # the full build's items: the audited split
        pools[row["subject"]].append((row["id"], row["choices"][row["answer"]]))
    checked = 0
    for row in _rows(sampled, "foreign_key"):
        pool = pools[row["subject"]]
        rng = eval(text, {"random": random, "seed": seed, "item_id": row["id"]})
        donor_id, donor = pool[rng.randrange(len(pool))]
        own = {_norm(c) for c in row["original_choices"]}
        if donor_id != row["id"] and _norm(donor) not in own:  # the first draw is usable
            assert row["na_text"] == donor, row["id"]
            checked += 1
    assert checked > 400


def test_card_states_the_sample_draw(sampled: BuildResult, mmlu_na_full: BuildResult) -> None:
    card, seed = _card_and_seed(sampled)
    text = _stated(card, "sample", "H")
    by_subject: dict[str, list[str]] = defaultdict(list)
    for row in _rows(mmlu_na_full, "original"):  # the items that passed the audit
        by_subject[row["subject"]].append(row["id"])
    used = {r["id"] for r in _rows(sampled, "original")}
    assert len(used) == 600  # --sample N gives N usable items
    assert _rows(sampled, "excluded") == []
    for ids in by_subject.values():
        quota = len(used.intersection(ids))
        stated = {i: eval(text, {"hashlib": hashlib, "seed": seed, "item_id": i}) for i in ids}
        ranked = sorted(ids, key=lambda i: (stated[i], i))
        assert set(ranked[:quota]) == used.intersection(ids)


def test_no_path_of_the_building_machine_in_any_file_of_build_or_release(
    mmlu_na_full: BuildResult, mmlu_dir: Path
) -> None:
    local = {str(mmlu_dir), str(mmlu_dir.resolve()), str(mmlu_na_full.out.parent.resolve())}
    files = [p for p in mmlu_na_full.out.rglob("*") if p.is_file()]
    assert any(p.name.endswith(".yaml") for p in files)  # the lm-eval tasks are scanned too
    for path in files:
        data = path.read_bytes()
        for text in local:
            assert text.encode() not in data, f"{path.relative_to(mmlu_na_full.out)} names {text}"
    plan = make_plan(mmlu_na_full.out, "org/mmlu-na")  # the release: the files the Hub gets
    assert {f.path for f in plan.adds} >= {"README.md", "build.json"}
    for f in plan.adds:
        for text in local:
            assert text.encode() not in f.content, f"release {f.path} names {text}"
    for text in local:
        assert text not in plan.commit_description
    manifest = json.loads((mmlu_na_full.out / "build.json").read_text())
    assert manifest["source"]["location"] == f"local:{mmlu_dir.resolve().name}"
    assert manifest["source"]["splits"]["test"]["fingerprint"]  # what identifies the copy


def test_card_says_the_items_were_not_screened(mmlu_na_full: BuildResult) -> None:
    card = (mmlu_na_full.out / "README.md").read_text("utf-8")
    assert "NA-applicability screen: **none**" in card
    assert "were not screened for NA-applicability" in card


def _field_table(card: str) -> dict[str, str]:
    rows = re.findall(r"^\| `(\w+)` \| [^|]+ \| (.+) \|$", card, re.MULTILINE)
    return dict(rows)


def test_field_table_describes_the_build_source(tmp_path: Path, arc_dir: Path) -> None:
    opts = BuildOptions(source=str(arc_dir), out=tmp_path / "arc", labels="none", limit=20)
    card = (build(load_recipe("arc-na"), opts).out / "README.md").read_text("utf-8")
    fields = _field_table(card)
    assert fields["id"].startswith("`arc_challenge/<split>/")
    assert "null" in fields["subject"] and "3-5" in fields["choices"]
    assert "the others are in `excluded`" in fields["choices"]  # a build holds 4 (NA)
    assert "mmlu" not in card.split("## Structure")[1].split("## Construction")[0].lower()


def test_field_table_of_mmlu_names_mmlu_ids(mmlu_na_full: BuildResult) -> None:
    fields = _field_table((mmlu_na_full.out / "README.md").read_text("utf-8"))
    assert fields["id"].startswith("`mmlu/<config>/<split>/<row>`")
    assert "57" in fields["subject"]


def test_card_states_the_gpqa_option_shuffle(tmp_path: Path, gpqa_dir: Path) -> None:
    """GPQA's options are shuffled per item: the card must state that draw (the Python it
    gives reproduces every row's option order from the source CSV), not claim that only
    the variants draw, or that nothing is random at all."""
    import csv

    with (gpqa_dir / "gpqa_main.csv").open(encoding="utf-8", newline="") as fh:
        source = {r["Record ID"]: r for r in csv.DictReader(fh)}
    for variants in ([{"kind": "original"}, {"kind": "na_keyed"}], None):
        data = load_recipe("gpqa-na").model_dump()
        if variants is not None:
            data["variants"] = variants
        out = tmp_path / f"gpqa-{len(data['variants'])}"
        opts = BuildOptions(source=str(gpqa_dir), out=out, labels="none", progress=False)
        result = build(parse_recipe(data, "test"), opts)
        card, seed = _card_and_seed(result)
        assert "No per-item randomness" not in card
        text = _stated(card, "gpqa_shuffle", "rng")
        line = next(x for x in card.splitlines() if "`gpqa_shuffle` draw:" in x)
        assert "`item_id` = `gpqa/<Record ID>`" in line, line
        rows = pq.read_table(result.out / "original" / "train-00000-of-00001.parquet").to_pylist()
        assert len(rows) == len(source) == 8
        for row in rows:
            rid = row["id"].rsplit("/", 1)[-1]
            columns = ["Correct Answer"] + [f"Incorrect Answer {k}" for k in (1, 2, 3)]
            texts = [source[rid][c].strip() for c in columns]
            rng = eval(text, {"random": random, "seed": seed, "item_id": f"gpqa/{rid}"})
            order = [0, 1, 2, 3]
            rng.shuffle(order)
            assert row["choices"] == [texts[i] for i in order], row["id"]
            assert row["answer"] == order.index(0), row["id"]


@pytest.fixture(scope="module")
def mmlu_sampled_card(tmp_path_factory: pytest.TempPathFactory, mmlu_dir: Path) -> Path:
    """mmlu-na as shipped (four NA phrasings, `exclude_subjects`) on a 120-item `--sample`."""
    out = tmp_path_factory.mktemp("phrasings") / "mmlu"
    opts = BuildOptions(source=str(mmlu_dir), out=out, labels="none", sample=120, progress=False)
    return build(load_recipe("mmlu-na"), opts).out


def test_card_names_the_phrasing_each_config_inserts(mmlu_sampled_card: Path) -> None:
    """Every NA phrasing has its own config; the card's line for a config must name the text
    its rows hold (else `na_keyed` and `na_keyed__answer_not_found` read the same)."""
    card = (mmlu_sampled_card / "README.md").read_text("utf-8")
    relation = card.split("## Relation to the source")[1].split("## Structure")[0]
    lines = {m[0]: m[1] for m in re.findall(r"^- `(\w+)`: (.+)$", relation, re.M)}
    checked = 0
    for config in lines:
        texts = {r["na_text"] for r in _rows_of(mmlu_sampled_card, config)} - {None}
        assert len(texts) <= 1, config
        for text in texts:
            assert f'"{text}"' in lines[config], (config, lines[config])
            checked += 1
    assert checked >= 6  # four na_keyed phrasings, na_distractor, na_mixed, all_of_the_above


def _rows_of(out: Path, config: str) -> list[dict]:
    return pq.read_table(out / config / PARQUET).to_pylist()


def test_card_names_the_subjects_the_recipe_leaves_out(
    mmlu_sampled_card: Path, mmlu_dir: Path
) -> None:
    """A subject of the source that no row of the build holds (mmlu-na leaves one out) is
    named on the card: a `--sample` build's `excluded` is empty, so nothing else says so."""
    source = pq.read_table(next((mmlu_dir / "all").glob("test-*.parquet")))
    missing = set(source.column("subject").to_pylist()) - {
        r["subject"] for r in _rows_of(mmlu_sampled_card, "original")
    }
    missing -= {r["subject"] for r in _rows_of(mmlu_sampled_card, "excluded")}
    # subjects too small for a 120-item sample's quota are not the recipe's doing
    left_out = set(json.loads((mmlu_sampled_card / "build.json").read_text())["recipe"][
        "exclude_subjects"])  # fmt: skip
    assert left_out and left_out <= missing
    card = (mmlu_sampled_card / "README.md").read_text("utf-8")
    for subject in left_out:
        assert f"`{subject}`" in card, subject
