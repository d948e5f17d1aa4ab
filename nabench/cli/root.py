"""The root `nabench` group. Each command lives in a module that pulls in pandas, pyarrow or
scipy; the root imports only the module of the command that runs (`COMMANDS`), so `nabench
--help` and `nabench --version` start in well under a second and `nabench eval` does not pay
for the build, publish or self-knowledge commands' imports."""

from __future__ import annotations

import importlib

import click

from nabench.cli.group import NabenchGroup
from nabench.core.version import __version__

# Command name -> (module, attribute) of the click command; the module is imported on first use.
COMMANDS = {
    "agree": ("nabench.cli.main", "agree"),
    "artifacts": ("nabench.cli.artifacts", "artifacts"),
    "build": ("nabench.cli.main", "build"),
    "eval": ("nabench.cli.evaluation", "eval_cmd"),
    "export": ("nabench.cli.export", "export"),
    "label": ("nabench.cli.main", "label"),
    "list": ("nabench.cli.main", "list_cmd"),
    "llm": ("nabench.cli.llm", "llm"),
    "power": ("nabench.cli.power", "power_cmd"),
    "publish": ("nabench.cli.publish", "publish"),
    "report": ("nabench.cli.evaluation", "report_cmd"),
    "schema": ("nabench.cli.main", "schema"),
    "selfknow": ("nabench.cli.selfknow", "selfknow"),
    "validate": ("nabench.cli.main", "validate"),
}
# What `nabench --help` lists before the commands are imported: each command's own short help
# (tests/core/test_cli_startup.py fails when one drifts from its docstring).
LISTING = {
    "agree": "Agreement of LLM labels with human labels: n, raw agreement, Cohen's kappa (95% CI).",
    "artifacts": "MCQA artifact suite (choices-only, memorization, individual prior, question "
    "inference).",
    "build": "Build a recipe (shipped name or YAML path) into the Hub repository layout.",
    "eval": "Evaluate DATASET (built folder or Hub id) with a model or a reference strategy.",
    "export": "Export a build's tasks for other harnesses (lm-evaluation-harness).",
    "label": "Label a recipe's eligible items for NA-applicability with an LLM (cached, "
    "resumable).",
    "list": "List the shipped recipes, one line each.",
    "llm": "Local model helpers (llama.cpp server, GGUF -> Hugging Face conversion).",
    "power": "Minimum detectable drop of the paired McNemar test the report runs, for planning "
    "a benchmark's size (formula: nabench.stats.power).",
    "publish": "Publish a built folder as a tagged release (the Hub, or --to git:PATH).",
    "report": "Report over eval RESULTS folders: accuracy tables, panel reliability, plots.",
    "schema": "JSON Schemas of nabench's row formats.",
    "selfknow": "Self-knowledge (Line of Duty) tables and metrics.",
    "validate": "Check a built folder, a parquet/JSONL file or a contributions/ folder; exit 1 "
    "on any violation.",
}


class LazyRoot(NabenchGroup):
    """A group whose commands are imported on first use (see the module docstring)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(self.commands) | set(LISTING))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            module, attribute = COMMANDS[cmd_name]
            command = getattr(importlib.import_module(module), attribute)
            self.add_command(command, cmd_name)
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        if set(LISTING) <= set(self.commands):  # already imported: click's own listing
            super().format_commands(ctx, formatter)
            return
        with formatter.section("Commands"):
            formatter.write_dl(sorted(LISTING.items()))


@click.group(cls=LazyRoot)
@click.version_option(__version__, prog_name="nabench")
@click.option("--debug", is_flag=True, help="Show full tracebacks on errors.")
@click.pass_context
def main(ctx: click.Context, debug: bool) -> None:
    """Build, validate, label, evaluate and publish perturbed multiple-choice benchmarks."""
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug
