"""The arithmetic of the finite channels: a misclassification matrix
(:class:`~deniable.mechanisms.MatrixChannel`, any design) and a frequency
oracle's support probabilities (:class:`~deniable.mechanisms.SupportChannel`).
The estimators themselves are described in :mod:`deniable.estimation`."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._names import ESTIMATION_METHODS as ESTIMATION_METHODS
from .._names import EstimationMethod as EstimationMethod
from ..errors import ReportValidationError
from ..mechanisms import FiniteChannel, SupportChannel
from ..tallies import SupportTally, Tally
from ._bayes import check_prior, posterior_draws
from ._estimates import PrevalenceEstimate
from ._intervals import binary_posterior_moments
from ._normal_theory import moment_batch, moment_covariance
from ._variance import AffineMap, affine_map

__all__ = [
    "ESTIMATION_METHODS",
    "EstimationMethod",
    "as_tally",
    "em_batch",
    "estimate_matrix",
    "estimate_support",
]


def estimate_matrix(
    mechanism: Any,
    channel: FiniteChannel,
    reports: Any,
    method: str,
    prior: ArrayLike | None,
    rng: np.random.Generator | int,
) -> PrevalenceEstimate:
    """Moment, maximum-likelihood or Bayes estimate through a misclassification matrix
    (the arithmetic of :class:`~deniable.mechanisms.MatrixChannel`)."""
    if method not in ESTIMATION_METHODS:
        raise ValueError(f"method must be one of {', '.join(ESTIMATION_METHODS)}, got {method!r}")
    if prior is not None and method != "bayes":
        raise ValueError("prior is used only with method='bayes'")
    tally = as_tally(channel, reports)
    counts = tally.counts[None, :]
    if method == "moment":
        est, _ = moment_batch(channel, counts)
        cov = moment_covariance(channel.inverse, tally.shares, tally.n)
        return PrevalenceEstimate(mechanism, tally, method, est[0], cov)
    if method == "mle":
        pi, iterations = em_batch(channel, counts)
        cov = _fisher_covariance(channel.matrix, pi[0], tally.n)
        return PrevalenceEstimate(mechanism, tally, method, pi[0], cov, iterations=iterations)
    amap = affine_map(channel)
    if prior is None and amap is not None and channel.n_truths > 2:
        return _marginal_bayes(mechanism, channel, tally, amap)
    pseudocounts = check_prior(channel, prior)
    draws = posterior_draws(channel, counts, pseudocounts, rng=rng)[0]
    return PrevalenceEstimate(
        mechanism,
        tally,
        method,
        draws.mean(axis=0),
        np.atleast_2d(np.cov(draws, rowvar=False)),
        prior=pseudocounts,
        posterior=draws,
    )


def _marginal_bayes(
    mechanism: Any, channel: FiniteChannel, tally: Tally, amap: AffineMap
) -> PrevalenceEstimate:
    """``bayes`` on k-ary randomized response without a prior: each category's posterior
    mean under a uniform prior on it, from its exact one-dimensional posterior given its
    report's count (:func:`~deniable.estimation._intervals.binary_posterior_moments`),
    the prior and posterior its credible interval uses. A Dirichlet(1, ..., 1) puts
    Beta(1, k - 1) on each category, pulling a prevalence of 0.88 to 0.65 on KaryRR(7, 2)
    at n 100 so that its interval missed in 75% of surveys; the means need not sum to 1.
    The covariance: the posterior variances, with the moment estimator's correlations."""
    mean = np.empty(channel.n_truths)
    var = np.empty(channel.n_truths)
    for j in range(channel.n_truths):
        y = tally.counts[int(amap.report[j])]
        m, v = binary_posterior_moments(amap, j, np.array([y]), tally.n, (1.0, 1.0))
        mean[j], var[j] = m[0], v[0]
    moment = moment_covariance(channel.inverse, tally.shares, tally.n)
    sd = np.sqrt(np.maximum(np.diag(moment), 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        corr = np.where(np.outer(sd, sd) > 0, moment / np.outer(sd, sd), 0.0)
    np.fill_diagonal(corr, 1.0)
    root = np.sqrt(var)
    return PrevalenceEstimate(mechanism, tally, "bayes", mean, corr * np.outer(root, root))


def estimate_support(
    oracle: Any, channel: SupportChannel, reports: Any, method: str, prior: ArrayLike | None
) -> PrevalenceEstimate:
    """``f_v = (C_v / n - q*) / (p* - q*)`` or EM on the reports (the arithmetic of
    :class:`~deniable.mechanisms.SupportChannel`; Wang et al. 2017)."""
    if method not in ("moment", "mle"):
        raise ValueError(f"method must be 'moment' or 'mle' for a frequency oracle, got {method!r}")
    if prior is not None:
        raise ValueError("prior is used only with method='bayes' (not for frequency oracles)")
    tally = reports if isinstance(reports, SupportTally) else oracle.tally(reports)
    if tally.counts.size != oracle.k:
        raise ReportValidationError(
            f"support tally has {tally.counts.size} candidates but the oracle has k = {oracle.k}"
        )
    if tally.n == 0:
        raise ReportValidationError("no reports to estimate from (n = 0)")
    p, q = channel.p_star, channel.q_star
    if method == "moment":
        f = (tally.shares - q) / (p - q)
        var = oracle.variance(np.clip(f, 0.0, 1.0), tally.n)
        return PrevalenceEstimate(oracle, tally, method, f, None, variance=var)
    if isinstance(reports, SupportTally):
        raise ValueError("method='mle' needs the reports themselves, not their support tally")
    from ._postprocess import oracle_em

    f, iterations = oracle_em(oracle, reports)
    var = oracle.variance(f, tally.n)
    return PrevalenceEstimate(oracle, tally, method, f, None, iterations=iterations, variance=var)


def as_tally(design: FiniteChannel, reports: ArrayLike | Tally) -> Tally:
    """The tally of ``reports`` for ``design`` (a Tally is checked and passed through).

    Raises
    ------
    ReportValidationError
        For report codes outside ``0..m-1``, a tally over the wrong number of report
        symbols, or no reports at all.
    """
    if isinstance(reports, Tally):
        if reports.n_reports != design.n_reports:
            raise ReportValidationError(
                f"tally has {reports.n_reports} report symbols "
                f"but the design has {design.n_reports}"
            )
        tally = reports
    else:
        tally = Tally.from_reports(reports, design.n_reports)
    if tally.n == 0:
        raise ReportValidationError("no reports to estimate from (n = 0)")
    return tally


def em_batch(
    design: FiniteChannel,
    counts: NDArray[np.int64],
    *,
    tol: float = 1e-12,
    max_iterations: int = 100_000,
) -> tuple[NDArray[np.float64], int]:
    """Maximum-likelihood prevalences on the simplex for tallies ``counts`` (S, m).

    Square designs whose moment estimate lies inside the simplex return it directly
    (it is then the MLE); the others run EM from the uniform distribution until no
    entry moves by more than ``tol``. Returns estimates (S, k) and the iterations used.
    """
    P = design.matrix
    counts = np.asarray(counts, dtype=np.float64)
    n = counts.sum(axis=1, keepdims=True)
    k = design.n_truths
    moment, _ = moment_batch(design, counts.astype(np.int64))
    done = np.all(moment >= 0, axis=1) if P.shape[0] == k else np.zeros(len(counts), bool)
    pi = np.where(done[:, None], moment, 1.0 / k)
    active = ~done
    iterations = 0
    while np.any(active) and iterations < max_iterations:
        cur = pi[active]
        lam = cur @ P.T
        ratio = np.divide(counts[active], lam, out=np.zeros_like(lam), where=lam > 0)
        new = cur * (ratio @ P) / n[active]
        step = np.abs(new - cur).max(axis=1)
        pi[active] = new
        still = step > tol
        idx = np.flatnonzero(active)
        active[idx[~still]] = False
        iterations += 1
    return pi, iterations


def _fisher_covariance(
    P: NDArray[np.float64], pi: NDArray[np.float64], n: int
) -> NDArray[np.float64]:
    """Inverse Fisher information of the multinomial likelihood, mapped to all k categories."""
    k = P.shape[1]
    lam = P @ pi
    D = P[:, :-1] - P[:, -1:]  # d lam / d theta, theta = pi[:-1]
    w = np.divide(1.0, lam, out=np.zeros_like(lam), where=lam > 0)
    info = n * (D.T * w) @ D
    cov_theta = np.linalg.pinv(info)
    A = np.vstack([np.eye(k - 1), -np.ones((1, k - 1))])
    return np.asarray(A @ cov_theta @ A.T)
