"""Disclosure risk: what an observer believes about a respondent after one report."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..mechanisms.designs import Design

__all__ = ["DisclosureRisk", "disclosure_risk"]


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
