"""Planning a survey: sample size, disclosure risk, the prevalence test, simulation.

``sample_size`` (normal, Chebyshev, exact binomial), ``arms`` (arm sizes of a
validation study, the extended crosswise model's size), ``disclosure`` (what one report
reveals), ``testing`` (the exact threshold test on the reports and its error rates),
``compare`` (every binary design at one epsilon or one disclosure promise, with the n
each needs), ``shuffle`` (the central epsilon of a shuffled release, Feldman, McMillan
& Talwar 2021; ``kary_projection_epsilon``, a lower bound for k-ary RR) and
``simulation`` (seeded simulated tallies). Plots are in
:mod:`deniable.plots`.
"""

from ._compare import DesignChoice, compare_designs
from ._disclosure import DisclosureRisk, answer_odds_factors, disclosure_risk
from ._sample_size import sample_size
from ._shuffle import ShuffleAmplification, kary_projection_epsilon, shuffle_amplification
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
    "DesignChoice",
    "DisclosureRisk",
    "PrevalenceTestErrorRates",
    "PrevalenceTestResult",
    "ShuffleAmplification",
    "answer_odds_factors",
    "arm_comparison_power",
    "arm_comparison_size",
    "compare_designs",
    "disclosure_risk",
    "ecwm_size",
    "kary_projection_epsilon",
    "prevalence_test",
    "prevalence_test_error_rates",
    "sample_ratio_power",
    "sample_size",
    "shuffle_amplification",
]
