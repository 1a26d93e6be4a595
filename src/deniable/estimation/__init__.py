"""Estimation: undo a mechanism's channel from a tally, with honest uncertainty.

========================  ===============================================================
module                    what it holds
========================  ===============================================================
``estimators``            :func:`estimate` (moment, maximum likelihood, Bayes) for every
                          mechanism, dispatched on its channel
``results``               the result vocabulary: :class:`PrevalenceEstimate`,
                          :class:`ConfidenceInterval`, :class:`EstimateResult`
``pooled``                designs varying by respondent: the stacked design, its moment
                          estimator
``intervals``             interval methods (normal, wilson, beta, ..., chebyshev, bayes)
``common``                z quantiles, Wald intervals, Bonferroni, moment covariance
``variance``              exact and worst-case variances of the moment estimator
``bayes``                 Dirichlet priors and the data-augmentation sampler
``postprocess``           simplex projection, Norm-Sub, empirical Bayes, oracle EM
``rappor``                RAPPOR decoding (LASSO + NNLS)
``heavy_hitters``         detecting frequent values among an oracle's candidates
``means``                 means and bucket histograms of numeric mechanisms' reports
``prefix``                heavy hitters found level by level from PEM reports
========================  ===============================================================
"""

from ._arithmetic import detection_limit, search_cost
from ._byte_prefix_search import find_string_heavy_hitters
from ._estimates import ConfidenceInterval, EstimateResult, PrevalenceEstimate, RapporEstimate
from ._estimators import ESTIMATION_METHODS, estimate
from ._heavy_hitters import HeavyHitters, heavy_hitters
from ._intervals import INTERVAL_METHODS
from ._level_search import PrefixHeavyHitters, SearchCost
from ._means import (
    HistogramEstimate,
    MeanEstimate,
    MeanTally,
    RangeMean,
    estimate_histogram,
    estimate_mean,
)
from ._postprocess import OracleEMResult, empirical_bayes, norm_sub, oracle_em, project_simplex
from ._prefix_search import find_heavy_hitters

__all__ = [
    "ESTIMATION_METHODS",
    "INTERVAL_METHODS",
    "ConfidenceInterval",
    "EstimateResult",
    "HeavyHitters",
    "HistogramEstimate",
    "MeanEstimate",
    "MeanTally",
    "OracleEMResult",
    "PrefixHeavyHitters",
    "PrevalenceEstimate",
    "RangeMean",
    "RapporEstimate",
    "SearchCost",
    "detection_limit",
    "empirical_bayes",
    "estimate",
    "estimate_histogram",
    "estimate_mean",
    "find_heavy_hitters",
    "find_string_heavy_hitters",
    "heavy_hitters",
    "norm_sub",
    "oracle_em",
    "project_simplex",
    "search_cost",
]
