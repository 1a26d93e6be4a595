"""A study's own fits, on the common result base: a group design's joint fit
(:class:`GroupFit`) and the logistic regression of a randomized question on the
questions asked directly (:class:`StudyRegression`). The dashboard, the API's results
and ``deniable analyze arms`` print their :meth:`to_dict`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._fitting import WaldResult
from .._validation import JSON

__all__ = ["GroupFit", "StudyRegression"]


@dataclass(frozen=True)
class GroupFit(WaldResult):
    """A group design's joint maximum likelihood over its groups
    (:func:`~deniable.analysis.estimate_channel`): the prevalence of the sensitive
    answer with its Wald interval clipped to [0, 1], and the design's non-adherence
    parameter (the cheating-detection model's cheaters, Clark & Desharnais 1998; the
    stochastic lie detector's truthfulness, Moshagen, Musch & Erdfelder 2012) or, for a
    design without one, the G² test of fit.

    Attributes
    ----------
    design : str
        The design with its parameters, as the survey file names it.
    source : str
        The paper the design comes from.
    fit : ChannelEstimate
        The joint fit: ``params`` (``pi`` and the design's parameters), ``std_error``,
        ``nobs``, ``counts`` (one row per group) and ``goodness_of_fit()``.
    non_adherence : str or None
        The name of the design's non-adherence parameter among ``fit.params``.

    Examples
    --------
    >>> from deniable.analysis import GroupFit, StochasticLieDetector, estimate_channel
    >>> from deniable.data import load_rr_survey
    >>> m = load_rr_survey("RRreg/minarets")
    >>> rr = m[m.condition > 0]
    >>> sld = StochasticLieDetector([2/12, 10/12], group_labels=[1, 2])
    >>> fit = estimate_channel(sld, rr.rrt.to_numpy(), rr.condition.to_numpy())
    >>> g = GroupFit("sld", "Moshagen et al. 2012", fit, non_adherence="t")
    >>> round(g.estimate, 3), g.to_dict()["parameter"]["name"]
    (0.871, 't')
    >>> g.confidence_interval().high <= 1
    True
    """

    design: str
    source: str
    fit: Any
    non_adherence: str | None = None

    @property
    def estimate(self) -> float:
        """The prevalence ``pi`` of the sensitive answer, in [0, 1]."""
        return float(self.fit.params["pi"])

    @property
    def std_error(self) -> float:
        """Its standard error (the inverse observed information's)."""
        return float(self.fit.std_error["pi"])

    @property
    def labels(self) -> list[str]:
        """One label: ``"prevalence"``."""
        return ["prevalence"]

    @property
    def n(self) -> int:
        """Reports over every group."""
        return int(self.fit.nobs)

    def _wald(self, z: float) -> tuple[float, float]:
        """``estimate +- z * std_error`` clipped to [0, 1]."""
        se = self.std_error
        return max(0.0, self.estimate - z * se), min(1.0, self.estimate + z * se)

    def to_dict(self, confidence_level: float = 0.95, method: str | None = None) -> dict[str, JSON]:
        """The one JSON shape of every estimate, with ``design``, ``source``,
        ``counts`` (one list per group), ``parameter`` (``{"name", "estimate",
        "std_error"}`` or None) and ``fit`` (the G² test, ``{"statistic", "df",
        "pvalue"}``, or None)."""
        out = super().to_dict(confidence_level, method)
        parameter: JSON = None
        test: JSON = None
        if self.non_adherence is not None:
            name = self.non_adherence
            parameter = {
                "name": name,
                "estimate": float(self.fit.params[name]),
                "std_error": float(self.fit.std_error[name]),
            }
        else:
            g2 = self.fit.goodness_of_fit()
            test = {"statistic": float(g2.statistic), "df": int(g2.df), "pvalue": float(g2.pvalue)}
        counts: JSON = np.asarray(self.fit.counts).tolist()
        return out | {
            "design": self.design,
            "source": self.source,
            "counts": counts,
            "parameter": parameter,
            "fit": test,
        }


@dataclass(frozen=True)
class StudyRegression:
    """A study's logistic regression of a randomized yes/no question on questions
    asked directly (:func:`~deniable.analysis.rr_logit`, each row through its own arm's
    and group's design; van den Hout, van der Heijden & Gilchrist 2007), with what the
    study left out.

    Attributes
    ----------
    question : str
        The randomized question (the outcome).
    covariates : list of str
        The direct questions it is regressed on (categorical, first answer the
        reference).
    fit : RRLogitResult
        The fit: ``params``, ``bse``, ``conf_int()``, ``summary()``, ``to_dict()``.
    notes : list of str
        Each answer of a covariate that no released response gave (no coefficient).

    Examples
    --------
    >>> from deniable.analysis import StudyRegression, rr_logit
    >>> from deniable.data import regression_example
    >>> ex = regression_example()
    >>> fit = rr_logit("r ~ x", ex.data, ex.design)
    >>> r = StudyRegression("r", ["x"], fit)
    >>> out = r.to_dict()
    >>> out["labels"] == list(fit.params.index), len(out["pvalue"]) == len(fit.params)
    (True, True)
    """

    question: str
    covariates: list[str]
    fit: Any
    notes: list[str] = field(default_factory=list)

    def to_dict(self, confidence_level: float = 0.95) -> dict[str, JSON]:
        """The fit's one JSON shape (one label per term, the coefficients as
        ``estimate``, ``std_error``, ``interval``, ``formula``, ``nobs``, ``llf``) with
        ``question``, ``covariates``, ``notes`` and each term's Wald ``z`` and
        two-sided ``pvalue``."""
        out = self.fit.to_dict(confidence_level)
        return dict(out) | {
            "question": self.question,
            "covariates": list(self.covariates),
            "notes": list(self.notes),
            "z": [float(v) for v in self.fit.tvalues],
            "pvalue": [float(v) for v in self.fit.pvalues],
        }
