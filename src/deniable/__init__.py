"""deniable: randomized response with honest aggregate answers.

Each respondent's device randomizes the answer through a known design before it
leaves the device; the analyst undoes the design's bias in aggregate and states how
uncertain the result is.

>>> import numpy as np
>>> from deniable import ForcedResponse, estimate
>>> coins = ForcedResponse(p_yes=0.25, p_no=0.25)
>>> rng = np.random.default_rng(7)          # simulation only; omit rng for real respondents
>>> reports = coins.randomize(rng.random(10_000) < 0.3, rng)
>>> result = estimate(coins, reports)
>>> bool(abs(result.prevalence[1] - 0.3) < 4 * result.std_error[1])
True
"""

from .analysis.fairness import statistical_parity
from .designs import (
    Crosswise,
    Design,
    ForcedResponse,
    KaryRR,
    Kuk,
    Mangat,
    MatrixDesign,
    Triangular,
    UnrelatedQuestion,
    Warner,
    design_from_spec,
)
from .errors import BudgetExceededError, DeniableError, PrivacyWarning, ReportValidationError
from .estimate import ConfidenceInterval, PrevalenceEstimate, estimate
from .oracles import (
    FrequencyOracle,
    HadamardResponse,
    LocalHashing,
    SupportTally,
    UnaryEncoding,
    frequency_oracle,
)
from .planning import disclosure_risk, prevalence_test, prevalence_test_error_rates, sample_size
from .postprocess import empirical_bayes, norm_sub, oracle_em, project_simplex
from .randomness import BlumBlumShub, SecureRandom
from .tally import Tally

__version__ = "0.1.0"

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
    "KaryRR",
    "Kuk",
    "LocalHashing",
    "Mangat",
    "MatrixDesign",
    "PrevalenceEstimate",
    "PrivacyWarning",
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
    "norm_sub",
    "oracle_em",
    "prevalence_test",
    "prevalence_test_error_rates",
    "project_simplex",
    "sample_size",
    "statistical_parity",
]
