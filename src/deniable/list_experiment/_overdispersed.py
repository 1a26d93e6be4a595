"""The list experiment's control count overdispersed: beta-binomial instead of binomial
(Imai 2011, section 2.4; R's ``list::ictreg(overdispersed = TRUE)``), constrained or
not.

Respondents differ in how likely each control item is beyond what the covariates say,
and answers to items are correlated within a person, so the control count spreads more
than a binomial does. The model: ``Y(0) ~ BetaBinomial(J, mu = g(x'psi), rho)``, with
mean ``J mu`` and variance ``J mu (1 - mu) (1 + (J - 1) rho)``, ``rho`` in (0, 1) the
intra-person correlation (``rho -> 0`` is the binomial). In the shape parameters,
``a = mu (1 - rho) / rho`` and ``b = (1 - mu) (1 - rho) / rho``; the coefficient
reported is ``logit(rho)``, as R's ``par.overdispersion``. The sensitive answer ``Z ~
Bernoulli(g(x'delta))`` and the count reported is ``Y(0) + T Z``. The log-likelihood and
its score (through digamma functions) are exact; the fit maximises it directly (R runs
EM with ``VGAM::vglm``'s beta-binomial M-step).

Unconstrained (``constrained=False``), the control count's law depends on the sensitive
answer: ``Y(0) | Z = z ~ BetaBinomial(J, g(x'psi_z), rho_z)``, so a control row's count
is a mixture over ``Z`` too (Imai 2011, section 2.2), with the coefficients
``control.psi0.overdispersion`` and ``control.psi1.overdispersion``. Its maximum can lie
on the boundary ``rho_z = 0`` (on R's race data it does for ``z = 1``, on the affirm
data for ``z = 0``, where R's EM runs for over ten minutes): there ``logit rho_z`` is
held at ``-THETA_BOUND``, the binomial, the other coefficients' standard errors are
those of the model with that ``rho_z`` fixed, its own is NaN, and the fit warns. A fit
whose ``logit rho_z`` falls below ``BOUNDARY_LOGIT`` is refitted with ``rho_z = 0``, and
held there where the log-likelihood falls as ``rho_z`` leaves 0: its exact derivative there,
``sum_i P(Z = z | y_i) [y(y - 1) / (2 mu) + (J - y)(J - y - 1) / (2 (1 - mu)) - J(J -
1) / 2]`` (``y`` the count given ``Z = z``, ``mu = g(x'psi_z)``), is at most 0. (The
log-likelihood is flat in ``logit rho_z`` there, BFGS stops anywhere below about -15,
and the beta-binomial's digamma and log-beta differences at ``a + b = e^15`` lose too
many digits to compare fits by their values.)
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from numpy.typing import NDArray
from scipy import special

from .._fitting import inverse_information, maximise_score, score_hessian

__all__ = ["THETA_BOUND", "fit_overdispersed", "fit_unconstrained", "log_beta_binomial"]

#: An unconstrained fit's ``logit rho_z`` below this (rho under 3.4e-4) is tested
#: against the boundary rho_z = 0 (:func:`fit_unconstrained`).
BOUNDARY_LOGIT = -8.0
#: ``|logit rho|`` is held within this (rho in (1e-13, 1 - 1e-13)); beyond it the
#: log-likelihood is flat in ``logit rho`` (a fit there has reached the binomial).
THETA_BOUND = 30.0


def log_beta_binomial(
    y: NDArray[np.float64], j: int, eta: NDArray[np.float64], theta: float
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """``log BetaBinomial(y; j, mu = g(eta), rho = g(theta))`` and its derivatives in
    ``eta`` and ``theta``, each of ``y``'s shape (counts in ``0..j``)."""
    mu = special.expit(eta)
    inside = abs(theta) <= THETA_BOUND
    theta = min(max(theta, -THETA_BOUND), THETA_BOUND)  # rho within (1e-13, 1 - 1e-13)
    s = math.exp(-theta)  # (1 - rho) / rho = a + b
    a, b = mu * s, (1 - mu) * s
    log_pmf = (
        special.gammaln(j + 1)
        - special.gammaln(y + 1)
        - special.gammaln(j - y + 1)
        + special.betaln(y + a, j - y + b)
        - special.betaln(a, b)
    )
    common = special.digamma(s) - special.digamma(j + s)
    da = special.digamma(y + a) - special.digamma(a) + common
    db = special.digamma(j - y + b) - special.digamma(b) + common
    d_theta = -(a * da + b * db) if inside else np.zeros_like(log_pmf)
    return log_pmf, mu * (1 - mu) * s * (da - db), d_theta


class _Overdispersed:
    """The constrained model's log-likelihood and score with a beta-binomial control
    count: ``theta = (delta, psi, logit rho)``."""

    def __init__(
        self, y: NDArray[np.float64], t: NDArray[np.bool_], x: NDArray[np.float64], j: int
    ):
        self.y, self.t, self.x, self.j = y, t, x, j
        self.k = x.shape[1]

    def value_and_score(self, theta: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        k, x, y, t, j = self.k, self.x, self.y, self.t, self.j
        e_d, e_h, rho = x @ theta[:k], x @ theta[k : 2 * k], float(theta[-1])
        lz1, dz1, tz1 = log_beta_binomial(np.clip(y - 1, 0, j), j, e_h, rho)  # Z = 1
        lz0, dz0, tz0 = log_beta_binomial(np.clip(y, 0, j), j, e_h, rho)  # Z = 0
        log_g, log_1g = -np.logaddexp(0, -e_d), -np.logaddexp(0, e_d)
        la = np.where(t & (y >= 1), log_g + lz1, -np.inf)
        lb = np.where(t, np.where(y <= j, log_1g + lz0, -np.inf), lz0)
        la = np.where(t, la, -np.inf)
        ll = np.logaddexp(la, lb)
        w = np.exp(la - ll)  # P(Z = 1 | report); 0 on the control rows
        s_delta = np.where(t, w - special.expit(e_d), 0.0)
        s_psi = w * dz1 + (1 - w) * dz0
        s_rho = w * tz1 + (1 - w) * tz0
        score = np.concatenate([x.T @ s_delta, x.T @ s_psi, [float(s_rho.sum())]])
        return float(ll.sum()), score


class _Unconstrained:
    """The unconstrained model's log-likelihood and score: ``theta = (delta, psi0, psi1,
    logit rho0, logit rho1)``; ``fixed`` holds a ``logit rho_z`` at a value (the other
    entries of ``theta`` are the free ones)."""

    def __init__(
        self,
        y: NDArray[np.float64],
        t: NDArray[np.bool_],
        x: NDArray[np.float64],
        j: int,
        fixed: dict[int, float] | None = None,
    ):
        self.y, self.t, self.x, self.j = y, t, x, j
        self.k = x.shape[1]
        self.fixed = fixed or {}

    def full(self, free: NDArray[np.float64]) -> NDArray[np.float64]:
        """The whole ``theta`` from the free entries."""
        out = list(np.asarray(free, dtype=np.float64))
        for z in sorted(self.fixed):
            out.insert(3 * self.k + z, self.fixed[z])
        return np.asarray(out, dtype=np.float64)

    def _part(
        self, y: NDArray[np.float64], eta: NDArray[np.float64], z: int, theta: float
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """``log P(Y(0) = y | Z = z)`` and its derivatives in ``eta`` and ``logit rho_z``:
        the binomial where ``rho_z`` is held at the boundary (the beta-binomial's
        digamma differences at ``a + b = e^30`` lose every digit)."""
        if z not in self.fixed:
            return log_beta_binomial(y, self.j, eta, theta)
        j, mu = self.j, special.expit(eta)
        log_pmf = (
            special.gammaln(j + 1) - special.gammaln(y + 1) - special.gammaln(j - y + 1)
            + y * -np.logaddexp(0, -eta) + (j - y) * -np.logaddexp(0, eta)
        )  # fmt: skip
        return log_pmf, y - j * mu, np.zeros_like(log_pmf)

    def boundary_slope(self, free: NDArray[np.float64], z: int) -> float:
        """The derivative of the log-likelihood in ``rho_z`` at ``rho_z = 0`` (held
        there), the other coefficients at ``free`` (module text)."""
        theta = self.full(free)
        k, x, y, t, j = self.k, self.x, self.y, self.t, self.j
        counts = np.where(t, y - 1, y) if z == 1 else y
        mu = special.expit(x @ theta[(1 + z) * k : (2 + z) * k])
        w = self._posterior(theta)
        weight = w if z == 1 else 1 - w
        ok = (counts >= 0) & (counts <= j)
        c = np.clip(counts, 0, j)
        slope = c * (c - 1) / (2 * mu) + (j - c) * (j - c - 1) / (2 * (1 - mu)) - j * (j - 1) / 2
        return float((weight * np.where(ok, slope, 0.0)).sum())

    def _posterior(self, theta: NDArray[np.float64]) -> NDArray[np.float64]:
        """``P(Z = 1 | count)`` for each row."""
        return self._rows(theta)[1]

    def value_and_score(self, free: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        theta = self.full(free)
        ll, _, score = self._rows(theta)
        keep = [i for i in range(score.size) if i - 3 * self.k not in self.fixed]
        return float(ll.sum()), score[keep]

    def _rows(
        self, theta: NDArray[np.float64]
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """Each row's log-likelihood, ``P(Z = 1 | count)``, and the whole score."""
        k, x, y, t, j = self.k, self.x, self.y, self.t, self.j
        e_d, e_0, e_1 = x @ theta[:k], x @ theta[k : 2 * k], x @ theta[2 * k : 3 * k]
        # Z = 1: the count less the item on a treated row; Z = 0: the count
        y1 = np.where(t, y - 1, y)
        l1, d1, r1 = self._part(np.clip(y1, 0, j), e_1, 1, float(theta[3 * k + 1]))
        l0, d0, r0 = self._part(np.clip(y, 0, j), e_0, 0, float(theta[3 * k]))
        log_g, log_1g = -np.logaddexp(0, -e_d), -np.logaddexp(0, e_d)
        la = np.where((y1 >= 0) & (y1 <= j), log_g + l1, -np.inf)
        lb = np.where(y <= j, log_1g + l0, -np.inf)
        ll = np.logaddexp(la, lb)
        w = np.exp(la - ll)  # P(Z = 1 | count)
        score = np.concatenate([
            x.T @ (w - special.expit(e_d)), x.T @ ((1 - w) * d0), x.T @ (w * d1),
            [float(((1 - w) * r0).sum()), float((w * r1).sum())],
        ])  # fmt: skip
        return ll, w, score


def fit_unconstrained(
    y: NDArray[np.float64],
    t: NDArray[np.bool_],
    x: NDArray[np.float64],
    j: int,
    start: NDArray[np.float64],
    max_iter: int,
) -> tuple[NDArray[np.float64], float, NDArray[np.float64], NDArray[np.float64], list[str]]:
    """The unconstrained overdispersed model (module text) from the unconstrained binomial
    fit ``start`` (``(delta, psi0, psi1)``) and ``rho_z = 0.05``: ``(theta,
    log-likelihood, score, covariance, the two overdispersions' names)``; a ``rho_z`` at
    the boundary 0 is held there (NaN standard error, a warning).

    Raises
    ------
    ValueError
        When the observed information of the free coefficients is singular.
    """
    k = x.shape[1]
    lik = _Unconstrained(y, t, x, j)
    theta = maximise_score(
        lik.value_and_score, np.append(start, [special.logit(0.05)] * 2), max_iter
    )
    fixed: dict[int, float] = {}
    for z in (0, 1):  # the log-likelihood is flat in logit rho near 0: test the boundary
        if theta[3 * k + z] >= BOUNDARY_LOGIT:
            continue
        trial = {**fixed, z: -THETA_BOUND}
        held = _Unconstrained(y, t, x, j, trial)
        start_free = np.delete(theta, [3 * k + c for c in sorted(trial)])
        free_fit = maximise_score(held.value_and_score, start_free, max_iter)
        if held.boundary_slope(free_fit, z) <= 0:
            fixed, theta, lik = trial, held.full(free_fit), held
    if fixed:
        warnings.warn(
            f"the overdispersion of the control count given Z = {sorted(fixed)} is at its "
            "boundary (rho = 0, the binomial): its standard error is undefined (NaN) and "
            "the others' are those of the model with it fixed there",
            stacklevel=4,
        )
    free = np.delete(theta, [3 * k + c for c in sorted(fixed)])
    ll, score_free = lik.value_and_score(free)
    cov_free = inverse_information(
        -score_hessian(lik.value_and_score, free), "the observed information"
    )
    keep = [i for i in range(theta.size) if i - 3 * k not in fixed]
    cov = np.full((theta.size, theta.size), np.nan)
    cov[np.ix_(keep, keep)] = cov_free
    score = np.zeros(theta.size)
    score[keep] = score_free
    names = ["control.psi0.overdispersion", "control.psi1.overdispersion"]
    return theta, ll, score, cov, names


def fit_overdispersed(
    y: NDArray[np.float64],
    t: NDArray[np.bool_],
    x: NDArray[np.float64],
    j: int,
    start: NDArray[np.float64],
    max_iter: int,
) -> tuple[NDArray[np.float64], float, NDArray[np.float64], NDArray[np.float64], list[str]]:
    """The overdispersed model from the binomial fit ``start`` (``(delta, psi)``) and
    ``rho = 0.05``: ``(theta, log-likelihood, score, covariance, ["control.overdispersion"])``.

    Raises
    ------
    ValueError
        When the observed information is singular (the data identify no model).
    """
    lik = _Overdispersed(y, t, x, j)
    theta = maximise_score(lik.value_and_score, np.append(start, special.logit(0.05)), max_iter)
    ll, score = lik.value_and_score(theta)
    cov = inverse_information(
        -score_hessian(lik.value_and_score, theta), "the observed information"
    )
    return theta, ll, score, cov, ["control.overdispersion"]
