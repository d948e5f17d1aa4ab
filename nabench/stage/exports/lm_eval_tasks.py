"""lm-evaluation-harness tasks for a build: one task per config, a group per build.

Every multiple-choice config (columns ``question``, ``choices``, ``answer``) gets

* ``<group>_<config>``: ``output_type: multiple_choice`` in the MMLU layout
  (``{{question.strip()}}\\nA. …\\nAnswer:``), ``doc_to_choice`` built from the row's own
  option count (5-option All-of-the-above rows get ``E``), ``doc_to_target: answer``,
  ``acc``;
* ``<group>_<config>_gen``: its generative twin (``generate_until`` up to a blank line, the
  first standalone option letter picked by a ``regex`` filter, ``exact_match``) for
  chat-only APIs that return no log-probabilities.

``<group>`` lists the loglik tasks, ``<group>_gen`` the generative ones. Each task's
``metadata`` carries the recipe version and the nabench build and config, which is how
:mod:`nabench.evaluation.external` maps lm-eval's results back to nabench configs.

Where the data comes from is a :class:`DataSource`: a local build is read from its parquet
files (``dataset_path: parquet`` + ``data_files``): the tasks inside a build name them relative
to the build folder (no path of the building machine is written into a build; lm-eval runs
from that folder), ``nabench export lm-eval`` by absolute path; a published build by repo id
pinned to a revision (``dataset_kwargs.revision``, the release tag).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from nabench.core.errors import NabenchError
from nabench.schemas.manifest import Manifest

__all__ = [
    "LM_EVAL_DIR",
    "MC_COLUMNS",
    "HubData",
    "LmEvalSpec",
    "LocalData",
    "lm_eval_card_section",
    "lm_eval_files",
]

LM_EVAL_DIR = "lm_eval"
TEMPLATE = "_nabench_template_yaml"
GEN_TEMPLATE = "_nabench_gen_template_yaml"
GEN_SUFFIX = "_gen"
# Artifact prompt configs carry the item fields too but are raw prompts; `excluded` is
# the quarantine.
NOT_TASK_COLUMNS = frozenset({"prompt", "reason", "reasons"})
# Columns a config needs to be an lm-eval multiple-choice task.
MC_COLUMNS = frozenset({"question", "choices", "answer"})
_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_NAME = re.compile(r"[^A-Za-z0-9]+")

# The MMLU default template's layout, with the option lines rendered for any count.
DOC_TO_TEXT = (
    "{{question.strip()}}\n"
    "{% for c in choices %}{{ '" + _LETTERS + "'[loop.index0] }}. {{ c }}\n{% endfor %}"
    "Answer:"
)
DOC_TO_CHOICE = "{{ '" + _LETTERS + "'[:choices|length]|list }}"
GEN_TARGET = "{{ '" + _LETTERS + "'[answer] }}"
# The first standalone capital letter followed by ".", ")", ":" or the end of the text:
# "B", " B. text", "(B)", "The answer is B" -> "B"; "A cat", "I think" do not match.
GEN_REGEX = r"\b([A-Z])\b(?=[.):\n]|\s*$)"


@dataclass(frozen=True)
class LocalData:
    """A build on disk: tasks read its parquet files by absolute path, or relative to the
    build folder (`relative`, the tasks written into the build itself)."""

    root: Path
    relative: bool = False


@dataclass(frozen=True)
class HubData:
    """A published build: tasks read ``repo_id`` at ``revision`` (the release tag)."""

    repo_id: str
    revision: str


DataSource = LocalData | HubData


@dataclass(frozen=True)
class LmEvalSpec:
    """What the task files are made from: the build's name, version and its mc configs."""

    build: str
    version: str
    configs: tuple[tuple[str, tuple[str, ...]], ...]  # (config, splits)

    @property
    def group(self) -> str:
        return "nabench_" + _NAME.sub("_", self.build).strip("_").lower()

    def task(self, config: str) -> str:
        return f"{self.group}_{config}"

    def to_json(self) -> dict[str, Any]:
        tasks = {
            c: {"task": self.task(c), "generative": self.task(c) + GEN_SUFFIX}
            for c, _ in self.configs
        }
        return {
            "dir": LM_EVAL_DIR,
            "group": self.group,
            "generative_group": self.group + GEN_SUFFIX,
            "version": self.version,
            "configs": {c: list(s) for c, s in self.configs},
            "tasks": tasks,
        }

    @classmethod
    def from_tables(
        cls, build: str, version: str, tables: Iterable[tuple[str, str, Sequence[str]]]
    ) -> LmEvalSpec | None:
        """From (config, split, column names) of the staged tables; None if none is mc."""
        configs: dict[str, list[str]] = {}
        for config, split, columns in tables:
            if set(columns) >= MC_COLUMNS and not set(columns) & NOT_TASK_COLUMNS:
                configs.setdefault(config, []).append(split)
        if not configs:
            return None
        return cls(build, version, tuple((c, tuple(s)) for c, s in configs.items()))

    @classmethod
    def from_manifest(cls, manifest: Manifest) -> LmEvalSpec:
        """From a build.json written by a build that staged lm-eval tasks."""
        section, recipe = manifest.lm_eval, manifest.recipe
        if not isinstance(section, Mapping) or not section.get("configs"):
            raise NabenchError(
                "the build's build.json has no lm_eval section (no multiple-choice configs, "
                "or built before nabench wrote lm-eval tasks); rebuild it"
            )
        return cls(
            str(recipe.get("name") or section["group"]),
            str(section.get("version") or recipe.get("version") or "0"),
            _recorded_configs(section["configs"], manifest.counts),
        )


def _recorded_configs(
    configs: object, counts: Mapping[str, Mapping[str, int]]
) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """build.json's `lm_eval.configs` ({config: [split, ...]}), each a config and split the
    build holds (its `counts`): anything else is one error line, never tasks over a split
    name read letter by letter or over a config that is not there."""
    if not isinstance(configs, Mapping):
        raise NabenchError("build.json: lm_eval.configs is not a mapping of config -> splits")
    out = []
    for config, splits in configs.items():
        if (
            not isinstance(splits, list)
            or not splits
            or not all(isinstance(s, str) for s in splits)
        ):
            raise NabenchError(f"build.json: lm_eval.configs.{config} is not a list of splits")
        missing = [s for s in splits if s not in counts.get(str(config), {})]
        if missing:
            raise NabenchError(
                f"build.json: lm_eval.configs.{config} names {', '.join(missing)}, "
                "not a config and split the build's counts hold"
            )
        out.append((str(config), tuple(splits)))
    return tuple(out)


def _test_split(splits: Sequence[str]) -> str:
    return "test" if "test" in splits else splits[0]


def _dataset_fields(source: DataSource, config: str, splits: Sequence[str]) -> dict[str, Any]:
    if isinstance(source, HubData):
        return {
            "dataset_path": source.repo_id,
            "dataset_name": config,
            "dataset_kwargs": {"revision": source.revision},
        }
    root = Path() if source.relative else Path(source.root).resolve()
    files = {s: (root / config / f"{s}-00000-of-00001.parquet").as_posix() for s in splits}
    return {"dataset_path": "parquet", "dataset_kwargs": {"data_files": files}}


def _template(version: str, generative: bool) -> dict[str, Any]:
    common = {"output_type": "multiple_choice", "doc_to_text": DOC_TO_TEXT}
    if not generative:
        return {
            **common,
            "doc_to_choice": DOC_TO_CHOICE,
            "doc_to_target": "answer",
            "metric_list": [{"metric": "acc", "aggregation": "mean", "higher_is_better": True}],
            "metadata": {"version": version},
        }
    return {
        **common,
        "output_type": "generate_until",
        "doc_to_target": GEN_TARGET,
        "generation_kwargs": {"until": ["\n\n"], "max_gen_toks": 32, "do_sample": False},
        "filter_list": [
            {
                "name": "letter",
                "filter": [
                    {"function": "regex", "regex_pattern": GEN_REGEX, "fallback": "[invalid]"},
                    {"function": "take_first"},
                ],
            }
        ],
        "metric_list": [{"metric": "exact_match", "aggregation": "mean", "higher_is_better": True}],
        "metadata": {"version": version},
    }


class _Dumper(yaml.SafeDumper):
    """Multi-line strings as one double-quoted line with ``\\n``, as lm-eval's own YAML."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = '"' if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def _dump(value: Mapping[str, Any]) -> bytes:
    text = yaml.dump(dict(value), Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=1000)
    return text.encode("utf-8")


def _task(
    spec: LmEvalSpec, source: DataSource, config: str, splits: Sequence[str], generative: bool
) -> dict[str, Any]:
    name = spec.task(config) + (GEN_SUFFIX if generative else "")
    return {
        "include": GEN_TEMPLATE if generative else TEMPLATE,
        "task": name,
        "task_alias": config + (" (generative)" if generative else ""),
        **_dataset_fields(source, config, splits),
        "test_split": _test_split(splits),
        "metadata": {
            "version": spec.version,
            "nabench_build": spec.build,
            "nabench_config": config,
            "nabench_format": "generate_until" if generative else "multiple_choice",
        },
    }


def lm_eval_files(spec: LmEvalSpec, source: DataSource) -> dict[str, bytes]:
    """{path under the build folder: YAML bytes} of every task, template and group."""
    d = LM_EVAL_DIR
    files = {
        f"{d}/{TEMPLATE}": _dump(_template(spec.version, generative=False)),
        f"{d}/{GEN_TEMPLATE}": _dump(_template(spec.version, generative=True)),
    }
    for generative in (False, True):
        suffix = GEN_SUFFIX if generative else ""
        for config, splits in spec.configs:
            task = _task(spec, source, config, splits, generative)
            files[f"{d}/{task['task']}.yaml"] = _dump(task)
        group = {
            "group": spec.group + suffix,
            "task": [spec.task(c) + suffix for c, _ in spec.configs],
            "metadata": {"version": spec.version, "nabench_build": spec.build},
        }
        files[f"{d}/_{spec.group}{suffix}.yaml"] = _dump(group)
    return dict(sorted(files.items()))


def lm_eval_card_section(spec: LmEvalSpec) -> str:
    """The card's Markdown section on running the build's lm-eval tasks."""
    tasks = ", ".join(f"`{spec.task(c)}`" for c, _ in spec.configs)
    return (
        "\n## Evaluate with lm-evaluation-harness or inspect_ai\n\n"
        f"`{LM_EVAL_DIR}/` holds lm-eval tasks: the group `{spec.group}` ({tasks}; "
        f"multiple_choice, MMLU layout, `acc`) and `{spec.group}{GEN_SUFFIX}`, their "
        "generative twins (`generate_until`, regex letter filter) for chat-only APIs. "
        "In a local copy they read the parquet files relative to the dataset folder, so run "
        "lm-eval from there (`nabench export lm-eval` writes tasks that run from anywhere); "
        "the published release's tasks read this repository at its release tag.\n\n"
        "```bash\n"
        f"lm-eval run --include_path {LM_EVAL_DIR} --tasks {spec.group} --model hf "
        "--model_args pretrained=MODEL --log_samples --output_path results/lm-eval\n"
        "inspect eval nabench/mcq -T dataset=THIS_DATASET -T config="
        f"{spec.configs[0][0]} --model MODEL\n"
        "```\n\n"
        "`nabench report` reads both harnesses' logs beside its own results.\n"
    )
