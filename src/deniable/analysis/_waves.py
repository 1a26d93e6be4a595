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

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from .._validation import as_codes, check_probability
from ..estimation._estimates import interval_dict
from ..estimation._normal_theory import moment_covariance
from ..mechanisms._designs import Design
from ._results import WaldResult

__all__ = [
    "WaveChange",
    "conditional_variance",
    "coverage_grid",
    "simulate_wave_change",
    "wave_change",
    "wave_change_by_cell",
]


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
    ) -> dict[str, Any]:
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


def conditional_variance(
    design: Design,
    first_truths: ArrayLike,
    second_truths: ArrayLike,
    both: ArrayLike,
    answer: int,
) -> float:
    """The exact variance of the change in ``answer``'s estimated share given the truths
    and who answered both waves (what an analyst who knew the overlap would use).

    Parameters
    ----------
    design : Design
        The channel of both waves; a :class:`~deniable.mechanisms.TwoLayerDesign`
        shares permanent reports across waves, any other design nothing.
    first_truths : array_like of int, shape (n_1,)
    second_truths : array_like of int, shape (n_2,)
    both : array_like of int, shape (m, 2)
        Index pairs ``(i in wave 1, j in wave 2)`` of the same person.
    answer : int
        The answer code ``0..k-1`` whose share is compared.
    """
    k = design.n_truths
    t1 = as_codes("first_truths", first_truths, k)
    t2 = as_codes("second_truths", second_truths, k)
    h = design.inverse[answer]  # pi_hat[answer] = (1/n) sum_i h[R_i]
    C = design.matrix
    mean = h @ C  # E h[R] | t, shape (k,)
    var = (h**2) @ C - mean**2
    v1 = float(var[t1].sum()) / t1.size**2
    v2 = float(var[t2].sum()) / t2.size**2
    cov = 0.0
    pairs = np.asarray(both, dtype=np.int64).reshape(-1, 2)
    if design.two_layer is not None and pairs.size:
        same = t1[pairs[:, 0]] == t2[pairs[:, 1]]
        shared = np.array([h @ design.two_layer.shared_covariance(t) @ h for t in range(k)])
        counts = np.bincount(t1[pairs[same, 0]], minlength=k)
        cov = float(counts @ shared) / (t1.size * t2.size)
    return v1 + v2 - 2.0 * cov


def simulate_wave_change(
    design: Design,
    baseline: ArrayLike,
    change: float,
    share_again: float,
    *,
    n: int = 1000,
    panels: int = 300,
    answer: int = 1,
    confidence_level: float = 0.95,
    rng: np.random.Generator | int = 0,
) -> dict[str, float]:
    """Coverage and width of :func:`wave_change`'s interval over simulated panels.

    Each panel draws ``n`` people from a population with answer shares ``baseline``;
    between the waves, a share ``change / baseline[0]`` of those answering ``0`` move to
    ``answer`` (so the population's ``answer`` share rises by ``change``, and the truths
    are positively correlated across the waves); a random ``share_again`` of the people
    answer the second wave (random attrition). A two-layer ``design`` keeps one permanent
    report per person and answer, shared by both waves.

    Parameters
    ----------
    design : Design
        The channel of one report (a :class:`~deniable.mechanisms.TwoLayerDesign`
        or a one-layer design).
    baseline : array_like of float, shape (k,)
        First-wave answer shares (sum 1).
    change : float
        Rise of ``answer``'s share, ``0 <= change <= baseline[0]``.
    share_again : float in (0, 1]
        Share of the first wave's people who answer the second.
    n, panels : int
        People per panel (first wave) and panels.
    answer : int
        The answer whose share is compared.
    confidence_level : float in (0, 1)
    rng : Generator or int
        Seeded source (simulation only).

    Returns
    -------
    dict
        ``coverage`` (of the population change), ``coverage_sample`` (of the change in
        the sampled people), ``median_width`` (ours), and ``oracle_width`` and
        ``oracle_coverage`` (of the population change) of the interval an analyst who
        knew the overlap would use: each person's two reports linked, the variance of
        the sum of per-person contributions estimated from them (reports cannot be
        linked in a study: credentials are unlinkable).
    """
    gen = np.random.default_rng(rng)
    base = np.asarray(baseline, dtype=np.float64)
    k = design.n_truths
    if base.shape != (k,) or not math.isclose(base.sum(), 1.0, abs_tol=1e-9):
        raise ValueError(f"baseline must be {k} shares summing to 1")
    if not 0 <= change <= base[0]:
        raise ValueError(f"change must be in [0, baseline[0]] = [0, {base[0]:g}], got {change}")
    if not 0 < share_again <= 1:
        raise ValueError(f"share_again must be in (0, 1], got {share_again}")
    z = float(stats.norm.ppf(0.5 + confidence_level / 2))
    move = change / base[0] if base[0] > 0 else 0.0
    covered = covered_sample = oracle_covered = 0
    widths, oracle_widths = [], []
    n_2 = max(1, round(share_again * n))
    for _ in range(panels):
        t1 = gen.choice(k, size=n, p=base)
        moved = (t1 == 0) & (gen.random(n) < move)
        t2_all = np.where(moved, answer, t1)
        again = np.sort(gen.permutation(n)[:n_2])
        t2 = t2_all[again]
        r1, r2 = _two_waves(design, t1, t2, again, gen)
        result = wave_change(design, r1, design, r2, confidence_level)
        d, lo, hi = result.difference[answer], result.low[answer], result.high[answer]
        sample_change = float(np.mean(t2 == answer) - np.mean(t1 == answer))
        covered += lo <= change <= hi
        covered_sample += lo <= sample_change <= hi
        widths.append(hi - lo)
        # what an analyst who could link each person's two reports would use: D is a
        # sum over the first wave's people of c_i = h[R_i2] / n_2 - h[R_i1] / n_1
        h = design.inverse[answer]
        c = -h[r1] / n
        c[again] += h[r2] / n_2
        half = z * math.sqrt(n * float(np.var(c, ddof=1)))
        oracle_widths.append(2 * half)
        oracle_covered += abs(d - change) <= half
    return {
        "coverage": covered / panels,
        "coverage_sample": covered_sample / panels,
        "median_width": float(np.median(widths)),
        "oracle_width": float(np.median(oracle_widths)),
        "oracle_coverage": oracle_covered / panels,
    }


def _two_waves(
    design: Design, t1: Any, t2: Any, again: Any, gen: np.random.Generator
) -> tuple[Any, Any]:
    """The reports of both waves: a panel design's from one permanent report per person
    and answer (kept between the waves), each wave's instantaneous layer drawn afresh;
    else each wave drawn through the design."""
    two = design.two_layer
    if two is None:
        return design.randomize(t1, gen), design.randomize(t2, gen)
    n, k = t1.size, design.n_truths
    u = gen.random((n, k))  # one permanent uniform per person and answer
    s1 = two.permanent_reports(t1, u[np.arange(n), t1])
    s2 = two.permanent_reports(t2, u[again, t2])
    return two.instantaneous_reports(s1, gen), two.instantaneous_reports(s2, gen)


def coverage_grid(panels: int = 300, n: int = 1000, rng: int = 1) -> list[dict[str, Any]]:
    """The simulation of docs/collection.md ("Running a panel"): Warner p = 0.85, forced
    response (1/6, 1/6), unrelated question (p = 0.7, innocuous share 0.3), crosswise
    p = 0.25, each on a permanent Warner p = 0.85; k-ary RR (k = 4, epsilon 2 nats) on a
    permanent k-ary RR alike; and a direct arm. Change 0, 0.05 and 0.2; 50% and 100%
    re-answering; first-wave shares (0.7, 0.3), k-ary (0.4, 0.3, 0.2, 0.1).

    Returns
    -------
    list of dict
        One per cell: ``design``, ``change``, ``share_again`` and the keys of
        :func:`simulate_wave_change`.
    """
    from ..mechanisms import (
        Crosswise,
        Direct,
        ForcedResponse,
        KaryRR,
        TwoLayerDesign,
        UnrelatedQuestion,
        Warner,
    )

    permanent = Warner(p=0.85)
    designs: dict[str, Design] = {
        "Warner p=0.85": TwoLayerDesign(permanent, Warner(p=0.85)),
        "forced response 1/6, 1/6": TwoLayerDesign(
            permanent, ForcedResponse(p_yes=1 / 6, p_no=1 / 6)
        ),
        "unrelated question p=0.7, 0.3": TwoLayerDesign(
            permanent, UnrelatedQuestion(p=0.7, innocuous_prevalence=0.3)
        ),
        "crosswise p=0.25": TwoLayerDesign(permanent, Crosswise(p=0.25)),
        "k-ary RR k=4, eps 2": TwoLayerDesign(KaryRR(k=4, epsilon=2.0), KaryRR(k=4, epsilon=2.0)),
        "direct (one layer)": Direct(k=2),
    }
    rows = []
    for name, design in designs.items():
        base = [0.4, 0.3, 0.2, 0.1] if design.n_truths == 4 else [0.7, 0.3]
        for change in (0.0, 0.05, 0.2):
            for again in (0.5, 1.0):
                result = simulate_wave_change(
                    design, base, change, again, n=n, panels=panels, rng=rng
                )
                rows.append({"design": name, "change": change, "share_again": again} | result)
    return rows
