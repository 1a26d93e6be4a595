"""The classical binary designs, each a 2 x 2 misclassification matrix.

Forced response (Boruch 1971), Warner (1965), unrelated question (Greenberg et al.
1969), crosswise (Yu, Tian & Tang 2008), Kuk's card design (Kuk 1990) and the
one-sided designs of Mangat (1994) and the triangular model (Yu, Tian & Tang 2008).
Code 0 = no, 1 = yes for truths and reports alike (crosswise: report 1 = "same",
triangular: report 1 = "triangle").
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from .._validation import check_integer, check_probability
from ._designs import Design, binary_matrix

__all__ = [
    "Crosswise",
    "ForcedResponse",
    "Kuk",
    "Mangat",
    "Triangular",
    "UnrelatedQuestion",
    "Warner",
]


class ForcedResponse(Design):
    """Forced response (Boruch 1971): answer truthfully unless the device forces an answer.

    With probability ``p_yes`` the respondent must say yes, with ``p_no`` no, otherwise
    the truth. ``Pr(yes | yes) = 1 - p_no``, ``Pr(yes | no) = p_yes``. The seeds'
    two-coin device is ``ForcedResponse(p_yes=0.25, p_no=0.25)``; the Nigerian survey of
    Blair, Imai & Zhou (2015) is ``ForcedResponse(p_yes=1/6, p_no=1/6)``.

    Parameters
    ----------
    p_yes, p_no : float in [0, 1]
        Probabilities of a forced yes and a forced no, with ``p_yes + p_no < 1``.

    Privacy
    -------
    ``epsilon = ln(max((1 - p_no) / p_yes, (1 - p_yes) / p_no))``; ``ln 3`` for the
    two-coin device.

    Examples
    --------
    >>> ForcedResponse(p_yes=0.25, p_no=0.25).matrix.tolist()
    [[0.75, 0.25], [0.25, 0.75]]
    """

    spec_name = "forced-response"

    def __init__(self, *, p_yes: float, p_no: float) -> None:
        self.p_yes = check_probability("p_yes", p_yes)
        self.p_no = check_probability("p_no", p_no)
        if self.p_yes + self.p_no >= 1.0:
            raise ValueError(
                f"p_yes + p_no must be < 1 (some answers must be truthful), got "
                f"{self.p_yes} + {self.p_no}"
            )
        super().__init__(binary_matrix(self.p_yes, 1.0 - self.p_no))

    @property
    def params(self) -> dict[str, Any]:
        return {"p_yes": self.p_yes, "p_no": self.p_no}


class Warner(Design):
    """Warner's design (Warner 1965): the device shows "I am in A" with probability ``p``.

    Otherwise it shows "I am not in A"; the respondent says whether the statement is
    true. ``Pr(yes | yes) = p``, ``Pr(yes | no) = 1 - p``.

    Parameters
    ----------
    p : float in [0, 1], p != 0.5
        Probability that the device shows the sensitive statement.

    Privacy
    -------
    ``epsilon = |ln(p / (1 - p))|``.

    Examples
    --------
    >>> import numpy as np
    >>> from deniable import Warner, estimate
    >>> design = Warner(p=0.75)
    >>> round(design.epsilon, 4)
    1.0986
    >>> reports = design.randomize(np.ones(10_000, dtype=bool), np.random.default_rng(0))
    >>> round(float(estimate(design, reports).estimate[1]), 2)
    1.0
    """

    spec_name = "warner"

    def __init__(self, *, p: float) -> None:
        self.p = check_probability("p", p, not_equal=0.5)
        super().__init__(binary_matrix(1.0 - self.p, self.p))

    @property
    def params(self) -> dict[str, Any]:
        return {"p": self.p}


class UnrelatedQuestion(Design):
    """Unrelated-question design (Greenberg et al. 1969; Horvitz, Shah & Simmons 1967).

    With probability ``p`` the respondent answers the sensitive question, otherwise an
    innocuous one whose prevalence ``innocuous_prevalence`` is known:
    ``Pr(yes | yes) = p + (1 - p) pi_u``, ``Pr(yes | no) = (1 - p) pi_u``.

    Parameters
    ----------
    p : float in (0, 1]
        Probability of being asked the sensitive question.
    innocuous_prevalence : float in [0, 1]
        Known prevalence ``pi_u`` of "yes" to the innocuous question.

    Privacy
    -------
    ``epsilon = max(ln(Pr(yes|yes)/Pr(yes|no)), ln(Pr(no|no)/Pr(no|yes)))``; infinite when
    ``pi_u`` is 0 or 1 (one answer then reveals the truth).

    Examples
    --------
    >>> from deniable import UnrelatedQuestion
    >>> design = UnrelatedQuestion(p=0.7, innocuous_prevalence=0.5)
    >>> design.matrix.round(2).tolist()
    [[0.85, 0.15], [0.15, 0.85]]
    """

    spec_name = "unrelated-question"

    def __init__(self, *, p: float, innocuous_prevalence: float) -> None:
        self.p = check_probability("p", p, low_open=True)
        self.innocuous_prevalence = check_probability("innocuous_prevalence", innocuous_prevalence)
        base = (1.0 - self.p) * self.innocuous_prevalence
        super().__init__(binary_matrix(base, self.p + base))

    @property
    def params(self) -> dict[str, Any]:
        return {"p": self.p, "innocuous_prevalence": self.innocuous_prevalence}


class Crosswise(Design):
    """Crosswise model (Yu, Tian & Tang 2008).

    The respondent says whether the answers to the sensitive question and to an
    innocuous one with known prevalence ``p`` are the same (report 1) or different
    (report 0): ``Pr(same | yes) = p``, ``Pr(same | no) = 1 - p``.

    Parameters
    ----------
    p : float in [0, 1], p != 0.5
        Known prevalence of "yes" to the innocuous question.

    Examples
    --------
    >>> from deniable import Crosswise
    >>> design = Crosswise(p=0.25)
    >>> design.matrix.tolist()
    [[0.25, 0.75], [0.75, 0.25]]
    >>> round(design.epsilon, 4)
    1.0986
    """

    spec_name = "crosswise"

    def __init__(self, *, p: float) -> None:
        self.p = check_probability("p", p, not_equal=0.5)
        super().__init__(binary_matrix(1.0 - self.p, self.p), report_labels=("different", "same"))

    @property
    def params(self) -> dict[str, Any]:
        return {"p": self.p}


class Kuk(Design):
    """Kuk's card design (Kuk 1990).

    Carriers draw ``draws`` cards with replacement from a deck with red share
    ``p_carrier``, non-carriers from one with red share ``p_noncarrier``; the report is
    the number of red cards, ``0..draws``, so ``P[:, t]`` is a binomial pmf.

    Parameters
    ----------
    p_carrier, p_noncarrier : float in [0, 1], different
        Red-card shares of the two decks.
    draws : int >= 1, default 1
        Cards drawn.

    Examples
    --------
    >>> from deniable import Kuk
    >>> Kuk(p_carrier=0.8, p_noncarrier=0.2, draws=1).matrix.round(2).tolist()
    [[0.8, 0.2], [0.2, 0.8]]
    """

    spec_name = "kuk"

    def __init__(self, *, p_carrier: float, p_noncarrier: float, draws: int = 1) -> None:
        from scipy import stats

        self.p_carrier = check_probability("p_carrier", p_carrier)
        self.p_noncarrier = check_probability("p_noncarrier", p_noncarrier)
        if self.p_carrier == self.p_noncarrier:
            raise ValueError("p_carrier and p_noncarrier must differ (else nothing is learnt)")
        self.draws = check_integer("draws", draws, minimum=1)
        reds = np.arange(self.draws + 1)
        P = np.column_stack(
            [
                stats.binom.pmf(reds, self.draws, self.p_noncarrier),
                stats.binom.pmf(reds, self.draws, self.p_carrier),
            ]
        )
        super().__init__(P / P.sum(axis=0), report_labels=tuple(f"{r} red" for r in reds))

    @property
    def params(self) -> dict[str, Any]:
        return {"p_carrier": self.p_carrier, "p_noncarrier": self.p_noncarrier, "draws": self.draws}

    @property
    def inverse(self) -> NDArray[np.float64]:
        """Kuk's (1990) left inverse: ``pi_yes = (mean red share - p_noncarrier) / (p_c - p_n)``.

        Shape (2, draws + 1). It is a left inverse of the matrix, so the moment
        estimator stays unbiased, and it equals the pseudo-inverse when ``draws = 1``.
        """
        share = np.arange(self.draws + 1) / self.draws
        yes = (share - self.p_noncarrier) / (self.p_carrier - self.p_noncarrier)
        return np.vstack([1.0 - yes, yes])


class _OneSided(Design):
    """A design protecting only the sensitive answer ("yes", truth code 1)."""

    #: Truth code whose disclosure the design limits.
    protected_truth: ClassVar[int] = 1

    @property
    def protected_likelihood_ratio(self) -> float:
        """Largest factor by which a report multiplies the odds of the protected answer."""
        return self.likelihood_ratio_bound(self.protected_truth)


class Mangat(_OneSided):
    """Mangat's one-sided design (Mangat 1994).

    Carriers always say yes; non-carriers use Warner's device showing "I am in A" with
    probability ``p``: ``Pr(yes | yes) = 1``, ``Pr(yes | no) = 1 - p``.

    Parameters
    ----------
    p : float in (0, 1)
        Warner-device probability for non-carriers.

    Privacy
    -------
    One-sided: a "no" report reveals a "no" truth, so ``epsilon = inf`` and a survey must
    opt in. A "yes" report multiplies the odds of "yes" by at most ``1 / (1 - p)``
    (:attr:`protected_likelihood_ratio`).

    Examples
    --------
    >>> from deniable import Mangat
    >>> design = Mangat(p=0.7)
    >>> design.matrix.round(2).tolist(), design.epsilon
    ([[0.7, 0.0], [0.3, 1.0]], inf)
    """

    spec_name = "mangat"

    def __init__(self, *, p: float) -> None:
        self.p = check_probability("p", p, low_open=True, high_open=True)
        super().__init__(binary_matrix(1.0 - self.p, 1.0))

    @property
    def params(self) -> dict[str, Any]:
        return {"p": self.p}


class Triangular(_OneSided):
    """Triangular model (Yu, Tian & Tang 2008).

    A respondent ticks the circle (report 0) if the sensitive answer is "no" and the
    answer to an innocuous question with known prevalence ``p`` is "no", else the
    triangle (report 1): ``Pr(1 | yes) = 1``, ``Pr(1 | no) = p``.

    Parameters
    ----------
    p : float in (0, 1)
        Known prevalence of "yes" to the innocuous question.

    Privacy
    -------
    One-sided: a circle reveals a "no" truth, so ``epsilon = inf``. A triangle multiplies
    the odds of "yes" by at most ``1 / p``.

    Examples
    --------
    >>> from deniable import Triangular
    >>> Triangular(p=0.25).matrix.tolist()
    [[0.75, 0.0], [0.25, 1.0]]
    """

    spec_name = "triangular"

    def __init__(self, *, p: float) -> None:
        self.p = check_probability("p", p, low_open=True, high_open=True)
        super().__init__(binary_matrix(self.p, 1.0), report_labels=("circle", "triangle"))

    @property
    def params(self) -> dict[str, Any]:
        return {"p": self.p}
