from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from nabench.core.errors import SourceError
from nabench.sources import get_source
from nabench.sources.gpqa import ANSWER_COLUMNS


def test_mmlu_test_split_maps_every_row(mmlu_dir: Path) -> None:
    loaded = get_source("mmlu").load("test", location=str(mmlu_dir))
    items = loaded.items
    raw = pq.read_table(mmlu_dir / "all" / "test-00000-of-00001.parquet")
    assert items.num_rows == raw.num_rows == 14042
    assert items.column("id")[123].as_py() == "mmlu/all/test/00123"
    assert items.column("answer").to_pylist() == raw.column("answer").to_pylist()
    assert items.column("choices").to_pylist()[:50] == raw.column("choices").to_pylist()[:50]
    assert len(loaded.fingerprint) == 64
    assert "all/test-00000-of-00001.parquet" in loaded.files


def test_arc_keys_are_mapped_by_position_including_digits(arc_dir: Path) -> None:
    raw = pq.read_table(arc_dir / "ARC-Challenge" / "test-00000-of-00001.parquet").to_pylist()
    items = get_source("arc_challenge").load("test", location=str(arc_dir)).items.to_pylist()
    assert len(items) == len(raw)
    digit_rows = 0
    for r, item in zip(raw, items, strict=True):
        labels = r["choices"]["label"]
        assert item["id"] == f"arc_challenge/test/{r['id']}"
        assert item["choices"][item["answer"]] == r["choices"]["text"][labels.index(r["answerKey"])]
        digit_rows += r["answerKey"].isdigit()
    assert digit_rows == 22  # 21 rows labelled 1-4 plus one labelled 1-3
    assert {len(i["choices"]) for i in items} == {3, 4, 5}


@pytest.mark.parametrize("labels", [["A", "A", "B", "C"], ["A", "B", "C"]])
def test_arc_labels_that_do_not_name_each_choice_once_are_refused(
    arc_dir: Path, tmp_path: Path, labels: list[str]
) -> None:
    """The key is found by label: a repeated or missing label would key another option."""
    src = arc_dir / "ARC-Challenge" / "test-00000-of-00001.parquet"
    table = pq.read_table(src)
    rows = table.to_pylist()
    first = next(i for i, r in enumerate(rows) if len(r["choices"]["text"]) == 4)
    rows[first]["choices"]["label"] = labels
    rows[first]["answerKey"] = "C"
    copy = tmp_path / "arc" / "ARC-Challenge"
    copy.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), copy / src.name)
    with pytest.raises(SourceError, match=r"labels \[.*\] do not name its 4 choices one each"):
        get_source("arc_challenge").load("test", location=str(tmp_path / "arc"))


def test_hellaswag_fixture_maps_context_endings_and_string_label(hellaswag_dir: Path) -> None:
    raw = pq.read_table(hellaswag_dir / "data" / "validation-00000-of-00001.parquet").to_pylist()
    items = get_source("hellaswag").load("validation", location=str(hellaswag_dir)).items
    for r, item in zip(raw, items.to_pylist(), strict=True):
        assert item["question"] == r["ctx"]
        assert item["choices"] == r["endings"]
        assert item["answer"] == int(r["label"])
        assert item["subject"] == r["activity_label"]


def test_hellaswag_test_split_is_refused(hellaswag_dir: Path) -> None:
    with pytest.raises(SourceError, match="no labels"):
        get_source("hellaswag").load("test", location=str(hellaswag_dir))


@pytest.mark.parametrize("config", ["gpqa_main", "gpqa_diamond", "gpqa_extended"])
def test_gpqa_choices_are_stripped_answers_in_per_item_order(gpqa_dir: Path, config: str) -> None:
    import csv

    with (gpqa_dir / f"{config}.csv").open(newline="", encoding="utf-8") as fh:
        raw = list(csv.DictReader(fh))
    items = get_source("gpqa").load("train", location=str(gpqa_dir), config=config, seed=7).items
    for r, item in zip(raw, items.to_pylist(), strict=True):
        texts = [r[c].strip() for c in ANSWER_COLUMNS]
        assert sorted(item["choices"]) == sorted(texts)
        assert item["choices"][item["answer"]] == texts[0]
        assert item["id"] == f"gpqa/{config}/{r['Record ID']}"


def test_gpqa_order_depends_on_seed_and_record_only(gpqa_dir: Path) -> None:
    src = get_source("gpqa")
    main = src.load("train", location=str(gpqa_dir), config="gpqa_main", seed=1).items.to_pylist()
    ext = src.load("train", location=str(gpqa_dir), config="gpqa_extended", seed=1).items
    again = src.load("train", location=str(gpqa_dir), config="gpqa_main", seed=1).items.to_pylist()
    other = src.load("train", location=str(gpqa_dir), config="gpqa_main", seed=2).items.to_pylist()
    assert main == again
    # The same record is ordered identically in every config.
    assert [i["choices"] for i in main] == [i["choices"] for i in ext.to_pylist()[: len(main)]]
    assert [i["choices"] for i in main] != [i["choices"] for i in other]


def test_gpqa_local_csv_file(gpqa_dir: Path) -> None:
    items = (
        get_source("gpqa")
        .load("train", location=str(gpqa_dir / "gpqa_diamond.csv"), config="gpqa_diamond")
        .items
    )
    assert items.num_rows == 5


def test_missing_column_is_a_clear_error(tmp_path: Path, mmlu_dir: Path) -> None:
    table = pq.read_table(mmlu_dir / "all" / "dev-00000-of-00001.parquet").drop(["answer"])
    path = tmp_path / "test.parquet"  # named for its split
    pq.write_table(table, path)
    with pytest.raises(SourceError, match=r"missing column.*'answer'"):
        get_source("mmlu").load("test", location=str(path))


def test_answer_out_of_range_names_the_row(tmp_path: Path, mmlu_dir: Path) -> None:
    table = pq.read_table(mmlu_dir / "all" / "dev-00000-of-00001.parquet")
    answers = table.column("answer").to_pylist()
    answers[7] = 4
    table = table.set_column(3, "answer", pa.array(answers, pa.int64()))
    path = tmp_path / "test.parquet"  # named for its split
    pq.write_table(table, path)
    with pytest.raises(SourceError, match=r"mmlu/all/test/00007: answer 4 is out of range"):
        get_source("mmlu").load("test", location=str(path))


def test_unknown_split_and_missing_path(mmlu_dir: Path) -> None:
    with pytest.raises(SourceError, match="unknown split"):
        get_source("mmlu").load("nope", location=str(mmlu_dir))
    with pytest.raises(SourceError, match="does not exist"):
        get_source("mmlu").load("test", location="./no/such/folder")


def test_a_file_named_for_another_split_is_not_read_as_the_asked_split(
    mmlu_dir: Path, hellaswag_dir: Path
) -> None:
    """`--source validation-00000-of-00001.parquet` for split `test` built MMLU validation
    questions under the ids `mmlu/all/test/NNNNN` (those of other, real test items)."""
    mmlu = get_source("mmlu")
    validation = mmlu_dir / "all" / "validation-00000-of-00001.parquet"
    with pytest.raises(SourceError, match=r"name says split 'validation'.*split 'test'"):
        mmlu.load("test", location=str(validation))
    with pytest.raises(SourceError, match=r"name says split 'test'.*split 'dev'"):
        mmlu.load("dev", location=str(mmlu_dir / "all" / "test-00000-of-00001.parquet"))
    # the file of the split asked for still loads
    assert mmlu.load("validation", location=str(validation)).items.num_rows == 1531
    dev = mmlu.load("dev", location=str(mmlu_dir / "all" / "dev-00000-of-00001.parquet"))
    assert dev.items.column("id")[0].as_py() == "mmlu/all/dev/00000"
    hs = hellaswag_dir / "data" / "validation-00000-of-00001.parquet"
    assert get_source("hellaswag").load("validation", location=str(hs)).items.num_rows > 0


def test_a_file_whose_name_names_no_split_is_not_read_as_any_split(
    mmlu_dir: Path, tmp_path: Path
) -> None:
    """`--source mydata.parquet` holding validation rows was read as split `test` (the recipe's)
    and built them under the test ids `mmlu/all/test/NNNNN`; the file must say its split."""
    mydata = tmp_path / "mydata.parquet"
    shutil.copy(mmlu_dir / "all" / "validation-00000-of-00001.parquet", mydata)
    for split in ("test", "validation"):
        with pytest.raises(SourceError, match=rf"names no split.*rename it {split}\.parquet"):
            get_source("mmlu").load(split, location=str(mydata))
    named = mydata.rename(tmp_path / "validation.parquet")
    ids = get_source("mmlu").load("validation", location=str(named)).items.column("id")
    assert ids[0].as_py() == "mmlu/all/validation/00000"


@pytest.mark.parametrize("name", ["test.jsonl", "test.parquet", "test.csv"])
def test_an_empty_source_file_says_so(tmp_path: Path, name: str) -> None:
    """A 0-byte `test.jsonl` was `cannot load 'test.jsonl' (StopIteration): StopIteration`."""
    (tmp_path / name).write_bytes(b"")
    with pytest.raises(SourceError, match=r"test\.\w+: the file is empty"):
        get_source("mmlu").load("test", location=str(tmp_path / name))


def test_a_header_only_csv_says_it_holds_no_rows(tmp_path: Path) -> None:
    """A CSV of its header line alone was `Instruction "train" corresponds to no data!`."""
    (tmp_path / "test.csv").write_text("question,subject,choices,answer\n")
    with pytest.raises(SourceError, match=r"test\.csv: the file holds no rows$"):
        get_source("mmlu").load("test", location=str(tmp_path / "test.csv"))
