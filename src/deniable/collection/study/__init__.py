"""A study's results: estimates by arm and group and their comparison, a survey's
results page and API read from the store, and the demo's study (simulated responses of
the bundled survey). Needs the ``server`` extra."""

from ._by_arm import (
    MAX_COVARIATES,
    answer_labels,
    arm_analysis,
    covariate_ids,
    design_keys,
    has_variants,
    pooled_estimate,
    pooled_rows,
    regressable,
    regression,
    study_frame,
)
from ._demo_study import (
    STUDY_SURVEY,
    StudyRow,
    run_study,
)
from ._survey_results import (
    INTERVAL_NAMES,
    POOLED_NAME,
    arm_counts,
    breakdowns,
    pooled_tallies,
    survey_results,
)

__all__ = [
    "INTERVAL_NAMES",
    "MAX_COVARIATES",
    "POOLED_NAME",
    "STUDY_SURVEY",
    "StudyRow",
    "answer_labels",
    "arm_analysis",
    "arm_counts",
    "breakdowns",
    "covariate_ids",
    "design_keys",
    "has_variants",
    "pooled_estimate",
    "pooled_rows",
    "pooled_tallies",
    "regressable",
    "regression",
    "run_study",
    "study_frame",
    "survey_results",
]
