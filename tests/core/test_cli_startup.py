"""A new user's first minutes: `nabench --help` starts without the heavy libraries, lists
every command with its own help, and a dataset path that does not exist fails at once."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

from click.testing import CliRunner

HEAVY = ("pandas", "pyarrow", "scipy", "datasets", "matplotlib")


def test_help_imports_no_heavy_library() -> None:
    code = (
        "import sys\nfrom click.testing import CliRunner\nimport nabench.cli\n"
        "res = CliRunner().invoke(nabench.cli.main, ['--help'])\n"
        "assert res.exit_code == 0 and 'Commands:' in res.output, res.output\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[]"


def test_cli_import_takes_under_half_a_second() -> None:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import nabench.cli"],
        capture_output=True,
        text=True,
        check=True,
    )
    cumulative = {
        m.group(2): int(m.group(1))
        for m in re.finditer(r"^import time:\s+\d+ \|\s+(\d+) \|\s+(\S+)$", proc.stderr, re.M)
    }
    assert cumulative["nabench.cli"] < 500_000  # microseconds


def test_listing_is_each_commands_own_help() -> None:
    from nabench.cli.main import main  # registers every command
    from nabench.cli.root import LISTING

    assert set(LISTING) == set(main.commands)
    for name, text in LISTING.items():
        assert main.commands[name].get_short_help_str(limit=200) == text, name


def test_missing_build_path_fails_in_one_line_without_the_hub(tmp_path: Path) -> None:
    from nabench.cli import main

    for dataset in ("no/such/build", str(tmp_path / "nope"), "./nope"):
        t0 = time.perf_counter()
        args = ["eval", dataset, "--backend", "reference", "--model", "oracle"]
        res = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "r")])
        elapsed = time.perf_counter() - t0
        assert res.exit_code != 0
        lines = res.output.strip().splitlines()
        what = "no such build folder (and not a Hub dataset id ORG/NAME)"
        assert lines == [f"error: {dataset}: {what}"]
        assert elapsed < 3.0  # the Hub client's retries take ~25 s
    assert not (tmp_path / "r").exists()
