"""Real data shipped with deniable (see the README and license in each data folder).

* ``adult``: the UCI Adult census extract (Kohavi & Becker 1996; CC BY 4.0), 48,842
  people whose true answers are known: a population to run private surveys over.
* ``rr-surveys``: real randomized-response surveys exported from the R packages ``rr``,
  ``RRreg``, ``RRTCS`` and ``GLMMRR`` (GPL), with the designs their studies used.
"""

from ._demo import DemoRow, adult_survey, real_surveys
from ._examples import ListExample, RegressionExample, list_example, regression_example
from ._sets import (
    ADULT_COLUMNS,
    HORVITZ_INNOCUOUS,
    RR_SURVEYS,
    RealSurveyItem,
    data_file,
    load_adult,
    load_rr_survey,
    real_survey_items,
)

__all__ = [
    "ADULT_COLUMNS",
    "HORVITZ_INNOCUOUS",
    "RR_SURVEYS",
    "DemoRow",
    "ListExample",
    "RealSurveyItem",
    "RegressionExample",
    "adult_survey",
    "data_file",
    "list_example",
    "load_adult",
    "load_rr_survey",
    "real_survey_items",
    "real_surveys",
    "regression_example",
]
