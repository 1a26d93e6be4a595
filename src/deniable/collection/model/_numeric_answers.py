"""A numeric question's answers: the bin of a number asked directly, the mean of a
randomized one from its reports, and shares mapped to the question's units.

:class:`NumericAnswers` is part of :class:`~deniable.collection.model.Question`; the
mechanisms are :mod:`deniable.mechanisms`' numeric ones (Duchi, Jordan & Wainwright
2018; Ding, Kulkarni & Yekhanin 2017).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ...estimation import MeanEstimate, MeanTally, PrevalenceEstimate, RangeMean, estimate_mean

if TYPE_CHECKING:
    from ...mechanisms import DuchiMean, OneBitMean
    from ._fields import NumericRange

__all__ = ["NumericAnswers"]


class NumericAnswers:
    """The numeric methods of a question (see the module docstring)."""

    if TYPE_CHECKING:  # the question's fields (declared here for the type checker only)
        id: str
        range: NumericRange | None
        bins: list[float] | None
        _numeric: DuchiMean | OneBitMean | None

    def bin_of(self, value: float) -> int:
        """The bin (report code) of a number for a direct question with ``bins``:
        ``i`` with ``bins[i] <= value < bins[i + 1]``, the last bin closed at ``high``.

        Raises
        ------
        ValueError
            If the question has no bins, or ``value`` is outside ``[low, high]``.
        """
        if self.bins is None or self.range is None:
            raise ValueError(f"question {self.id!r} has no bins")
        if not self.range.low <= value <= self.range.high:
            raise ValueError(
                f"{self.id} must be a number in [{self.range.low:g}, {self.range.high:g}], "
                f"got {value!r}"
            )
        return min(int(np.searchsorted(self.bins, value, side="right")) - 1, len(self.bins) - 2)

    def mean_estimate(self, counts: Any) -> MeanEstimate:
        """Unbiased mean of a numeric question's answers from its report counts.

        Parameters
        ----------
        counts : array of int, shape (2,)
            How many reports were 0 and 1 (a :class:`~deniable.tallies.Tally`'s counts).

        Raises
        ------
        ValueError
            If the question has no ``range``.
        ReportValidationError
            If there are no reports.
        """
        if self._numeric is None:
            raise ValueError(f"question {self.id!r} is not numeric (it has no range)")
        c = np.asarray(counts, dtype=np.float64).reshape(2)
        y = self._numeric.debias(np.array([0, 1], dtype=np.uint8))
        tally = MeanTally(int(c.sum()), float(c @ y), float(c @ (y * y)))
        return estimate_mean(self._numeric, tally)

    def to_units(self, share: float) -> float:
        """A numeric question's value ``low + (high - low) share`` for a share of
        ``high`` (an estimated prevalence of the question's design, or an interval end).

        Raises
        ------
        ValueError
            If the question has no range.
        """
        r = self._value_range()
        return r.low + (r.high - r.low) * float(share)

    def _value_range(self) -> NumericRange:
        if self.range is None:
            raise ValueError(f"question {self.id!r} is not numeric (it has no range)")
        return self.range

    def mean_from(self, est: PrevalenceEstimate) -> RangeMean:
        """A numeric question's mean in its units from its design's estimate ``est``
        (:class:`~deniable.estimation.PrevalenceEstimate`): a
        :class:`~deniable.estimation.RangeMean` whose estimate, standard error and
        interval ends are mapped by :meth:`to_units`.

        Raises
        ------
        ValueError
            If the question has no range.
        """
        r = self._value_range()
        return RangeMean(est, r.low, r.high, r.unit)
