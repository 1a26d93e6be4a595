"""deniable: randomized response with honest aggregate answers.

Each respondent's device randomizes the answer through a known mechanism before it
leaves the device; the analyst undoes the mechanism's bias in aggregate and states how
uncertain the result is. Data flow one way: mechanism -> report -> tally -> estimator
-> result. ``import deniable`` loads nothing but this list: each name loads its
subpackage (NumPy and SciPy for most) on first use, and the analysis, collection,
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

from typing import TYPE_CHECKING

from ._extras import lazy_attributes

if TYPE_CHECKING:  # the names, for type checkers and the API reference
    from .analysis import statistical_parity as statistical_parity
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

#: Where each name of the face lives: loaded on first use (PEP 562), so that
#: ``import deniable`` (and the command line's ``--help``) loads no NumPy or SciPy.
_HOMES = {
    "BlumBlumShub": "mechanisms",
    "BudgetExceededError": "errors",
    "ConfidenceInterval": "estimation",
    "Crosswise": "mechanisms",
    "DeniableError": "errors",
    "Design": "mechanisms",
    "design_from_spec": "mechanisms",
    "disclosure_risk": "planning",
    "empirical_bayes": "estimation",
    "estimate": "estimation",
    "ForcedResponse": "mechanisms",
    "frequency_oracle": "mechanisms",
    "FrequencyOracle": "mechanisms",
    "HadamardResponse": "mechanisms",
    "heavy_hitters": "estimation",
    "HeavyHitters": "estimation",
    "KaryRR": "mechanisms",
    "Kuk": "mechanisms",
    "LocalHashing": "mechanisms",
    "Mangat": "mechanisms",
    "MatrixDesign": "mechanisms",
    "Mechanism": "mechanisms",
    "mechanism_from_spec": "mechanisms",
    "norm_sub": "estimation",
    "oracle_em": "estimation",
    "prevalence_test": "planning",
    "prevalence_test_error_rates": "planning",
    "PrevalenceEstimate": "estimation",
    "PrivacyWarning": "errors",
    "project_simplex": "estimation",
    "Rappor": "mechanisms",
    "RapporEstimate": "estimation",
    "RapporTally": "tallies",
    "ReportValidationError": "errors",
    "sample_size": "planning",
    "SecureRandom": "mechanisms",
    "statistical_parity": "analysis",
    "SupportTally": "tallies",
    "Tally": "tallies",
    "Triangular": "mechanisms",
    "UnaryEncoding": "mechanisms",
    "UnrelatedQuestion": "mechanisms",
    "Warner": "mechanisms",
}

__getattr__ = lazy_attributes(__name__, _HOMES)
