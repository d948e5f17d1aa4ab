"""Outcome counts of a self-knowledge run and the Line of Duty scores derived from them.

Every score is a ratio of counts. When its denominator is zero the score is **undefined and
returned as ``None``** (``null`` in JSON, "—" in tables), never 0 or NaN, so that "no evidence"
cannot be mistaken for "perfect" or "worst". Two scores combine other scores:

* confidence balance is 0.0 when overconfidence and conservatism are both 0.0, and ``None``
  when either of them is undefined;
* the harmonic mean of foresight and insight is 0.0 when both are 0.0, and ``None`` when either
  is undefined.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SelfKnowledgeCounts:
    """How generation (what the model meant) and classification (what it later said) agree.

    ``ff``: generated feasible, classified feasible. ``fr``: generated feasible, classified
    infeasible. ``rf``: generated infeasible, classified feasible. ``rr``: both infeasible for the
    same reason (or the same type, under type-level matching). ``rr_mismatch`` (N_rr'): both
    infeasible for different reasons (types).
    """

    ff: int = 0
    fr: int = 0
    rf: int = 0
    rr: int = 0
    rr_mismatch: int = 0

    def __post_init__(self) -> None:
        for name in ("ff", "fr", "rf", "rr", "rr_mismatch"):
            if getattr(self, name) < 0:
                raise ValueError(f"count {name} must be >= 0")

    @property
    def n(self) -> int:
        """Number of scored rows: the five counts always add up to it."""
        return self.ff + self.fr + self.rf + self.rr + self.rr_mismatch

    def __add__(self, other: SelfKnowledgeCounts) -> SelfKnowledgeCounts:
        return SelfKnowledgeCounts(
            ff=self.ff + other.ff,
            fr=self.fr + other.fr,
            rf=self.rf + other.rf,
            rr=self.rr + other.rr,
            rr_mismatch=self.rr_mismatch + other.rr_mismatch,
        )

    def as_dict(self) -> dict[str, int]:
        """The counts under their paper names: N_ff, N_fr, N_rf, N_rr, N_rr' (and n)."""
        return {
            "N_ff": self.ff,
            "N_fr": self.fr,
            "N_rf": self.rf,
            "N_rr": self.rr,
            "N_rr'": self.rr_mismatch,
            "n": self.n,
        }


@dataclass(frozen=True)
class SelfKnowledgeScores:
    """The Line of Duty scores; ``None`` means undefined (zero denominator)."""

    accuracy: float | None
    foresight: float | None
    insight: float | None
    overconfidence: float | None
    conservatism: float | None
    confidence_balance: float | None
    harmonic_fi: float | None

    def as_dict(self) -> dict[str, float | None]:
        return {
            "accuracy": self.accuracy,
            "foresight": self.foresight,
            "insight": self.insight,
            "overconfidence": self.overconfidence,
            "conservatism": self.conservatism,
            "confidence_balance": self.confidence_balance,
            "harmonic_fi": self.harmonic_fi,
        }


def _ratio(numerator: int, denominator: int) -> float | None:
    return None if denominator == 0 else numerator / denominator


def score_counts(counts: SelfKnowledgeCounts) -> SelfKnowledgeScores:
    """Compute the scores from ``counts``.

    * accuracy A = (N_ff + N_rr) / n
    * foresight F = N_rr / (N_rf + N_rr + N_rr')
    * insight I = N_rr / (N_fr + N_rr + N_rr')
    * overconfidence Over = N_fr / (N_ff + N_fr)
    * conservatism Cons = N_rf / (N_rf + N_rr + N_rr')
    * confidence balance CB = (Over − Cons) / max(Over, Cons); > 0 leans to overconfidence
    * harmonic_fi = 2·F·I / (F + I)
    """
    c = counts
    foresight = _ratio(c.rr, c.rf + c.rr + c.rr_mismatch)
    insight = _ratio(c.rr, c.fr + c.rr + c.rr_mismatch)
    over = _ratio(c.fr, c.ff + c.fr)
    cons = _ratio(c.rf, c.rf + c.rr + c.rr_mismatch)

    balance: float | None = None
    if over is not None and cons is not None:
        top = max(over, cons)
        balance = 0.0 if top == 0 else (over - cons) / top

    harmonic: float | None = None
    if foresight is not None and insight is not None:
        total = foresight + insight
        harmonic = 0.0 if total == 0 else 2 * foresight * insight / total

    return SelfKnowledgeScores(
        accuracy=_ratio(c.ff + c.rr, c.n),
        foresight=foresight,
        insight=insight,
        overconfidence=over,
        conservatism=cons,
        confidence_balance=balance,
        harmonic_fi=harmonic,
    )
