"""The model flags every model-calling command shares (label, eval, selfknow, artifacts).

    --backend NAME  --model M  --base-url URL  --concurrency N  --option KEY=VALUE  --cache PATH

and the run flags (`run_options`): --max-tokens, --max-attempts, --chunk-size, --quiet.

The command receives them as one `ModelFlags`: a `ModelSpec` (the same model description a
recipe's model section is) and the cache, so a flag means the same thing in every command.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click
import yaml

from nabench.core.errors import NabenchError
from nabench.llm import ENGINES
from nabench.llm.options import ModelFlags
from nabench.schemas.model import ModelSpec
from nabench.schemas.protocol import protocols

BACKENDS = ("local", "openai", "vllm")
F = TypeVar("F", bound=Callable[..., Any])

MODEL_HELP = "local: GGUF path [SmolLM2-135M-Instruct]; openai: served model name; vllm: HF dir/id."
CACHE_HELP = "Response cache (SQLite) [$NABENCH_CACHE or ~/.cache/nabench/responses.sqlite]."


def _quiet_libraries(ctx: click.Context, _param: click.Parameter, quiet: bool) -> bool:
    """`--quiet` silences the bars of the libraries a command drives too (`datasets`'
    "Generating test split"), not only nabench's own, for the command's lifetime."""
    if quiet:
        import datasets

        if datasets.is_progress_bar_enabled():
            datasets.disable_progress_bars()
            ctx.call_on_close(datasets.enable_progress_bars)
    return quiet


QUIET = click.option("--quiet", is_flag=True, callback=_quiet_libraries, help="No progress bars.")


def parse_backend_options(items: Sequence[str]) -> dict[str, Any]:
    """`--option KEY=VALUE` pairs as constructor keywords; values are read as YAML scalars
    (`n_threads=1` is an int, `enforce_eager=true` a bool), `-` in keys becomes `_`."""
    options: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise NabenchError(f"bad --option {item!r}: expected KEY=VALUE")
        try:
            options[key.strip().replace("-", "_")] = yaml.safe_load(value)
        except yaml.YAMLError as exc:
            raise NabenchError(f"bad --option {item!r}: {exc}") from exc
    return options


def _flags(backends: Sequence[str], model_help: str, cache_help: str) -> list[Any]:
    """The model flags every model command takes, as click options (a table)."""
    return [
        click.option(
            "--backend",
            type=click.Choice(list(backends)),
            default="local",
            show_default=True,
            help="Model backend (nabench.llm).",
        ),
        click.option("--model", default=None, help=model_help),
        click.option(
            "--base-url", default=None, help="OpenAI-compatible server URL [$OPENAI_BASE_URL]."
        ),
        click.option(
            "--concurrency",
            type=click.IntRange(min=1),
            default=8,
            show_default=True,
            help="Requests in flight (openai backend).",
        ),
        click.option(
            "--option",
            "backend_options",
            multiple=True,
            metavar="KEY=VALUE",
            help="Extra backend constructor option, value read as YAML (e.g. n_threads=1, "
            "tensor_parallel_size=2). Repeatable. local/vllm record a content fingerprint "
            "of the weights on disk as the model revision; a server's weights cannot be "
            "fingerprinted: declare them with revision=COMMIT (openai; vllm: a Hub model's "
            "revision), else none is recorded.",
        ),
        click.option("--cache", type=click.Path(path_type=Path, dir_okay=False), help=cache_help),
        click.option(
            "--engine",
            type=click.Choice(sorted(ENGINES)),
            default="local",
            show_default=True,
            help="How requests are dispatched: local (in-process) or ray (Ray Data LLM; "
            "settings as --option ray.KEY=VALUE, e.g. ray.endpoints=[URL,URL], ray.qps=4).",
        ),
        click.option(
            "--ray-address",
            default=None,
            help="Ray cluster address for --engine ray (default: start a local cluster).",
        ),
    ]


def model_options(
    *,
    backends: Sequence[str] = BACKENDS,
    model_help: str = MODEL_HELP,
    cache_help: str = CACHE_HELP,
) -> Callable[[F], F]:
    """Decorator adding the shared model flags; the command receives them as one
    `model_flags: ModelFlags` keyword (`--option` values already parsed)."""
    flags = _flags(backends, model_help, cache_help)

    def decorate(func: F) -> F:
        @functools.wraps(func)  # keeps the click parameters declared below this decorator
        def command(
            *args: Any,
            backend: str,
            model: str | None,
            base_url: str | None,
            concurrency: int,
            backend_options: tuple[str, ...],
            cache: Path | None,
            engine: str,
            ray_address: str | None,
            **kwargs: Any,
        ) -> Any:
            parsed = parse_backend_options(backend_options)
            if ray_address is not None:
                if engine != "ray":
                    raise NabenchError("--ray-address applies to --engine ray only")
                parsed["ray.address"] = ray_address
            spec = ModelSpec(
                backend=backend,
                model=model,
                base_url=base_url,
                concurrency=concurrency,
                options=parsed,
                engine=engine,
            )
            model_flags = ModelFlags(spec, cache)
            return func(*args, model_flags=model_flags, **kwargs)

        return _stack(flags)(command)  # type: ignore[return-value]

    return decorate


def run_options(
    *, max_tokens: int | None, chunk_size: int | None = None, max_attempts: bool = True
) -> Callable[[F], F]:
    """Decorator adding `--max-tokens`, `--max-attempts` (JSON retries, when the command
    asks for JSON), `--chunk-size` (when it caches in chunks) and `--quiet`; each command
    picks the defaults that suit its prompts (``max_tokens=None``: the command's protocol
    decides)."""
    flags = [
        click.option(
            "--max-tokens",
            type=click.IntRange(min=1),
            default=max_tokens,
            show_default=max_tokens is not None,
            help="Generation budget per request."
            + ("" if max_tokens is not None else " [the build's protocol's]"),
        )
    ]
    if max_attempts:
        flags.append(
            click.option(
                "--max-attempts",
                type=click.IntRange(min=1),
                default=3,
                show_default=True,
                help="Tries per request until the output is valid JSON under its schema.",
            )
        )
    if chunk_size is not None:
        flags.append(
            click.option(
                "--chunk-size",
                type=click.IntRange(min=1),
                default=chunk_size,
                show_default=True,
                help="Requests per cache commit (a killed run loses at most one chunk).",
            )
        )
    flags.append(QUIET)
    return _stack(flags)


def _stack(flags: Sequence[Callable[[Any], Any]]) -> Callable[[F], F]:
    def decorate(func: F) -> F:
        for flag in reversed(flags):
            func = flag(func)
        return func

    return decorate


class FiniteRange(click.FloatRange):
    """click's FloatRange, refusing NaN and infinity (a NaN passes every range comparison)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


class ProtocolChoice(click.ParamType):
    """`--protocol NAME`: a preset of `protocols.yaml` that applies to `stage` (build, eval,
    report); every command validates it here, the same way. The registry is read on first
    use, not when the CLI is imported (`nabench --help` stays fast)."""

    name = "protocol"

    def __init__(self, stage: str) -> None:
        self.stage = stage

    def _names(self) -> list[str]:
        return sorted(n for n, p in protocols().items() if self.stage in p.applies_to)

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return "[" + "|".join(self._names()) + "]"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        registry = protocols()
        if value not in registry:
            self.fail(f"unknown protocol {value!r} (known: {', '.join(sorted(registry))})")
        applies = registry[value].applies_to
        if self.stage not in applies:
            self.fail(f"protocol {value!r} applies to {', '.join(applies)}, not {self.stage}")
        return str(value)


def protocol_option(stage: str, help_text: str) -> Callable[[F], F]:
    """The `--protocol` option of `build`, `eval` and `report` (see `ProtocolChoice`)."""
    return click.option("--protocol", type=ProtocolChoice(stage), help=help_text)
