"""`nabench power`: the smallest accuracy drop a benchmark of N items can detect."""

from __future__ import annotations

import click

from nabench.cli.model_flags import FiniteRange

# Top level (nabench imports no module inside a function); `nabench --help` does not load
# this module (cli.root lists the commands without importing them).
from nabench.stats.power import planned_mde, rho_bounds

__all__ = ["power_cmd"]


@click.command("power")
@click.option("--items", required=True, type=click.IntRange(min=1), help="Paired items N.")
@click.option("--acc", required=True, type=FiniteRange(0.0, 1.0), help="Accuracy on original P.")
@click.option(
    "--rho",
    type=FiniteRange(-1.0, 1.0),
    default=0.0,
    show_default=True,
    help="Correlation of an item's original and variant outcomes; 0 (independent) is the "
    "largest MDE for any non-negative correlation, so it never overstates power.",
)
@click.option("--alpha", type=FiniteRange(0.0, 1.0, min_open=True, max_open=True),
              default=0.05, show_default=True, help="Two-sided significance level.")  # fmt: skip
@click.option("--power", "target", type=FiniteRange(0.0, 1.0, min_open=True, max_open=True),
              default=0.8, show_default=True, help="Power to detect the drop.")  # fmt: skip
def power_cmd(items: int, acc: float, rho: float, alpha: float, target: float) -> None:
    """Minimum detectable drop of the paired McNemar test the report runs, for planning
    a benchmark's size (formula: nabench.stats.power)."""
    if target <= alpha:  # a level-alpha test rejects with probability alpha under no drop
        raise click.BadParameter(
            f"power {target:g} must exceed alpha {alpha:g}", param_hint="'--power'"
        )
    drop = float(planned_mde(items, acc, rho, alpha, target))
    # rho is of the outcomes at accuracies acc and acc − drop: beyond their Fréchet bounds
    # no joint distribution exists (rho 1 with a drop), and the drop above is of the bound's
    lo, hi = rho_bounds(acc, acc - min(drop, acc))
    if not lo - 1e-9 <= rho <= hi + 1e-9:
        raise click.BadParameter(
            f"{rho:g} is impossible at accuracies {acc:.3f} and {acc - drop:.3f} (original, "
            "and the variant at the detectable drop): their outcomes correlate within "
            f"[{lo:.4f}, {hi:.4f}] (Fréchet bounds)",
            param_hint="'--rho'",
        )
    click.echo(
        f"items {items}, accuracy {acc:.3f}, rho {rho:.2f}: "
        f"minimum detectable drop at {target:.0%} power, alpha {alpha:g}: "
        f"{100 * drop:.2f} points"
    )
    if drop >= acc:
        click.echo("note: not below the accuracy itself: no possible drop is detectable.")
