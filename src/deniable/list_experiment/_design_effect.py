"""Blair & Imai's (2012) test for design effects in a list experiment, and the floor
and ceiling.

Sources
-------
* Blair, G. & Imai, K. (2012). Statistical analysis of list experiments. Political
  Analysis 20(1), 47-77, Section 3.1.
* Andrews, D. W. K. & Soares, G. (2010). Inference for parameters defined by moment
  inequalities using generalized moment selection. Econometrica 78(1), 119-157.
* Kudo, A. (1963). A multivariate analogue of the one-sided test. Biometrika 50,
  403-418: the chi-bar-squared weights.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import optimize, stats

from .._validation import JSON
from ._item_count import channel_matrix, check_list_counts

__all__ = ["DesignEffectTest", "chi_bar_squared_weights", "list_design_effect_test"]


def _orthant(cov: NDArray[np.float64]) -> float:
    """P(N(0, cov) > 0) componentwise: closed forms up to 3 dimensions (Sheppard;
    Kendall & Stuart), Genz's algorithm (SciPy) above."""
    m = cov.shape[0]
    if m == 0:
        return 1.0
    sd = np.sqrt(np.diag(cov))
    r = cov / np.outer(sd, sd)
    if m == 1:
        return 0.5
    if m == 2:
        return 0.25 + math.asin(float(np.clip(r[0, 1], -1, 1))) / (2 * math.pi)
    if m == 3:
        s = sum(math.asin(float(np.clip(r[a, b], -1, 1))) for a, b in ((0, 1), (0, 2), (1, 2)))
        return 0.125 + s / (4 * math.pi)
    dist = stats.multivariate_normal(  # type: ignore[call-overload]
        mean=np.zeros(m), cov=r, allow_singular=True, seed=0, abseps=1e-7, releps=1e-7
    )
    return float(dist.cdf(np.zeros(m)))


def chi_bar_squared_weights(cov: NDArray[np.float64]) -> NDArray[np.float64]:
    """Weights ``w[k]`` of ``chi^2_k`` in the null distribution of the distance (in
    ``cov``'s metric) from ``N(0, cov)`` to the non-negative orthant (Kudo 1963):
    ``w[k]`` sums, over the sets ``S`` of ``k`` active constraints,
    ``P(N(0, (cov_SS)^-1) > 0) * P(N(0, cov_FF - cov_FS cov_SS^-1 cov_SF) > 0)``.

    Returns an array of shape (m + 1,) summing to 1 (to the orthant algorithm's
    accuracy above 3 dimensions).
    """
    m = cov.shape[0]
    w = np.zeros(m + 1)
    for k in range(m + 1):
        for s in combinations(range(m), k):
            f = [i for i in range(m) if i not in s]
            s_idx = list(s)
            if k:
                css = cov[np.ix_(s_idx, s_idx)]
                inv = np.asarray(np.linalg.inv(css), dtype=np.float64)
                cond = cov[np.ix_(f, f)] - cov[np.ix_(f, s_idx)] @ inv @ cov[np.ix_(s_idx, f)]
                w[k] += _orthant(inv) * _orthant(cond)
            else:
                w[k] += _orthant(cov)
    return w


@dataclass(frozen=True)
class DesignEffectTest:
    """Blair & Imai's (2012) test of "no design effect" and the floor and ceiling.

    Attributes
    ----------
    pvalue : float in [0, 1]
        Bonferroni-corrected p-value (twice the smaller of the two below, at most 1):
        small values reject "adding the sensitive item did not change the answers to
        the control items".
    pvalue_yes, pvalue_no : float or None
        The tests of ``pi(Y(0) = j, Z = 1) >= 0`` (j = 0..J-1) and of
        ``pi(Y(0) = j, Z = 0) >= 0`` (j = 1..J); None when moment selection kept
        none of a family's inequalities.
    proportions : ndarray, shape (2, J + 1), float64
        Estimated shares of respondent types: row 0 ``pi(Y(0) = j, Z = 1)``, row 1
        ``pi(Y(0) = j, Z = 0)``, for j = 0..J (``Y(0)`` the control count, ``Z`` the
        sensitive answer). Under no design effect each is >= 0.
    std_errors : ndarray, shape (2, J + 1), float64
    revealed_yes, revealed_no : float in [0, 1]
        Shares of the treated reporting ``J + 1`` (the sensitive "yes" seen for
        certain: the ceiling) and 0 ("no" for certain: the floor). Blair & Imai's
        ceiling effect hides among those who would report ``J + 1``
        (``proportions[0, J]``); the floor effect among ``pi(Y(0) = 0, Z = 1)``
        (``proportions[0, 0]``), who may report 0 to avoid the item.
    selection : str
        The moment selection used.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(1)
    >>> t = rng.integers(0, 2, 2000)
    >>> y = rng.binomial(3, 0.5, 2000) + t * (rng.random(2000) < 0.3)
    >>> res = list_design_effect_test(y, t, items=3)
    >>> res.pvalue  # no design effect was simulated
    1.0
    >>> round(res.revealed_yes, 3)  # treated seen to say "yes": the ceiling
    0.037
    """

    pvalue: float
    pvalue_yes: float | None
    pvalue_no: float | None
    proportions: NDArray[np.float64]
    std_errors: NDArray[np.float64]
    revealed_yes: float
    revealed_no: float
    selection: str

    def to_dict(self) -> dict[str, JSON]:
        """JSON-ready."""
        return {
            "pvalue": self.pvalue,
            "pvalue_yes": self.pvalue_yes,
            "pvalue_no": self.pvalue_no,
            "proportions": self.proportions.tolist(),
            "std_errors": self.std_errors.tolist(),
            "revealed_yes": self.revealed_yes,
            "revealed_no": self.revealed_no,
            "selection": self.selection,
        }


def _cdf_terms(j_items: int) -> list[tuple[tuple[float, int], tuple[float, int]]]:
    """Each proportion as ``c0 * F0(a0) + c1 * F1(a1)`` (F0, F1 the control and
    treated CDFs of the true count; ``F(-1) = 0``): rows ``Z = 1`` then ``Z = 0``."""
    yes = [((1.0, j), (-1.0, j)) for j in range(j_items + 1)]
    no = [((-1.0, j - 1), (1.0, j)) for j in range(j_items + 1)]
    return yes + no


def _cdf_moments(
    y: NDArray[np.float64],
    t: NDArray[np.bool_],
    j_items: int,
    channel: NDArray[np.float64] | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Estimates and covariance of all 2(J + 1) proportions, and the treated group's
    estimated distribution of the true count over 0..J+1.

    Each group's shares ``q`` of the stored counts 0..J+1 have the multinomial
    covariance ``(diag q - q q^T) / n``; through a channel ``P`` (``P[r, c]`` the chance
    of storing ``r`` for a true count ``c``) the true counts' shares are ``P^-1 q``
    (unbiased, the moment estimator of the channel), with covariance ``P^-1 S P^-T``.
    The CDFs are cumulative sums, and each proportion a sum of the two groups' CDFs, so
    the estimates and their covariance follow linearly (without a channel this is the
    exact plug-in covariance of two independent empirical CDFs)."""
    size = j_items + 2
    shares, covs = [], []
    for g in (y[~t], y[t]):
        q = np.bincount(g.astype(np.int64), minlength=size)[:size] / len(g)
        s = (np.diag(q) - np.outer(q, q)) / len(g)
        if channel is not None:
            inv = np.linalg.inv(channel)
            q, s = inv @ q, inv @ s @ inv.T
        shares.append(q)
        covs.append(s)
    terms = _cdf_terms(j_items)
    a = np.zeros((len(terms), 2 * size))  # proportions = a @ [shares0; shares1]
    for row, term in enumerate(terms):
        for part, (c, top) in enumerate(term):
            a[row, part * size : part * size + top + 1] += c  # F_g(top): shares 0..top
    joint = np.zeros((2 * size, 2 * size))
    joint[:size, :size], joint[size:, size:] = covs
    return a @ np.concatenate(shares), a @ joint @ a.T, shares[1]


def _family_pvalue(
    est: NDArray[np.float64], cov: NDArray[np.float64], welch: tuple[float, float] | None
) -> float:
    """p-value of ``est >= 0`` (all of them) by the likelihood-ratio statistic's
    chi-bar-squared law at the least favourable null ``0`` (Kudo 1963)."""
    if len(est) == 1:
        if welch is not None:  # R's one-moment case: Welch's one-sided t-test
            stat, df = welch
            return float(stats.t.cdf(stat, df))
        return float(stats.norm.cdf(est[0] / math.sqrt(cov[0, 0])))
    if np.any(np.diag(cov) <= 0) or np.linalg.matrix_rank(cov) < len(est):
        raise ValueError(
            "the covariance of the proportions the test compares is singular (too few "
            "rows, or counts that never vary, to tell them apart)"
        )
    vals, vecs = np.linalg.eigh(cov)
    keep = vals > vals.max() * 1e-12
    root_inv = (vecs[:, keep] / np.sqrt(vals[keep])) @ vecs[:, keep].T
    _, rnorm = optimize.nnls(root_inv, root_inv @ est)
    lam = float(rnorm) ** 2
    w = chi_bar_squared_weights(cov)
    tail = [1.0 if lam <= 1e-12 else 0.0] + [
        float(stats.chi2.sf(lam, k)) for k in range(1, len(est) + 1)
    ]
    return float(min(1.0, max(0.0, w @ np.array(tail))))


def _welch(x: NDArray[np.bool_], z: NDArray[np.bool_]) -> tuple[float, float]:
    """Welch's t statistic of mean(x) - mean(z) and its degrees of freedom."""
    vx, vz = np.var(x, ddof=1) / len(x), np.var(z, ddof=1) / len(z)
    se2 = vx + vz
    stat = (x.mean() - z.mean()) / math.sqrt(se2) if se2 > 0 else -math.inf
    df = se2**2 / (vx**2 / (len(x) - 1) + vz**2 / (len(z) - 1)) if se2 > 0 else 1.0
    return float(stat), float(df)


def _family(
    name: str,
    idx: list[int],
    moments: tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]],
    counts: tuple[NDArray[np.float64], NDArray[np.bool_], int],
    selection: str | None,
) -> float | None:
    """One family's p-value (``"yes"`` or ``"no"``, its moments ``idx`` of ``(est,
    cov, se)``) after moment selection; None when selection kept none."""
    est, cov, se = moments
    y, t, j_items = counts
    n, size = len(y), j_items + 1
    pi = est[idx]
    drop = np.isclose(pi, 0.0, atol=1e-15)
    if selection == "andrews_soares":
        with np.errstate(divide="ignore", invalid="ignore"):
            drop |= np.where(se[idx] > 0, pi / se[idx], np.inf * np.sign(pi)) > math.sqrt(
                math.log(n)
            )
    elif selection == "list_package" and len(pi) > 1:
        spread = float(np.std(pi, ddof=1))
        if spread > 0:
            drop |= math.sqrt(n) * pi / spread > math.sqrt(math.log(n))
    kept = [i for i, d in zip(idx, drop, strict=True) if not d]
    if not kept:
        return None
    welch = None
    if selection == "list_package" and len(kept) == 1:
        a = kept[0] % size
        x_b, z_b = ((y[~t] <= a), (y[t] <= a)) if name == "yes" else ((y[t] <= a), (y[~t] <= a - 1))
        welch = _welch(x_b, z_b)
    return _family_pvalue(est[kept], cov[np.ix_(kept, kept)], welch)


def list_design_effect_test(
    counts: ArrayLike,
    treated: ArrayLike,
    *,
    items: int,
    selection: str | None = "andrews_soares",
    channel: Any = None,
) -> DesignEffectTest:
    """Test the list experiment's assumption of no design effect (Blair & Imai 2012).

    Without a design effect every respondent type's share ``pi(Y(0) = j, Z = z)``
    (estimated from differences of the two groups' empirical CDFs) is non-negative.
    Each family (``z = 1``: j = 0..J-1; ``z = 0``: j = 1..J) is tested by the
    likelihood-ratio statistic against the non-negative orthant, whose null law is
    chi-bar-squared (Kudo 1963; weights computed exactly up to 3 moments, by Genz's
    algorithm above); the two p-values are combined by Bonferroni.

    Parameters
    ----------
    counts, treated, items
        As :func:`list_difference_in_means`.
    selection : {"andrews_soares", "list_package", None}
        Generalized moment selection (Andrews & Soares 2010), which drops inequalities
        far inside the null to gain power: ``"andrews_soares"`` (default) drops
        moment j when ``pi_j / se_j > sqrt(log n)``, as the method defines it.
        ``"list_package"`` reproduces R ``list::ict.test(gms = TRUE)``, which divides
        ``sqrt(n) pi_j`` by the *standard deviation of the J estimates* instead of
        the estimate's own (so it drops many more moments; on the race data it keeps
        one moment where the method keeps three, and gives p = 0.0443 against
        0.1539), and uses Welch's t-test when one moment remains. None: no selection.
    channel : Design, optional
        A known channel the counts went through before they were stored (the server's
        post-randomization of a list count, :class:`~deniable.mechanisms.GeometricCount`
        over ``0..J+1`` in both groups; as :func:`list_difference_in_means`). Each
        group's distribution of the true count is estimated as ``P^-1 q`` (``q`` the
        stored counts' shares, ``P`` the misclassification matrix), the proportions and
        their covariance follow from it, and ``revealed_yes`` and ``revealed_no`` become
        estimated shares of the true count (clipped to [0, 1]). The wider covariance
        is the channel's price: the test has less power. Not with
        ``selection="list_package"``, whose Welch test reads the raw counts.

    Returns
    -------
    DesignEffectTest
        The Bonferroni p-value, each family's, the shares of respondent types with
        standard errors, and the floor and ceiling shares.

    Raises
    ------
    ValueError
        On malformed reports, an unknown ``selection``, a channel of another size than
        ``(J + 2) x (J + 2)``, a channel with ``selection="list_package"``, or counts
        too few or too uniform for the proportions' covariance to be of full rank (a
        pilot of a few rows), naming the groups' sizes.

    Examples
    --------
    See :class:`DesignEffectTest`.
    """
    if selection not in ("andrews_soares", "list_package", None):
        raise ValueError(
            f"selection must be 'andrews_soares', 'list_package' or None, got {selection!r}"
        )
    if channel is not None and selection == "list_package":
        raise ValueError(
            "selection='list_package' reads the raw counts (its Welch test); through a "
            "channel use selection='andrews_soares' or None"
        )
    y, t, j_items = check_list_counts(counts, treated, items, channelled=channel is not None)
    P = None if channel is None else channel_matrix(channel, j_items)
    est, cov, treated_shares = _cdf_moments(y, t, j_items, P)
    se = np.sqrt(np.diag(cov))
    size = j_items + 1
    families = {"yes": list(range(0, j_items)), "no": [size + j for j in range(1, j_items + 1)]}
    try:
        pvalues = {
            name: _family(name, idx, (est, cov, se), (y, t, j_items), selection)
            for name, idx in families.items()
        }
    except ValueError as exc:  # a pilot's few rows: say so, with the sizes
        raise ValueError(
            f"the design-effect test needs more varied counts: {exc}; got "
            f"{int(t.sum())} treated and {int((~t).sum())} control reports"
        ) from None
    found = [p for p in pvalues.values() if p is not None]
    pvalue = min(1.0, 2 * min(found)) if found else 1.0
    return DesignEffectTest(
        pvalue=pvalue,
        pvalue_yes=pvalues["yes"],
        pvalue_no=pvalues["no"],
        proportions=est.reshape(2, size),
        std_errors=se.reshape(2, size),
        revealed_yes=float(np.clip(treated_shares[j_items + 1], 0.0, 1.0)),
        revealed_no=float(np.clip(treated_shares[0], 0.0, 1.0)),
        selection=str(selection),
    )
