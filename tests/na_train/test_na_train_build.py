"""`nabench build mmlu-na-train` on 20 MMLU validation items: the four configs load with
`datasets`, the invariants hold, a rerun makes no model call, a kill -9 mid-sampling resumes
with only the missing samples, and TRL trains one step on each of `sft` and `dpo` (the real
SmolLM2 weights).

The sampled answers come from a scripted OpenAI-compatible server on loopback: the subject
here is the pipeline's own logic (plan, seeds, cache, mixed-set selection, staging), and a
scripted answer is a letter fixed by the prompt and the sample's seed, so some sets are
mixed, some all right, some all wrong, the same on every run. The real models sample
na-train data in tests/ray_engine/test_engine_jobs.py (llama.cpp server, Ray) and every
backend has its own end-to-end tests (tests/llm).
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fixtures.scripted import Scripted, chat_body, start_scripted_server
from sigkill import kill_after_rows

from nabench.evaluation import parse_answer
from nabench.pipelines.na_train import eval_index
from nabench.pipelines.registry import load_recipe
from nabench.pipelines.skeleton import BuildOptions
from nabench.sources import get_source
from nabench.validate.croissant import mlcroissant_problem
from nabench.validate.na_train import check_na_train

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]

LIMIT = 20
NOT_APPLICABLE = ("mmlu/all/validation/00003", "mmlu/all/validation/00007")
SMALL = ["--set", "sampler.n=2", "--set", "sampler.max_tokens=8"]  # fmt: skip
CONFIGS = ("sft", "dpo", "samples", "discarded")


def labels_file(path: Path) -> Path:
    """NA-applicability labels for the 20 items: two are judged not applicable."""
    ids = [f"mmlu/all/validation/{i:05d}" for i in range(LIMIT)]
    lines = ["id,na_applicable,model,guideline_version"]
    lines += [f"{i},{i not in NOT_APPLICABLE},human,1" for i in ids]
    path.write_text("\n".join(lines) + "\n")
    return path


def _answer(path: str, body: dict[str, Any], n: int) -> tuple[int, Any]:
    """A letter fixed by the prompt and the sample's seed, in the form SmolLM2 often uses."""
    letter = "ABCD"[zlib.crc32(f"{body['messages'][-1]['content']}{body['seed']}".encode()) % 4]
    return 200, chat_body(f"{letter}. scripted")


@pytest.fixture(scope="module")
def scripted() -> Iterator[Scripted]:
    """The scripted sampler (0.05 s an answer: a kill -9 lands mid-run)."""
    state, srv = start_scripted_server(_answer, delay_s=0.05)
    yield state
    srv.shutdown()
    srv.server_close()


def build_cmd(
    mmlu_dir: Path, out: Path, cache: Path, labels: Path, url: str, *extra: str
) -> list[str]:
    model = [
        "--set", "sampler.backend=openai", "--set", f"sampler.base_url={url}",
        "--set", "sampler.model=scripted-model",
    ]  # fmt: skip
    return [
        sys.executable, "-m", "nabench.cli", "build", "mmlu-na-train",
        "--source", str(mmlu_dir), "--split", "validation", "--limit", str(LIMIT),
        "--labels", str(labels), "--cache", str(cache), "--out", str(out), "--quiet",
        *SMALL, *model, *extra,
    ]  # fmt: skip


def run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def stats(out: Path) -> dict[str, Any]:
    return json.loads((out.parent / f"{out.name}.stats.json").read_text())


@pytest.fixture(scope="module")
def sampler(scripted: Scripted) -> str:
    return scripted.url


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, mmlu_dir: Path, sampler: str) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("na_train")
    out, cache = root / "mmlu-na-train", root / "cache.sqlite"
    cmd = build_cmd(mmlu_dir, out, cache, labels_file(root / "labels.csv"), sampler)
    first = run([*cmd, "--yes"])  # 102 samples to compute: a long job needs consent
    return {"out": out, "cmd": cmd, "stdout": first.stdout, "stats": stats(out)}


def load(out: Path, config: str) -> datasets.Dataset:
    return datasets.load_dataset(str(out), config, split="train")


def test_build_writes_every_config_and_datasets_reads_it(built: dict[str, Any]) -> None:
    out = built["out"]
    manifest = json.loads((out / "build.json").read_text())
    for config in CONFIGS:
        assert f"{config} " in built["stdout"]
        assert load(out, config).num_rows == manifest["counts"][config]["train"] > 0
    # item 18 offers "All of the above" (the eligibility audit's has_all_option)
    excluded = {r["id"]: r["reason"] for r in load(out, "excluded")}
    assert excluded == {
        **dict.fromkeys(NOT_APPLICABLE, "not_na_applicable"),
        "mmlu/all/validation/00018": "has_all_option",
    }
    n_items = LIMIT - len(excluded)
    assert built["stats"]["calls"] == n_items * 3 * 2  # items x variants x samples
    samples = load(out, "samples")
    assert samples.num_rows == n_items * 3 * 2
    assert not set(excluded) & set(samples["id"])
    assert set(samples["labeler"]) == {"human"}
    # its croissant.json (every kind writes one) is listed, hashed and valid for mlcroissant
    assert "croissant.json" in manifest["files"]
    assert mlcroissant_problem(out / "croissant.json") is None


def test_rows_hold_the_invariants(built: dict[str, Any], mmlu_dir: Path) -> None:
    out = built["out"]
    rows = {c: load(out, c) for c in CONFIGS}
    samples = {(r["id"], r["variant"], r["seed"]): r for r in rows["samples"]}
    for r in rows["dpo"]:
        chosen = samples[(r["id"], r["variant"], r["chosen_seed"])]
        assert r["prompt"] == [{"role": "user", "content": chosen["prompt"]}]
        assert parse_answer(r["chosen"][0]["content"], len(chosen["choices"])) == r["gold"]
        assert parse_answer(r["rejected"][0]["content"], len(chosen["choices"])) != r["gold"]
        assert r["gold"] == "ABCD"[chosen["answer"]]
    for r in rows["sft"]:
        assert r["variant"] == "original"  # the paper: from the standard variant
        user, assistant = r["messages"]
        assert (user["role"], assistant["role"]) == ("user", "assistant")
        assert parse_answer(assistant["content"]) == r["gold"]
    per_set: dict[tuple[str, str], list[int]] = {}
    for (item_id, variant, seed), _ in samples.items():
        per_set.setdefault((item_id, variant), []).append(seed)
    assert all(max(s) - min(s) == 1 for s in per_set.values())  # seeds base, base + 1
    recipe = load_recipe("mmlu-na-train")
    index = eval_index(get_source("mmlu"), recipe, BuildOptions(source=str(mmlu_dir)))
    tables = {c: rows[c].data.table for c in CONFIGS}
    assert check_na_train(tables, parse_answer, index) == []
    card = (out / "README.md").read_text()
    assert "scripted-model" in card and "temperature 1.0" in card
    assert "not stated — fill in" in card and "exact matches 0" in card


def test_sampling_with_nothing_cached_prints_the_plan_and_stops(
    built: dict[str, Any], mmlu_dir: Path, tmp_path: Path, scripted: Scripted
) -> None:
    out = tmp_path / "not-started"
    labels = labels_file(tmp_path / "l.csv")
    cmd = build_cmd(mmlu_dir, out, tmp_path / "empty.sqlite", labels, scripted.url)
    posts = len(scripted.posts)
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert len(scripted.posts) == posts  # stopped before any model call
    assert done.returncode == 2, done.stderr[-3000:]
    n = load(built["out"], "samples").num_rows  # what the consented build sampled
    assert f"plan: sample {n:,} answer(s) (2 per variant of an item) with " in done.stderr
    assert f"plan: cached 0, to compute {n:,} request(s)" in done.stderr
    (error,) = [ln for ln in done.stderr.splitlines() if ln.startswith("error:")]
    assert "long model job" in error and "--yes" in error
    assert not out.exists() and not (tmp_path / "not-started.stats.json").exists()


def test_rerun_makes_no_model_call(built: dict[str, Any]) -> None:
    """Without --yes: a job the cache answers whole needs no consent."""
    before = json.loads((built["out"] / "build.json").read_text())["files"]
    run(built["cmd"])
    again = stats(built["out"])
    assert again["calls"] == 0
    assert again["cache_hits"] == built["stats"]["calls"]
    assert json.loads((built["out"] / "build.json").read_text())["files"] == before


def test_kill9_mid_sampling_resumes_with_the_missing_samples(
    tmp_path: Path, mmlu_dir: Path, sampler: str
) -> None:
    out, cache = tmp_path / "killed", tmp_path / "cache.sqlite"
    labels = labels_file(tmp_path / "labels.csv")
    one_at_a_time = ["--set", "sampler.chunk_size=1", "--set", "sampler.concurrency=1"]
    cmd = build_cmd(mmlu_dir, out, cache, labels, sampler, "--limit", "4", *one_at_a_time)
    done = kill_after_rows(cmd, cache, 5, timeout_s=600)
    total = 3 * 3 * 2  # item 3 of the first 4 is not NA-applicable
    assert 5 <= done < total, f"{done} rows: the kill came too late to test resume"
    assert not out.exists()
    run(cmd)
    resumed = stats(out)
    assert resumed["calls"] == total - done
    assert resumed["cache_hits"] == done
    assert load(out, "samples").num_rows == total


def _one_step(trainer: Any, model: Any) -> None:
    """One optimiser step that changes the weights."""
    import torch

    before = [p.detach().clone() for p in model.parameters() if p.requires_grad]
    result = trainer.train()
    after = [p.detach() for p in model.parameters() if p.requires_grad]
    assert trainer.state.global_step == 1
    assert math.isfinite(result.training_loss)
    assert any(not torch.equal(a, b) for a, b in zip(after, before, strict=True))


def test_trl_trains_one_step_on_sft_and_dpo(built: dict[str, Any], tmp_path: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import DPOConfig, DPOTrainer, SFTConfig, SFTTrainer

    hf = REPO / ".cache" / "models" / "SmolLM2-135M-Instruct-Q4_1"
    assert hf.is_dir(), f"{hf} missing: run `nabench llm convert-hf {hf}`"
    tokenizer = AutoTokenizer.from_pretrained(hf)
    common = {
        "max_steps": 1,
        "per_device_train_batch_size": 2,
        "max_length": 192,
        "report_to": "none",
        "use_cpu": True,
        "save_strategy": "no",
        "dataloader_num_workers": 0,
        # TRL's configs default to bf16 autocast, which on a CPU without bf16 units made the
        # two steps 16 s + 35 s instead of 4 s + 5 s (measured on this 2-core machine)
        "bf16": False,
    }
    model = AutoModelForCausalLM.from_pretrained(hf, dtype=torch.float32)
    sft = SFTTrainer(
        model=model,
        args=SFTConfig(output_dir=str(tmp_path / "sft"), **common),
        train_dataset=load(built["out"], "sft"),
        processing_class=tokenizer,
    )
    _one_step(sft, model)
    model = AutoModelForCausalLM.from_pretrained(hf, dtype=torch.float32)
    dpo = DPOTrainer(
        model=model,
        args=DPOConfig(output_dir=str(tmp_path / "dpo"), **common),
        train_dataset=load(built["out"], "dpo"),
        processing_class=tokenizer,
    )
    _one_step(dpo, model)


def test_nabench_validate_checks_the_build_and_rejects_a_swapped_pair(
    built: dict[str, Any], tmp_path: Path
) -> None:
    ok = run([sys.executable, "-m", "nabench.cli", "validate", str(built["out"])])
    assert "0 violations" in ok.stdout
    copy = tmp_path / "tampered"
    shutil.copytree(built["out"], copy)
    path = copy / "dpo" / "train-00000-of-00001.parquet"
    table = pq.read_table(path)
    rows = table.to_pylist()
    rows[0]["chosen"], rows[0]["rejected"] = rows[0]["rejected"], rows[0]["chosen"]
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path)
    bad = subprocess.run(
        [sys.executable, "-m", "nabench.cli", "validate", str(copy)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert bad.returncode == 1
    assert "dpo/train-00000-of-00001.parquet row 1 " in bad.stderr
    assert "[dpo_chosen_correct]" in bad.stderr and "[dpo_rejected_incorrect]" in bad.stderr


def test_a_build_with_no_mixed_set_says_so_and_its_card_loads_no_missing_config(
    tmp_path: Path, mmlu_dir: Path, scripted_server: Any
) -> None:
    """A server that answers "Answer: A" every time: every set is all right or all wrong, so
    there is no sft or dpo row; the card must not tell readers to load those configs."""
    server = scripted_server(lambda path, body, n: (200, chat_body("Answer: A")))
    out = tmp_path / "all-a"
    labels = labels_file(tmp_path / "labels.csv")
    cmd = build_cmd(mmlu_dir, out, tmp_path / "c.sqlite", labels, server.url, "--limit", "4")
    done = run([*cmd, "--yes"])
    assert not (out / "sft").exists() and not (out / "dpo").exists()
    card = (out / "README.md").read_text()
    assert "load_dataset(" not in card.split("## Loading with TRL")[1].split("## Citation")[0]
    assert "warning: no sft row" in done.stderr and "warning: no dpo row" in done.stderr
    assert "no sft row" in card and "no dpo row" in card
