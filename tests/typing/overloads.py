"""A user's script, checked by mypy --strict --disallow-any-expr (tests/test_quality.py):
a function whose result depends on an argument says so by its overloads, an interval's
bounds have the type of the estimate, and no expression's type contains Any."""

from __future__ import annotations

from collections.abc import Hashable
from typing import assert_type

import numpy as np
from numpy.typing import NDArray

from deniable import Warner
from deniable.estimation import PrevalenceEstimate
from deniable.estimation import estimate as deniable_estimate
from deniable.estimation._means import estimate_mean
from deniable.mechanisms._numeric import DuchiMean
from deniable.tables.arrow import AnyTally, tally_parquet
from deniable.tables.spark import estimate, local_session, tally

assert_type(
    deniable_estimate(Warner(p=0.7), np.arange(3, dtype=np.int64) % 2).confidence_interval().low,
    NDArray[np.float64],
)
duchi = DuchiMean(1.0, low=0.0, high=10.0)
mean = estimate_mean(duchi, duchi.randomize(np.linspace(1.0, 3.0, 3)))
assert_type(mean.confidence_interval().high, float)

design = Warner(p=0.7)
assert_type(tally_parquet(design, "reports.parquet"), AnyTally)
assert_type(tally_parquet(design, "reports.parquet", group_by="country"), dict[Hashable, AnyTally])
spark = local_session()
frame = spark.read.parquet("reports.parquet")
assert_type(tally(design, frame), AnyTally)
assert_type(tally(design, frame, group_by="country"), dict[str | None, AnyTally])
assert_type(estimate(design, frame), PrevalenceEstimate)
assert_type(estimate(design, frame, group_by="country"), dict[str | None, PrevalenceEstimate])

# one estimate for every mechanism, each result typed by the overloads
from deniable import Rappor  # noqa: E402
from deniable.estimation import RapporEstimate  # noqa: E402
from deniable.estimation._level_search import PrefixHeavyHitters  # noqa: E402
from deniable.estimation._means import HistogramEstimate, MeanEstimate  # noqa: E402
from deniable.mechanisms import DBitFlip, PrefixExtension  # noqa: E402

assert_type(deniable_estimate(duchi, duchi.randomize(np.ones(4))), MeanEstimate)
dbf = DBitFlip(k=10, epsilon=1.0)
codes: NDArray[np.int64] = np.zeros(4, dtype=np.int64)
assert_type(deniable_estimate(dbf, dbf.randomize(codes)), HistogramEstimate)
pem = PrefixExtension(4.0, max_length=3)
words: NDArray[np.str_] = np.zeros(4, dtype="<U3")
found = deniable_estimate(pem, pem.randomize(words), threshold=0.1)
assert_type(found, PrefixHeavyHitters)
rappor = Rappor(n_bloom_bits=16, h=2, n_cohorts=4).with_candidates(["a", "b"])
assert_type(deniable_estimate(rappor, rappor.randomize(["a"])), RapporEstimate)
