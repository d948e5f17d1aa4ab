"""One cell formatter for every table nabench writes: `report.md`, `report.html` and the
selfknow report and card. Floats to 3 decimals (a non-zero value below 0.001 in scientific
notation, never a bare ``0.000``), p-values in significant digits (``2.4e-07``; one that
underflowed as ``< 1e-300``, never 0), a CI pair as ``[lo, hi]``, a missing value as
``missing``. Escaping belongs to the output format (Markdown pipes, HTML entities).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["P_FLOOR", "fmt_cell", "fmt_p", "fmt_value", "is_p_column"]

MISSING = "n/a"
P_FLOOR = 1e-300  # below this a double p-value has underflowed: print the bound, not 0


def _missing(v: object) -> bool:
    return v is None or (isinstance(v, float | np.floating) and math.isnan(float(v)))


def fmt_p(v: object, missing: str = MISSING) -> str:
    """A p-value: 3 significant digits, scientific below 0.001; one that underflowed (0,
    or a subnormal double) prints as ``< 1e-300``, never as 0."""
    if _missing(v):
        return missing
    f = float(v)  # type: ignore[arg-type]
    if f < P_FLOOR:
        return f"< {P_FLOOR:.0e}"
    return f"{f:.2e}" if f < 1e-3 else f"{f:.3g}"


def fmt_value(v: object, digits: int = 3, missing: str = MISSING) -> str:
    """A number or label as a table shows it."""
    if _missing(v):
        return missing
    if isinstance(v, bool | np.bool_):
        return str(bool(v))
    if isinstance(v, int | np.integer):
        return str(int(v))
    if isinstance(v, float | np.floating):
        f = float(v)
        if f != 0.0 and abs(f) < 10 ** (-digits):
            return f"{f:.1e}"
        return f"{f:.{digits}f}"
    return str(v)


def is_p_column(col: str) -> bool:
    adjusted = col in ("mcnemar_p_holm", "mcnemar_p_bh")
    return adjusted or col == "p_value" or col.endswith("_p") or col.startswith("p_value")


def fmt_cell(col: str, v: object, missing: str = MISSING) -> str:
    """The cell of column ``col``: p-values by `fmt_p`, a (lo, hi) pair as ``[lo, hi]``,
    anything else by `fmt_value`."""
    if isinstance(v, list | tuple):
        return f"[{fmt_value(v[0], missing=missing)}, {fmt_value(v[1], missing=missing)}]"
    return fmt_p(v, missing) if is_p_column(col) else fmt_value(v, missing=missing)
