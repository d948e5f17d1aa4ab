"""The Arrow schema and the pandera schema of a row kind, derived from its pydantic model.

The pydantic model is the one definition of a row (field order = column order). Mapping:

* ``str`` -> ``string``, ``int`` -> ``int64``, ``bool`` -> ``bool``, ``float`` -> ``double``,
  ``list[str]`` -> ``list<string>``; a ``Literal`` of strings is a string column; ``X | None``
  is the same column, nullable in pandera. Arrow fields stay nullable (as every nabench table
  has always been written), so the parquet bytes do not change.
* Field constraints become pandera checks: ``ge``/``gt``/``le``/``lt`` on numbers,
  ``min_length``/``max_length``/``pattern`` on strings, ``min_length`` on lists (whose elements
  must be strings), ``Literal`` values as ``isin``.
* ``unique`` (a class variable naming columns) becomes pandera's ``unique=True``.
* ``row_rules`` (a class variable of :class:`RowRule`) are checked by the model and as
  pandera frame checks.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Union, get_args, get_origin

import annotated_types as at
import numpy as np
import pandas as pd
import pyarrow as pa
from pydantic import BaseModel, ConfigDict, model_validator
from pydantic.fields import FieldInfo

if TYPE_CHECKING:
    import pandera.pandas as pdx


@dataclass(frozen=True)
class RowRule:
    """A cross-column rule of one row: `holds(row)` on a dict of the row's values (None = null)."""

    error: str
    holds: Callable[[Mapping[str, Any]], bool]


class RowModel(BaseModel):
    """Base of row models with `row_rules` (checked here and in the derived pandera schema)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    row_rules: ClassVar[tuple[RowRule, ...]] = ()
    unique: ClassVar[tuple[str, ...]] = ()  # columns whose values never repeat in a table

    @model_validator(mode="after")
    def _row_rules(self) -> RowModel:
        row = self.__dict__
        for rule in self.row_rules:
            if not rule.holds(row):
                raise ValueError(rule.error)
        return self


@dataclass(frozen=True)
class FieldType:
    """The column behind one model field: base Python type, nullable, Literal values."""

    base: type
    nullable: bool
    values: tuple[str, ...] | None = None  # a Literal's allowed values
    null_elements: bool = False  # list[str | None]: a list may hold nulls (malformed source)


def field_type(annotation: Any) -> FieldType:
    """Unwrap ``X | None`` and ``Literal[...]`` into the column type."""
    nullable = False
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        if len(args) != 1:
            raise TypeError(f"unsupported union {annotation!r}")
        nullable, annotation = True, args[0]
        origin = get_origin(annotation)
    if origin is Literal:
        values = get_args(annotation)
        if not all(isinstance(v, str) for v in values):
            raise TypeError(f"only string Literals are columns: {annotation!r}")
        return FieldType(str, nullable, tuple(values))
    if origin is list:
        (inner,) = get_args(annotation)
        null_elements = inner == (str | None)
        if inner is not str and not null_elements:
            raise TypeError(f"only list[str] is a list column: {annotation!r}")
        return FieldType(list, nullable, null_elements=null_elements)
    if annotation not in _ARROW:
        raise TypeError(f"no column type for {annotation!r}")
    return FieldType(annotation, nullable)


_ARROW: dict[type, pa.DataType] = {
    str: pa.string(),
    int: pa.int64(),
    bool: pa.bool_(),
    float: pa.float64(),
    list: pa.list_(pa.string()),
}


# Croissant (schema.org) data type of each column type above; a list column is an array of
# its element type. `croissant_type` maps the Arrow type a table was written with.
_CROISSANT: dict[type, str] = {
    str: "https://schema.org/Text",  # `sc:Text` in the written JSON-LD
    int: "https://schema.org/Integer",
    bool: "https://schema.org/Boolean",
    float: "https://schema.org/Float",
}


def model_croissant_type(annotation: Any) -> tuple[str, bool]:
    """(Croissant data type URI, is_array) of a row-model field's annotation."""
    ft = field_type(annotation)
    return (_CROISSANT[str], True) if ft.base is list else (_CROISSANT[ft.base], False)


def croissant_type(arrow_type: pa.DataType) -> tuple[str, bool]:
    """(Croissant data type URI, is_array) of an Arrow column type; TypeError if none."""
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        inner, nested = croissant_type(arrow_type.value_type)
        if nested:
            raise TypeError(f"no Croissant type for nested list {arrow_type}")
        return inner, True
    for base, arrow in _ARROW.items():
        if base is not list and arrow_type == arrow:
            return _CROISSANT[base], False
    if pa.types.is_integer(arrow_type):
        return _CROISSANT[int], False
    if pa.types.is_floating(arrow_type):
        return _CROISSANT[float], False
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return _CROISSANT[str], False
    raise TypeError(f"no Croissant type for Arrow type {arrow_type}")


def arrow_schema(model: type[BaseModel]) -> pa.Schema:
    """The Arrow schema of a row model: one nullable field per model field, in order."""
    return pa.schema(
        [(name, _ARROW[field_type(f.annotation).base]) for name, f in model.model_fields.items()]
    )


def _min_len(info: FieldInfo) -> int:
    return max([m.min_length for m in info.metadata if isinstance(m, at.MinLen)], default=0)


def is_str_list(min_length: int = 0, null_elements: bool = False) -> Callable[[object], bool]:
    """A list (or numpy array, as Arrow lists arrive in pandas) of at least `min_length` strings
    (or nulls, with `null_elements`)."""

    def check(values: object) -> bool:
        return (
            isinstance(values, list | tuple | np.ndarray)
            and len(values) >= min_length
            and all(isinstance(v, str) or (null_elements and v is None) for v in values)
        )

    return check


def _checks(info: FieldInfo, ft: FieldType) -> list[pdx.Check]:
    import pandera.pandas as pdx

    out: list[pdx.Check] = []
    if ft.base is list:
        n = _min_len(info)
        check = is_str_list(n, ft.null_elements)
        return [pdx.Check(check, element_wise=True, name="str_list", error=f">= {n} strings")]
    if ft.values is not None:
        out.append(pdx.Check.isin(list(ft.values)))
    for m in info.metadata:
        if isinstance(m, at.Ge):
            out.append(pdx.Check.ge(m.ge))
        elif isinstance(m, at.Gt):
            out.append(pdx.Check.gt(m.gt))
        elif isinstance(m, at.Le):
            out.append(pdx.Check.le(m.le))
        elif isinstance(m, at.Lt):
            out.append(pdx.Check.lt(m.lt))
        elif isinstance(m, at.MinLen) and ft.base is str:
            out.append(pdx.Check.str_length(min_value=m.min_length))
        elif isinstance(m, at.MaxLen) and ft.base is str:
            out.append(pdx.Check.str_length(max_value=m.max_length))
        elif getattr(m, "pattern", None) is not None:
            out.append(pdx.Check.str_matches(m.pattern))
    return out


# pandas dtypes of the frames validators build (`nullable_types`: Int64 / boolean).
_PANDAS: dict[type, tuple[Any, Any]] = {
    str: (str, str),
    int: ("int64", "Int64"),
    bool: ("boolean", "boolean"),
    float: ("float64", "float64"),
    list: (object, object),
}


def pandera_column(info: FieldInfo, *, unique: bool = False, required: bool = True) -> pdx.Column:
    import pandera.pandas as pdx

    ft = field_type(info.annotation)
    dtype = _PANDAS[ft.base][1 if ft.nullable else 0]
    return pdx.Column(
        dtype, _checks(info, ft), nullable=ft.nullable, unique=unique, required=required
    )


def _frame_check(rule: RowRule) -> pdx.Check:
    import pandera.pandas as pdx

    def holds(frame: pd.DataFrame) -> pd.Series:
        records = frame.astype(object).where(frame.notna(), None).to_dict("records")
        return pd.Series([rule.holds(r) for r in records], index=frame.index, dtype=bool)

    return pdx.Check(holds, error=rule.error)


@cache
def pandera_schema(model: type[BaseModel], optional: tuple[type[BaseModel], ...] = ()) -> Any:
    """The pandera schema of a row model (strict, no coercion). Fields of the `optional`
    models that `model` lacks are allowed, not required (an artifact table with or without
    the question-inference columns)."""
    import pandera.pandas as pdx

    unique = set(getattr(model, "unique", ()))  # plain BaseModels (no RowModel) work too
    cols = {
        name: pandera_column(f, unique=name in unique) for name, f in model.model_fields.items()
    }
    for extra in optional:
        for name, f in extra.model_fields.items():
            cols.setdefault(name, pandera_column(f, required=False))
    rules: Iterable[RowRule] = getattr(model, "row_rules", ())
    return pdx.DataFrameSchema(
        cols,
        checks=[_frame_check(r) for r in rules] or None,
        strict=True,
        coerce=False,
        name=model.__name__,
    )


def nullable_types(arrow_type: pa.DataType) -> object:
    """`types_mapper` for `to_pandas`: int64 and bool columns keep their nulls."""
    if pa.types.is_int64(arrow_type):
        return pd.Int64Dtype()
    if pa.types.is_boolean(arrow_type):
        return pd.BooleanDtype()
    return None


def column_names(model: type[BaseModel]) -> Sequence[str]:
    return tuple(model.model_fields)
