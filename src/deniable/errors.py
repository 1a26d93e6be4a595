"""Exceptions and warnings raised by deniable.

The tree is small and flat::

    DeniableError                      base of every error the library raises itself
    ├── ReportValidationError(ValueError)   a report code outside the design's report set,
    │                                      or reports of the wrong type or shape
    └── BudgetExceededError(ValueError)     a survey whose epsilons sum past its budget
    PrivacyWarning(UserWarning)            a legal but risky setting (very large epsilon)

Bad parameters of a design (a probability of 1.3) raise plain :class:`ValueError`
naming the parameter and its allowed range; a wrong type raises :class:`TypeError`.
"""

from __future__ import annotations

__all__ = ["BudgetExceededError", "DeniableError", "PrivacyWarning", "ReportValidationError"]


class DeniableError(Exception):
    """Base class of the errors raised by deniable itself."""


class ReportValidationError(DeniableError, ValueError):
    """A report (or a tally) does not fit the design it is analysed with."""


class BudgetExceededError(DeniableError, ValueError):
    """The questions of a survey spend more epsilon than its per-respondent budget."""


class PrivacyWarning(UserWarning):
    """A legal setting that protects respondents poorly (for example epsilon > 5 nats)."""
