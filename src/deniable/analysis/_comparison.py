"""Differences between the arms of a study: each arm's prevalence against the
reference arm's, with Wald intervals and one-sided tests.

Arms are independent samples (each respondent's device draws one arm), so the
difference of two arms' unbiased estimates has variance ``V_a + V_ref`` and the Wald
interval ``d -/+ z sqrt(V_a + V_ref)`` (Höglinger, Jann & Diekmann 2016 compare arms so,
"more is better"); the one-sided p-value tests "the arm's prevalence is at most the
reference's" against "above it" (Wald 1943).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import special

from .._fitting import WaldResult
from .._validation import JSON
from ..estimation import ConfidenceInterval, EstimateResult
from ._study_fits import GroupFit

__all__ = [
    "ArmDifferences",
    "ArmStudy",
    "Heterogeneity",
    "arm_differences",
    "cochran_q",
]


@dataclass(frozen=True)
class ArmDifferences(WaldResult):
    """Each arm's prevalence minus the reference arm's.

    Attributes
    ----------
    labels : list of str
        The arms compared with the reference, in the study's order.
    reference : str
        The reference arm (a control arm, or the first).
    estimate : ndarray, shape (a,), float64
        ``pi_arm - pi_reference`` of the category compared.
    std_error : ndarray, shape (a,), float64
        ``sqrt(V_arm + V_reference)``.

    Examples
    --------
    >>> import numpy as np
    >>> from deniable import Warner, estimate
    >>> from deniable.analysis import arm_differences
    >>> arms = {"control": estimate(Warner(p=0.8), np.array([1] * 30 + [0] * 70)),
    ...         "treated": estimate(Warner(p=0.8), np.array([1] * 50 + [0] * 50))}
    >>> diff = arm_differences(arms, "control")
    >>> diff.labels, diff.estimate.round(3).tolist()
    (['treated'], [0.333])
    """

    labels: list[str]
    reference: str
    estimate: NDArray[np.float64]
    std_error: NDArray[np.float64]

    @property
    def pvalue(self) -> NDArray[np.float64]:
        """One-sided p-values of "the arm is at most the reference" against "above it",
        shape (a,); NaN where the standard error is 0."""
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.where(self.std_error > 0, self.estimate / self.std_error, np.nan)
        return np.asarray(special.ndtr(-z), dtype=np.float64)

    def _wald(self, z: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``d -/+ z se`` (not clipped: a difference lies in [-1, 1])."""
        return self.estimate - z * self.std_error, self.estimate + z * self.std_error

    def to_dict(self, confidence_level: float = 0.95, method: str | None = None) -> dict[str, JSON]:
        """The one JSON shape of an estimate, with ``reference`` and ``pvalue``."""
        out = super().to_dict(confidence_level, method)
        return out | {"reference": self.reference, "pvalue": self.pvalue.tolist()}

    def rows(self, confidence_level: float = 0.95) -> list[dict[str, Any]]:
        """One row per arm (``arm``, ``difference``, ``std_error``, ``low``, ``high``,
        ``pvalue``), as the dashboard and ``deniable analyze arms`` print them."""
        ci = self.confidence_interval(confidence_level)
        return [
            {
                "arm": arm,
                "difference": float(self.estimate[j]),
                "std_error": float(self.std_error[j]),
                "low": float(ci.low[j]),
                "high": float(ci.high[j]),
                "pvalue": float(self.pvalue[j]),
            }
            for j, arm in enumerate(self.labels)
        ]

    def _title(self) -> str:
        return f"Differences to arm {self.reference!r}"


def arm_differences(
    arms: Mapping[str, EstimateResult], reference: str, category: int = 1
) -> ArmDifferences:
    """Each arm's estimate of ``category`` minus the reference arm's.

    Parameters
    ----------
    arms : mapping of arm name to estimate
        Each arm's prevalence estimate (``estimate`` and ``std_error`` of shape (k,)),
        in the study's order; the reference among them.
    reference : str
        The arm the others are compared with.
    category : int, default 1
        The category compared ("yes" of a yes/no question).

    Returns
    -------
    ArmDifferences
        One entry per arm other than the reference.

    Raises
    ------
    KeyError
        If ``reference`` is not one of ``arms``.

    Examples
    --------
    >>> import numpy as np
    >>> from deniable import Warner, estimate
    >>> from deniable.analysis import arm_differences
    >>> arms = {"control": estimate(Warner(p=0.8), np.array([1] * 30 + [0] * 70)),
    ...         "treated": estimate(Warner(p=0.8), np.array([1] * 50 + [0] * 50))}
    >>> round(float(arm_differences(arms, "control").pvalue[0]), 4)
    0.0016
    """
    ref = arms[reference]
    others = [arm for arm in arms if arm != reference]
    pick = [(float(arms[a].estimate[category]), float(arms[a].std_error[category])) for a in others]
    ref_estimate, ref_se = float(ref.estimate[category]), float(ref.std_error[category])
    return ArmDifferences(
        labels=others,
        reference=reference,
        estimate=np.array([e - ref_estimate for e, _ in pick], dtype=np.float64),
        std_error=np.array([np.hypot(s, ref_se) for _, s in pick], dtype=np.float64),
    )


@dataclass(frozen=True)
class Heterogeneity:
    """Cochran's Q: do the arms' estimates differ by more than chance around the pooled
    estimate? ``Q = sum_a (pi_a - pi) ^ 2 / V_a(pi)``, each arm's moment estimate
    ``pi_a`` weighted by its variance at the pooled prevalence ``pi``; under one common
    prevalence ``Q`` is chi-square with ``a - 1`` degrees of freedom (Cochran 1954, "The
    combination of estimates from different experiments"; DerSimonian & Laird 1986).
    A small ``pvalue`` says the arms disagree: in a validation study, the sign that
    one design (often direct questioning) under-reports.

    Attributes
    ----------
    statistic : float
        ``Q`` (>= 0).
    df : int
        ``a - 1``.
    pvalue : float in [0, 1]

    Examples
    --------
    >>> from deniable.analysis import cochran_q
    >>> result = cochran_q([0.30, 0.10], [0.02**2, 0.03**2], pooled=0.24)
    >>> round(result.statistic, 2), result.df, round(result.pvalue, 5)
    (30.78, 1, 0.0)
    """

    statistic: float
    df: int
    pvalue: float

    def to_dict(self) -> dict[str, JSON]:
        """``{"statistic", "df", "pvalue"}``, JSON-ready."""
        return {"statistic": self.statistic, "df": self.df, "pvalue": self.pvalue}


def cochran_q(estimates: Any, variances: Any, pooled: float) -> Heterogeneity:
    """Cochran's Q of independent estimates around a pooled one (see
    :class:`Heterogeneity`).

    Parameters
    ----------
    estimates : array_like of float, shape (a,)
        Each arm's estimate of one prevalence (a >= 2).
    variances : array_like of float, shape (a,)
        Each estimate's variance at the pooled prevalence (> 0).
    pooled : float
        The pooled estimate.

    Returns
    -------
    Heterogeneity

    Raises
    ------
    ValueError
        For fewer than two estimates, shapes that differ, or a variance that is not
        positive and finite.

    Examples
    --------
    >>> from deniable.analysis import cochran_q
    >>> cochran_q([0.25, 0.25], [0.01, 0.02], pooled=0.25).statistic
    0.0
    """
    from scipy import stats

    pi = np.asarray(estimates, dtype=np.float64)
    var = np.asarray(variances, dtype=np.float64)
    if pi.ndim != 1 or pi.shape != var.shape or pi.size < 2:
        raise ValueError("estimates and variances must be two 1-D arrays of one length >= 2")
    if not np.all(np.isfinite(var) & (var > 0)):
        raise ValueError("variances must be positive and finite")
    q = float(np.sum((pi - pooled) ** 2 / var))
    return Heterogeneity(q, int(pi.size - 1), float(stats.chi2.sf(q, pi.size - 1)))


@dataclass(frozen=True)
class ArmStudy(EstimateResult):
    """One question of a study asked through several designs (Höglinger, Jann &
    Diekmann 2016): each arm's estimate of the answer's prevalence, the differences to
    the reference arm, the estimate pooled over the arms with Cochran's Q, and a group
    design's joint fit.

    ``estimate``, ``std_error`` and ``confidence_interval`` are the arms' (each arm's
    own design and interval method); :meth:`to_dict` is the one shape the dashboard,
    the API's ``study`` and ``deniable analyze arms`` print.

    Attributes
    ----------
    question, text, answer : str
        The question's id and text, and the answer whose prevalence is estimated.
    control : bool
        A zero-prevalence control question (its estimate measures false positives).
    labels : list of str
        The arms with responses, in the study's order.
    designs : list of str
        Each arm's design.
    arms : list of PrevalenceEstimate
        Each arm's estimate.
    differences : ArmDifferences or None
        Each arm minus the reference arm.
    pooled : PrevalenceEstimate or None
        The joint maximum likelihood over ``pooled_arms``.
    pooled_arms : list of str
        The arms pooled (empty: every row, a study without arms).
    heterogeneity : Heterogeneity or None
        Cochran's Q of the pooled arms' estimates.
    groups : GroupFit or None
        A group design's joint fit (prevalence, its non-adherence parameter or its G²
        test).
    known : float or None
        A validation item's true prevalence (0 for a zero-prevalence control).
    validation : list of ValidationCheck or None
        Each arm's estimate against ``known``
        (:func:`~deniable.analysis.validation_check`).

    Examples
    --------
    >>> import numpy as np
    >>> from deniable import Warner, estimate
    >>> from deniable.analysis import ArmStudy
    >>> arms = [estimate(Warner(p=0.8), np.array([1] * 30 + [0] * 70)),
    ...         estimate(Warner(p=0.8), np.array([1] * 50 + [0] * 50))]
    >>> study = ArmStudy("q", "Q?", "yes", False, ["a", "b"], ["warner", "warner"], arms)
    >>> study.estimate.round(3).tolist()
    [0.167, 0.5]
    """

    question: str
    text: str
    answer: str
    control: bool
    labels: list[str]
    designs: list[str]
    arms: list[Any]
    differences: ArmDifferences | None = None
    pooled: Any = None
    pooled_arms: list[str] | None = None
    heterogeneity: Heterogeneity | None = None
    groups: GroupFit | None = None
    known: float | None = None
    validation: list[Any] | None = None

    @property
    def estimate(self) -> NDArray[np.float64]:
        """Each arm's estimate of the answer's prevalence, shape (a,)."""
        return np.array([float(a.estimate[1]) for a in self.arms], dtype=np.float64)

    @property
    def std_error(self) -> NDArray[np.float64]:
        """Each arm's standard error, shape (a,)."""
        return np.array([float(a.std_error[1]) for a in self.arms], dtype=np.float64)

    def confidence_interval(
        self, confidence_level: float = 0.95, method: str | None = None
    ) -> ConfidenceInterval[NDArray[np.float64]]:
        """Each arm's interval by its own design's method (``method``: one for all)."""
        cis = [a.confidence_interval(confidence_level, method) for a in self.arms]
        low = np.array([float(c.low[1]) for c in cis], dtype=np.float64)
        high = np.array([float(c.high[1]) for c in cis], dtype=np.float64)
        return ConfidenceInterval(low, high)

    def to_dict(self, confidence_level: float = 0.95, method: str | None = None) -> dict[str, JSON]:
        """The one JSON shape of every estimate (``result``, ``labels`` the arms,
        ``estimate``, ``std_error``, ``interval``, ``warnings``) with ``{"question",
        "text", "answer", "control", "known", "arms": [{"arm", "design", "n", "estimate",
        "std_error", "low", "high", "validation"}], "reference", "differences", "pooled":
        {... "method", "arms", "heterogeneity"}, "groups"}``, JSON-ready (``validation``
        only for a validation item)."""
        rows = [
            {"arm": arm, "design": design} | _row(a, confidence_level)
            for arm, design, a in zip(self.labels, self.designs, self.arms, strict=True)
        ]
        for row, check in zip(rows, self.validation or [], strict=False):
            row["validation"] = check.to_dict()
        pooled = None
        if self.pooled is not None:
            pooled = _row(self.pooled, confidence_level) | {
                "method": self.pooled.method,
                "arms": self.pooled_arms or [],
                "heterogeneity": None
                if self.heterogeneity is None
                else self.heterogeneity.to_dict(),
            }
        own: dict[str, Any] = {
            "question": self.question,
            "text": self.text,
            "answer": self.answer,
            "control": self.control,
            "known": self.known,
            "arms": rows,
            "reference": None if self.differences is None else self.differences.reference,
            "differences": []
            if self.differences is None
            else self.differences.rows(confidence_level),
            "pooled": pooled,
            "groups": None if self.groups is None else self.groups.to_dict(confidence_level),
        }
        return super().to_dict(confidence_level, method) | own

    def _title(self) -> str:
        return f"{self.question} ({self.answer}) by arm"


def _row(est: Any, confidence_level: float) -> dict[str, Any]:
    """``n``, ``estimate``, ``std_error``, ``low``, ``high`` of the answer (category 1)."""
    ci = est.confidence_interval(confidence_level)
    return {
        "n": int(est.n),
        "estimate": float(est.estimate[1]),
        "std_error": float(est.std_error[1]),
        "low": float(ci.low[1]),
        "high": float(ci.high[1]),
    }
