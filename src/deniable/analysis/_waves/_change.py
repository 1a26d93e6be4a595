"""Change between two waves of a panel: each wave's prevalence and their difference.

The estimand
------------
Wave ``w`` is answered by a population of respondents with answer distribution
``pi_w`` (shape ``(k,)``); the estimand is ``delta = pi_2 - pi_1``, the difference
between the prevalences of the two waves' *respondent populations*. It equals the mean
individual change only when those who leave between the waves (attrition) do not differ
in their answers from those who stay; no person's change can be estimated (reports
cannot be linked across waves: credentials are unlinkable).

The estimator
-------------
Each wave's unbiased moment estimate ``pi_hat_w = Q f_w`` (``Q`` the inverse of the
wave's channel ``C``, ``f_w`` the report shares of its ``n_w`` respondents; Chaudhuri &
Mukerjee 1988) and ``delta_hat = pi_hat_2 - pi_hat_1``, with the plug-in variance
``V_1 + V_2`` (``V_w = Q (diag f_w - f_w f_w^T) Q^T / n_w``) and the Wald interval
``delta_hat +- z sqrt(V_1 + V_2)`` (:func:`wave_change`).

Why ``V_1 + V_2`` (the proof)
-----------------------------
*Conditional on the truths.* Write ``pi_hat_w[j] = (1/n_w) sum_i h[R_iw]`` with
``h = Q^T e_j``. Reports of different people are independent; so are one person's two
reports unless they share a permanent report, which happens exactly when the person
answers both waves with the same answer ``t`` (two-layer designs,
:mod:`deniable.mechanisms`; a one-layer design draws afresh and shares nothing).
Then ``R_1, R_2`` are independent given the permanent report ``S ~ P[:, t]``, so
``Cov(h[R_1], h[R_2] | t) = Var_S(E[h[R] | S]) = h^T Sigma_t h >= 0``
(:meth:`~deniable.mechanisms.TwoLayerDesign.shared_covariance`). Hence::

    Var(delta_hat | truths)
        = Var_1 + Var_2 - (2 / (n_1 n_2)) sum_{i in both, t_i1 = t_i2} h^T Sigma_{t_i} h
        <= Var_1 + Var_2,

with ``Var_w = (1/n_w^2) sum_i Var(h[R_iw] | t_iw)``: dropping the overlap term can only
widen the interval (:func:`conditional_variance` gives the exact value, for an analyst
who knew the overlap). And ``E[V_w] >= Var_w`` given the truths, since the plug-in
variance of a share ``f`` of independent, non-identical Bernoullis,
``f (1 - f) / n``, is at least the mean of their variances.

*Under person sampling* (the respondents a random sample, the truths random), the
variance adds ``Var(mean t_2 - mean t_1)`` over samples, which is ``(s_1^2 + s_2^2 - 2
rho c)/n`` for a panel answered by the same people (``c`` the truths' covariance across
the waves in the population, ``rho`` the share re-answering). ``V_1 + V_2`` estimates the
same sum without the ``- 2 rho c`` term, so the interval is conservative when the truths
are non-negatively correlated across the waves (``c >= 0``: people who carry the trait
in the first wave are no less likely to carry it in the second), and can under-cover
only when that correlation is negative (a trait that people swap between waves).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from ..._fitting import WaldResult
from ..._validation import JSON, as_codes, check_probability
from ...estimation import interval_dict, moment_covariance
from ...mechanisms import Design

__all__ = ["WaveChange", "pool_wave_changes", "wave_change", "wave_change_by_cell"]


@dataclass(frozen=True)
class WaveChange(WaldResult):
    """Two waves' prevalences and their difference: an estimate of the change, on the
    common base (``estimate`` is the difference; Wald intervals at any level).

    Attributes
    ----------
    labels : list of str
        The ``k`` answers.
    n : tuple of int
        Respondents of the first and second wave.
    first, second : ndarray, shape (k,), float64
        Each wave's unbiased (moment) estimate of the answer shares.
    first_std_error, second_std_error : ndarray, shape (k,), float64
    difference : ndarray, shape (k,), float64
        ``second - first``.
    std_error : ndarray, shape (k,), float64
        ``sqrt(V_1 + V_2)``: conservative given the truths (module docstring).
    low, high : ndarray, shape (k,), float64
        The Wald interval at ``confidence_level``.
    confidence_level : float

    Examples
    --------
    >>> import numpy as np
    >>> from deniable import Warner
    >>> from deniable.analysis import wave_change
    >>> d, rng = Warner(p=0.8), np.random.default_rng(2)
    >>> change = wave_change(d, d.randomize(rng.random(2000) < 0.2, rng),
    ...                      d, d.randomize(rng.random(2000) < 0.3, rng))
    >>> change.to_dict()["result"], change.confidence_interval(0.9).low.shape
    ('WaveChange', (2,))
    """

    labels: list[str]
    n: tuple[int, int]
    first: NDArray[np.float64]
    second: NDArray[np.float64]
    first_std_error: NDArray[np.float64]
    second_std_error: NDArray[np.float64]
    difference: NDArray[np.float64]
    std_error: NDArray[np.float64]
    low: NDArray[np.float64]
    high: NDArray[np.float64]
    confidence_level: float
    #: Each wave's share of reports left out (their key cell was not answered in the
    #: other wave); (0, 0) for a change on all reports.
    left_out: tuple[float, float] = (0.0, 0.0)
    #: The number of key cells compared (``None``: no cells).
    cells: int | None = None

    @property
    def estimate(self) -> NDArray[np.float64]:
        """The change ``second - first`` of each answer's share, shape (k,)."""
        return self.difference

    def _wald(self, z: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Wald intervals of the change, ``d -/+ z sqrt(V_1 + V_2)``, shape (k,) each."""
        return self.difference - z * self.std_error, self.difference + z * self.std_error

    def _title(self) -> str:
        return "Change between waves"

    def to_dict(
        self, confidence_level: float | None = None, method: str | None = None
    ) -> dict[str, JSON]:
        """The one JSON shape of an estimate (the change), with each wave's ``n`` and
        one row per answer (each wave's estimate, the change and its interval) as the
        dashboard shows them; the level defaults to the one the change was made at."""
        level = self.confidence_level if confidence_level is None else confidence_level
        ci = self.confidence_interval(level, method)
        return {
            "result": type(self).__name__,
            "labels": list(self.labels),
            "estimate": self.difference.tolist(),
            "std_error": self.std_error.tolist(),
            "interval": interval_dict(ci, "normal", level),
            "warnings": [],
            "n": list(self.n),
            "left_out": list(self.left_out),
            "cells": self.cells,
            "confidence_level": level,
            "answers": [
                {
                    "answer": label,
                    "first": float(self.first[j]),
                    "first_std_error": float(self.first_std_error[j]),
                    "second": float(self.second[j]),
                    "second_std_error": float(self.second_std_error[j]),
                    "difference": float(self.difference[j]),
                    "std_error": float(self.std_error[j]),
                    "low": float(ci.low[j]),
                    "high": float(ci.high[j]),
                }
                for j, label in enumerate(self.labels)
            ],
        }


def _moment(
    design: Design, reports: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64], int]:
    codes = as_codes("reports", reports, design.n_reports)
    n = int(codes.size)
    if n == 0:
        raise ValueError("reports must hold at least one report in each wave")
    shares = np.bincount(codes, minlength=design.n_reports) / n
    estimate = design.inverse @ shares
    cov = moment_covariance(design.inverse, shares, n)
    return estimate, np.sqrt(np.maximum(np.diag(cov), 0.0)), n


def wave_change(
    first_design: Design,
    first_reports: ArrayLike,
    second_design: Design,
    second_reports: ArrayLike,
    confidence_level: float = 0.95,
) -> WaveChange:
    """Each wave's prevalence and the change between them, with its interval.

    Parameters
    ----------
    first_design, second_design : Design
        The channel of one report of each wave (a panel question's composed
        :class:`~deniable.mechanisms.TwoLayerDesign`; the two may differ) over the
        same ``k`` answers.
    first_reports, second_reports : array_like of int, shape (n_1,) and (n_2,)
        Report codes of each wave's respondents (at least one each).
    confidence_level : float in (0, 1), default 0.95

    Returns
    -------
    WaveChange

    Raises
    ------
    ValueError
        If the designs have different numbers of answers, a wave has no reports, a code
        is out of range, or ``confidence_level`` is not in (0, 1).

    Examples
    --------
    >>> import numpy as np
    >>> from deniable import ForcedResponse
    >>> from deniable.analysis import wave_change
    >>> d, rng = ForcedResponse(p_yes=0.2, p_no=0.2), np.random.default_rng(3)
    >>> change = wave_change(d, d.randomize(rng.random(3000) < 0.25, rng),
    ...                      d, d.randomize(rng.random(3000) < 0.35, rng))
    >>> bool(change.low[1] < 0.1 < change.high[1])
    True
    """
    check_probability("confidence_level", confidence_level)
    if not 0 < confidence_level < 1:
        raise ValueError(f"confidence_level must be in (0, 1), got {confidence_level}")
    if first_design.n_truths != second_design.n_truths:
        raise ValueError(
            f"the waves' designs must have the same answers, got {first_design.n_truths} "
            f"and {second_design.n_truths}"
        )
    est_1, se_1, n_1 = _moment(first_design, first_reports)
    est_2, se_2, n_2 = _moment(second_design, second_reports)
    z = float(stats.norm.ppf(0.5 + confidence_level / 2))
    diff = est_2 - est_1
    se = np.hypot(se_1, se_2)
    return WaveChange(
        list(first_design.truth_labels),
        (n_1, n_2),
        est_1,
        est_2,
        se_1,
        se_2,
        diff,
        se,
        diff - z * se,
        diff + z * se,
        confidence_level,
    )


def wave_change_by_cell(
    first: tuple[Design, ArrayLike, ArrayLike],
    second: tuple[Design, ArrayLike, ArrayLike],
    confidence_level: float = 0.95,
) -> WaveChange:
    """The change between two waves on like cells: each wave's prevalence standardized
    to one common mix of key cells, and their difference.

    Which key cells a wave holds can differ from wave to wave (its released rows, and
    who answers: attrition can differ by cell), and where the prevalence differs by
    cell that alone moves a wave's prevalence. Here only the cells with reports in both
    waves are compared, each weighted by its share of both waves' reports there
    (``w_c = (n_1c + n_2c) / sum``), so both waves are read at the same mix: the
    estimand is ``sum_c w_c (pi_2c - pi_1c)``, the change of the cells' prevalences at
    that mix (direct standardization; Kitagawa 1964). Each cell's prevalence is the
    moment estimate of :func:`wave_change`, unbiased given the cells; the variance is
    ``sum_c w_c^2 (V_1c + V_2c)``, conservative for the reasons the module gives.

    Parameters
    ----------
    first, second : (Design, array_like of int, array_like)
        Each wave's channel, its report codes (shape (n_w,)) and each report's key
        cell (shape (n_w,), any hashable labels, e.g. a key tuple's string).
    confidence_level : float in (0, 1), default 0.95

    Returns
    -------
    WaveChange
        With ``first`` and ``second`` the standardized prevalences, ``n`` the reports
        compared, ``left_out`` each wave's share of reports in cells the other wave
        lacks, and ``cells`` the number of cells compared.

    Raises
    ------
    ValueError
        As :func:`wave_change`; if the cells and reports differ in length, or no key
        cell has reports in both waves.

    Examples
    --------
    >>> import numpy as np
    >>> from deniable import Warner
    >>> rng = np.random.default_rng(0)
    >>> d = Warner(p=0.8)
    >>> c1, c2 = rng.integers(0, 2, 4000), rng.integers(0, 3, 4000)
    >>> t1, t2 = rng.random(4000) < 0.2 + 0.4 * c1, rng.random(4000) < 0.2 + 0.4 * (c2 == 1)
    >>> res = wave_change_by_cell((d, d.randomize(t1, rng), c1), (d, d.randomize(t2, rng), c2))
    >>> res.cells, [round(x, 3) for x in res.left_out]
    (2, [0.0, 0.326])
    """
    check_probability("confidence_level", confidence_level)
    if not 0 < confidence_level < 1:
        raise ValueError(f"confidence_level must be in (0, 1), got {confidence_level}")
    parts = []
    for name, (design, reports, cells) in (("first", first), ("second", second)):
        codes = as_codes(f"{name} reports", reports, design.n_reports)
        labels = np.asarray(cells)
        if labels.shape != codes.shape:
            raise ValueError(f"{name}: cells must have one label per report")
        parts.append((design, codes, labels))
    if parts[0][0].n_truths != parts[1][0].n_truths:
        raise ValueError("the waves' designs must have the same answers")
    common = sorted(set(parts[0][2].tolist()) & set(parts[1][2].tolist()), key=str)
    if not common:
        raise ValueError("no key cell has reports in both waves")
    inside = [np.isin(p[2], common) for p in parts]
    counts = np.array(
        [[np.sum(p[2][m] == c) for c in common] for p, m in zip(parts, inside, strict=True)]
    )
    weights = counts.sum(axis=0) / counts.sum()
    ests, ses = [], []
    for design, codes, labels in parts:
        est, var = np.zeros(design.n_truths), np.zeros(design.n_truths)
        for w, c in zip(weights, common, strict=True):
            e, se, _ = _moment(design, codes[labels == c])
            est, var = est + w * e, var + (w * se) ** 2
        ests.append(est)
        ses.append(np.sqrt(var))
    z = float(stats.norm.ppf(0.5 + confidence_level / 2))
    diff, se = ests[1] - ests[0], np.hypot(ses[0], ses[1])
    n = (int(inside[0].sum()), int(inside[1].sum()))
    return WaveChange(
        list(parts[0][0].truth_labels), n, ests[0], ests[1], ses[0], ses[1], diff, se,
        diff - z * se, diff + z * se, confidence_level,
        (1 - n[0] / inside[0].size, 1 - n[1] / inside[1].size), len(common),
    )  # fmt: skip


def pool_wave_changes(parts: Sequence[WaveChange], confidence_level: float = 0.95) -> WaveChange:
    """The change of a whole study from its arms' changes: each wave's estimates of the
    arms weighted by their respondents in that wave, their variances by the squared
    weights.

    Each arm is a random part of each wave (arms drawn by weight on the devices), so
    each arm's estimate is an unbiased estimate of the whole wave's prevalence, and the
    respondent-weighted mean ``sum_a (n_wa / n_w) pi_hat_wa`` is too, with variance
    ``sum_a (n_wa / n_w)^2 V_wa`` (the arms' reports are independent). The change and
    its Wald interval follow as in :func:`wave_change` (conservative for the same
    reason).

    Parameters
    ----------
    parts : sequence of WaveChange
        One per arm, over the same answers (e.g. from :func:`wave_change_by_cell`).
    confidence_level : float in (0, 1), default 0.95

    Returns
    -------
    WaveChange
        ``n`` the arms' respondents summed, ``left_out`` the share of all the arms'
        reports left out, ``cells`` the most cells any arm compared.

    Raises
    ------
    ValueError
        If ``parts`` is empty, the arms' answers differ, or ``confidence_level`` is not
        in (0, 1).

    Examples
    --------
    >>> import numpy as np
    >>> from deniable import ForcedResponse, Warner
    >>> rng = np.random.default_rng(1)
    >>> arms = [Warner(p=0.8), ForcedResponse(p_yes=0.2, p_no=0.2)]
    >>> parts = [wave_change(d, d.randomize(rng.random(800) < 0.2, rng),
    ...                      d, d.randomize(rng.random(700) < 0.3, rng)) for d in arms]
    >>> pooled = pool_wave_changes(parts)
    >>> pooled.n, bool(pooled.std_error[1] < min(p.std_error[1] for p in parts))
    ((1600, 1400), True)
    """
    check_probability("confidence_level", confidence_level)
    if not 0 < confidence_level < 1:
        raise ValueError(f"confidence_level must be in (0, 1), got {confidence_level}")
    if not parts:
        raise ValueError("parts must hold at least one arm's change")
    if len({tuple(p.labels) for p in parts}) != 1:
        raise ValueError("parts must be changes over the same answers")
    n1 = np.array([p.n[0] for p in parts], dtype=np.float64)
    n2 = np.array([p.n[1] for p in parts], dtype=np.float64)
    w1, w2 = n1 / n1.sum(), n2 / n2.sum()
    first = w1 @ np.array([p.first for p in parts])  # (arms,) @ (arms, k)
    second = w2 @ np.array([p.second for p in parts])
    se1 = np.sqrt(w1**2 @ np.array([p.first_std_error**2 for p in parts]))
    se2 = np.sqrt(w2**2 @ np.array([p.second_std_error**2 for p in parts]))
    z = float(stats.norm.ppf(0.5 + confidence_level / 2))
    diff, se = second - first, np.hypot(se1, se2)
    # each arm's reports before its cells were matched: n / (1 - share left out)
    total = [sum(p.n[w] / (1 - p.left_out[w]) for p in parts) for w in (0, 1)]
    return WaveChange(
        list(parts[0].labels), (int(n1.sum()), int(n2.sum())), first, second, se1, se2,
        diff, se, diff - z * se, diff + z * se, confidence_level,
        (1 - float(n1.sum()) / total[0], 1 - float(n2.sum()) / total[1]),
        max(p.cells or 0 for p in parts) or None,
    )  # fmt: skip
