"""Planning a validation study: arms to compare, and the extended crosswise model.

Randomized-response validation studies assign respondents at random to direct
questioning or to an RR design and compare the two prevalences; by the "more is better"
assumption, the design that yields the higher prevalence of a socially undesirable
trait is the more valid (Lensvelt-Mulders, Hox, van der Heijden & Maas 2005; Höglinger,
Jann & Diekmann 2016). :func:`arm_comparison_size` gives the arm sizes for the
one-sided test of ``pi_rr > pi_direct`` to reach a power; :func:`arm_comparison_power`
the power of given sizes. :func:`ecwm_size` gives the size of an extended crosswise
study (Heck, Hoffmann & Moshagen 2018) for a margin.

The test is the Wald test on the difference of the moment estimates,
``Z = (pi_rr_hat - pi_direct_hat) / SE``, with the exact per-respondent variances
``V_rr = lambda (1 - lambda) / d^2`` (``lambda = c + d pi`` the design's chance of a
"yes" report, :attr:`~deniable.mechanisms.Design.yes_line`; Warner 1965) and
``V_direct = pi (1 - pi)``; sizes come from the normal approximation
``n_rr = (z_{1-alpha} + z_{power})^2 (V_rr + V_direct / r) / delta^2`` with
``r = n_direct / n_rr`` (Chow, Shao & Wang 2008, Section 4.2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .._validation import check_probability, check_real
from ..mechanisms import Design
from ._sample_size import sample_size

__all__ = [
    "ArmSizes",
    "arm_comparison_power",
    "arm_comparison_size",
    "ecwm_size",
    "sample_ratio_power",
]


@dataclass(frozen=True)
class ArmSizes:
    """Respondents per arm: ``rr`` (the randomized design) and ``direct``; ``power`` is
    the power these sizes reach (at least the one asked for).

    Examples
    --------
    >>> from deniable import ForcedResponse
    >>> from deniable.planning import arm_comparison_size
    >>> sizes = arm_comparison_size(ForcedResponse(p_yes=1 / 6, p_no=1 / 6), p_direct=0.1, p_rr=0.2)
    >>> sizes.rr, sizes.direct
    (348, 348)
    """

    rr: int
    direct: int
    power: float

    @property
    def total(self) -> int:
        return self.rr + self.direct


def _variances(design: Design, p_direct: float, p_rr: float) -> tuple[float, float]:
    c, d = design.yes_line
    lam = c + d * p_rr
    return lam * (1.0 - lam) / (d * d), p_direct * (1.0 - p_direct)


def _within(name: str, value: float, low: float, high: float, closed: bool = False) -> None:
    x = check_real(name, value)
    inside = low <= x <= high if closed else low < x < high
    if not inside:
        span = f"[{low:g}, {high:g}]" if closed else f"({low:g}, {high:g})"
        raise ValueError(f"{name} must be in {span}, got {x!r}")


def _check(p_direct: float, p_rr: float, alpha: float) -> None:
    check_probability("p_direct", p_direct)
    check_probability("p_rr", p_rr)
    _within("alpha", alpha, 0.0, 0.5)
    if not p_rr > p_direct:
        raise ValueError(
            f"p_rr must exceed p_direct (the one-sided test of 'more is better'), got "
            f"p_rr = {p_rr} and p_direct = {p_direct}"
        )


def arm_comparison_power(
    design: Design, n_rr: int, n_direct: int, p_direct: float, p_rr: float, alpha: float = 0.05
) -> float:
    """Power of the one-sided Wald test of ``pi_rr > pi_direct`` at level ``alpha``.

    Parameters
    ----------
    design : Design
        The RR arm's binary design (two truths, two reports).
    n_rr, n_direct : int >= 1
        Respondents in the RR arm and in the direct arm.
    p_direct, p_rr : float in [0, 1]
        The prevalences the study expects in each arm (``p_rr > p_direct``).
    alpha : float in (0, 0.5)
        Level of the one-sided test.

    Returns
    -------
    float in [0, 1]
        The chance that the test rejects at these sizes and prevalences.

    Raises
    ------
    ValueError
        For a design that is not binary, a probability outside [0, 1], ``p_rr <=
        p_direct`` or sizes below 1.

    Examples
    --------
    >>> from deniable import ForcedResponse
    >>> from deniable.planning import arm_comparison_power
    >>> design = ForcedResponse(p_yes=1 / 6, p_no=1 / 6)
    >>> round(arm_comparison_power(design, n_rr=1000, n_direct=1000, p_direct=0.1, p_rr=0.2), 3)
    0.995
    """
    from scipy import stats

    _check(p_direct, p_rr, alpha)
    if n_rr < 1 or n_direct < 1:
        raise ValueError(f"n_rr and n_direct must be >= 1, got {n_rr} and {n_direct}")
    v_rr, v_dq = _variances(design, p_direct, p_rr)
    se = math.sqrt(v_rr / n_rr + v_dq / n_direct)
    return float(stats.norm.cdf((p_rr - p_direct) / se - stats.norm.ppf(1.0 - alpha)))


def arm_comparison_size(
    design: Design,
    p_direct: float,
    p_rr: float,
    alpha: float = 0.05,
    power: float = 0.8,
    ratio: float = 1.0,
) -> ArmSizes:
    """Arm sizes for the one-sided test of ``pi_rr > pi_direct`` to reach ``power``.

    Parameters
    ----------
    design, p_direct, p_rr, alpha
        As :func:`arm_comparison_power`.
    power : float in (0.5, 1)
        The power asked for.
    ratio : float in [0.01, 100]
        ``n_direct / n_rr`` (1: equal arms; an RR arm needs more respondents for the
        same precision, so studies often make it the larger one).

    Returns
    -------
    ArmSizes
        ``rr`` and ``direct`` respondents, and the power they reach.

    Raises
    ------
    ValueError
        As :func:`arm_comparison_power`, or for ``power`` or ``ratio`` out of range.

    Examples
    --------
    >>> from deniable import ForcedResponse
    >>> from deniable.planning import arm_comparison_size
    >>> arm_comparison_size(ForcedResponse(p_yes=1 / 6, p_no=1 / 6), p_direct=0.1, p_rr=0.2).rr
    348
    """
    from scipy import stats

    _check(p_direct, p_rr, alpha)
    _within("power", power, 0.5, 1.0)
    _within("ratio", ratio, 0.01, 100.0, closed=True)
    v_rr, v_dq = _variances(design, p_direct, p_rr)
    z = stats.norm.ppf(1.0 - alpha) + stats.norm.ppf(power)
    n_rr = max(1, math.ceil(z * z * (v_rr + v_dq / ratio) / (p_rr - p_direct) ** 2))
    n_dq = max(1, math.ceil(ratio * n_rr))
    return ArmSizes(n_rr, n_dq, arm_comparison_power(design, n_rr, n_dq, p_direct, p_rr, alpha))


def ecwm_size(
    p: float,
    margin: float,
    confidence_level: float = 0.95,
    prevalence: float | tuple[float, float] | None = None,
) -> int:
    """Total respondents of an extended crosswise study (Heck, Hoffmann & Moshagen
    2018) for its prevalence estimate to be within ``margin`` at ``confidence_level``.

    The two groups (randomization probability ``p`` and ``1 - p``, half the sample each)
    have the same variance, ``lambda (1 - lambda) / (n_g (2p - 1)^2)`` with ``lambda``
    and ``1 - lambda`` their chances of "same", so the pooled estimate has the
    crosswise model's variance at the total ``n`` (Yu, Tian & Tang 2008):
    :func:`~deniable.planning._sample_size` of ``Crosswise(p)`` (normal approximation),
    rounded up to an even number.

    Parameters
    ----------
    p : float in (0, 1), not 0.5
        The first group's randomization probability (the second's is ``1 - p``).
    margin : float in (0, 1)
        Half-width of the interval asked for.
    confidence_level : float in (0, 1), default 0.95
    prevalence : float or (low, high) in [0, 1], optional
        The prevalence (or range) planned for; default the worst case.

    Returns
    -------
    int
        Total respondents, even (half in each group).

    Raises
    ------
    ValueError
        For ``p`` outside (0, 1) or equal to 0.5, or a margin or level out of range.

    Examples
    --------
    >>> from deniable.planning import ecwm_size
    >>> ecwm_size(0.25, margin=0.05)
    1538
    """
    from ..mechanisms import Crosswise

    n = sample_size(Crosswise(p=p), margin, confidence_level, "normal", prevalence)
    return n + n % 2


def sample_ratio_power(
    weights: list[float],
    n: int,
    arm: int = 0,
    leave_share: float = 0.25,
    alpha: float = 0.001,
) -> float:
    """Power of the sample-ratio test (Pearson's chi-square of the arms' counts against
    their weights, flagged at ``alpha``) against self-selection out of one arm.

    A respondent drawn into ``arm`` leaves it with chance ``leave_share`` by drawing
    again (cleared storage, another device), and the new draw follows the weights. The
    arms' shares then move from ``q`` (the weights, normalised) to ``p_arm = q_arm (1 -
    s + s q_arm)`` and ``p_j = q_j (1 + s q_arm)`` for the others. With two arms the
    power is exact (the binomial law of the first arm's count, summed where the test
    flags); with more, it is the noncentral chi-square's with ``len(weights) - 1``
    degrees of freedom and noncentrality ``n sum (p - q)^2 / q`` (Cohen 1988, Section
    7.2; the normal approximation to the multinomial).

    Parameters
    ----------
    weights : list of float > 0
        The arms' weights (2 or more).
    n : int >= 1
        Respondents.
    arm : int
        The arm left (its index in ``weights``).
    leave_share : float in [0, 1]
        The share of that arm's respondents who draw again.
    alpha : float in (0, 1)
        The flag's level (the dashboard's: 0.001).

    Returns
    -------
    float
        The chance that the test flags the counts.

    Raises
    ------
    ValueError
        For fewer than two weights, a weight <= 0, ``arm`` out of range, or a
        parameter outside its range.

    Examples
    --------
    >>> from deniable.planning import sample_ratio_power
    >>> round(sample_ratio_power([0.5, 0.5], n=1000), 3)
    0.738
    """
    from scipy import stats

    if len(weights) < 2 or any(not (w > 0 and math.isfinite(w)) for w in weights):
        raise ValueError(f"weights must be 2 or more positive numbers, got {weights}")
    if not 0 <= arm < len(weights):
        raise ValueError(f"arm must be in 0..{len(weights) - 1}, got {arm}")
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    check_probability("leave_share", leave_share)
    check_probability("alpha", alpha, low_open=True, high_open=True)
    total = sum(weights)
    q = [w / total for w in weights]
    s, qa = leave_share, q[arm]
    p = [qj * (1 + s * qa) for qj in q]
    p[arm] = qa * (1 - s + s * qa)
    df = len(weights) - 1
    critical = stats.chi2.isf(alpha, df)
    if df == 1:  # exact: every count of the first arm, weighted by its binomial chance
        import numpy as np

        counts = np.arange(n + 1)
        expected = n * q[0]
        statistic = (counts - expected) ** 2 * (1 / expected + 1 / (n - expected))
        flagged = statistic > critical
        return float(stats.binom.pmf(counts[flagged], n, p[0]).sum())
    noncentrality = n * sum((pj - qj) ** 2 / qj for pj, qj in zip(p, q, strict=True))
    return float(stats.ncx2.sf(critical, df, noncentrality))
