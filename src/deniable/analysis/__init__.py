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
from .predictor import RRPredictorResult, rr_predictor
from .prevalence import ChannelEstimate, closed_form, estimate_channel
from .regression import PredictedPrevalence, RRLogitResult, rr_logit

__all__ = [
    "Channel",
    "ChannelEstimate",
    "CheatingDetection",
    "KnownChannel",
    "PredictedPrevalence",
    "RRLogitResult",
    "RRPredictorResult",
    "StochasticLieDetector",
    "UnknownInnocuous",
    "closed_form",
    "estimate_channel",
    "rr_logit",
    "rr_predictor",
]
