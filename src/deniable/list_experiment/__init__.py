"""The list experiment (item count technique), randomized response's rival: moment
estimators, the combined list-and-direct estimate, the design-effect test
(``_design_effect``), maximum likelihood regression (``_item_count_ml``, its liars in
``_liars``, its response errors in ``_response_error``, its overdispersion in
``_overdispersed``, several sensitive items in ``_multi_item``, held to the difference
in means in ``_robust``, as an outcome's explanatory variable in ``_joint``), its
posterior (``_posterior``; with groups' random intercepts, ``_hierarchical``), its
predictions (``_prediction``; set against a direct question's by
:func:`deniable.analysis.social_desirability_bias`),
least-squares regression (``_item_count_ls``) and the comparison with an endorsement
experiment (``_endorsement``).

A room of its own (Blair & Imai 2012's ``list`` package is the reference): its fits
stand on the shared result bases (:mod:`deniable._fitting`) and
:mod:`deniable.analysis` gives the same names. Needs the ``analysis`` extra (pandas,
formulaic): ``pip install 'deniable[analysis]'``.
"""

from .._extras import require

require("pandas", "analysis")
require("formulaic", "analysis")

from ._design_effect import DesignEffectTest, list_design_effect_test
from ._endorsement import EndorsementComparison, list_endorsement_comparison
from ._hierarchical import ListHierarchicalResult, list_bayes_hierarchical
from ._item_count import (
    CombinedListEstimate,
    ListEstimate,
    list_combined,
    list_difference_in_means,
)
from ._item_count_ls import ListHausmanTest, list_hausman_test, list_least_squares
from ._item_count_ml import ListRegressionResult, list_regression
from ._joint import JointListResult, list_joint_regression
from ._multi_item import MultiItemListResult, list_regression_multi
from ._posterior import ListBayesResult, list_bayes
from ._prediction import average_prediction as average_prediction
from ._prediction import check_simulation as check_simulation
from ._prediction import prediction_rows as prediction_rows
from ._prediction import simulated_averages as simulated_averages
from ._prediction import summarise_draws as summarise_draws
from ._prediction import wald_row as wald_row
from ._robust import RobustListResult, list_robust

__all__ = [
    "CombinedListEstimate",
    "DesignEffectTest",
    "EndorsementComparison",
    "JointListResult",
    "ListBayesResult",
    "ListEstimate",
    "ListHausmanTest",
    "ListHierarchicalResult",
    "ListRegressionResult",
    "MultiItemListResult",
    "RobustListResult",
    "list_bayes",
    "list_bayes_hierarchical",
    "list_combined",
    "list_design_effect_test",
    "list_difference_in_means",
    "list_endorsement_comparison",
    "list_hausman_test",
    "list_joint_regression",
    "list_least_squares",
    "list_regression",
    "list_regression_multi",
    "list_robust",
]
