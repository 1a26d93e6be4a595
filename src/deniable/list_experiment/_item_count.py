"""The list experiment (item count technique): moment estimators, the combined list and
direct question, and the test for design effects.

A list experiment hands a random *treated* half of the sample ``J + 1`` items (``J``
innocuous control items and the sensitive one) and the *control* half the ``J``
control items alone; each respondent reports only how many items apply. The
difference of the two groups' mean counts estimates the prevalence of the sensitive
item (Raghavarao & Federer 1979; Imai 2011). No randomization happens on the device:
a treated count of 0 reveals "no" and a count of ``J + 1`` reveals "yes" for certain
(Blair & Imai 2012, the floor and ceiling), which is why a release rule must treat the
count as a key.

Sources
-------
* Imai, K. (2011). Multivariate regression analysis for the item count technique.
  JASA 106(494), 407-416.
* Blair, G. & Imai, K. (2012). Statistical analysis of list experiments. Political
  Analysis 20(1), 47-77: the design-effect test (Section 3.1, with the generalized
  moment selection of Andrews & Soares 2010) and floor and ceiling effects.
* Aronow, P. M., Coppock, A., Crawford, F. W. & Green, D. P. (2015). Combining list
  experiment and direct question estimates of sensitive behavior prevalence. Journal
  of Survey Statistics and Methodology 3(1), 43-66.

Agreement with R's ``list`` 9.2.6 (``ictreg(method = "lm")``, ``combinedListDirect``,
``ict.test``) is tested on the package's own data to 4 significant digits; the one
place R is wrong (its moment selection) is described in ``_design_effect``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from .._fitting import WaldResult
from .._validation import JSON, renamed_keywords
from ..estimation import ConfidenceInterval

__all__ = [
    "CombinedListEstimate",
    "ListEstimate",
    "list_combined",
    "list_difference_in_means",
]

#: Control items a list may have (the count's range is bounded before any allocation).
MAX_ITEMS = 50


def check_list_counts(
    counts: ArrayLike, treated: ArrayLike, items: object, channelled: bool = False
) -> tuple[NDArray[np.float64], NDArray[np.bool_], int]:
    """Validate a list experiment's reports; return (counts, treated mask, J).

    Raises
    ------
    ValueError
        If ``items`` is not an integer in [1, MAX_ITEMS], if the arrays differ in length
        or are not 1-D, if ``treated`` holds other than 0/1, if a control count lies
        outside ``0..J`` or a treated count outside ``0..J+1`` (the message names the
        first offending row; with ``channelled``, every report lies in ``0..J+1``: a
        channel may move a control count to ``J + 1``), or if either group is smaller
        than 2.
    """
    if isinstance(items, bool) or not isinstance(items, (int, np.integer)):
        raise ValueError(f"items (the number of control items J) must be an integer, got {items!r}")
    j = int(items)
    if not 1 <= j <= MAX_ITEMS:
        raise ValueError(
            f"items (the number of control items J) must lie in 1..{MAX_ITEMS}, got {j}"
        )
    y = np.asarray(counts, dtype=np.float64)
    t = np.asarray(treated)
    if y.ndim != 1 or t.shape != y.shape:
        raise ValueError(
            "counts and treated must be 1-D arrays of one length, "
            f"got shapes {y.shape} and {t.shape}"
        )
    if not np.isin(t, (0, 1)).all():
        raise ValueError("treated must hold 0 (control list) or 1 (list with the sensitive item)")
    mask = t.astype(bool)
    top = np.where(mask | channelled, j + 1, j)
    bad = ~np.isfinite(y) | (y != np.round(y)) | (y < 0) | (y > top)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"counts[{i}] = {float(y[i])!r} is not a count of 0..{int(top[i])} "
            f"({'treated' if mask[i] else 'control'} list of {int(top[i])} items)"
        )
    if mask.sum() < 2 or (~mask).sum() < 2:
        raise ValueError(
            "each group needs at least 2 reports: "
            f"{int(mask.sum())} treated, {int((~mask).sum())} control"
        )
    return y, mask, j


@dataclass(frozen=True)
class ListEstimate(WaldResult):
    """A prevalence from a list experiment, on the common base
    (:class:`~deniable.estimation.EstimateResult`: ``confidence_interval()``,
    ``summary()``, ``to_frame()``, ``to_dict()``).

    Attributes
    ----------
    estimate : float
        The estimated prevalence of the sensitive item (not clipped to [0, 1]).
    std_error : float
        Its standard error.
    n_treated, n_control : int
        Reports in each group.
    items : int
        Control items ``J``.
    method : str
        ``"difference_in_means"`` (Imai 2011), with ``covariates`` the regression
        adjustment of Aronow et al. (2015), or ``"combined"``.

    Examples
    --------
    >>> est = list_difference_in_means([2, 3, 1, 2, 1, 1, 2, 1], [1, 1, 1, 1, 0, 0, 0, 0], items=3)
    >>> round(est.estimate, 4), est.method, est.n
    (0.75, 'difference_in_means', 8)
    >>> [round(b, 3) for b in est.confidence_interval(0.95)]
    [-0.188, 1.688]
    """

    estimate: float
    std_error: float
    n_treated: int
    n_control: int
    items: int
    method: str

    @property
    def labels(self) -> list[str]:
        """One label: ``"prevalence"``."""
        return ["prevalence"]

    @property
    def n(self) -> int:
        """Reports in both groups."""
        return self.n_treated + self.n_control

    def _wald(self, z: float) -> tuple[float, float]:
        """``estimate +- z * std_error``, not clipped (the moment estimate is not)."""
        return self.estimate - z * self.std_error, self.estimate + z * self.std_error

    @renamed_keywords(level="confidence_level")
    def confidence_interval(
        self, confidence_level: float = 0.95, method: str | None = None
    ) -> ConfidenceInterval[float]:
        """Wald interval ``estimate +- z * std_error`` (not clipped).

        Raises
        ------
        ValueError
            For a level outside (0, 1) or a method other than ``normal``.
        """
        return super().confidence_interval(confidence_level, method)

    def to_dict(self, confidence_level: float = 0.95, method: str | None = None) -> dict[str, JSON]:
        """The one JSON shape of every estimate, with ``n_treated``, ``n_control``,
        ``items`` and ``method``."""
        out = super().to_dict(confidence_level, method)
        return out | {
            "n_treated": self.n_treated,
            "n_control": self.n_control,
            "items": self.items,
            "method": self.method,
        }


def hc3_covariance(x: NDArray[np.float64], residual: NDArray[np.float64]) -> NDArray[np.float64]:
    """MacKinnon & White's (1985) HC3 covariance of the OLS coefficients of the design
    ``x`` (n, p) given its residuals (n,): shape (p, p) (R's ``sandwich::vcovHC``)."""
    bread = np.linalg.inv(x.T @ x)
    leverage = np.einsum("ij,jk,ik->i", x, bread, x)
    meat = x.T @ (((residual / (1 - leverage)) ** 2)[:, None] * x)
    return np.asarray(bread @ meat @ bread, dtype=np.float64)


def _adjusted_difference(
    y: NDArray[np.float64], t: NDArray[np.bool_], x: NDArray[np.float64] | None, variance: str
) -> tuple[float, float]:
    """OLS of ``y`` on ``[1, t, x]``: the coefficient of ``t`` and its standard error.

    ``variance="neyman"``: residual variances by group (sample variance, n - 1),
    ``s1^2/n1 + s0^2/n0`` (Aronow et al. 2015; R's ``combinedListDirect``);
    ``"hc3"``: MacKinnon & White's (1985) HC3 sandwich (R's ``ictreg(method = "lm")``,
    through ``sandwich::vcovHC``).
    """
    cols = [np.ones_like(y), t.astype(np.float64)] + ([] if x is None else [x])
    design = np.column_stack(cols)
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    resid = y - design @ coef
    if variance == "hc3":
        var = hc3_covariance(design, resid)[1, 1]
    else:
        var = np.var(resid[t], ddof=1) / t.sum() + np.var(resid[~t], ddof=1) / (~t).sum()
    return float(coef[1]), math.sqrt(float(var))


def _covariate_matrix(covariates: ArrayLike | None, n: int) -> NDArray[np.float64] | None:
    if covariates is None:
        return None
    x = np.asarray(covariates, dtype=np.float64)
    x = x.reshape(n, -1) if x.ndim == 1 else x
    if x.ndim != 2 or x.shape[0] != n or not np.isfinite(x).all():
        raise ValueError(
            f"covariates must be a finite (n, p) array with n = {n}, got shape {x.shape}"
        )
    return x


def refuse_channel(model: str, channel: Any) -> None:
    """Refuse counts stored through a channel for a list model that does not take one.

    Raises
    ------
    ValueError
        If ``channel`` is given, naming ``model`` and the models that take a channel.
    """
    if channel is not None:
        raise ValueError(
            f"channel: {model} does not take counts stored through a channel yet; "
            "list_difference_in_means, list_regression (the standard design and the "
            "ceiling and floor liars) and list_design_effect_test do"
        )


def channel_matrix(channel: Any, j_items: int) -> NDArray[np.float64]:
    """The misclassification matrix of a list count's channel over 0..J+1, checked.

    Raises
    ------
    ValueError
        If the channel is not a ``(J + 2) x (J + 2)`` matrix.
    """
    P = np.asarray(channel.matrix, dtype=np.float64)
    if P.shape != (j_items + 2, j_items + 2):
        raise ValueError(
            f"channel must be a {j_items + 2} x {j_items + 2} matrix over the counts "
            f"0..{j_items + 1}, got {P.shape}"
        )
    return P


def list_difference_in_means(
    counts: ArrayLike,
    treated: ArrayLike,
    *,
    items: int,
    covariates: ArrayLike | None = None,
    variance: str = "neyman",
    channel: Any = None,
) -> ListEstimate:
    """Prevalence as the difference of the mean counts (Imai 2011, eq. 1).

    Parameters
    ----------
    counts : array_like, shape (n,), integers
        Each report: 0..J in the control group, 0..J+1 in the treated group.
    treated : array_like, shape (n,), 0/1
        1 where the respondent's list held the sensitive item.
    items : int in 1..50
        ``J``, the number of control items.
    covariates : array_like, shape (n,) or (n, p), optional
        Pre-treatment covariates for regression adjustment (the coefficient of the
        treatment in OLS of the count on ``[1, treated, covariates]``; Aronow et al.
        2015).
    variance : {"neyman", "hc3"}
        ``"neyman"`` (default): the groups' residual variances ``s1^2/n1 + s0^2/n0``
        (HC2; unbiased for the difference in means whatever the groups' spread);
        ``"hc3"``: the HC3 sandwich, as R's ``ictreg(method = "lm")`` (a little larger).
    channel : Design, optional
        A known channel the counts went through before they were stored (the server's
        post-randomization of a list count, :class:`~deniable.mechanisms.GeometricCount`
        over ``0..J+1`` in both groups). Each report ``r`` is replaced by ``w[r]``,
        ``w = P^-T c`` (``c`` the counts ``0..J+1``, ``P`` the channel's
        misclassification matrix), whose expectation given the true count is that count
        (the moment estimator of the channel, Warner 1965 generalised), so the
        difference in means, its Neyman standard error and the regression adjustment
        stay unbiased for the true counts.

    Returns
    -------
    ListEstimate
        The estimate (not clipped to [0, 1]) and its standard error.

    Raises
    ------
    ValueError
        On a malformed report (see :func:`check_list_counts`) or an unknown variance.

    Examples
    --------
    >>> est = list_difference_in_means([1, 2, 2, 3, 1, 1, 2, 1], [1, 1, 1, 1, 0, 0, 0, 0], items=3)
    >>> round(est.estimate, 4), round(est.std_error, 4)
    (0.75, 0.4787)
    """
    if variance not in ("neyman", "hc3"):
        raise ValueError(f"variance must be 'neyman' or 'hc3', got {variance!r}")
    y, t, j = check_list_counts(counts, treated, items, channelled=channel is not None)
    method = "difference_in_means"
    if channel is not None:
        P = channel_matrix(channel, j)
        w = np.linalg.solve(P.T, np.arange(j + 2, dtype=np.float64))
        y = np.asarray(w[y.astype(np.int64)], dtype=np.float64)
        method = "difference_in_means_channel"
    est, se = _adjusted_difference(y, t, _covariate_matrix(covariates, len(y)), variance)
    return ListEstimate(est, se, int(t.sum()), int((~t).sum()), j, method)


@dataclass(frozen=True)
class CombinedListEstimate:
    """The combined list-and-direct estimate and its placebo tests (Aronow et al. 2015).

    Attributes
    ----------
    combined : ListEstimate
        ``d + (1 - d) * tau_0``: the share ``d`` answering "yes" directly plus the list
        estimate ``tau_0`` among those answering "no", with the variance of
        Aronow et al.'s Proposition 2.
    direct : ListEstimate
        The direct question's share of "yes" (``method="direct"``).
    conventional : ListEstimate
        The list experiment alone.
    placebo_direct_yes : tuple of (estimate, std_error, p-value, n)
        Test I: among direct "yes", the list estimate should be 1 (no false
        confessions); two-sided p-value of ``estimate = 1``.
    placebo_direct_share : tuple of (estimate, std_error, p-value, n)
        Test II: the direct share should not depend on the list arm; two-sided
        p-value of ``estimate = 0``.

    Examples
    --------
    >>> y = [2, 3, 1, 4, 0, 2, 3, 1, 2, 1, 1, 2, 3, 2, 0, 1]
    >>> t = [1] * 8 + [0] * 8
    >>> d = [1, 1, 0, 1, 0, 0, 1, 0, 1, 0, 0, 1, 1, 0, 0, 0]
    >>> res = list_combined(y, t, d, items=3)
    >>> round(res.combined.estimate, 4), round(res.combined.std_error, 4)
    (0.4375, 0.3121)
    >>> res.placebo_direct_yes[3]  # respondents answering "yes" directly
    7
    """

    combined: ListEstimate
    direct: ListEstimate
    conventional: ListEstimate
    placebo_direct_yes: tuple[float, float, float, int]
    placebo_direct_share: tuple[float, float, float, int]


def list_combined(
    counts: ArrayLike,
    treated: ArrayLike,
    direct: ArrayLike,
    *,
    items: int,
    covariates: ArrayLike | None = None,
    channel: Any = None,
) -> CombinedListEstimate:
    """Combine a list experiment with the direct question asked of everyone
    (Aronow, Coppock, Crawford & Green 2015).

    Assumes nobody answers "yes" directly without carrying the item (no false
    confessions; placebo test I checks it) and that asking the direct question does not
    change the list answers (test II checks the direct share across list arms).

    Parameters
    ----------
    counts, treated, items, covariates
        As :func:`list_difference_in_means`.
    direct : array_like, shape (n,), 0/1
        Each respondent's direct answer.
    channel : Design, optional
        Counts stored through a channel (the server's post-randomization of a list
        count): refused, as this model does not take a channel yet (ValueError naming
        it); :func:`list_regression` and :func:`list_difference_in_means` do.

    Returns
    -------
    CombinedListEstimate
        The combined, direct and conventional estimates and both placebo tests.

    Raises
    ------
    ValueError
        On malformed input, or when fewer than 2 reports of a group answer "no"
        directly (or "yes", for placebo test I).

    Examples
    --------
    See :class:`CombinedListEstimate`.
    """
    refuse_channel("list_combined", channel)
    y, t, j = check_list_counts(counts, treated, items)
    d = np.asarray(direct)
    if d.shape != y.shape or not np.isin(d, (0, 1)).all():
        raise ValueError("direct must be a 0/1 array the length of counts")
    d = d.astype(bool)
    x = _covariate_matrix(covariates, len(y))
    n = len(y)
    d_bar = float(d.mean())

    def sub(mask: NDArray[np.bool_], what: str) -> tuple[float, NDArray[np.float64]]:
        tm = t[mask]
        if tm.sum() < 2 or (~tm).sum() < 2:
            raise ValueError(f"{what}: each list group needs at least 2 reports")
        xs = None if x is None else x[mask]
        cols = [np.ones(int(mask.sum())), tm.astype(np.float64)] + ([] if xs is None else [xs])
        design = np.column_stack(cols)
        coef, *_ = np.linalg.lstsq(design, y[mask], rcond=None)
        return float(coef[1]), y[mask] - design @ coef

    tau0, resid0 = sub(~d, "respondents answering 'no' directly")
    mu = d_bar + (1 - d_bar) * tau0
    t0 = t[~d]
    gamma = float(t.mean())
    var = (
        (1 - mu) ** 2 / (1 - d_bar) * d_bar
        + (1 - d_bar)
        * (np.var(resid0[t0], ddof=1) / gamma + np.var(resid0[~t0], ddof=1) / (1 - gamma))
    ) / n
    n1, n0 = int(t.sum()), int((~t).sum())
    combined = ListEstimate(mu, math.sqrt(float(var)), n1, n0, j, "combined")
    direct_est = ListEstimate(d_bar, math.sqrt(float(np.var(d, ddof=1)) / n), n1, n0, j, "direct")
    conventional = list_difference_in_means(y, t, items=j, covariates=x)
    p1_est, p1_resid = sub(d, "respondents answering 'yes' directly")
    t1 = t[d]
    p1_se = math.sqrt(
        float(np.var(p1_resid[t1], ddof=1) / t1.sum() + np.var(p1_resid[~t1], ddof=1) / (~t1).sum())
    )
    p2 = _adjusted_difference(d.astype(np.float64), t, x, "neyman")
    return CombinedListEstimate(
        combined=combined,
        direct=direct_est,
        conventional=conventional,
        placebo_direct_yes=(
            p1_est,
            p1_se,
            float(2 * stats.norm.sf(abs(p1_est - 1) / p1_se)),
            int(d.sum()),
        ),
        placebo_direct_share=(p2[0], p2[1], float(2 * stats.norm.sf(abs(p2[0]) / p2[1])), n),
    )
