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
    import click

    from nabench.cli.root import COMMANDS, LISTING, main

    assert set(LISTING) == set(COMMANDS)
    ctx = click.Context(main)
    for name, text in LISTING.items():
        command = main.get_command(ctx, name)
        assert command is not None and command.name == name, name
        assert command.get_short_help_str(limit=200) == text, name


def test_a_command_imports_only_its_own_module() -> None:
    """`nabench eval` loads the eval commands, not build's, publish's or selfknow's."""
    code = (
        "import sys\nfrom click.testing import CliRunner\nimport nabench.cli\n"
        "CliRunner().invoke(nabench.cli.main, ['eval', '--help'])\n"
        "print(sorted(m for m in ('nabench.cli.main', 'nabench.cli.publish', "
        "'nabench.cli.selfknow', 'nabench.cli.evaluation') if m in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "['nabench.cli.evaluation']"


def test_missing_build_path_fails_in_one_line_without_the_hub(tmp_path: Path) -> None:
    from nabench.cli import main

    for dataset in ("no/such/build", str(tmp_path / "nope"), "./nope"):
        t0 = time.perf_counter()
        args = ["eval", dataset, "--backend", "reference", "--model", "oracle"]
        res = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "r")])
        elapsed = time.perf_counter() - t0
        assert res.exit_code != 0
        lines = res.output.strip().splitlines()
        assert lines == [f"error: {dataset!r} does not exist here and is no Hub id (ORG/NAME)"]
        assert elapsed < 3.0  # the Hub client's retries take ~25 s
    assert not (tmp_path / "r").exists()
