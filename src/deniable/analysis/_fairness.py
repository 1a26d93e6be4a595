"""Fairness audits with randomized response: statistical parity from private attributes.

Statistical parity (demographic parity; Dwork et al. 2012) of a binary outcome with
respect to a binary protected group is
``Pr(outcome = 1 | not in group) - Pr(outcome = 1 | in group)``; for ``k`` groups and
``m`` outcomes its generalisation is the largest total variation distance between the
outcome distributions of two groups, ``max_{g, h} (1/2) sum_o |Pr(o | g) - Pr(o | h)|``.

When the protected attribute (or the outcome) is collected by randomized response
(Kilbertus et al. 2018 and Mozannar, Ohannessian & Srebro 2020 audit fairness from
locally private attributes), the joint reports of (group, outcome) pass through the
design ``P_group ⊗ P_outcome`` (DESIGN.md, Section 3), so the joint distribution is
estimated by the unbiased moment estimator ``pi = (P_g ⊗ P_o)^-1 lam`` with covariance
``M^-1 (diag(lam) - lam lam^T) M^-T / n``, and the parity difference, a smooth function
of ``pi``, gets a delta-method standard error. The total variation distance (not smooth
at 0) gets a bootstrap interval over the report counts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from .._fitting import WaldResult
from .._validation import as_codes, check_confidence_level
from ..mechanisms import Design, Warner

__all__ = [
    "ADULT_GROUPS",
    "ParityResult",
    "adult_parity_audit",
    "statistical_parity",
]

_Array = NDArray[np.float64]


def _conditional(pi: _Array, k: int, m: int) -> _Array:
    joint = pi.reshape(k, m)
    return np.asarray(joint / joint.sum(axis=1, keepdims=True), dtype=np.float64)


def _tv(cond: _Array) -> float:
    k = cond.shape[0]
    if k < 2:
        return 0.0
    diffs = np.abs(cond[:, None, :] - cond[None, :, :]).sum(axis=2) / 2
    return float(diffs.max())


@dataclass(frozen=True)
class ParityResult(WaldResult):
    """Statistical parity of an outcome across groups, with its uncertainty.

    Attributes
    ----------
    joint : ndarray, shape (k, m)
        Estimated ``Pr(group = g, outcome = o)`` (unbiased, may leave [0, 1]).
    joint_covariance : ndarray, shape (k m, k m)
    conditional : pandas.DataFrame
        ``Pr(outcome = o | group = g)``, rows = groups, columns = outcomes.
    n : int
        Number of respondents.
    counts : ndarray of int, shape (k_r m_r,)
        Joint report counts (the bootstrap resamples these).

    Examples
    --------
    >>> import numpy as np
    >>> from deniable.analysis import statistical_parity
    >>> from deniable import Warner
    >>> rng = np.random.default_rng(0)
    >>> design = Warner(p=0.8)
    >>> outcome = design.randomize(rng.random(4000) < 0.3, rng)
    >>> result = statistical_parity(outcome, np.repeat([0, 1], 2000), outcome_design=design)
    >>> type(result).__name__
    'ParityResult'
    """

    joint: _Array
    joint_covariance: _Array
    conditional: pd.DataFrame
    n: int
    counts: NDArray[np.int64]
    channel_inverse: _Array

    @property
    def difference(self) -> float:
        """``Pr(o = 1 | group = 0) - Pr(o = 1 | group = 1)`` (binary group and outcome).

        Raises
        ------
        ValueError
            With more than two groups or outcomes (use :attr:`total_variation`).
        """
        self._binary()
        c = self.conditional.to_numpy()
        return float(c[0, 1] - c[1, 1])

    def _binary(self) -> None:
        if self.joint.shape != (2, 2):
            raise ValueError(
                f"difference needs a binary group and outcome, got {self.joint.shape[0]} "
                f"groups and {self.joint.shape[1]} outcomes: use total_variation"
            )

    @property
    def std_error(self) -> float:
        """Delta-method standard error of :attr:`difference`."""
        self._binary()
        grad = self._difference_gradient()
        return math.sqrt(max(float(grad @ self.joint_covariance @ grad), 0.0))

    def _difference_gradient(self) -> _Array:
        # c[g, 1] = pi[g, 1] / (pi[g, 0] + pi[g, 1])
        pi = self.joint
        grad = np.zeros(4)
        for g, sign in ((0, 1.0), (1, -1.0)):
            s = pi[g].sum()
            grad[2 * g + 0] = sign * (-pi[g, 1] / s**2)
            grad[2 * g + 1] = sign * (pi[g, 0] / s**2)
        return grad

    @property
    def estimate(self) -> float:
        """The parity difference (:attr:`difference`)."""
        return self.difference

    @property
    def labels(self) -> list[str]:
        """One label: ``"difference"``."""
        return ["difference"]

    def _wald(self, z: float) -> tuple[float, float]:
        """Clipped to [-1, 1]."""
        d, se = self.difference, self.std_error
        return max(-1.0, d - z * se), min(1.0, d + z * se)

    @property
    def total_variation(self) -> float:
        """Largest total variation distance between two groups' outcome distributions."""
        return _tv(self.conditional.to_numpy())

    def total_variation_interval(
        self,
        confidence_level: float = 0.95,
        *,
        n_boot: int = 2000,
        rng: np.random.Generator | None = None,
    ) -> tuple[float, float]:
        """Percentile bootstrap interval for :attr:`total_variation`.

        Resamples the joint report counts multinomially (``n_boot`` times, vectorised)
        and re-estimates; ``rng`` defaults to a generator seeded with 0.
        """
        level = check_confidence_level(confidence_level)
        rng = np.random.default_rng(0) if rng is None else rng
        k, m = self.joint.shape
        boot = rng.multinomial(self.n, self.counts / self.n, size=n_boot) / self.n
        pis = boot @ self.channel_inverse.T  # (n_boot, k m)
        joint = pis.reshape(n_boot, k, m)
        with np.errstate(divide="ignore", invalid="ignore"):
            cond = joint / joint.sum(axis=2, keepdims=True)
        diffs = np.abs(cond[:, :, None, :] - cond[:, None, :, :]).sum(axis=3) / 2
        tv = np.nanmax(diffs.reshape(n_boot, -1), axis=1)
        lo, hi = np.quantile(tv, [(1 - level) / 2, (1 + level) / 2])
        return float(lo), float(hi)


def statistical_parity(
    outcome: ArrayLike,
    group: ArrayLike,
    *,
    outcome_design: Design | None = None,
    group_design: Design | None = None,
) -> ParityResult:
    """Statistical parity of an outcome with respect to a (possibly private) group.

    Parameters
    ----------
    outcome : array_like of int or bool, shape (n,)
        Outcome codes ``0..m-1`` (1 = the favourable outcome), or their randomized
        reports when ``outcome_design`` is given.
    group : array_like of int or bool, shape (n,)
        Group codes ``0..k-1`` (1 = member of the protected group), or their randomized
        reports when ``group_design`` is given.
    outcome_design, group_design : Design, optional
        The designs through which the outcome / the group membership were collected;
        None means collected in the clear.

    Returns
    -------
    ParityResult
        ``.difference`` = ``Pr(outcome = 1 | group = 0) - Pr(outcome = 1 | group = 1)``,
        ``.confidence_interval()``, ``.total_variation``.

    Raises
    ------
    ValueError
        For codes outside the designs' report sets, or arrays of different shapes.

    Examples
    --------
    >>> round(statistical_parity([1, 1, 0, 1, 0, 0], [0, 0, 0, 1, 1, 1]).difference, 4)
    0.3333
    """
    o_raw, g_raw = np.asarray(outcome), np.asarray(group)
    if o_raw.shape != g_raw.shape or o_raw.ndim != 1:
        raise ValueError(
            f"outcome and group must be 1-D arrays of one shape, got {o_raw.shape}, {g_raw.shape}"
        )

    def _size(raw: NDArray[np.generic], design: Design | None, name: str) -> tuple[int, _Array]:
        if design is not None:
            return design.n_reports, np.asarray(design.matrix)
        arr = raw.astype(np.int64) if raw.dtype == np.bool_ else raw
        if raw.size and not np.issubdtype(arr.dtype, np.integer):
            raise TypeError(f"{name} must hold integer or bool codes, got dtype {raw.dtype}")
        k = max(2, int(arr.max()) + 1) if arr.size else 2
        return k, np.eye(k)

    mo, Po = _size(o_raw, outcome_design, "outcome")
    mg, Pg = _size(g_raw, group_design, "group")
    o = as_codes("outcome", o_raw, mo).astype(np.int64)
    g = as_codes("group", g_raw, mg).astype(np.int64)
    n = o.size
    if n == 0:
        raise ValueError("outcome and group must not be empty")
    counts = np.bincount(g * mo + o, minlength=mg * mo).astype(np.int64)
    M = np.kron(Pg, Po)  # Pr(joint report | joint truth)
    Minv = np.linalg.pinv(M)
    lam = counts / n
    pi = Minv @ lam
    cov = Minv @ (np.diag(lam) - np.outer(lam, lam)) @ Minv.T / n
    k, m = Pg.shape[1], Po.shape[1]
    cond = _conditional(pi, k, m)
    labels_g = group_design.truth_labels if group_design is not None else list(range(k))
    labels_o = outcome_design.truth_labels if outcome_design is not None else list(range(m))
    return ParityResult(
        joint=pi.reshape(k, m),
        joint_covariance=cov,
        conditional=pd.DataFrame(cond, index=list(labels_g), columns=list(labels_o)),
        n=n,
        counts=counts,
        channel_inverse=Minv,
    )


#: The audits of the UCI Adult demonstration: name -> (column, protected value).
ADULT_GROUPS: dict[str, tuple[str, str]] = {
    "female": ("sex", "Female"),
    "private employment": ("workclass", "Private"),
    "Asian-Pac-Islander": ("race", "Asian-Pac-Islander"),
    "divorced": ("marital-status", "Divorced"),
}


def adult_parity_audit(
    epsilon: float = 1.0,
    *,
    confidence_level: float = 0.95,
    rng: np.random.Generator | None = None,
) -> pd.DataFrame:
    """Parity of income > $50K on UCI Adult, in the clear and with a private attribute.

    For each protected attribute of :data:`ADULT_GROUPS`, the parity difference
    ``Pr(>50K | not in group) - Pr(>50K | in group)`` is computed on the clear data,
    then again after each person's membership passed through Warner's design at
    ``epsilon`` nats (``p = e^eps / (1 + e^eps)``, Warner 1965; = binary randomized
    response of Kairouz, Oh & Viswanath 2016), with its confidence interval.

    Parameters
    ----------
    epsilon : float > 0, nats
    confidence_level : float in (0, 1)
    rng : numpy.random.Generator, optional
        Simulation randomness (default seeded with 0; this is a demonstration, not
        real respondents).

    Returns
    -------
    pandas.DataFrame
        One row per attribute: members, clear difference and interval, private
        difference, standard error and interval, and whether the private interval
        covers the clear value.

    Raises
    ------
    ValueError
        For an epsilon that is not a finite number of nats > 0, or a confidence level
        outside (0, 1).

    Examples
    --------
    >>> import numpy as np
    >>> from deniable.analysis import adult_parity_audit
    >>> audit = adult_parity_audit(1.0, rng=np.random.default_rng(0))
    >>> "private_difference" in audit.columns
    True
    """
    from ..data import load_adult

    rng = np.random.default_rng(0) if rng is None else rng
    if not (isinstance(epsilon, int | float) and epsilon > 0 and math.isfinite(epsilon)):
        raise ValueError(f"epsilon must be a finite number of nats > 0, got {epsilon!r}")
    design = Warner(p=math.exp(epsilon) / (1 + math.exp(epsilon)))
    adult = load_adult()
    rich = (adult["income"] == ">50K").to_numpy().astype(np.int64)
    rows = []
    for name, (column, value) in ADULT_GROUPS.items():
        member = (adult[column] == value).to_numpy()
        clear = statistical_parity(rich, member)
        reports = design.randomize(member, rng)
        private = statistical_parity(rich, reports, group_design=design)
        lo, hi = private.confidence_interval(confidence_level)
        clo, chi = clear.confidence_interval(confidence_level)
        rows.append(
            {
                "attribute": name,
                "members": int(member.sum()),
                "clear_difference": clear.difference,
                "clear_low": clo,
                "clear_high": chi,
                "private_difference": private.difference,
                "private_std_error": private.std_error,
                "private_low": lo,
                "private_high": hi,
                "covers_clear": bool(lo <= clear.difference <= hi),
            }
        )
    return pd.DataFrame(rows).set_index("attribute")
