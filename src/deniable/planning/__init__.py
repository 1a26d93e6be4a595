"""Planning a survey: sample size, disclosure risk, the prevalence test, simulation, plots.

``sample_size`` (normal, Chebyshev, exact binomial), ``disclosure`` (what one report
reveals), ``testing`` (the exact threshold test on the reports and its error rates),
``simulation`` (seeded simulated tallies) and ``plots`` (matplotlib, loaded only there).
"""

from .disclosure import DisclosureRisk, answer_odds_factors, disclosure_risk
from .sample_size import sample_size
from .testing import (
    PrevalenceTestErrorRates,
    PrevalenceTestResult,
    prevalence_test,
    prevalence_test_error_rates,
)

__all__ = [
    "DisclosureRisk",
    "PrevalenceTestErrorRates",
    "PrevalenceTestResult",
    "answer_odds_factors",
    "disclosure_risk",
    "prevalence_test",
    "prevalence_test_error_rates",
    "sample_size",
]
