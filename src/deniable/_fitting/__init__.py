"""What every fit of :mod:`deniable.analysis` and :mod:`deniable.list_experiment` is
built on (private: a user meets these as the bases and methods of every result).

- ``_results``: the result bases, :class:`WaldResult` (an estimate with its covariance,
  on :class:`deniable.estimation.EstimateResult`), :class:`CoefficientsMixin` (a
  coefficient fit's ``params``/``bse``/``conf_int()``/``summary()``),
  :class:`LikelihoodFit`, :class:`PosteriorMixin` (a posterior's means, SDs and
  credible intervals), :class:`PredictedPrevalence` and the coefficient table;
- ``_formula``: model frames from R-style formulas (formulaic);
- ``_profile``: profile-likelihood and modified-signed-root intervals (Skovgaard 1996;
  Severini 1999);
- ``_optimise``: maximising a log-likelihood given with its analytic score.

A room of its own below both: the list experiment shares these with the randomized
response fits without importing :mod:`deniable.analysis`, which re-exports the list
experiment's face.
"""

from ._formula import ModelFrame as ModelFrame
from ._formula import model_frame as model_frame
from ._formula import quote_columns as quote_columns
from ._optimise import inverse_information as inverse_information
from ._optimise import maximise_score as maximise_score
from ._optimise import score_hessian as score_hessian
from ._optimise import singular as singular
from ._profile import MAX_DOUBLINGS as MAX_DOUBLINGS
from ._profile import Profile as Profile
from ._results import CoefficientsMixin as CoefficientsMixin
from ._results import LikelihoodFit as LikelihoodFit
from ._results import PosteriorMixin as PosteriorMixin
from ._results import PredictedPrevalence as PredictedPrevalence
from ._results import TestResult as TestResult
from ._results import WaldResult as WaldResult
from ._results import coefficient_table as coefficient_table
from ._results import hessian_from_gradient as hessian_from_gradient
from ._results import hessian_from_values as hessian_from_values
from ._results import normal_only as normal_only
from ._results import observed_covariance as observed_covariance

__all__: list[str] = []
