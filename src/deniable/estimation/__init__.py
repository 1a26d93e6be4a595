"""Estimation: undo a mechanism's channel from a tally, with honest uncertainty.

========================  ===============================================================
module                    what it holds
========================  ===============================================================
``estimators``            :func:`estimate` (moment, maximum likelihood, Bayes) for every
                          mechanism, dispatched on its channel
``results``               the result vocabulary: :class:`PrevalenceEstimate`,
                          :class:`ConfidenceInterval`, :class:`EstimateResult`,
                          :class:`Summary`
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

from __future__ import annotations

from typing import TYPE_CHECKING

from .._extras import lazy_attributes
from ._arithmetic import detection_limit, search_cost
from ._base import Summary
from ._base import summary_table as summary_table
from ._bayes import posterior_draws as posterior_draws
from ._byte_prefix_search import counts_from_spectrum as counts_from_spectrum
from ._byte_prefix_search import extension_spectrum as extension_spectrum
from ._byte_prefix_search import find_string_heavy_hitters
from ._byte_prefix_search import search_string_levels as search_string_levels
from ._byte_prefix_search import support_counts as support_counts
from ._estimates import ConfidenceInterval, EstimateResult, PrevalenceEstimate, RapporEstimate
from ._estimates import interval_dict as interval_dict
from ._estimators import ESTIMATION_METHODS, estimate
from ._extension_select import PARENTS_AT_ONCE as PARENTS_AT_ONCE
from ._finite import as_tally as as_tally
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
from ._normal_theory import moment_batch as moment_batch
from ._normal_theory import moment_covariance as moment_covariance
from ._normal_theory import z_quantile as z_quantile
from ._pooled import moment_covariance_at as moment_covariance_at
from ._postprocess import OracleEMResult, empirical_bayes, norm_sub, oracle_em, project_simplex
from ._prefix_search import find_heavy_hitters
from ._prefix_search import level_counts as level_counts
from ._prefix_search import search_levels as search_levels
from ._variance import affine_map as affine_map
from ._variance import worst_case_variance as worst_case_variance

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
    "Summary",
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


# Internal names other rooms import, loaded on first use (PEP 562; not in __all__).
if TYPE_CHECKING:
    from ._coverage_warning import interval_coverage as interval_coverage

_INTERNAL = {
    "interval_coverage": "_coverage_warning",
}

__getattr__ = lazy_attributes(__name__, _INTERNAL)
