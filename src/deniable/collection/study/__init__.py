"""A study's results: estimates by arm and group and their comparison, a survey's
results page and API read from the store, and the demo's study (simulated responses of
the bundled survey), and the documentation's example store (:func:`campus_store`).
Needs the ``server`` extra."""

from ._by_arm import answer_labels as answer_labels
from ._by_arm import arm_analysis, pooled_estimate
from ._by_arm import covariate_ids as covariate_ids
from ._by_arm import design_keys as design_keys
from ._by_arm import has_variants as has_variants
from ._by_arm import regressable as regressable
from ._by_arm import study_frame as study_frame
from ._campus import CampusStore, campus_store
from ._demo_study import StudyRow, run_study
from ._list_study import list_item as list_item
from ._survey_results import refresh_results, survey_results

__all__ = [
    "CampusStore",
    "StudyRow",
    "arm_analysis",
    "campus_store",
    "pooled_estimate",
    "refresh_results",
    "run_study",
    "survey_results",
]
