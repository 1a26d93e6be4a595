"""Long library work reports its progress (issue 62, item 4): the simulations and the
sampler call ``progress(k)`` with the units just done, summing to the whole, and give
the same result as without it."""

from __future__ import annotations

import numpy as np
import pandas as pd

from deniable import Warner, prevalence_test_error_rates
from deniable.analysis import power_coefficient, rr_logit_bayes
from deniable.data import regression_example


def test_the_test_error_rates_report_every_simulated_survey() -> None:
    calls: list[int] = []
    design = Warner(p=0.8)
    # 2,500 surveys of 10,000 respondents: chunks of 1,000 surveys, so three calls
    rates = prevalence_test_error_rates(
        design, n=10_000, prevalence=0.6, n_simulations=2_500, progress=calls.append
    )
    assert calls == [1_000, 1_000, 500]
    same = prevalence_test_error_rates(design, n=10_000, prevalence=0.6, n_simulations=2_500)
    assert rates == same


def test_a_simulated_power_reports_each_refit() -> None:
    example = regression_example()
    calls: list[int] = []
    args = ("r ~ x", example.data, example.design, [-1.0, 1.0], "x")
    got = power_coefficient(*args, n=200, method="simulation", reps=6, progress=calls.append)
    assert calls == [1] * 6
    same = power_coefficient(*args, n=200, method="simulation", reps=6)
    assert got.power == same.power
    formula: list[int] = []  # the formula simulates nothing: no call
    power_coefficient(*args, n=200, progress=formula.append)
    assert formula == []


def test_the_sampler_reports_each_iteration() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=300)
    truth = rng.random(300) < 1 / (1 + np.exp(1 - x))
    design = Warner(p=0.85)
    frame = pd.DataFrame({"y": design.randomize(truth.astype(int), rng), "x": x})
    calls: list[int] = []
    kwargs = {"chains": 2, "draws": 20, "burn_in": 10, "rng": 3, "max_rhat": 10.0}
    fit = rr_logit_bayes("y ~ x", frame, design, progress=calls.append, **kwargs)
    assert calls == [1] * 30
    same = rr_logit_bayes("y ~ x", frame, design, **kwargs)
    np.testing.assert_array_equal(fit.draws, same.draws)


def test_the_prefix_searches_report_each_level_and_find_the_same() -> None:
    """find_heavy_hitters and find_string_heavy_hitters call ``progress(1)`` once a level
    (the search never stops early, so the calls sum to the levels), in threshold and in
    top-k mode, and return what they return without it."""
    from deniable.estimation import find_heavy_hitters, find_string_heavy_hitters
    from deniable.mechanisms import BytePrefixExtension, PrefixExtension

    rng = np.random.default_rng(62)
    pem = PrefixExtension(4.0, max_length=3, lengths=[1, 2, 3])
    words = np.array(["abc"] * 3000 + ["xyz"] * 2000 + ["q"] * 5000)
    reports = pem.randomize(words, rng)
    bpem = BytePrefixExtension(4.0, max_bytes=8)
    strings = bpem.randomize(["tea"] * 6000 + ["café"] * 4000, rng)
    for options in ({"threshold": 0.1}, {"top_k": 2}):
        calls: list[int] = []
        found = find_heavy_hitters(pem, reports, progress=calls.append, **options)
        assert calls == [1] * pem.levels and pem.levels > 1
        again = find_heavy_hitters(pem, reports, **options)
        assert found.values == again.values
        np.testing.assert_array_equal(found.estimate, again.estimate)
        calls = []
        found = find_string_heavy_hitters(bpem, strings, progress=calls.append, **options)
        assert calls == [1] * bpem.levels and bpem.levels > 1
        assert found.values == find_string_heavy_hitters(bpem, strings, **options).values


def test_the_cli_searches_pem_reports_with_a_bar_fed_by_each_level(tmp_path, monkeypatch):
    """`deniable analyze FILE --design pem-bytes:...` finds the most frequent strings of
    a Parquet file, as the library's top-k search does, and feeds its progress bar from
    the search's ``progress``: one step a level."""
    import json

    import pyarrow.parquet as pq
    from typer.testing import CliRunner

    import deniable.estimation as estimation
    from deniable.cli import app
    from deniable.mechanisms import mechanism_from_spec
    from deniable.tables.arrow import report_table

    spec = "pem-bytes:epsilon=4,max_bytes=8"
    bpem = mechanism_from_spec(spec)
    words = ["tea"] * 6000 + ["café"] * 4000 + ["coffee"] * 3000
    reports = bpem.randomize(words, np.random.default_rng(3))
    pq.write_table(report_table(bpem, reports), tmp_path / "r.parquet")
    steps: list[int] = []
    real = estimation.find_string_heavy_hitters

    def spy(*args, progress, **kwargs):
        return real(*args, progress=lambda k: (steps.append(k), progress(k)), **kwargs)

    monkeypatch.setattr(estimation, "find_string_heavy_hitters", spy)
    done = CliRunner().invoke(
        app, ["analyze", str(tmp_path / "r.parquet"), "--design", spec, "--top", "3", "--json"]
    )
    assert done.exit_code == 0, done.output
    assert steps == [1] * bpem.levels and bpem.levels > 1
    shown = json.loads(done.stdout)
    assert shown["labels"] == real(bpem, reports, top_k=3).values == ["tea", "café", "coffee"]
    (tmp_path / "r.csv").write_text("level,a,y\n0,1,1\n")
    refused = CliRunner().invoke(app, ["analyze", str(tmp_path / "r.csv"), "--design", spec])
    assert refused.exit_code == 2 and "read from Parquet" in " ".join(refused.output.split())
