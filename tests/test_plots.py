"""deniable.plots, checked structurally: the marks drawn are the numbers of the results
(intervals, estimates, thresholds, the asked margin and its n), the labels name them,
and bad input is refused by name. Images are written for a person to look at under
``tmp_path``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from deniable import LocalHashing, Warner, estimate, heavy_hitters
from deniable.analysis import rr_logit, wave_change
from deniable.estimation import find_heavy_hitters
from deniable.mechanisms import ForcedResponse, PrefixExtension
from deniable.planning import sample_size
from deniable.plots import (
    plot_coefficients,
    plot_coverage,
    plot_estimates,
    plot_heavy_hitters,
    plot_intervals,
    plot_sample_size,
    plot_waves,
)

pytest.importorskip("matplotlib")


def _segments(ax) -> np.ndarray:
    """The (low, high) of each horizontal interval drawn, top row first."""
    (lines,) = [c for c in ax.collections if type(c).__name__ == "LineCollection"]
    segs = sorted(lines.get_segments(), key=lambda s: -s[0][1])
    return np.array([[s[0][0], s[1][0]] for s in segs])


def _dots(ax) -> np.ndarray:
    (dots,) = [c for c in ax.collections if type(c).__name__ == "PathCollection"][:1]
    offsets = np.asarray(dots.get_offsets())
    return offsets[np.argsort(-offsets[:, 1])][:, 0]


def _ticks(ax) -> list[str]:
    return [t.get_text() for t in ax.get_yticklabels()]


def test_plot_estimates_draws_each_results_interval_and_estimate(tmp_path):
    d, rng = Warner(p=0.8), np.random.default_rng(11)
    arms = {
        arm: estimate(d, d.randomize(rng.random(n) < pi, rng))
        for arm, pi, n in [("control", 0.02, 300), ("treated", 0.3, 900)]
    }
    fig = plot_estimates(arms, truth=[0.98, 0.02, 0.7, 0.3], confidence_level=0.9)
    ax = fig.axes[0]
    assert _ticks(ax) == ["control: no", "control: yes", "treated: no", "treated: yes"]
    want = [arms[a].confidence_interval(0.9) for a in arms]
    lows = np.concatenate([w.low for w in want])
    highs = np.concatenate([w.high for w in want])
    np.testing.assert_allclose(_segments(ax), np.column_stack([lows, highs]))
    est = np.concatenate([arms[a].estimate for a in arms])
    np.testing.assert_allclose(_dots(ax), est)
    assert "90% interval" in ax.get_xlabel()
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["estimate", "truth"]
    fig.savefig(tmp_path / "estimates.png")
    # one category, a sequence (positions name the rows)
    fig = plot_estimates(list(arms.values()), categories=["yes"])
    assert _ticks(fig.axes[0]) == ["1: yes", "2: yes"]
    with pytest.raises(ValueError, match="categories"):
        plot_estimates(arms, categories=["maybe"])
    with pytest.raises(TypeError, match="EstimateResult"):
        plot_estimates({"a": 0.3})  # type: ignore[dict-item]


def test_an_estimate_outside_its_clipped_interval_is_drawn_where_it_is():
    """A prevalence estimated below 0 (unbiased, unclipped) beside an interval clipped to
    [0, 1]: the dot is at the estimate, the line at the interval, no error bar."""
    d = ForcedResponse(p_yes=0.2, p_no=0.2)
    result = estimate(d, np.array([1] * 15 + [0] * 85))  # share 0.15 < p_yes
    assert result.estimate[1] < 0
    ax = plot_estimates(result, categories=["yes"]).axes[0]
    assert _dots(ax)[0] == pytest.approx(result.estimate[1])
    assert _segments(ax)[0][0] >= 0.0


def test_plot_intervals_refuses_what_it_cannot_draw_by_name():
    with pytest.raises(ValueError, match="labels"):
        plot_intervals([], [], [], [])
    with pytest.raises(ValueError, match="low must have 2 entries"):
        plot_intervals(["a", "b"], [0.1, 0.2], [0.0], [0.3, 0.4])
    with pytest.raises(ValueError, match="estimate must be finite"):
        plot_intervals(["a"], [np.nan], [0.0], [1.0])
    with pytest.raises(ValueError, match="colors must have 1"):
        plot_intervals(["a"], [0.1], [0.0], [1.0], colors=["C0", "C1"])


def test_plot_coefficients_draws_the_fits_terms_and_its_odds_ratios(tmp_path):
    rng = np.random.default_rng(4)
    n = 1500
    data = pd.DataFrame({"x": rng.normal(size=n), "z": rng.normal(size=n)})
    truth = rng.random(n) < 1 / (1 + np.exp(1 - data["x"] + 0.5 * data["z"]))
    data["r"] = Warner(p=0.8).randomize(truth, rng)
    fit = rr_logit("r ~ x + z", data, Warner(p=0.8))
    ax = plot_coefficients(fit).axes[0]
    assert _ticks(ax) == ["x", "z"]
    bounds = fit.conf_int(0.95)
    np.testing.assert_allclose(_segments(ax), bounds.iloc[1:][["low", "high"]].to_numpy())
    np.testing.assert_allclose(_dots(ax), fit.params.iloc[1:])
    assert ax.lines[0].get_xdata()[0] == 0.0  # the reference line
    fig = plot_coefficients(fit, intercept=True, exponentiate=True)
    ax = fig.axes[0]
    assert _ticks(ax)[0] in ("Intercept", "(Intercept)")
    assert ax.get_xscale() == "log"
    np.testing.assert_allclose(_dots(ax), np.exp(fit.params))
    assert ax.lines[0].get_xdata()[0] == 1.0
    assert "odds ratio" in ax.get_xlabel()
    fig.savefig(tmp_path / "coefficients.png")
    with pytest.raises(TypeError, match="params and conf_int"):
        plot_coefficients(estimate(Warner(p=0.8), np.array([0, 1, 1])))


def test_plot_waves_draws_each_waves_prevalence_and_a_wave_changes_two(tmp_path):
    d, rng = Warner(p=0.8), np.random.default_rng(5)
    each = [estimate(d, d.randomize(rng.random(800) < pi, rng)) for pi in (0.2, 0.25, 0.35)]
    ax = plot_waves(each, waves=["2024", "2025", "2026"], confidence_level=0.9).axes[0]
    (line,) = [ln for ln in ax.lines if ln.get_marker() == "o"]
    np.testing.assert_allclose(line.get_ydata(), [r.estimate[1] for r in each])
    (bars,) = ax.collections
    ends = np.array([[s[0][1], s[1][1]] for s in bars.get_segments()])
    np.testing.assert_allclose(ends[:, 0], [r.confidence_interval(0.9).low[1] for r in each])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["2024", "2025", "2026"]
    assert ax.get_ylabel().startswith("yes:")
    change = wave_change(d, d.randomize(rng.random(2000) < 0.2, rng),
                         d, d.randomize(rng.random(2000) < 0.3, rng))  # fmt: skip
    fig = plot_waves(change)
    ax = fig.axes[0]
    (line,) = [ln for ln in ax.lines if ln.get_marker() == "o"]
    np.testing.assert_allclose(line.get_ydata(), [change.first[1], change.second[1]])
    assert ax.get_title().startswith(f"change {change.difference[1]:+.3f}")
    fig.savefig(tmp_path / "waves.png")
    with pytest.raises(ValueError, match="two or more waves"):
        plot_waves(each[:1])
    with pytest.raises(ValueError, match="waves must name 3"):
        plot_waves(each, waves=["a"])
    with pytest.raises(ValueError, match="category must be one of"):
        plot_waves(each, category="maybe")


def test_plot_coverage_draws_the_band_a_correct_method_stays_in(tmp_path):
    sims = 1000
    covered = {"wilson": [960, 948, 955, 951], "wald": [0, 900, 946, 700]}
    fig = plot_coverage([0.0, 0.3, 0.7, 1.0], covered, sims, confidence_level=0.95)
    ax = fig.axes[0]
    half = 4 * np.sqrt(0.95 * 0.05 / sims)
    (band,) = ax.patches
    assert band.get_y() == pytest.approx(0.95 - half)
    assert band.get_y() + band.get_height() == pytest.approx(0.95 + half)
    labels = ax.get_legend_handles_labels()[1]
    assert labels[-2:] == ["wilson", "wald"] and "nominal 95%" in labels
    (flagged,) = [ln for ln in ax.lines if ln.get_color() == "red"]
    np.testing.assert_allclose(flagged.get_ydata(), [0.0, 0.9, 0.7])  # below the band
    fig.savefig(tmp_path / "coverage.png")
    with pytest.raises(ValueError, match=r"counts in 0\.\.1000"):
        plot_coverage([0.5], [1001], sims)
    with pytest.raises(ValueError, match="one per label"):
        plot_coverage([0.5, 0.6], [10], sims)
    with pytest.raises(ValueError, match="simulations"):
        plot_coverage([0.5], [1], 0)


def test_plot_heavy_hitters_marks_the_threshold_and_the_detection_limit(tmp_path):
    pem = PrefixExtension(4.0, max_length=3)
    words = np.array(["abc"] * 3000 + ["xyz"] * 2000 + ["q"] * 5000)
    found = find_heavy_hitters(pem, pem.randomize(words, np.random.default_rng(0)), 0.1)
    fig = plot_heavy_hitters(found, detection_limit=0.08)
    ax = fig.axes[0]
    assert _ticks(ax) == ["q", "abc", "xyz"]
    widths = sorted((p.get_width() for p in ax.patches), reverse=True)
    np.testing.assert_allclose(widths, found.estimate)
    lines = {ln.get_label(): ln.get_xdata()[0] for ln in ax.lines if ln.get_label()[0] != "_"}
    assert lines == {"threshold asked 0.1": 0.1, "detection limit 0.08": 0.08}
    fig.savefig(tmp_path / "prefix.png")
    oracle, rng = LocalHashing(k=20, epsilon=2.0), np.random.default_rng(1)
    values = np.where(np.arange(5000) % 2 == 0, 3, np.arange(5000) % 20)
    hh = heavy_hitters(estimate(oracle, oracle.randomize(values, rng)))
    ax = plot_heavy_hitters(hh, top=1).axes[0]
    assert _ticks(ax) == ["3"]
    (marks,) = [ln for ln in ax.lines if ln.get_marker() == "|"]
    assert marks.get_xdata()[0] == pytest.approx(hh.threshold_z * hh.std_error[0])
    with pytest.raises(ValueError, match="top"):
        plot_heavy_hitters(hh, top=0)


def test_plot_sample_size_marks_the_asked_margin_at_the_n_plan_gives(tmp_path):
    d = ForcedResponse(p_yes=0.25, p_no=0.25)
    fig = plot_sample_size(d, margin=0.02, confidence_level=0.9)
    ax = fig.axes[0]
    n = sample_size(d, 0.02, 0.9)
    (mark,) = [ln for ln in ax.lines if ln.get_label().startswith("n = ")]
    assert (mark.get_xdata()[0], mark.get_ydata()[0]) == (n, 0.02)
    assert mark.get_label() == f"n = {n:,} for ±0.02 at 90%"
    normal = ax.lines[0]  # the curve passes through the mark (its n is the ceiling)
    assert np.interp(np.log(n), np.log(normal.get_xdata()), np.log(normal.get_ydata())) == (
        pytest.approx(np.log(0.02), abs=1e-3)
    )
    assert ax.get_xscale() == ax.get_yscale() == "log"
    assert "epsilon" in ax.get_title()
    fig.savefig(tmp_path / "margin.png")


def test_the_dashboard_draws_with_deniable_plots(monkeypatch):
    from deniable.collection.server import _pages

    drawn = []

    def spy(*args, **kwargs):
        drawn.append(args)
        return plot_intervals(*args, **kwargs)

    monkeypatch.setattr(_pages, "plot_intervals", spy)
    rows = [{"id": "q", "category": "yes", "estimate": -0.01, "low": 0.0, "high": 0.1}]
    images = _pages._plots(rows, [])
    assert drawn and drawn[0][1].tolist() == [-0.01]
    assert images[0][1].startswith("data:image/png;base64,")
