"""Bounded parsing of files nabench does not control: recipes, contributions, guideline front
matter, card front matter.

YAML is composed into nodes first and walked with the aliases expanded, so a billion-laughs
file (nine nested aliases, 342 bytes, 387 million nodes) is refused after `max_nodes` visits
instead of being expanded by whatever reads the data later; recursive aliases are refused by
the same walk, and so is a mapping key given twice (YAML would keep the last value
silently). JSON is parsed with integer literals capped at `max_int_digits` (Python's own
cap raises a bare ValueError far too late) and nesting capped at `max_depth`. Every failure is
an `UnsafeInput` naming the file, on one line.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from nabench.core.errors import NabenchError

# libyaml's C parser when present (the same one `yaml.CSafeLoader` uses elsewhere).
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_INT_TAG = "tag:yaml.org,2002:int"


class UnsafeInput(NabenchError):
    """A file that cannot be parsed safely; the message names the file (`where`)."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"{where}: {problem}")
        self.where = where
        self.problem = problem


@dataclass(frozen=True)
class ParseLimits:
    """Caps for one document. The defaults fit every shipped recipe and card many times over."""

    max_bytes: int = 2 * 2**20
    max_nodes: int = 200_000  # YAML nodes after alias expansion / JSON values
    max_depth: int = 64
    max_int_digits: int = 40


DEFAULT_LIMITS = ParseLimits()


def read_text(path: Path, limits: ParseLimits = DEFAULT_LIMITS) -> str:
    """A file's text: size checked before reading, UTF-8 decoded strictly."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > limits.max_bytes:
            raise UnsafeInput(str(path), f"{size} bytes exceeds the limit of {limits.max_bytes}")
        data = path.read_bytes()
    except OSError as exc:
        raise UnsafeInput(
            str(path), f"cannot read ({exc.strerror or type(exc).__name__})"
        ) from None
    return decode_utf8(data, str(path))


def decode_utf8(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UnsafeInput(where, f"not valid UTF-8 (byte {exc.start})") from None


def load_yaml(text: str, where: str, limits: ParseLimits = DEFAULT_LIMITS) -> Any:
    """One YAML document as Python data (safe tags only), refusing bombs and deep nesting."""
    _check_size(text, where, limits)
    loader = _LOADER(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_yaml_nodes(node, where, limits)
        return loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise UnsafeInput(where, f"invalid YAML{at}: {exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise UnsafeInput(where, f"invalid YAML: {exc}") from None
    finally:
        loader.dispose()


def load_yaml_file(path: Path, limits: ParseLimits = DEFAULT_LIMITS) -> Any:
    return load_yaml(read_text(path, limits), str(path), limits)


def _check_yaml_nodes(root: yaml.Node, where: str, limits: ParseLimits) -> None:
    """Walk the node graph as the data will be read (every alias expanded), within limits."""
    stack: list[tuple[yaml.Node, int]] = [(root, 1)]
    visits = 0
    while stack:
        node, depth = stack.pop()
        visits += 1
        if visits > limits.max_nodes:
            raise UnsafeInput(
                where,
                f"more than {limits.max_nodes} values once aliases are expanded "
                "(a YAML alias bomb or a recursive alias?)",
            )
        if depth > limits.max_depth:
            raise UnsafeInput(
                where, f"nested deeper than {limits.max_depth} levels (or a recursive alias)"
            )
        if isinstance(node, yaml.ScalarNode):
            if node.tag == _INT_TAG and len(node.value) > limits.max_int_digits:
                raise UnsafeInput(
                    where,
                    f"an integer of {len(node.value)} digits "
                    f"(limit {limits.max_int_digits}) at line {node.start_mark.line + 1}",
                )
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((child, depth + 1) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            _check_unique_keys(node, where)
            for key, value in node.value:
                stack.append((key, depth + 1))
                stack.append((value, depth + 1))


def _check_unique_keys(node: yaml.MappingNode, where: str) -> None:
    """A key given twice would silently take its last value: refused, naming its lines."""
    seen: dict[tuple[str, str], int] = {}
    for key, _ in node.value:
        if not isinstance(key, yaml.ScalarNode) or key.value == "<<":  # merge keys may repeat
            continue
        line = key.start_mark.line + 1
        first = seen.get((key.tag, key.value))
        if first is not None:
            raise UnsafeInput(where, f"key {key.value!r} is given twice (lines {first} and {line})")
        seen[(key.tag, key.value)] = line


def _check_size(text: str, where: str, limits: ParseLimits) -> None:
    if len(text) > limits.max_bytes:
        raise UnsafeInput(where, f"{len(text)} characters exceeds the limit of {limits.max_bytes}")


class _IntTooLong(ValueError):
    pass


def load_json(text: str, where: str, limits: ParseLimits = DEFAULT_LIMITS) -> Any:
    """One JSON document with integer size, nesting and size bounded; NaN/Infinity refused."""
    _check_size(text, where, limits)

    def parse_int(digits: str) -> int:
        if len(digits.lstrip("-")) > limits.max_int_digits:
            raise _IntTooLong(len(digits.lstrip("-")))
        return int(digits)

    def parse_constant(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    try:
        value = json.loads(text, parse_int=parse_int, parse_constant=parse_constant)
    except _IntTooLong as exc:
        raise UnsafeInput(
            where, f"an integer of {exc.args[0]} digits (limit {limits.max_int_digits})"
        ) from None
    except RecursionError:
        raise UnsafeInput(where, f"nested deeper than {limits.max_depth} levels") from None
    except json.JSONDecodeError as exc:
        raise UnsafeInput(
            where, f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    except ValueError as exc:
        raise UnsafeInput(where, f"invalid JSON: {exc}") from None
    _check_json_depth(value, where, limits)
    return value


def load_json_file(path: Path, limits: ParseLimits = DEFAULT_LIMITS) -> Any:
    return load_json(read_text(path, limits), str(path), limits)


def _check_json_depth(root: Any, where: str, limits: ParseLimits) -> None:
    stack: list[tuple[Any, int]] = [(root, 1)]
    visits = 0
    while stack:
        value, depth = stack.pop()
        visits += 1
        if depth > limits.max_depth:
            raise UnsafeInput(where, f"nested deeper than {limits.max_depth} levels")
        if visits > limits.max_nodes:
            raise UnsafeInput(where, f"more than {limits.max_nodes} values")
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)


__all__ = [
    "DEFAULT_LIMITS",
    "ParseLimits",
    "UnsafeInput",
    "decode_utf8",
    "load_json",
    "load_json_file",
    "load_yaml",
    "load_yaml_file",
    "read_text",
]
