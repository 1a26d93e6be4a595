"""Planning a survey: sample size, disclosure risk, the prevalence test, simulation, plots.

``sample_size`` (normal, Chebyshev, exact binomial), ``arms`` (arm sizes of a
validation study, the extended crosswise model's size), ``disclosure`` (what one report
reveals), ``testing`` (the exact threshold test on the reports and its error rates),
``shuffle`` (the central epsilon of a shuffled release, Feldman, McMillan & Talwar
2021), ``simulation`` (seeded simulated tallies) and ``plots`` (matplotlib, loaded only there).
"""

from ._disclosure import DisclosureRisk, answer_odds_factors, disclosure_risk
from ._sample_size import sample_size
from ._shuffle import ShuffleAmplification, shuffle_amplification
from ._testing import (
    PrevalenceTestErrorRates,
    PrevalenceTestResult,
    prevalence_test,
    prevalence_test_error_rates,
)
from ._validation_arms import (
    ArmSizes,
    arm_comparison_power,
    arm_comparison_size,
    ecwm_size,
    sample_ratio_power,
)

__all__ = [
    "ArmSizes",
    "DisclosureRisk",
    "PrevalenceTestErrorRates",
    "PrevalenceTestResult",
    "ShuffleAmplification",
    "answer_odds_factors",
    "arm_comparison_power",
    "arm_comparison_size",
    "disclosure_risk",
    "ecwm_size",
    "prevalence_test",
    "prevalence_test_error_rates",
    "sample_ratio_power",
    "sample_size",
    "shuffle_amplification",
]
