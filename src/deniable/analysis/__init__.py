"""Analysis beyond one prevalence: regression, designs with unknown parameters,
subgroups, fairness audits, private ratings and complex samples.

Results follow statsmodels' names: ``.params`` and ``.bse`` (pandas Series indexed by
term), ``.llf``, ``.conf_int()``, ``.summary()``.
"""

from .channels import (
    Channel,
    CheatingDetection,
    KnownChannel,
    StochasticLieDetector,
    UnknownInnocuous,
)
from .fairness import ParityResult, adult_parity_audit, statistical_parity
from .predictor import RRPredictorResult, rr_predictor
from .prevalence import ChannelEstimate, closed_form, estimate_channel
from .regression import PredictedPrevalence, RRLogitResult, rr_logit
from .subgroups import Contrast, SubgroupResult, subgroup_prevalence

__all__ = [
    "Channel",
    "ChannelEstimate",
    "CheatingDetection",
    "Contrast",
    "KnownChannel",
    "ParityResult",
    "PredictedPrevalence",
    "RRLogitResult",
    "RRPredictorResult",
    "StochasticLieDetector",
    "SubgroupResult",
    "UnknownInnocuous",
    "adult_parity_audit",
    "closed_form",
    "estimate_channel",
    "rr_logit",
    "rr_predictor",
    "statistical_parity",
    "subgroup_prevalence",
]
