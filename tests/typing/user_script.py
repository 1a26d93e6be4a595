"""A user's script over every public area, checked by mypy --strict --disallow-any-expr
(tests/test_quality.py): prevalence, oracles, heavy hitters, means, regression, the
Bayesian logit, planning, shuffle amplification, the client and exports. The one
builder (``mechanism_from_spec``) and the one estimator (``estimate``) compose; reports
have concrete dtypes; no expression's type contains ``Any`` beyond NumPy's shape
parameter (``tuple[Any, ...]``, which NumPy's own stubs carry)."""

from __future__ import annotations

from pathlib import Path
from typing import assert_type

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from deniable import (
    ForcedResponse,
    KaryRR,
    LocalHashing,
    Warner,
    disclosure_risk,
    estimate,
    frequency_oracle,
    heavy_hitters,
    mechanism_from_spec,
    prevalence_test,
    sample_size,
)
from deniable.analysis import rr_logit, rr_logit_bayes
from deniable.collection.exports import read_export
from deniable.collection.respondent import parse_survey_url, permanent_uniform
from deniable.estimation import (
    HeavyHitters,
    HistogramEstimate,
    MeanEstimate,
    PrefixHeavyHitters,
    PrevalenceEstimate,
    RapporEstimate,
    estimate_mean,
    find_heavy_hitters,
)
from deniable.mechanisms import DuchiMean, OracleReports, PrefixExtension, ReportCodes
from deniable.planning import shuffle_amplification

rng = np.random.default_rng(0)

# prevalence: a design, its reports (concrete dtypes), the estimate and its interval
coins = ForcedResponse(p_yes=0.25, p_no=0.25)
truths: NDArray[np.int64] = rng.integers(0, 2, 1000)
reports = coins.randomize(truths, rng)
assert_type(reports, ReportCodes)
result = estimate(coins, reports)
assert_type(result, PrevalenceEstimate)
assert_type(result.confidence_interval(0.95).low, NDArray[np.float64])
kary = KaryRR(k=4, epsilon=1.0)
assert_type(estimate(kary, kary.randomize(rng.integers(0, 4, 100), rng)), PrevalenceEstimate)

# the one builder and the one estimator compose: a union of mechanisms, and of results
built = mechanism_from_spec("warner:p=0.7")
from_spec = estimate(built, reports)
assert_type(
    from_spec,
    PrevalenceEstimate | RapporEstimate | MeanEstimate | HistogramEstimate | PrefixHeavyHitters,
)
print(from_spec.summary())

# oracles and heavy hitters
olh = LocalHashing(k=50, epsilon=2.0)
oracle_reports = olh.randomize(rng.integers(0, 50, 1000), rng)
assert_type(oracle_reports, NDArray[np.void])
frequencies = estimate(olh, oracle_reports)
assert_type(heavy_hitters(frequencies, alpha=0.05), HeavyHitters)
chosen = frequency_oracle(k=50, epsilon=2.0)
assert_type(chosen.randomize(rng.integers(0, 50, 10), rng), OracleReports | ReportCodes)
pem = PrefixExtension(4.0, max_length=3)
words: NDArray[np.str_] = np.zeros(100, dtype="<U3")
assert_type(find_heavy_hitters(pem, pem.randomize(words), threshold=0.1), PrefixHeavyHitters)

# means
duchi = DuchiMean(1.0, low=0.0, high=10.0)
mean = estimate_mean(duchi, duchi.randomize(np.linspace(1.0, 3.0, 100)))
assert_type(mean.confidence_interval().high, float)

# regression and the Bayesian logit
frame = pd.DataFrame({"report": reports, "age": rng.normal(40.0, 10.0, 1000)})
fit = rr_logit("report ~ age", frame, coins)
assert_type(fit.params, "pd.Series[float]")
assert_type(fit.params["age"], float)
bayes = rr_logit_bayes("report ~ age", frame, coins, draws=100, burn_in=50, chains=2)
print(bayes.summary())

# planning and shuffle amplification
needed: int = sample_size(Warner(p=0.7), margin=0.05)
risk = disclosure_risk(Warner(p=0.7), 0.1)
test = prevalence_test(Warner(p=0.7), reports, null=0.5)
central = shuffle_amplification(10_000, 1.0, 1e-6)
print(needed, risk, test.pvalue, central.epsilon)

# the client and exports
link = parse_survey_url("http://127.0.0.1:8000/s/campus#token=abc")
assert_type(permanent_uniform(b"\0" * 32, "campus/cheat", 1), float)
export, versions = read_export(Path("campus.csv"))
assert_type(export, pd.DataFrame)
print(link.survey_id, len(versions))
