"""Safe defaults (issue 08): a long model job shows its plan and waits for consent; publish
checks the build, the tag and the Hub before it writes anything, and says in one line what
is missing."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from safety_helpers import REPO, build_args, http_server, nabench, nabench_process

from nabench.core.errors import NabenchError
from nabench.label.checks import label_job
from nabench.llm import CONFIRM_ABOVE, ConfirmationNeeded, estimate_hook, free_port
from nabench.publish.git import check_tag_name
from nabench.publish.plan import PublishError, check_publishable, read_manifest
from nabench.stage.hub_layout import write_parquet


def test_mmlu_na_with_nothing_cached_prints_the_plan_and_stops(
    mmlu_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "b"
    t0 = time.process_time()
    run = nabench(
        "build",
        "mmlu-na",
        "--source",
        str(mmlu_dir),
        "--out",
        str(out),
        "--cache",
        str(tmp_path / "empty.sqlite"),
        "--quiet",
    )
    cpu = time.process_time() - t0
    assert run.code == 2, run.stderr
    # Every eligible item of the 14,042, moral_scenarios (895) left out by the recipe.
    found = re.search(
        r"plan: label ([\d,]+) eligible item\(s\) with local:SmolLM2-135M", run.stderr
    )
    assert found, run.stderr
    n = found.group(1)
    assert 12_000 < int(n.replace(",", "")) < 14_042 - 895
    assert f"cached 0, to compute {n} request(s); estimate: unmeasured" in run.stderr
    assert len(run.errors) == 1 and "--labels llm" in run.errors[0] and "--yes" in run.errors[0]
    assert not out.exists()
    assert cpu < 30, cpu  # loading + auditing MMLU; no model was loaded or called


def test_selfknow_with_nothing_cached_prints_the_plan_and_stops(tmp_path: Path) -> None:
    """The shipped recipe: 50 tasks per class, 2 classes, 2 prompt styles, one task per
    request, and one classification per task."""
    recipe = yaml.safe_load((REPO / "nabench" / "recipes" / "selfknow.yaml").read_text())
    gen = recipe["generator"]
    assert gen["batch_size"] == 1
    slots = gen["n_per_class"] * 2 * len(gen["styles"])
    out = tmp_path / "sk"
    t0 = time.process_time()
    run = nabench("build", "selfknow", "--out", str(out), "--quiet")
    cpu = time.process_time() - t0
    assert run.code == 2, run.stderr
    assert f"plan: generate {slots:,} task(s) and classify them with SmolLM2-135M" in run.stderr
    assert f"plan: cached 0, to compute {2 * slots:,} request(s)" in run.stderr
    assert len(run.errors) == 1 and "--yes" in run.errors[0], run.stderr
    assert not out.exists()
    assert cpu < 10, cpu  # no model was loaded or called
    # README: `--limit 10` (80 requests) still asks
    run = nabench("build", "selfknow", "--limit", "10", "--out", str(out), "--quiet")
    assert run.code == 2 and "to compute 80 request(s)" in run.stderr, run.stderr


def test_plan_gate_and_measured_estimate(capsys: pytest.CaptureFixture[str]) -> None:
    label_job("local:m", CONFIRM_ABOVE + 10, 10).require_confirmation(confirmed=False)  # short
    assert capsys.readouterr().err == ""
    plan = label_job("local:m", 1000, 100)
    with pytest.raises(ConfirmationNeeded, match="--labels llm"):
        plan.require_confirmation(confirmed=False)
    plan.require_confirmation(confirmed=True)
    assert "to compute 900" in capsys.readouterr().err
    hook = estimate_hook(plan)
    hook(16, 900, 8.0)
    hook(32, 900, 16.0)
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "nabench: plan: measured 16 request(s) in 8.0 s: about 7 min for the remaining 884"
    ]


def _git_refs(repo: Path) -> str:
    if not repo.exists():
        return ""
    return subprocess.run(
        ["git", "-C", str(repo), "for-each-ref"], capture_output=True, text=True, check=True
    ).stdout


def test_publish_refuses_a_build_that_fails_validation(plain_build: Path, tmp_path: Path) -> None:
    staged = tmp_path / "mmlu-na"
    shutil.copytree(plain_build, staged)
    rel = "na_keyed/test-00000-of-00001.parquet"
    table = pq.read_table(staged / rel)
    answers = table.column("answer").to_pylist()
    answers[0] = (answers[0] + 1) % 5  # the key no longer points at the NA option
    table = table.set_column(
        table.schema.get_field_index("answer"),
        "answer",
        __import__("pyarrow").array(answers, __import__("pyarrow").int64()),
    )
    digest = write_parquet(table, staged / rel)
    manifest = json.loads((staged / "build.json").read_text())
    manifest["files"][rel] = digest  # hashes agree: only the validator can see the edit
    (staged / "build.json").write_text(json.dumps(manifest, indent=2))
    repo = tmp_path / "repo.git"
    run = nabench("publish", str(staged), "--to", f"git:{repo}")
    assert run.code != 0 and "fails validation" in run.errors[0], run.stderr
    assert _git_refs(repo) == ""


def test_an_empty_build_is_refused_and_publish_refuses_one(
    mmlu_dir: Path, plain_build: Path, tmp_path: Path
) -> None:
    """Every item labelled not NA-applicable: the build stops with the reason (it built
    configs of 0 rows); publish still refuses such a build (one made by an older nabench)."""
    labels = tmp_path / "labels.csv"
    labels.write_text(
        "id,na_applicable\n" + "".join(f"mmlu/all/test/{i:05d},false\n" for i in range(12))
    )
    out = tmp_path / "b"
    run = nabench(*build_args(mmlu_dir, out, "--labels", str(labels)), "mmlu-na")
    assert run.code == 2 and not out.exists(), run.stderr
    assert run.errors == [
        "error: split test has no usable item: all 12 were excluded (not_na_applicable 12), "
        "so its configs would have no rows"
    ]
    manifest = read_manifest(plain_build)
    empty = manifest.model_copy(
        update={"counts": {c: dict.fromkeys(per, 0) for c, per in manifest.counts.items()}}
    )
    with pytest.raises(PublishError, match="the build holds no benchmark rows"):
        check_publishable(plain_build, empty)
    check_publishable(plain_build, manifest)  # the control: the real counts pass


def test_git_publish_checks_the_tag_before_committing(plain_build: Path, tmp_path: Path) -> None:
    repo = tmp_path / "repo.git"
    run = nabench("publish", str(plain_build), "--to", f"git:{repo}", "--version", "1.0.4-x.lock")
    # the version rule refuses it first; the git tag check stands behind it (below)
    assert run.code != 0 and "not semantic" in run.errors[0], run.stderr
    assert _git_refs(repo) == ""
    with pytest.raises(NabenchError, match="not a valid git tag name"):
        check_tag_name("v1.0.4-x.lock")  # nothing on main, untagged or not
    ok = nabench("publish", str(plain_build), "--to", f"git:{repo}", "--version", "1.0.4-rc.1")
    assert ok.code == 0, ok.stderr
    assert "refs/tags/v1.0.4-rc.1" in _git_refs(repo)


def _push(mmlu_dir: Path, out: Path, env: dict[str, str | None]) -> str:
    run = nabench_process(
        *build_args(mmlu_dir, out, "--labels", "none", "--push"), "mmlu-na", env=env
    )
    assert run.code != 0, run.stdout
    assert len(run.errors) == 1, run.stderr
    assert "Traceback" not in run.stderr and "internal error" not in run.stderr
    assert not out.exists()  # checked before the build, not after it
    return run.errors[0]


@pytest.fixture
def no_token(tmp_path: Path) -> dict[str, str | None]:
    return {
        "HF_TOKEN": None,
        "HUGGING_FACE_HUB_TOKEN": None,
        "HF_HOME": str(tmp_path / "hf"),
        "HF_HUB_OFFLINE": None,
    }


def test_push_offline_says_so(mmlu_dir: Path, tmp_path: Path, no_token: dict) -> None:
    line = _push(mmlu_dir, tmp_path / "b", {**no_token, "HF_TOKEN": "hf_x", "HF_HUB_OFFLINE": "1"})
    assert "HF_HUB_OFFLINE=1" in line


def test_push_without_a_token_says_so(mmlu_dir: Path, tmp_path: Path, no_token: dict) -> None:
    assert "no Hugging Face token" in _push(mmlu_dir, tmp_path / "b", no_token)


def test_push_with_no_network_says_so(mmlu_dir: Path, tmp_path: Path, no_token: dict) -> None:
    env = {**no_token, "HF_TOKEN": "hf_x", "HF_ENDPOINT": f"http://127.0.0.1:{free_port()}"}
    line = _push(mmlu_dir, tmp_path / "b", env)
    assert "cannot reach the Hub" in line and "ConnectError" in line


def test_push_with_a_rejected_token_says_so(mmlu_dir: Path, tmp_path: Path, no_token: dict) -> None:
    with http_server(lambda m, p, b: (401, {"error": "Invalid credentials"})) as url:
        line = _push(mmlu_dir, tmp_path / "b", {**no_token, "HF_TOKEN": "hf_x", "HF_ENDPOINT": url})
    assert "rejected the Hugging Face token (HTTP 401)" in line


def test_publish_defaults_to_the_token_owner_and_reports_hub_errors(
    plain_build: Path, no_token: dict
) -> None:
    seen: list[str] = []

    def hub(method: str, path: str, body: bytes) -> tuple[int, dict[str, object]]:
        seen.append(f"{method} {path}")
        if path.startswith("/api/whoami"):
            return 200, {"name": "alice", "type": "user", "orgs": [{"name": "alice-lab"}]}
        return 500, {"error": "Internal Error"}

    with http_server(hub) as url:
        run = nabench_process(
            "publish", str(plain_build), env={**no_token, "HF_TOKEN": "hf_x", "HF_ENDPOINT": url}
        )
    assert run.code != 0 and len(run.errors) == 1, run.stderr
    assert "answered HTTP 500 while creating alice/mmlu-na" in run.errors[0]
    assert "publishing to alice/mmlu-na" in run.stderr  # not nabench/mmlu-na
    assert any(s.startswith("POST /api/repos/create") for s in seen), seen
