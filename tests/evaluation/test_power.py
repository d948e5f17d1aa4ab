"""The McNemar minimum detectable drop against simulated power; `nabench power`."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from nabench.cli import main
from nabench.stats.power import discordance, mde, planned_mde

_SPEC = importlib.util.spec_from_file_location(
    "power_sim", Path(__file__).resolve().parents[2] / "bench" / "power_sim.py"
)
assert _SPEC is not None and _SPEC.loader is not None
power_sim = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(power_sim)
mcnemar_power = power_sim.mcnemar_power


def test_mde_hand_computed() -> None:
    # n = 1000, p = 0.6, rho = 0.5: psi = 2·0.6·0.4·0.5 = 0.24. With psi fixed:
    # δ = 1.959964·sqrt(0.24/1000) + 0.001 + 0.841621·sqrt((0.24 − δ²)/1000); from δ ≈ 0.0444:
    # 0.030364 + 0.001 + 0.841621·0.0154282 = 0.044349.
    psi = float(discordance(0.6, 0.5))
    assert psi == pytest.approx(0.24)
    assert float(mde(1000, psi)) == pytest.approx(0.044349, abs=3e-6)
    assert np.isnan(mde(0, 0.2))
    # a drop adds discordant pairs: p = 0.6, variant 0.5, rho 0.5: P11 = 0.3 + 0.5·sqrt(0.24·0.25)
    # = 0.422474, psi = 1.1 − 0.844949 = 0.255051
    assert float(discordance(0.6, 0.5, 0.1)) == pytest.approx(0.255051, abs=1e-6)
    assert float(planned_mde(1000, 0.6, 0.5)) > float(mde(1000, psi))


@pytest.mark.parametrize(
    ("n", "acc", "rho"),
    [(200, 0.7, 0.0), (1000, 0.6, 0.5), (400, 0.45, 0.3), (5700, 0.55, 0.6),
     # a subject's items (MMLU-NA: 73 to 1,522, median 167) with correlated outcomes: few
     # discordant pairs, the exact test; the normal formula's drop had 84-92 % power here
     (73, 0.9, 0.6), (73, 0.3, 0.6), (100, 0.5, 0.6), (100, 0.9, 0.3), (150, 0.9, 0.6)],
)  # fmt: skip
def test_mde_has_eighty_percent_simulated_power(n: int, acc: float, rho: float) -> None:
    drop = float(planned_mde(n, acc, rho))
    power = mcnemar_power(n, acc, rho, drop, panels=4000, seed=n)
    assert power == pytest.approx(0.80, abs=0.03)


def test_exact_power_equals_the_multinomial_sum() -> None:
    """`mcnemar_power` against the plain double sum over every (b, c) table of the
    multinomial, rejecting where the report's `mcnemar_many` does."""
    from scipy import stats as sps

    from nabench.stats.paired import mcnemar_many
    from nabench.stats.power import mcnemar_power

    rng = np.random.default_rng(3)
    for _ in range(12):
        n, pb, pc = int(rng.integers(1, 90)), rng.uniform(0, 0.45), rng.uniform(0, 0.45)
        b, c = (x.ravel() for x in np.meshgrid(np.arange(n + 1), np.arange(n + 1)))
        keep = b + c <= n
        b, c = b[keep], c[keep]
        _, p, _ = mcnemar_many(b, c)
        w = sps.multinomial.pmf(np.column_stack([b, c, n - b - c]), n, [pb, pc, 1 - pb - pc])
        assert float(mcnemar_power(n, pb, pc)) == pytest.approx(
            float(w[p < 0.05].sum()), abs=1e-7
        )  # 1e-8 tails left out


def test_power_command() -> None:
    res = CliRunner().invoke(main, ["power", "--items", "1000", "--acc", "0.6", "--rho", "0.5"])
    assert res.exit_code == 0, res.output
    assert "rho 0.50" in res.output
    drop = float(res.output.split("alpha 0.05: ", 1)[1].split(" points", 1)[0]) / 100
    assert 0.04 < drop < 0.05  # Connor (1987) without the continuity term: 4.4
    assert mcnemar_power(1000, 0.6, 0.5, drop, panels=4000, seed=7) == pytest.approx(0.8, abs=0.03)
    bad = CliRunner().invoke(main, ["power", "--items", "0", "--acc", "0.6"])
    assert bad.exit_code == 2 and "Traceback" not in bad.output


def test_type_one_error_on_clustered_null_panels() -> None:
    """2,000 panels of 57 subjects × 40 items with subject and item random effects and no
    drop: the headline McNemar test and the subject-clustered test reject 4-6 %. Where
    the variant's effect varies by subject (mean 0), McNemar over-rejects and only the
    clustered test keeps its level."""
    rng = np.random.default_rng(0)
    null = power_sim.overall_rejections(*power_sim.clustered_panels(rng, 2000, 40))
    assert 0.04 <= null["mcnemar"] <= 0.06
    assert 0.04 <= null["clustered"] <= 0.06
    het = power_sim.overall_rejections(*power_sim.clustered_panels(rng, 2000, 40, sd_drop=0.3))
    assert 0.04 <= het["clustered"] <= 0.06
    assert het["mcnemar"] > 0.07


def test_bh_keeps_the_false_discovery_rate_under_q() -> None:
    fdr, power = power_sim.bh_fdr(np.random.default_rng(1), 2000, 40)
    assert fdr <= 0.05
    assert power > 0.2  # the flag is not merely silent


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        (["--acc", "nan"], "'nan' is not a finite number"),
        (["--rho", "nan"], "'nan' is not a finite number"),
        (["--alpha", "nan"], "'nan' is not a finite number"),
        (["--power", "nan"], "'nan' is not a finite number"),
        (["--power", "0.01"], "power 0.01 must exceed alpha 0.05"),
    ],
)
def test_power_refuses_nan_and_a_power_at_or_below_alpha(flag: list[str], message: str) -> None:
    """NaN passed click's FloatRange (it printed `nan points`, or 70 points for --rho nan, or
    an internal error for --alpha nan); power <= alpha printed 0.00 points."""
    from click.testing import CliRunner

    from nabench.cli import main

    res = CliRunner().invoke(main, ["power", "--items", "200", "--acc", "0.7", *flag])
    assert res.exit_code == 2, res.output
    assert message in res.output and "internal error" not in res.output


def _power_cli(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(main, ["power", "--acc", "0.7", *args])
    return res.exit_code, res.output


def test_rho_bounds_are_the_frechet_bounds() -> None:
    """P(both right) lies in [max(0, p + q − 1), min(p, q)]: at p 0.7, q 0.6 the
    correlation lies in [(0.3 − 0.42) / √(0.21 · 0.24), (0.6 − 0.42) / √(0.21 · 0.24)]."""
    from nabench.stats.power import rho_bounds

    lo, hi = rho_bounds(0.7, 0.6)
    assert (lo, hi) == (pytest.approx(-0.534522, abs=1e-6), pytest.approx(0.801784, abs=1e-6))
    assert rho_bounds(0.5, 0.5) == pytest.approx((-1.0, 1.0))
    # the normal formula (over 400 items) used ψ = p + q − 2 P(both) with P(both) above
    # min(p, q) at rho 1: a discordance below the drop itself, 0.11 points at n = 1000
    assert float(discordance(0.7, 1.0, 0.1)) == pytest.approx(0.1)


@pytest.mark.parametrize("items", ["200", "1000"])  # the exact power, the normal formula
@pytest.mark.parametrize("rho", ["1", "-1"])
def test_power_refuses_a_rho_no_joint_distribution_has(items: str, rho: str) -> None:
    """Two 0/1 outcomes of accuracies p and p − drop (drop > 0) never correlate 1 (nor -1):
    `--rho 1` printed 3.92 points at 200 items (clipped in silence) and 0.11 at 1000 (from
    an impossible discordance). It is refused naming the range; just inside it is an
    answer, just outside a refusal."""
    code, out = _power_cli("--items", items, "--rho", rho)
    assert code == 2 and "points" not in out
    (line,) = [ln for ln in out.splitlines() if ln.startswith("Error:")]
    assert "'--rho'" in line and "Fréchet" in line
    lo, hi = (float(x) for x in line.split("within [", 1)[1].split("]", 1)[0].split(", "))
    assert -1.0 < lo < 0.0 < hi < 1.0
    edge = hi if rho == "1" else lo
    step = 0.002 if rho == "1" else -0.002
    inside = _power_cli("--items", items, "--rho", f"{edge - step:.4f}")
    assert inside[0] == 0 and "points" in inside[1], inside[1]
    assert _power_cli("--items", items, "--rho", f"{edge + step:.4f}")[0] == 2
