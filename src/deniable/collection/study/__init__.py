"""A study's results: estimates by arm and group and their comparison, a survey's
results page and API read from the store, and the demo's study (simulated responses of
the bundled survey). Needs the ``server`` extra."""

from ._by_arm import arm_analysis, pooled_estimate
from ._demo_study import StudyRow, run_study
from ._survey_results import survey_results

__all__ = [
    "StudyRow",
    "arm_analysis",
    "pooled_estimate",
    "run_study",
    "survey_results",
]
