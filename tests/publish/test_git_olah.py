"""End to end: two releases into a local git repository, served as a Hub mirror by olah,
read back with `datasets.load_dataset(..., revision=tag)` and `HfApi.list_repo_refs`."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from publish_helpers import build_mmlu, free_port, wait_for_port
from testdeps import olah_python

from nabench.publish import PublishError
from nabench.publish.git import publish_to_git
from nabench.stage.cards import parse_changelog, split_front_matter

# Real model / git + server runs (the fast loop is `pytest -m "not slow"`).
pytestmark = pytest.mark.slow

REPO_ID = "org/mmlu-na"
READ_BACK = textwrap.dedent(
    """
    import json, sys
    from datasets import load_dataset
    from huggingface_hub import HfApi
    out = {}
    for tag in ("v1.0.0", "v1.1.0"):
        ds = load_dataset("org/mmlu-na", "na_keyed", revision=tag, split="test")
        out[tag] = ds.to_list()
    refs = HfApi().list_repo_refs("org/mmlu-na", repo_type="dataset")
    out["tags"] = {t.name: t.target_commit for t in refs.tags}
    out["branches"] = {b.name: b.target_commit for b in refs.branches}
    json.dump(out, open(sys.argv[1], "w"))
    """
)


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


def _tree_hashes(repo: Path, rev: str) -> dict[str, str]:
    names = _git(repo, "ls-tree", "-r", "--name-only", rev).split()
    out = {}
    for name in names:
        blob = subprocess.run(
            ["git", "-C", str(repo), "show", f"{rev}:{name}"], check=True, capture_output=True
        ).stdout
        out[name] = hashlib.sha256(blob).hexdigest()
    return out


@pytest.fixture(scope="module")
def released(tmp_path_factory: pytest.TempPathFactory, mmlu_dir: Path) -> dict[str, object]:
    root = tmp_path_factory.mktemp("release")
    repo = root / "mirrors" / "datasets" / "org" / "mmlu-na"
    v1 = root / "build-v1"
    build_mmlu(mmlu_dir, v1, version="1.0.0", limit=40)
    first = publish_to_git(v1, repo, REPO_ID)
    # v1.1.0 is built into a fresh folder: its changelog can only come from the target.
    v11 = root / "build-v11"
    build_mmlu(mmlu_dir, v11, version="1.1.0", limit=55)
    second = publish_to_git(v11, repo, REPO_ID)
    return {"root": root, "repo": repo, "v1": v1, "v11": v11, "first": first, "second": second}


def test_tags_and_trees(released: dict[str, object]) -> None:
    repo = released["repo"]
    first, second = released["first"], released["second"]
    assert isinstance(repo, Path)
    assert _git(repo, "tag", "--list").split() == ["v1.0.0", "v1.1.0"]
    assert _git(repo, "cat-file", "-t", "v1.0.0").strip() == "tag"  # annotated
    assert _git(repo, "rev-parse", "v1.0.0^{commit}").strip() == first.commit  # type: ignore[attr-defined]
    assert _git(repo, "rev-parse", "v1.1.0^{commit}").strip() == second.commit  # type: ignore[attr-defined]
    assert _git(repo, "rev-parse", "v1.1.0^{commit}^").strip() == first.commit  # type: ignore[attr-defined]
    # The tree at each tag is exactly the planned tree (= the staged files, card finalized).
    assert _tree_hashes(repo, "v1.0.0") == first.plan.tree  # type: ignore[attr-defined]
    assert _tree_hashes(repo, "v1.1.0") == second.plan.tree  # type: ignore[attr-defined]
    v11 = released["v11"]
    assert isinstance(v11, Path)
    for path, digest in second.plan.tree.items():  # type: ignore[attr-defined]
        if path.endswith(".parquet"):
            assert hashlib.sha256((v11 / path).read_bytes()).hexdigest() == digest


def test_changelog_carried_over(released: dict[str, object]) -> None:
    repo = released["repo"]
    assert isinstance(repo, Path)
    card = _git(repo, "show", "v1.1.0:README.md")
    entries = parse_changelog(card)
    assert list(entries) == ["1.1.0", "1.0.0"]
    assert "First release." in entries["1.0.0"]
    before = json.loads((released["v1"] / "build.json").read_text())["counts"]  # type: ignore[operator]
    after = json.loads((released["v11"] / "build.json").read_text())["counts"]  # type: ignore[operator]
    n0, n1 = before["na_keyed"]["test"], after["na_keyed"]["test"]
    assert n0 < n1
    assert f"- `na_keyed/test`: {n0} → {n1} rows." in entries["1.1.0"]
    assert "na_keyed/test-00000-of-00001.parquet" in entries["1.1.0"]  # data file changed
    assert 'revision="v1.1.0"' in card and 'load_dataset("org/mmlu-na"' in card
    meta, _ = split_front_matter(card)
    assert meta["license"] == "mit"


def test_existing_tag_refused(released: dict[str, object]) -> None:
    repo, v1 = released["repo"], released["v1"]
    assert isinstance(repo, Path) and isinstance(v1, Path)
    before = _git(repo, "rev-parse", "main")
    with pytest.raises(PublishError, match=r"tag v1\.0\.0 already exists"):
        publish_to_git(v1, repo, REPO_ID)
    assert _git(repo, "rev-parse", "main") == before


@pytest.fixture(scope="module")
def olah_env(
    released: dict[str, object], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, str]]:
    """olah serving the git mirror; the environment that points the Hub client at it."""
    root = released["root"]
    assert isinstance(root, Path)
    tmp = tmp_path_factory.mktemp("olah")
    port = free_port()
    config = tmp / "olah.toml"
    config.write_text(
        textwrap.dedent(
            f"""
            [basic]
            host = "127.0.0.1"
            port = {port}
            repos-path = "{tmp / "cache"}"
            mirrors-path = ["{root / "mirrors"}"]
            mirror-scheme = "http"
            mirror-netloc = "127.0.0.1:{port}"
            mirror-lfs-netloc = "127.0.0.1:{port}"

            [accessibility]
            offline = true
            """
        )
    )
    log = (tmp / "olah.log").open("wb")
    server = subprocess.Popen(
        [str(olah_python()), "-m", "olah.server", "-c", str(config), "--log-path", str(tmp)],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=tmp,
    )
    try:
        wait_for_port(port, server)
        env = {
            **os.environ,
            "HF_ENDPOINT": f"http://127.0.0.1:{port}",
            "HF_HOME": str(tmp / "hf"),
            "HF_HUB_DISABLE_TELEMETRY": "1",
        }
        env.pop("HF_HUB_OFFLINE", None)
        env.pop("HF_DATASETS_OFFLINE", None)
        yield env
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


def test_olah_serves_both_releases(
    released: dict[str, object], olah_env: dict[str, str], tmp_path: Path
) -> None:
    result = tmp_path / "read.json"
    proc = subprocess.run(
        [sys.executable, "-c", READ_BACK, str(result)],
        env=olah_env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(result.read_text())
    v1, v11 = released["v1"], released["v11"]
    assert isinstance(v1, Path) and isinstance(v11, Path)
    want_v1 = pq.read_table(v1 / "na_keyed" / "test-00000-of-00001.parquet").to_pylist()
    want_v11 = pq.read_table(v11 / "na_keyed" / "test-00000-of-00001.parquet").to_pylist()
    assert len(want_v1) != len(want_v11)
    assert got["v1.0.0"] == want_v1
    assert got["v1.1.0"] == want_v11
    first, second = released["first"], released["second"]
    assert got["tags"] == {"v1.0.0": first.commit, "v1.1.0": second.commit}  # type: ignore[attr-defined]
    assert got["branches"] == {"main": second.commit}  # type: ignore[attr-defined]


def test_lm_eval_runs_the_release_through_the_mirror(
    released: dict[str, object], olah_env: dict[str, str], tmp_path: Path
) -> None:
    """A researcher's path: the release's own `lm_eval/` tasks (pinned to the tag), read from
    a clone of the tag, run by `lm-eval --model hf` on SmolLM2 with the data fetched from
    the Hub mirror at that revision; one accuracy per config, on the release's rows."""
    from nabench.evaluation.external import read_lm_eval
    from nabench.llm import default_hf_dir

    repo = released["repo"]
    assert isinstance(repo, Path)
    clone = tmp_path / "clone"
    subprocess.run(
        ["git", "clone", "-q", "--branch", "v1.1.0", str(repo), str(clone)],
        check=True,
        capture_output=True,
    )
    tasks_yaml = (clone / "lm_eval" / "nabench_mmlu_na_na_keyed.yaml").read_text()
    assert "dataset_path: org/mmlu-na" in tasks_yaml and "revision: v1.1.0" in tasks_yaml
    hf = default_hf_dir()
    assert (hf / "config.json").is_file(), f"no HF folder at {hf}: run `nabench llm convert-hf`"
    out = tmp_path / "lm-eval"
    tasks = "nabench_mmlu_na_original,nabench_mmlu_na_na_keyed"
    proc = subprocess.run(
        [sys.executable, "-m", "lm_eval", "run", "--include_path", str(clone / "lm_eval"),
         "--tasks", tasks, "--model", "hf", "--model_args", f"pretrained={hf},dtype=float32",
         "--batch_size", "8", "--limit", "10", "--log_samples", "--output_path", str(out)],
        env=olah_env, capture_output=True, text=True, timeout=900, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    (results,) = out.rglob("results_*.json")
    res = json.loads(results.read_text())
    for task in tasks.split(","):
        assert 0.0 <= res["results"][task]["acc,none"] <= 1.0
        assert res["n-samples"][task]["effective"] == 10
    runs = {r.config: r for r in read_lm_eval(out)}
    v11 = released["v11"]
    assert isinstance(v11, Path)
    for config in ("original", "na_keyed"):
        rows = pq.read_table(v11 / config / "test-00000-of-00001.parquet").to_pylist()[:10]
        assert list(runs[config].responses["id"]) == [r["id"] for r in rows]
