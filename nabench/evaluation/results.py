"""Eval results as the report reads them: one summary row per (run, config), responses in
long form, and each run's role (a model, or a reference strategy shown as a baseline).

Input: folders written by `nabench eval` (an ``--out`` root holding ``<run>/`` folders,
or one ``<run>/`` folder). Every number is recomputed from the responses parquet files;
the summary JSON files only supply run metadata. A run is named by its folder; when two
given roots hold folders of the same name, each is named ``<root>/<run>``.

Other harnesses' logs (lm-eval ``--log_samples`` output, inspect ``.eval`` logs; see
:mod:`~nabench.evaluation.external`) are read beside them: each is a model run
(``lm-eval__<model>``, ``inspect__<model>``) whose rows are keyed by the nabench item id
the exported task carries, so it pairs with ``original`` like any nabench run.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from nabench.core.arrow import repeated_values
from nabench.core.bounded_read import read_parquet
from nabench.core.errors import NabenchError
from nabench.core.safe_load import load_json_file
from nabench.evaluation.categories import Grouping, UnknownSubjectError, mmlu_category
from nabench.evaluation.external import ExternalRun, is_external, read_external

__all__ = [
    "BASELINE_BACKENDS",
    "NA_KEYED",
    "NON_MMLU",
    "ORIGINAL",
    "RUN_SETTINGS",
    "Results",
    "Role",
    "category_of",
    "item_texts",
    "items_sha256",
    "load_results",
    "subject_labels",
]

ORIGINAL = "original"
NA_KEYED = "na_keyed"
NON_MMLU = "non_mmlu"
BASELINE_BACKENDS = frozenset({"reference"})
Role = Literal["model", "baseline"]
_COLUMNS = ["id", "subject", "score", "correct", "invalid", "confidence", "gold"]
_TEXT_COLUMNS = ("parsed", "raw_output")
# What a summary records of how its run was made, kept per (run, config) for the runs table.
RUN_SETTINGS = ("prompt_version", "dataset", "revision", "split")
_ITEM_TEXT = ("id", "question", "choices", "answer", "na_text")
# What an item asks: two builds' rows of one id must agree on these to be one test item.
_ITEM_CONTENT = ("question", "choices", "answer", "prompt", "target")


NO_SUBJECT = "(none)"


def subject_labels(subjects: pd.Series) -> pd.Series:
    """Subjects as the tables show them, a missing one as ``(none)`` (ARC has none; a source
    row may lack one). The frames hold categoricals, which take no new value by `fillna`."""
    categorical = isinstance(subjects.dtype, pd.CategoricalDtype)
    if categorical and NO_SUBJECT not in subjects.cat.categories:
        subjects = subjects.cat.add_categories([NO_SUBJECT])
    return subjects.fillna(NO_SUBJECT)


def category_of(subject: object, grouping: Grouping = "lm_eval") -> str:
    """MMLU category of a subject, ``non_mmlu`` for anything else (None, ARC, …)."""
    if not isinstance(subject, str):
        return NON_MMLU
    try:
        return mmlu_category(subject, grouping)
    except UnknownSubjectError:
        return NON_MMLU


@dataclass
class Results:
    """Eval outputs: one summary row per (run, config), responses in long form."""

    summaries: pd.DataFrame
    responses: pd.DataFrame

    @property
    def runs(self) -> list[str]:
        return list(dict.fromkeys(self.summaries["run"]))

    @property
    def configs(self) -> list[str]:
        return list(dict.fromkeys(self.summaries["config"]))

    def roles(self) -> dict[str, Role]:
        """Run → ``model`` or ``baseline`` (a reference strategy: oracle, always-a, …)."""
        s = self.summaries.drop_duplicates("run")
        return {
            r: ("baseline" if b in BASELINE_BACKENDS else "model")
            for r, b in zip(s["run"], s["backend"], strict=True)
        }

    @property
    def models(self) -> list[str]:
        """Runs of models (the panel); reference strategies are baselines, not models."""
        return [r for r, role in self.roles().items() if role == "model"]

    @property
    def baselines(self) -> list[str]:
        return [r for r, role in self.roles().items() if role == "baseline"]

    def model_identity(self) -> dict[str, tuple[str, str, str]]:
        """Model run → (backend, model id, weights revision): what makes it another model.
        Settings (prompt, limit, decoding, …) do not: two runs of one model differ in them."""
        s = self.summaries.drop_duplicates("run")
        s = s[s["run"].isin(self.models)]
        rev = s["model_revision"] if "model_revision" in s else pd.Series(None, index=s.index)
        return {
            str(r): (str(b), str(m), "" if v is None or pd.isna(v) else str(v))
            for r, b, m, v in zip(s["run"], s["backend"], s["model"], rev, strict=True)
        }

    def subset(self, runs: Sequence[str]) -> Results:
        """These runs only (in this order of appearance)."""
        keep = set(runs)
        s = self.summaries[self.summaries["run"].isin(keep)].reset_index(drop=True)
        r = self.responses[self.responses["run"].isin(keep)].reset_index(drop=True)
        return Results(s, r)

    def mc_variants(self) -> list[str]:
        """Configs compared with ``original``: multiple-choice (``mc``) configs but it."""
        s = self.summaries
        return [c for c in dict.fromkeys(s.loc[s["kind"] == "mc", "config"]) if c != ORIGINAL]


def _run_dirs(paths: Sequence[str | Path]) -> list[Path]:
    dirs: dict[Path, None] = {}
    for p in map(Path, paths):
        if not p.exists():
            raise NabenchError(f"results folder not found: {p}")
        found = sorted(p.glob("*.summary.json")) or sorted(p.glob("*/*.summary.json"))
        if not found:
            raise NabenchError(f"no *.summary.json results under {p}")
        dirs.update(dict.fromkeys(f.parent.resolve() for f in found))
    return list(dirs)


def _run_names(dirs: Sequence[Path]) -> dict[Path, str]:
    counts = Counter(d.name for d in dirs)
    return {d: d.name if counts[d.name] == 1 else f"{d.parent.name}/{d.name}" for d in dirs}


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0][:200]}" if text else type(exc).__name__


def _read_responses(parquet: Path) -> tuple[pa.Table, set[str]]:
    """A run's responses: every report column present, scores finite numbers in [0, 1], no
    correct / invalid cell missing; anything else is one error line naming the file (never
    Arrow's bare exception)."""
    try:
        names = set(pq.read_schema(parquet).names)
        missing = [c for c in _COLUMNS if c not in names]
        if missing:
            raise NabenchError(
                f"{parquet}: not an eval responses file (missing column(s) {', '.join(missing)})"
            )
        optional = [c for c in ("source_id", *_TEXT_COLUMNS) if c in names]
        # bounded like every table nabench reads: a bomb is refused before it is decoded
        table = read_parquet(parquet, columns=_COLUMNS + optional)
        score = table.column("score").cast(pa.float64())
    except NabenchError:
        raise
    except (OSError, pa.ArrowException, ValueError) as exc:
        raise NabenchError(f"{parquet}: cannot read the responses ({_first_line(exc)})") from None
    bad = pc.sum(pc.invert(pc.fill_null(pc.and_(pc.greater_equal(score, 0.0),
                                                pc.less_equal(score, 1.0)), False)))  # fmt: skip
    if bad.as_py():
        raise NabenchError(
            f"{parquet}: {bad.as_py()} score(s) missing, NaN, infinite or outside [0, 1]; "
            "a report over them would be wrong: rerun `nabench eval` for this config"
        )
    # `nabench eval` decides right and invalid when it scores; a missing cell was counted
    # out of the invalid rate by one table and as valid by the headline
    nulls = [f"{n} {c}" for c in ("correct", "invalid") if (n := table.column(c).null_count)]
    if nulls:
        raise NabenchError(
            f"{parquet}: {', '.join(nulls)} value(s) missing: rerun `nabench eval` for this config"
        )
    return table.set_column(table.schema.get_field_index("score"), "score", score), names


def _build_ids(
    dataset: object, config: str, seen: dict[tuple[str, ...], Any], kind: object
) -> pa.Array | None:
    """The item ids of `config` in the local build a run records (`dataset`), or None when
    that is no local build folder (a Hub id, a build moved away). An individual-prior config
    (`kind` ``prior``) has a row per option (``<item>#k``) and an answer per item: its ids
    are the rows' ``item_id``."""
    if not isinstance(dataset, str):
        return None
    key = ("ids", dataset, config)
    if key not in seen:
        col = "item_id" if kind == "prior" else "id"
        table = _config_table(dataset, config, [col])
        ok = table is not None and (Path(dataset) / "build.json").is_file()
        seen[key] = pc.unique(table.column(col).cast(pa.string())) if ok else None
    return seen[key]


def _config_table(dataset: str, config: str, wanted: Sequence[str]) -> pa.Table | None:
    """The columns among `wanted` of `config` in the local build `dataset`, read bounded like
    every read of a build (a bomb is refused naming its file); None without parquet files."""
    files = sorted(Path(dataset, config).glob("*.parquet"))
    if not files:
        return None
    names = set(pq.read_schema(files[0]).names)
    cols = [c for c in wanted if c in names]
    return pa.concat_tables([read_parquet(f, columns=cols) for f in files])


def _distinct_ids(where: object, ids: pa.ChunkedArray | pa.Array) -> None:
    """One answer per item and config: a second row of an item would be counted twice, or
    (the report pairs each variant row with one original row) dropped without a word."""
    n, first, count = repeated_values(ids)
    if n:
        raise NabenchError(
            f"{where}: {n} item id(s) answered more than once, e.g. "
            f"{first!r} ({count} rows); one row per item and config"
        )


def _check_ids(
    parquet: Path, ids: pa.ChunkedArray, build: pa.Array | None, dataset: object
) -> None:
    """A run's ids are distinct and must be items of the build its summary records: ARC ids
    (or another build's) under an MMLU build's name are results of another dataset."""
    _distinct_ids(parquet, ids)
    if build is None:
        return
    foreign = ids.filter(pc.invert(pc.is_in(ids.cast(pa.string()), value_set=build)))
    if len(foreign):
        raise NabenchError(
            f"{parquet}: {len(foreign)} of {len(ids)} id(s) are not items of the build it "
            f"records ({dataset}), e.g. {foreign[0].as_py()!r}: results of another "
            "dataset or of an earlier build; rerun `nabench eval` on the build"
        )


def _read_config(
    summary_path: Path, run: str, seen: dict[tuple[str, ...], Any]
) -> tuple[dict[str, Any], pa.Table]:
    summary = load_json_file(summary_path)  # one line naming the file if it is not JSON
    if not isinstance(summary, dict) or not isinstance(summary.get("config"), str):
        raise NabenchError(f'{summary_path}: not an eval summary (no "config" name)')
    config = summary["config"]
    parquet = summary_path.with_name(f"{config}.parquet")
    if not parquet.is_file():
        raise NabenchError(f"{summary_path} has no responses file {parquet.name}")
    table, names = _read_responses(parquet)
    dataset = summary.get("dataset")
    build = _build_ids(dataset, config, seen, summary.get("kind"))
    _check_ids(parquet, table.column("id"), build, dataset)
    answered = summary.get("items_sha256")  # absent in runs written before it was kept
    now = answered and build is not None and items_sha256(dataset, config, table["id"], seen)
    if now and now != answered:
        raise NabenchError(
            f"{summary_path}: the build {dataset} was rebuilt after this run answered it: "
            f"{config} holds other items under the run's ids now (another seed or source); "
            "rerun `nabench eval` on it, or report the build the run answered"
        )
    n = table.num_rows
    source_id = table.column("source_id" if "source_id" in names else "id")  # older results
    # the predicted letter (kappa between configs) and the raw output (the item browser);
    # absent in hand-made files
    texts = [
        table.column(c).cast(pa.string()) if c in names else pa.nulls(n, pa.string())
        for c in _TEXT_COLUMNS
    ]
    table = table.select(["id", *_COLUMNS[1:]])
    table = table.add_column(1, "source_id", source_id)
    for name, column in zip(_TEXT_COLUMNS, texts, strict=True):
        table = table.append_column(name, column)
    table = table.append_column("run", pa.array([run] * n, pa.string()))
    table = table.append_column("config", pa.array([config] * n, pa.string()))
    unchecked = None  # why the ids could not be checked against the build: the report says
    if build is None and isinstance(dataset, str):
        here = (Path(dataset) / "build.json").is_file()
        unchecked = f"its build has no {config} config" if here else "its build is not here"
    return {**_summary_row(summary, run, config), "ids_unchecked": unchecked}, table


def _summary_row(summary: dict[str, Any], run: str, config: str) -> dict[str, Any]:
    """What the report keeps of a summary, nabench's or a harness run's."""
    return {
        "run": run,
        "model": summary.get("model", run),
        "mode": summary.get("mode", "generate"),
        "backend": summary.get("backend"),
        "config": config,
        "kind": summary.get("kind", "mc"),
        "invalid_credit": summary.get("invalid_credit"),
        **{k: summary.get(k) for k in RUN_SETTINGS},
        "model_revision": summary.get("model_revision"),
    }


def _read_external(path: Path) -> list[ExternalRun]:
    """A harness log's runs; a malformed log is one error line naming it."""
    try:
        return list(read_external(path))
    except NabenchError:
        raise
    except (OSError, pa.ArrowException, ValueError, KeyError, TypeError, IndexError) as exc:
        raise NabenchError(
            f"{path}: not a readable lm-eval / inspect log ({_first_line(exc)})"
        ) from None


def _external_config(ext: ExternalRun) -> tuple[dict[str, Any], pa.Table]:
    """One harness run of one config in the shape of :func:`_read_config`."""
    df = ext.responses
    ids = df["id"].astype(str)  # NA builds' ids are the source items' ids
    _distinct_ids(f"{ext.run} ({ext.config})", pa.array(ids, pa.string()))
    table = pa.table(
        {
            "id": pa.array(ids, pa.string()),
            "source_id": pa.array(ids, pa.string()),
            "subject": pa.array(df["subject"], pa.string()),
            "score": pa.array(df["score"], pa.float64()),
            "correct": pa.array(df["correct"], pa.bool_()),
            "invalid": pa.array(df["invalid"], pa.bool_()),
            "confidence": pa.array(df["confidence"], pa.float64()),
            "gold": pa.array(df["gold"], pa.string()),
            "parsed": pa.array(df["parsed"], pa.string()),
            "raw_output": pa.array(df["raw_output"], pa.string()),
            "run": pa.array([ext.run] * len(df), pa.string()),
            "config": pa.array([ext.config] * len(df), pa.string()),
        }
    )
    return _summary_row(ext.summary, ext.run, ext.config), table


def load_results(paths: Sequence[str | Path]) -> Results:
    """Read every ``<run>/<config>.summary.json`` + parquet under ``paths``, and the
    lm-eval / inspect logs among them."""
    external = [Path(p) for p in paths if is_external(Path(p))]
    dirs = _run_dirs([p for p in paths if Path(p) not in external])
    names = _run_names(dirs)
    rows: list[dict[str, Any]] = []
    tables: list[pa.Table] = []
    builds: dict[tuple[str, ...], Any] = {}  # what was read of each (dataset, config)
    for d in dirs:
        for f in sorted(d.glob("*.summary.json")):
            row, table = _read_config(f, names[d], builds)
            rows.append(row)
            tables.append(table)
    for path in external:
        for ext in _read_external(path):
            row, table = _external_config(ext)
            rows.append(row)
            tables.append(table)
    _same_items(rows, builds)
    seen = Counter((r["run"], r["config"]) for r in rows)
    twice = sorted(k for k, n in seen.items() if n > 1)
    if twice:
        run, config = twice[0]
        raise NabenchError(f"run {run!r} config {config!r} found twice in the results given")
    if not rows:
        raise NabenchError("no results given")
    responses = _to_frame(tables)
    _same_gold(responses)
    return Results(pd.DataFrame(rows), responses)


def _same_gold(r: pd.DataFrame) -> None:
    """Runs of one config give each item id one gold answer: a harness log (or a run of a
    Hub build) records no build to check its items against, and one whose key differs
    answered another test under the same ids; pooling it would be wrong without a word."""
    golds = r.groupby(["config", "id"], observed=True)["gold"].nunique()
    bad = golds[golds > 1]
    if bad.empty:
        return
    config, item = bad.index[0]
    rows = r[(r["config"] == config) & (r["id"] == item)].drop_duplicates("gold")
    (a, ga), (b, gb) = list(zip(rows["run"], rows["gold"], strict=True))[:2]
    n = int((bad.index.get_level_values(0) == config).sum())
    raise NabenchError(
        f"config {config}: {n} item id(s) have other gold answers in runs {a} and {b} (e.g. "
        f"{item!r}: {ga} vs {gb}): they answered different tests (another build, its options "
        "in another order); report runs of one build"
    )


def _build_items(dataset: str, config: str) -> pd.DataFrame:
    """What a local build's `config` asks per row id (`content`: question, options, key; an
    artifact build's prompt and target, one string to compare) and each row's `item` (an
    individual-prior config has a row per option, ``<item>#k``, of item ``item_id``)."""
    table = _config_table(dataset, config, ["id", "item_id", *_ITEM_CONTENT])
    if table is None:  # not reached: only configs whose build ids were read are compared
        raise NabenchError(f"{dataset}: config {config} has no parquet files")
    df = table.to_pandas().set_index("id")
    df.index = df.index.astype(str)
    item = df.pop("item_id").astype(str) if "item_id" in df else df.index.to_series()
    content = df.map(lambda v: repr(v.tolist() if hasattr(v, "tolist") else v))
    return pd.DataFrame({"item": item, "content": content.agg("\x1f".join, axis=1)})


def _items_of(dataset: str, config: str, seen: dict[tuple[str, ...], Any]) -> pd.DataFrame:
    """`_build_items`, read once per (build, config) of a report (the answered-items check
    and the same-items check both ask)."""
    if ("items", dataset, config) not in seen:
        seen["items", dataset, config] = _build_items(dataset, config)
    return seen["items", dataset, config]


def items_sha256(
    dataset: object, config: str, ids: Any, seen: dict[tuple[str, ...], Any] | None = None
) -> str | None:
    """One hash of what the local build `dataset` asks in `config` for the items `ids` (all
    their rows): each summary keeps the one its run answered, and a report refuses a build
    rebuilt in place since with other items under those ids (another --limit keeps them
    equal). None for a Hub id or a folder that is no build."""
    if not isinstance(dataset, str) or not (Path(dataset) / "build.json").is_file():
        return None
    rows = _items_of(dataset, config, {} if seen is None else seen)
    wanted = {str(v) for v in (ids.to_pylist() if isinstance(ids, pa.ChunkedArray) else ids)}
    mine = rows[rows["item"].isin(wanted)].sort_index()
    return hashlib.sha256("\n".join(mine.index + "\x1e" + mine["content"]).encode()).hexdigest()


def _same_items(rows: Sequence[dict[str, Any]], seen: dict[tuple[str, ...], Any]) -> None:
    """Runs of one config recording different local builds must have answered the same items
    under the same ids: builds with other seeds or texts differ (another distractor replaced),
    and pooling their runs would make KR-20, D, the means over models and the item browser
    describe a test nobody took. Builds whose shared items are equal (another --limit or
    --sample of one recipe) pass."""
    builds: dict[str, dict[str, list[str]]] = {}  # config -> build -> its runs
    for r in rows:
        dataset = r.get("dataset")
        # nabench's runs whose build is here (a harness run's row has no ids_unchecked)
        if isinstance(dataset, str) and "ids_unchecked" in r and r["ids_unchecked"] is None:
            builds.setdefault(r["config"], {}).setdefault(dataset, []).append(r["run"])
    for config, by_build in builds.items():
        if len(by_build) < 2:
            continue
        first, *others = by_build
        ref = _items_of(first, config, seen)["content"]
        for other in others:
            items = _items_of(other, config, seen)["content"]
            shared = ref.index.intersection(items.index)
            differ = shared[ref.loc[shared].to_numpy() != items.loc[shared].to_numpy()]
            if len(differ):
                raise NabenchError(
                    f"config {config}: builds {first} (run {by_build[first][0]}) and {other} "
                    f"(run {by_build[other][0]}) hold other items under the same ids "
                    f"({len(differ)} of {len(shared)} shared, e.g. {differ[0]!r}): their runs "
                    "answered different tests; report the runs of one build"
                )


def _to_frame(tables: Sequence[pa.Table]) -> pd.DataFrame:
    """One frame; key columns dictionary-encoded in Arrow, so pandas gets categoricals:
    grouping, pairing and pivoting hash each distinct string once, not once per row."""
    # permissive: pandas-written parquet holds large_string, harness logs' tables string
    table = pa.concat_tables(tables, promote_options="permissive")
    for name in ("id", "source_id", "subject", "gold", "run", "config"):
        i = table.schema.get_field_index(name)
        column = table.column(name)
        if pa.types.is_null(column.type):  # ARC has no subjects: Arrow cannot unify null dicts
            column = column.cast(pa.string())
        table = table.set_column(i, name, pc.dictionary_encode(column))
    table = table.unify_dictionaries().combine_chunks()
    front = ["run", "config"]
    return table.to_pandas().loc[:, [*front, *(c for c in table.column_names if c not in front)]]


def item_texts(summaries: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Config -> its items' text (``id``, ``question``, ``choices``, ``answer``, ``na_text``)
    from the built dataset a run of it records (``dataset``), when that is a local folder:
    what the item browser shows beside the answers. Harness runs record no dataset; a
    nabench run of the same config supplies it."""
    texts: dict[str, pd.DataFrame] = {}
    for config, dataset in zip(summaries["config"], summaries["dataset"], strict=True):
        if config in texts or not isinstance(dataset, str):
            continue
        table = _config_table(dataset, config, _ITEM_TEXT)
        if table is not None:
            texts[config] = table.to_pandas()
    return texts
