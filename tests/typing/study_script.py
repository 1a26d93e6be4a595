"""A user's script over the study side, checked by mypy --strict --disallow-any-expr
(tests/test_quality.py): ``mechanism_from_spec`` through ``randomize`` and ``tally``,
the list experiment, arms, waves and exports. No cast, no ``Any`` beyond NumPy's shape
parameter."""

from __future__ import annotations

from pathlib import Path
from typing import assert_type

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from deniable import Warner, estimate, mechanism_from_spec
from deniable.analysis import (
    ArmDifferences,
    ArmStudy,
    ListEstimate,
    ListRegressionResult,
    WaveChange,
    arm_differences,
    list_difference_in_means,
    list_regression,
    wave_change,
)
from deniable.collection.exports import export_bytes, read_export
from deniable.collection.model import load_survey
from deniable.collection.store import Store, wave_analysis
from deniable.collection.study import arm_analysis
from deniable.estimation import ConfidenceInterval, PrevalenceEstimate
from deniable.mechanisms import tally
from deniable.tallies import DBitFlipTally, MeanTally, RapporTally, SupportTally, Tally

rng = np.random.default_rng(0)
truths: NDArray[np.int64] = rng.integers(0, 2, 1000)

# the one builder through randomize and tally, without narrowing by hand
built = mechanism_from_spec("warner:p=0.7")
counts = tally(built, built.randomize(truths, rng))
assert_type(
    counts, Tally | SupportTally | RapporTally | MeanTally | DBitFlipTally | NDArray[np.void]
)
print(estimate(built, built.randomize(truths, rng)).summary())

# the list experiment: a moment estimate and a regression on the common base
treated: NDArray[np.int64] = rng.integers(0, 2, 1000)
count_reports: NDArray[np.int64] = rng.integers(0, 4, 1000)  # 0..J in both lists
covariate: NDArray[np.float64] = rng.normal(size=1000)
dim = list_difference_in_means(count_reports, treated, items=3)
assert_type(dim, ListEstimate)
assert_type(dim.estimate, float)
interval = dim.confidence_interval(confidence_level=0.9)
assert_type(interval, ConfidenceInterval[float])
frame = pd.DataFrame(index=pd.RangeIndex(1000))
frame["y"], frame["treat"], frame["x"] = count_reports, treated, covariate
fit = list_regression("y ~ x", frame, treat="treat", items=3)
assert_type(fit, ListRegressionResult)
assert_type(fit.params, "pd.Series[float]")
assert_type(fit.bse, "pd.Series[float]")
assert_type(fit.conf_int(confidence_level=0.9), pd.DataFrame)
assert_type(fit.prevalence, float)
print(fit.summary(), dim.to_frame())

# arms: each arm's estimate and the differences to a reference arm
design = Warner(p=0.8)
arms = {
    "control": estimate(design, design.randomize(truths[:500], rng)),
    "treated": estimate(design, design.randomize(truths[500:], rng)),
}
assert_type(arms["control"], PrevalenceEstimate)
differences = arm_differences(arms, "control")
assert_type(differences, ArmDifferences)
print(differences.summary())

# waves: the change between two waves of one question
change = wave_change(design, design.randomize(truths[:500], rng),
                     design, design.randomize(truths[500:], rng))  # fmt: skip
assert_type(change, WaveChange)
print(change.to_dict())

# a study's survey file, its store and its exports
survey = load_survey(Path("examples/campus.yaml"))
store = Store("sqlite:///campus.sqlite")
content, media_type, name = export_bytes(store, survey.id, "wide")
assert_type(content, bytes)
export, versions = read_export(Path(name))
assert_type(export, pd.DataFrame)
by_arm = arm_analysis(export, survey)
assert_type(by_arm, list[ArmStudy])
for study in by_arm:
    assert_type(study.to_frame(), pd.DataFrame)
for wave in wave_analysis(export, versions):
    print(wave["question"], wave["rows"])
print(media_type, len(versions))
