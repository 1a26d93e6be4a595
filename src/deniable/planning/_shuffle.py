"""The central privacy of a shuffled release: amplification by shuffling.

Each report is ``epsilon_0``-LDP. When ``n`` reports from ``n`` different people are
released with no order and no link to who sent them, the release as a whole is also
``(epsilon, delta)``-DP in the central sense, for an ``epsilon`` much smaller than
``epsilon_0`` when ``n`` is large (Feldman, McMillan & Talwar 2021, "Hiding Among the
Clones", FOCS; their Theorem 3.2 and Appendix E).

Their reduction: whatever the others' data, each of the other ``n - 1`` reports is,
with probability ``2p``, a *clone* of the target's report on one of two neighbouring
inputs (``p`` each); so the release is a post-processing of the pair

    P = (A + D, C - A + 1 - D),   Q = (A + 1 - D, C - A + D),

with ``C ~ Bin(n - 1, 2p)``, ``A ~ Bin(C, 1/2)`` and ``D ~ Bernoulli(e^eps0 / (e^eps0 +
1))``. Any ``epsilon_0``-DP randomizer has ``2p = e^-epsilon_0``; k-ary randomized
response (and binary randomized response, ``k = 2``) has ``2p = 2 / (e^epsilon_0 + 1)``:
its report on any input puts at least ``1 / (e^eps0 + k - 1)`` on every output, which
is ``p`` times the sum of the two neighbours' ``(e^eps0 + 1) / (e^eps0 + k - 1)``
(Feldman, McMillan & Talwar 2023, "Stronger Privacy Amplification by Shuffling",
SODA, whose errata keeps this case). The hockey-stick divergence of the pair is
computed exactly here (a sum over ``C`` of binomial tails, the bulk of ``C``'s mass to
within ``1e-30`` and the rest bounded by its mass), so the numerical ``epsilon`` is an
upper bound that lies between the authors' implementation's lower and upper bounds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import special

from .._validation import check_integer, check_probability

__all__ = ["MAX_REPORTS", "ShuffleAmplification", "shuffle_amplification"]

#: The largest release analysed (the sum over ``C`` grows with ``sqrt(n)``).
MAX_REPORTS = 10**9

#: Mass of ``C`` left out of the exact sum (added to delta as an upper bound).
_TAIL = 1e-30


@dataclass(frozen=True)
class ShuffleAmplification:
    """The central ``(epsilon, delta)`` of ``n`` shuffled ``epsilon_0``-LDP reports.

    Attributes
    ----------
    epsilon : float, nats
        The numerical upper bound: the smallest epsilon (to 1e-9 relative) at which the
        clones' pair is ``(epsilon, delta)``-indistinguishable; never above
        ``epsilon_0``.
    closed_form : float, nats
        Feldman, McMillan & Talwar's (2021) closed form (any randomizer), or
        ``epsilon_0`` outside its range (``epsilon_0 > log(n / (16 log(4 / delta)))``).
    n : int
    epsilon_0 : float, nats
    delta : float in (0, 1)
    randomizer : {"general", "randomized_response"}
    clone_probability : float in (0, 1]
        ``2p``: the chance that another report is a clone of the target's.

    Examples
    --------
    >>> from deniable.planning import shuffle_amplification
    >>> central = shuffle_amplification(10_000, 1.0, 1e-6)
    >>> round(central.epsilon, 4), bool(central.epsilon < central.closed_form)
    (0.053, True)
    """

    epsilon: float
    closed_form: float
    n: int
    epsilon_0: float
    delta: float
    randomizer: str
    clone_probability: float


def _closed_form(n: int, eps0: float, delta: float) -> float:
    """FMT 2021, Theorem 3.1 (as in the authors' implementation); ``eps0`` outside its
    range."""
    if eps0 > math.log(n / (16 * math.log(4 / delta))):
        return eps0
    a = 8 * math.sqrt(math.exp(eps0) * math.log(4 / delta) / n)
    c = 8 * math.exp(eps0) / n
    shrink = (1 - math.exp(-eps0)) / (1 + math.exp(-eps0 - math.log1p(a + c)))
    return min(eps0, math.log1p(shrink * (a + c)))


def _clone_counts(n: int, clone: float) -> tuple[np.ndarray, np.ndarray, float]:
    """``(c, Pr(C = c), mass left out)``: the bulk of ``C ~ Bin(n - 1, clone)`` (all but
    at most ``2 _TAIL`` of its mass), found once by a normal guess widened until the
    binomial tails beyond it are below ``_TAIL``."""
    mean, sd = (n - 1) * clone, math.sqrt(max((n - 1) * clone * (1 - clone), 1.0))
    width = 12.0
    while True:
        lo = max(int(mean - width * sd), 0)
        hi = min(math.ceil(mean + width * sd), n - 1)
        left = float(special.bdtr(lo - 1, n - 1, clone)) if lo > 0 else 0.0
        right = float(special.bdtrc(hi, n - 1, clone)) if hi < n - 1 else 0.0
        if (left <= _TAIL and right <= _TAIL) or (lo == 0 and hi == n - 1):
            break
        width *= 1.5
    from scipy import stats  # loaded on use: the core imports NumPy and scipy.special only

    c = np.arange(lo, hi + 1, dtype=np.int64)
    return c, stats.binom.pmf(c, n - 1, clone), left + right


def _pair_delta(counts: tuple[np.ndarray, np.ndarray, float], eps0: float, eps: float) -> float:
    """The hockey-stick divergence ``D_{e^eps}(P || Q)`` of the clones' pair (equal to
    ``D(Q || P)`` by symmetry), an upper bound within the mass of ``C`` left out."""
    if eps >= eps0:
        return 0.0
    c, weight, rest = counts
    alpha = math.exp(eps0) / (math.exp(eps0) + 1)
    ratio = (math.exp(eps) * alpha - (1 - alpha)) / (alpha - math.exp(eps) * (1 - alpha))
    # P_c(a) / Q_c(a) falls with a: the positive part is the a below (c + 1) / (ratio + 1)
    k = np.floor((c + 1) / (ratio + 1)).astype(np.int64)
    below = special.bdtr(k, c, 0.5)
    below_1 = np.where(k >= 1, special.bdtr(np.maximum(k - 1, 0), c, 0.5), 0.0)
    p_mass = alpha * below + (1 - alpha) * below_1
    q_mass = (1 - alpha) * below + alpha * below_1
    part = np.maximum(p_mass - math.exp(eps) * q_mass, 0.0)
    return float(np.dot(weight, part) + rest)


def shuffle_amplification(
    n: int,
    epsilon_0: float,
    delta: float,
    *,
    randomizer: Literal["general", "randomized_response"] = "general",
) -> ShuffleAmplification:
    """The central ``(epsilon, delta)``-DP of a shuffled release of ``n`` reports, one
    from each of ``n`` people, each ``epsilon_0``-LDP (Feldman, McMillan & Talwar 2021).

    Parameters
    ----------
    n : int in 2..10^9
        Reports in the smallest group the release distinguishes, one per person (the
        cost grows with sqrt(n): 0.2 s at 10^5, 4 s at 10^7, 35 s at 10^9).
    epsilon_0 : float > 0, nats
        One person's whole local cost (the sum over the questions of the response).
    delta : float in (0, 1)
    randomizer : {"general", "randomized_response"}, default "general"
        ``"randomized_response"``: every question is k-ary (or binary) randomized
        response, whose clone probability ``2 / (e^eps0 + 1)`` gives a tighter bound;
        ``"general"`` holds for any ``epsilon_0``-LDP randomizer.

    Returns
    -------
    ShuffleAmplification
        ``.epsilon`` (numerical bound, at most ``epsilon_0``) and ``.closed_form``.

    Raises
    ------
    ValueError, TypeError
        For ``n`` outside 2..10^9, ``epsilon_0 <= 0`` or not finite, ``delta`` outside (0, 1), or
        an unknown ``randomizer``.

    Examples
    --------
    >>> round(shuffle_amplification(10**5, 4.0, 1e-6).epsilon, 4)  # FMT 2021: 0.1675-0.1728
    0.1698
    """
    n = check_integer("n", n, minimum=2)
    if n > MAX_REPORTS:
        raise ValueError(f"n must be at most {MAX_REPORTS:,} reports, got {n:,}")
    delta = check_probability("delta", delta, low_open=True, high_open=True)
    if not (isinstance(epsilon_0, int | float) and math.isfinite(epsilon_0) and epsilon_0 > 0):
        raise ValueError(f"epsilon_0 must be a finite number > 0 (nats), got {epsilon_0!r}")
    eps0 = float(epsilon_0)
    if randomizer == "general":
        clone = math.exp(-eps0)
    elif randomizer == "randomized_response":
        clone = 2 / (math.exp(eps0) + 1)
    else:
        raise ValueError(
            f"randomizer must be 'general' or 'randomized_response', got {randomizer!r}"
        )
    counts = _clone_counts(n, clone)
    low, high = 0.0, eps0
    if _pair_delta(counts, eps0, 0.0) <= delta:
        high = 0.0
    while high - low > 1e-9 * eps0:
        mid = (low + high) / 2
        low, high = (mid, high) if _pair_delta(counts, eps0, mid) > delta else (low, mid)
    return ShuffleAmplification(
        epsilon=high,
        closed_form=_closed_form(n, eps0, delta),
        n=n,
        epsilon_0=eps0,
        delta=delta,
        randomizer=randomizer,
        clone_probability=clone,
    )
