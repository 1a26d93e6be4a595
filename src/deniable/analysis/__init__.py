"""Analysis beyond one prevalence: regression, designs with unknown parameters,
subgroups, fairness audits, private ratings and complex samples.

Results follow statsmodels' names: ``.params`` and ``.bse`` (pandas Series indexed by
term), ``.llf``, ``.conf_int()``, ``.summary()``; and the package's vocabulary:
``.estimate``, ``.std_error``, ``.confidence_interval()`` returning a
:class:`~deniable.estimation.ConfidenceInterval`, ``.to_frame()``. Needs the
``analysis`` extra: ``pip install 'deniable[analysis]'``.
"""

from .._extras import require

require("pandas", "analysis")
require("formulaic", "analysis")

from .._fitting import PredictedPrevalence
from ..list_experiment import (
    CombinedListEstimate,
    DesignEffectTest,
    EndorsementComparison,
    JointListResult,
    ListBayesResult,
    ListEstimate,
    ListHausmanTest,
    ListHierarchicalResult,
    ListRegressionResult,
    MultiItemListResult,
    RobustListResult,
    list_bayes,
    list_bayes_hierarchical,
    list_combined,
    list_design_effect_test,
    list_difference_in_means,
    list_endorsement_comparison,
    list_hausman_test,
    list_joint_regression,
    list_least_squares,
    list_regression,
    list_regression_multi,
    list_robust,
)
from ._bayes_logit import RRLogitBayesResult, rr_logit_bayes
from ._comparison import ArmDifferences, ArmStudy, Heterogeneity, arm_differences, cochran_q
from ._complex import Revision, SurveyEstimate, survey_estimate
from ._correlation import CorrelationResult, rr_correlation
from ._direct_bias import social_desirability_bias
from ._fairness import ParityResult, adult_parity_audit, statistical_parity
from ._group_channels import (
    CheatingDetection,
    GroupModel,
    KnownChannel,
    StochasticLieDetector,
    UnknownInnocuous,
    WithDirectQuestioning,
)
from ._known import (
    AnchorCorrection,
    AnchorRegressionResult,
    ValidationCheck,
    anchor_correction,
    anchor_regression,
    validation_check,
)
from ._linear import RRLinearResult, rr_linear
from ._mixed import designs_by_row, glmmrr_design
from ._mixed_logit import RRMixedLogitResult, rr_mixed_logit
from ._power import (
    PowerResult,
    power_coefficient,
    power_difference,
    sample_size_coefficient,
    sample_size_difference,
)
from ._predictor import RRPredictorResult, rr_predictor
from ._prevalence import ChannelEstimate, closed_form, estimate_channel
from ._ratings import RankingResult, rank_items
from ._regression import RRLogitResult, rr_logit
from ._rrtcs_devices import (
    devore,
    mangat_singh,
    mangat_singh_singh,
    singh_joarder,
    soberanis_cruz,
    two_reply_codes,
    unknown_innocuous_two_replies,
)
from ._study_fits import GroupFit, StudyRegression
from ._subgroups import Contrast, SubgroupResult, subgroup_prevalence
from ._waves import WaveChange, pool_wave_changes, wave_change, wave_change_by_cell

__all__ = [
    "AnchorCorrection",
    "AnchorRegressionResult",
    "ArmDifferences",
    "ArmStudy",
    "ChannelEstimate",
    "CheatingDetection",
    "CombinedListEstimate",
    "Contrast",
    "CorrelationResult",
    "DesignEffectTest",
    "EndorsementComparison",
    "GroupFit",
    "GroupModel",
    "Heterogeneity",
    "JointListResult",
    "KnownChannel",
    "ListBayesResult",
    "ListEstimate",
    "ListHausmanTest",
    "ListHierarchicalResult",
    "ListRegressionResult",
    "MultiItemListResult",
    "ParityResult",
    "PowerResult",
    "PredictedPrevalence",
    "RRLinearResult",
    "RRLogitBayesResult",
    "RRLogitResult",
    "RRMixedLogitResult",
    "RRPredictorResult",
    "RankingResult",
    "Revision",
    "RobustListResult",
    "StochasticLieDetector",
    "StudyRegression",
    "SubgroupResult",
    "SurveyEstimate",
    "UnknownInnocuous",
    "ValidationCheck",
    "WaveChange",
    "WithDirectQuestioning",
    "adult_parity_audit",
    "anchor_correction",
    "anchor_regression",
    "arm_differences",
    "closed_form",
    "cochran_q",
    "designs_by_row",
    "devore",
    "estimate_channel",
    "glmmrr_design",
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
    "mangat_singh",
    "mangat_singh_singh",
    "pool_wave_changes",
    "power_coefficient",
    "power_difference",
    "rank_items",
    "rr_correlation",
    "rr_linear",
    "rr_logit",
    "rr_logit_bayes",
    "rr_mixed_logit",
    "rr_predictor",
    "sample_size_coefficient",
    "sample_size_difference",
    "singh_joarder",
    "soberanis_cruz",
    "social_desirability_bias",
    "statistical_parity",
    "subgroup_prevalence",
    "survey_estimate",
    "two_reply_codes",
    "unknown_innocuous_two_replies",
    "validation_check",
    "wave_change",
    "wave_change_by_cell",
]

#: Old names, with a DeprecationWarning for one release (``Channel`` is ``GroupModel``).
from ._group_channels import __getattr__ as __getattr__
