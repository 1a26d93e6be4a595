"""Disclosure risk: what an observer believes about a respondent after one report."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..mechanisms import Design

__all__ = ["DisclosureRisk", "answer_odds_factors", "disclosure_risk"]

#: Probabilities at or below this count as zero (a report that cannot occur).
_ZERO = 2.0**-53


@dataclass(frozen=True)
class DisclosureRisk:
    """What an observer believes about a respondent after seeing one report.

    Attributes
    ----------
    design : Design
    prior : ndarray, shape (k,)
        Belief in each truth before the report.
    posterior : ndarray, shape (m, k)
        ``posterior[r, t] = Pr(truth t | report r) = P[r, t] prior[t] / (P prior)[r]``;
        rows of reports impossible under the prior are NaN.

    Examples
    --------
    >>> from deniable import Warner, disclosure_risk
    >>> risk = disclosure_risk(Warner(p=0.75), prior=0.5)
    >>> risk.posterior_yes.round(2).tolist()
    [0.25, 0.75]
    """

    design: Design
    prior: NDArray[np.float64]
    posterior: NDArray[np.float64]

    @property
    def max_posterior(self) -> NDArray[np.float64]:
        """Highest belief in each truth after any possible report, shape (k,)."""
        return np.asarray(np.nanmax(self.posterior, axis=0))

    @property
    def posterior_yes(self) -> NDArray[np.float64]:
        """Binary designs: belief in "yes" after each report, shape (m,)."""
        return self.posterior[:, -1]

    def describe(self) -> list[str]:
        """Plain sentences, one per report, for respondents and survey designers."""
        d = self.design
        t = d.n_truths - 1 if d.is_binary else int(np.argmax(self.max_posterior - self.prior))
        label = d.truth_labels[t]
        lines = []
        for r, name in enumerate(d.report_labels):
            post = self.posterior[r, t]
            if np.isnan(post):
                continue
            lines.append(
                f'If the report is "{name}", an observer\'s belief that the true answer is '
                f'"{label}" moves from {self.prior[t]:.0%} to {post:.0%}.'
            )
        return lines

    def to_dict(self) -> dict[str, object]:
        """JSON-ready form."""
        return {
            "prior": self.prior.tolist(),
            "posterior": [
                [None if math.isnan(v) else v for v in row] for row in self.posterior.tolist()
            ],
            "max_posterior": self.max_posterior.tolist(),
            "truth_labels": list(self.design.truth_labels),
            "report_labels": list(self.design.report_labels),
        }


def disclosure_risk(design: Design, prior: float | ArrayLike) -> DisclosureRisk:
    """Posterior belief in each truth after each report (Bayes' rule on the matrix).

    Parameters
    ----------
    design : Design
    prior : float in [0, 1] or array_like, shape (k,)
        Prior prevalence of "yes" (binary designs), or a prior distribution over truths.

    Returns
    -------
    DisclosureRisk

    Raises
    ------
    ValueError
        For a prior outside [0, 1], or a distribution of the wrong length, with a
        negative entry or not summing to 1.

    Examples
    --------
    >>> from deniable.mechanisms import ForcedResponse
    >>> risk = disclosure_risk(ForcedResponse(p_yes=0.25, p_no=0.25), prior=0.1)
    >>> risk.posterior_yes.round(3).tolist()
    [0.036, 0.25]
    """
    pi = design.as_prevalence(prior)
    joint = design.matrix * pi[None, :]
    total = joint.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        posterior = np.where(total > 0, joint / total, np.nan)
    return DisclosureRisk(design, pi, posterior)


def answer_odds_factors(matrix: ArrayLike) -> NDArray[np.float64]:
    """For each true answer, the largest factor by which one report can multiply an
    observer's odds of that answer against another one.

    ``factor[a] = max over reports r and answers b != a of P[r, a] / P[r, b]``, taken over
    every answer whatever a survey calls sensitive; ``inf`` when some report can occur
    under ``a`` but not under another answer (that report proves "not b", and for two
    answers proves ``a``). Pairs with ``P[r, a] = 0`` are skipped. The maximum over
    answers is ``exp(epsilon)`` of local differential privacy (Warner 1965; Evfimievski,
    Gehrke & Srikant 2003, "amplification"); per answer it tells a respondent which
    choice a report can give away.

    Parameters
    ----------
    matrix : array_like, shape (m, k), float
        ``Pr(report | truth)``, probabilities in [0, 1]; ``k >= 2``.

    Returns
    -------
    ndarray, shape (k,), float64
        Factors in [1, inf].

    Raises
    ------
    ValueError
        If ``matrix`` is not two-dimensional with at least two columns.

    Examples
    --------
    >>> from deniable.mechanisms import ForcedResponse
    >>> answer_odds_factors(ForcedResponse(p_yes=0.0, p_no=0.01).matrix).round(9).tolist()
    [100.0, inf]
    """
    p = np.asarray(matrix, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] < 2:
        raise ValueError(f"matrix must have shape (m, k) with k >= 2, got {p.shape}")
    k = p.shape[1]
    out = np.ones(k)
    for a in range(k):
        top = p[:, a]
        used = top > _ZERO
        others = np.delete(p, a, axis=1)[used]
        if np.any(others <= _ZERO):
            out[a] = math.inf
        elif others.size:
            out[a] = max(1.0, float((top[used][:, None] / others).max()))
    return out
