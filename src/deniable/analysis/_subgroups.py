"""Prevalence by subgroup: a randomized answer crossed with clear attributes.

A randomized answer crossed with a clear attribute is the design ``P ⊗ I`` (DESIGN.md,
Section 3): within each subgroup the reports go through the same design, so the
subgroup prevalences are the core's unbiased moment estimates computed group by group
(independent between groups). Differences and ratios between groups, and the Wald
test that all groups share the prevalence, follow by the delta method (e.g. Chaudhuri
& Mukerjee 1988, Section 2; Blair, Imai & Zhou 2015, Section 4 for the two-sample
difference).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from .._fitting import TestResult, WaldResult
from .._validation import as_codes
from ..estimation import ConfidenceInterval, EstimateResult, PrevalenceEstimate, estimate
from ..mechanisms import Design
from ..tallies import Tally

__all__ = ["Contrast", "SubgroupResult", "subgroup_prevalence"]


@dataclass(frozen=True)
class Contrast(WaldResult):
    """A difference or ratio of two subgroup prevalences.

    Attributes
    ----------
    estimate : float
    std_error : float
        Delta-method standard error (for a ratio: of the estimate itself).
    kind : {"difference", "ratio"}

    Examples
    --------
    >>> import numpy as np
    >>> from deniable import Warner
    >>> from deniable.analysis import subgroup_prevalence
    >>> design = Warner(p=0.8)
    >>> reports = np.array([1] * 40 + [0] * 60 + [1] * 60 + [0] * 40)
    >>> result = subgroup_prevalence(design, reports, np.repeat(["a", "b"], 100))
    >>> round(result.difference("b", "a").estimate, 3)
    0.333
    """

    estimate: float
    std_error: float
    kind: str
    log_std_error: float | None = None

    @property
    def labels(self) -> list[str]:
        """One label: ``self.kind``."""
        return [self.kind]

    def _wald(self, z: float) -> tuple[float, float]:
        """A ratio of positive estimates uses the log scale (asymmetric)."""
        if self.kind == "ratio" and self.log_std_error is not None:
            centre = math.log(self.estimate)
            return math.exp(centre - z * self.log_std_error), math.exp(
                centre + z * self.log_std_error
            )
        return self.estimate - z * self.std_error, self.estimate + z * self.std_error


@dataclass(frozen=True)
class SubgroupResult(EstimateResult):
    """Per-group prevalence estimates of one randomized question: an estimate-like
    result whose entries are the groups (``estimate``, ``std_error``, ``labels``,
    ``confidence_interval``, ``to_dict``, ``to_frame`` of the base), each the
    prevalence of ``category`` in its group.

    Attributes
    ----------
    estimates : dict
        Group value -> :class:`~deniable.estimation.PrevalenceEstimate`.
    category : int
        The truth category estimated per group and compared by :meth:`difference`,
        :meth:`ratio` (1 = "yes").

    Examples
    --------
    >>> import numpy as np
    >>> from deniable import Warner
    >>> from deniable.analysis import subgroup_prevalence
    >>> reports = np.array([1] * 40 + [0] * 60 + [1] * 60 + [0] * 40)
    >>> result = subgroup_prevalence(Warner(p=0.8), reports, np.repeat(["a", "b"], 100))
    >>> result.labels, result.estimate.round(3).tolist()
    (['a', 'b'], [0.333, 0.667])
    """

    estimates: dict[Hashable, PrevalenceEstimate]
    category: int = 1

    @property
    def estimate(self) -> NDArray[np.float64]:
        """Prevalence of ``category`` per group, float64, shape (groups,)."""
        return np.array([float(e.estimate[self.category]) for e in self.estimates.values()])

    @property
    def std_error(self) -> NDArray[np.float64]:
        """Standard error per group, float64, shape (groups,)."""
        return np.array([float(e.std_error[self.category]) for e in self.estimates.values()])

    @property
    def labels(self) -> list[str]:
        """The groups, as text."""
        return [str(g) for g in self.estimates]

    @property
    def n(self) -> int:
        """Reports over all groups."""
        return sum(e.n for e in self.estimates.values())

    @property
    def default_interval_method(self) -> str:
        """The groups' default method (the first group's)."""
        return next(iter(self.estimates.values())).default_interval_method

    def confidence_interval(
        self, confidence_level: float = 0.95, method: str | None = None
    ) -> ConfidenceInterval[NDArray[np.float64]]:
        """Each group's interval for ``category`` (its estimate's
        :meth:`~deniable.estimation.PrevalenceEstimate.confidence_interval`), float64
        arrays of shape (groups,)."""
        ends = [e.confidence_interval(confidence_level, method) for e in self.estimates.values()]
        return ConfidenceInterval(
            np.array([float(ci.low[self.category]) for ci in ends]),
            np.array([float(ci.high[self.category]) for ci in ends]),
        )

    def table(self, confidence_level: float = 0.95, method: str | None = None) -> pd.DataFrame:
        """One row per group: n, estimate, std_error, low, high (of ``category``)."""
        rows = []
        for label, est in self.estimates.items():
            ci = est.confidence_interval(confidence_level, method)
            rows.append(
                {
                    "group": label,
                    "n": est.n,
                    "estimate": float(est.estimate[self.category]),
                    "std_error": float(est.std_error[self.category]),
                    "low": float(ci.low[self.category]),
                    "high": float(ci.high[self.category]),
                }
            )
        return pd.DataFrame(rows).set_index("group")

    def _pair(self, a: Hashable, b: Hashable) -> tuple[PrevalenceEstimate, PrevalenceEstimate]:
        for g in (a, b):
            if g not in self.estimates:
                raise ValueError(f"unknown group {g!r}; groups: {list(self.estimates)}")
        return self.estimates[a], self.estimates[b]

    def difference(self, a: Hashable, b: Hashable) -> Contrast:
        """``prevalence[a] - prevalence[b]`` with ``SE = sqrt(V_a + V_b)``."""
        ea, eb = self._pair(a, b)
        c = self.category
        var = float(ea.std_error[c] ** 2 + eb.std_error[c] ** 2)
        return Contrast(float(ea.estimate[c] - eb.estimate[c]), math.sqrt(var), "difference")

    def ratio(self, a: Hashable, b: Hashable) -> Contrast:
        """``prevalence[a] / prevalence[b]``; delta method, on the log scale if both > 0.

        Raises
        ------
        ValueError
            If the estimate for ``b`` is 0.
        """
        ea, eb = self._pair(a, b)
        c = self.category
        pa, pb = float(ea.estimate[c]), float(eb.estimate[c])
        if pb == 0:
            raise ValueError(f"the prevalence of group {b!r} is estimated at 0: no ratio")
        va, vb = float(ea.std_error[c] ** 2), float(eb.std_error[c] ** 2)
        r = pa / pb
        se = math.sqrt(va + r**2 * vb) / abs(pb)  # Var(pa/pb) ~ (va + r^2 vb) / pb^2
        log_se = se / r if pa > 0 and pb > 0 else None  # Var(log r) ~ Var(r) / r^2
        return Contrast(r, se, "ratio", log_se)

    def test_equal(self) -> TestResult:
        """Wald test that every group has the same truth distribution (df = (G-1)(k-1))."""
        ests = list(self.estimates.values())
        G = len(ests)
        if G < 2:
            raise ValueError("test_equal needs at least two groups")
        k = ests[0].estimate.size
        keep = list(range(1, k))  # the first category is determined by the others
        theta = np.concatenate([e.estimate[keep] for e in ests])
        blocks = [np.asarray(e.covariance)[np.ix_(keep, keep)] for e in ests]
        V = np.zeros((theta.size, theta.size))
        for i, blk in enumerate(blocks):
            s = slice(i * len(keep), (i + 1) * len(keep))
            V[s, s] = blk
        # contrasts: group i minus group 0, for i = 1..G-1
        H = np.zeros(((G - 1) * len(keep), theta.size))
        for i in range(1, G):
            for j in range(len(keep)):
                H[(i - 1) * len(keep) + j, j] = -1.0
                H[(i - 1) * len(keep) + j, i * len(keep) + j] = 1.0
        d = H @ theta
        stat = float(d @ np.linalg.pinv(H @ V @ H.T) @ d)
        df = (G - 1) * len(keep)
        return TestResult(stat, df, float(stats.chi2.sf(stat, df)))


def subgroup_prevalence(
    design: Design | Mapping[Hashable, Design],
    reports: ArrayLike,
    groups: ArrayLike,
    *,
    method: str = "moment",
    category: int = 1,
    design_keys: ArrayLike | None = None,
) -> SubgroupResult:
    """Estimate the prevalence of a randomized answer within each clear subgroup.

    Parameters
    ----------
    design : Design, or mapping of key to Design
        The design every respondent used (matrix shape (m, k)); or, for designs
        varying by respondent (arms, randomization groups), a mapping of key to design
        with ``design_keys``: each subgroup's estimate then pools its respondents'
        designs (:func:`deniable.estimation.estimate` with ``groups``).
    reports : array_like of int, shape (n,)
        Report codes ``0..m-1``.
    groups : array_like, shape (n,)
        Each respondent's clear attribute (any hashable values; missing values are
        not allowed).
    method : {"moment", "mle", "bayes"}
        Estimator within each group (see :func:`deniable.estimation`).
    design_keys : array_like, shape (n,), optional
        Each respondent's design key, with a mapping of designs (and only then).
    category : int, default 1
        The truth category that :meth:`SubgroupResult.difference` and ``ratio`` compare.

    Returns
    -------
    SubgroupResult
        Each group's estimate (an estimate on the common base, entries by group), the
        test of equal prevalence and contrasts between groups.

    Raises
    ------
    ValueError
        For reports outside ``0..m-1``, shapes that differ, or a category outside ``0..k-1``.

    Examples
    --------
    >>> import numpy as np
    >>> from deniable import ForcedResponse
    >>> rng = np.random.default_rng(1)
    >>> coins = ForcedResponse(p_yes=0.25, p_no=0.25)
    >>> sex = rng.integers(0, 2, 20_000)
    >>> reports = coins.randomize(rng.random(20_000) < np.where(sex == 1, 0.3, 0.1), rng)
    >>> res = subgroup_prevalence(coins, reports, sex)
    >>> bool(res.test_equal().pvalue < 1e-6)
    True
    """
    if isinstance(design, Mapping):
        return _pooled_subgroups(design, reports, groups, design_keys, method, category)
    if design_keys is not None:
        raise ValueError("design_keys is used only with a mapping of designs")
    codes = as_codes("reports", reports, design.n_reports)
    labels = np.asarray(groups)
    if labels.shape != codes.shape:
        raise ValueError(f"groups must have shape {codes.shape}, got {labels.shape}")
    if not 0 <= category < design.n_truths:
        raise ValueError(f"category must be in 0..{design.n_truths - 1}, got {category}")
    values, inverse = np.unique(labels, return_inverse=True)
    m = design.n_reports
    counts = np.bincount(inverse * m + codes, minlength=values.size * m).reshape(values.size, m)
    estimates: dict[Hashable, PrevalenceEstimate] = {}
    for i, v in enumerate(values):
        key = v.item() if hasattr(v, "item") else v
        estimates[key] = estimate(design, Tally(counts[i]), method=method)
    return SubgroupResult(estimates, category)


def _pooled_subgroups(
    designs: Mapping[Hashable, Design],
    reports: ArrayLike,
    groups: ArrayLike,
    design_keys: ArrayLike | None,
    method: str,
    category: int,
) -> SubgroupResult:
    """Subgroups of respondents whose designs vary: a pooled estimate per subgroup."""
    if design_keys is None:
        raise ValueError("design_keys must give each respondent's design with several designs")
    codes = np.asarray(reports)
    labels = np.asarray(groups)
    keys = np.asarray(design_keys)
    if labels.shape != codes.shape or keys.shape != codes.shape:
        raise ValueError(
            f"groups and design_keys must have shape {codes.shape}, got {labels.shape} "
            f"and {keys.shape}"
        )
    k = next(iter(designs.values())).n_truths
    if not 0 <= category < k:
        raise ValueError(f"category must be in 0..{k - 1}, got {category}")
    estimates: dict[Hashable, PrevalenceEstimate] = {}
    for v in np.unique(labels):
        mine = labels == v
        used = {key: d for key, d in designs.items() if key in set(keys[mine].tolist())}
        key = v.item() if hasattr(v, "item") else v
        if len(used) == 1:
            estimates[key] = estimate(next(iter(used.values())), codes[mine], method=method)
        else:
            estimates[key] = estimate(used, codes[mine], method=method, groups=keys[mine])
    return SubgroupResult(estimates, category)
