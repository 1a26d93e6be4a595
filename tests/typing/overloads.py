"""A user's script, checked by mypy --strict (tests/test_quality.py): a function whose
result depends on an argument says so by its overloads, and an interval's bounds have
the type of the estimate."""

from __future__ import annotations

from typing import Any, assert_type

import numpy as np
from numpy.typing import NDArray

from deniable import Warner
from deniable.arrow import AnyTally, tally_parquet
from deniable.estimation import PrevalenceEstimate
from deniable.estimation import estimate as deniable_estimate
from deniable.estimation.means import estimate_mean
from deniable.mechanisms.numeric import DuchiMean
from deniable.spark import estimate, local_session, tally

assert_type(
    deniable_estimate(Warner(p=0.7), np.array([0, 1, 1])).confidence_interval().low,
    NDArray[np.float64],
)
duchi = DuchiMean(1.0, low=0.0, high=10.0)
mean = estimate_mean(duchi, duchi.randomize(np.array([1.0, 2.0, 3.0])))
assert_type(mean.confidence_interval().high, float)

design = Warner(p=0.7)
assert_type(tally_parquet(design, "reports.parquet"), AnyTally)
assert_type(tally_parquet(design, "reports.parquet", group_by="country"), dict[Any, AnyTally])
spark = local_session()
frame = spark.read.parquet("reports.parquet")
assert_type(tally(design, frame), AnyTally)
assert_type(tally(design, frame, group_by="country"), dict[str | None, AnyTally])
assert_type(estimate(design, frame), PrevalenceEstimate)
assert_type(estimate(design, frame, group_by="country"), dict[str | None, PrevalenceEstimate])
