"""deniable: randomized response with honest aggregate answers.

Each respondent's device randomizes the answer through a known mechanism before it
leaves the device; the analyst undoes the mechanism's bias in aggregate and states how
uncertain the result is. Data flow one way: mechanism -> report -> tally -> estimator
-> result. ``import deniable`` loads NumPy and SciPy only; the analysis, collection,
plotting and command-line parts load with their subpackages.

>>> import numpy as np
>>> from deniable import ForcedResponse, estimate
>>> coins = ForcedResponse(p_yes=0.25, p_no=0.25)
>>> rng = np.random.default_rng(7)          # simulation only; omit rng for real respondents
>>> reports = coins.randomize(rng.random(10_000) < 0.3, rng)
>>> result = estimate(coins, reports)
>>> bool(abs(result.estimate[1] - 0.3) < 4 * result.std_error[1])
True
"""

from .errors import BudgetExceededError, DeniableError, PrivacyWarning, ReportValidationError
from .estimation import (
    ConfidenceInterval,
    HeavyHitters,
    PrevalenceEstimate,
    RapporEstimate,
    empirical_bayes,
    estimate,
    heavy_hitters,
    norm_sub,
    oracle_em,
    project_simplex,
)
from .mechanisms import (
    BlumBlumShub,
    Crosswise,
    Design,
    ForcedResponse,
    FrequencyOracle,
    HadamardResponse,
    KaryRR,
    Kuk,
    LocalHashing,
    Mangat,
    MatrixDesign,
    Mechanism,
    Rappor,
    SecureRandom,
    Triangular,
    UnaryEncoding,
    UnrelatedQuestion,
    Warner,
    design_from_spec,
    frequency_oracle,
    mechanism_from_spec,
)
from .planning import disclosure_risk, prevalence_test, prevalence_test_error_rates, sample_size
from .tallies import RapporTally, SupportTally, Tally

__version__ = "0.2.0"

__all__ = [
    "BlumBlumShub",
    "BudgetExceededError",
    "ConfidenceInterval",
    "Crosswise",
    "DeniableError",
    "Design",
    "ForcedResponse",
    "FrequencyOracle",
    "HadamardResponse",
    "HeavyHitters",
    "KaryRR",
    "Kuk",
    "LocalHashing",
    "Mangat",
    "MatrixDesign",
    "Mechanism",
    "PrevalenceEstimate",
    "PrivacyWarning",
    "Rappor",
    "RapporEstimate",
    "RapporTally",
    "ReportValidationError",
    "SecureRandom",
    "SupportTally",
    "Tally",
    "Triangular",
    "UnaryEncoding",
    "UnrelatedQuestion",
    "Warner",
    "design_from_spec",
    "disclosure_risk",
    "empirical_bayes",
    "estimate",
    "frequency_oracle",
    "heavy_hitters",
    "mechanism_from_spec",
    "norm_sub",
    "oracle_em",
    "prevalence_test",
    "prevalence_test_error_rates",
    "project_simplex",
    "sample_size",
]


def __getattr__(name: str) -> object:
    """``deniable.statistical_parity`` loads the analysis subpackage (pandas) on first use."""
    if name == "statistical_parity":
        from .analysis import statistical_parity

        return statistical_parity
    raise AttributeError(f"module 'deniable' has no attribute {name!r}")
