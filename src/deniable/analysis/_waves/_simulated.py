"""Checks of the change between waves by simulation: the exact variance given the
truths and the overlap (:func:`conditional_variance`, the proof's term that the
interval drops), and coverage of :func:`~deniable.analysis.wave_change`'s interval over
simulated panels with a positively correlated change and random attrition."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

from ..._validation import as_codes
from ...mechanisms import Design
from ._change import wave_change

__all__ = ["conditional_variance", "coverage_grid", "simulate_wave_change"]


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
    from ...mechanisms import (
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
