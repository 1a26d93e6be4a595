"""A user's script, checked by mypy --strict (tests/test_quality.py): a function whose
result depends on an argument says so by its overloads."""

from __future__ import annotations

from typing import Any, assert_type

from deniable import Warner
from deniable.arrow import AnyTally, tally_parquet
from deniable.estimation import PrevalenceEstimate
from deniable.spark import estimate, local_session, tally

design = Warner(p=0.7)
assert_type(tally_parquet(design, "reports.parquet"), AnyTally)
assert_type(tally_parquet(design, "reports.parquet", group_by="country"), dict[Any, AnyTally])
spark = local_session()
frame = spark.read.parquet("reports.parquet")
assert_type(tally(design, frame), AnyTally)
assert_type(tally(design, frame, group_by="country"), dict[str | None, AnyTally])
assert_type(estimate(design, frame), PrevalenceEstimate)
assert_type(estimate(design, frame, group_by="country"), dict[str | None, PrevalenceEstimate])
