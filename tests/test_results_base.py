"""Every fit speaks the one result vocabulary.

A *fit* is any result class of the package with estimates and standard errors (an
attribute or property ``std_error`` or ``bse``). Each must derive from the common base
(:class:`deniable.estimation.EstimateResult`), and each is built here and asked the shared
questions: ``estimate``, ``std_error``, ``labels``, ``confidence_interval(confidence_level=)``,
``summary()``, ``to_frame()``, ``to_dict()`` (JSON-ready, the one shape), and for
coefficient fits ``params``, ``bse``, ``conf_int(confidence_level=)`` and ``cov_params()``.
A new fit class without a factory below, or off the base, fails with its name.
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
from collections.abc import Callable
from html import escape as html_escape
from typing import Any

import numpy as np
import pandas as pd
import pytest

import deniable
import deniable.analysis as an
from deniable import ForcedResponse, KaryRR, Warner, estimate
from deniable._fitting._results import CoefficientsMixin, coefficient_table
from deniable.estimation import EstimateResult, RangeMean, Summary

#: Classes with a ``std_error`` that are not fits, and why.
NOT_FITS = {
    "deniable.analysis._known._known_prevalence.ValidationCheck": (
        "a test of a known prevalence: its std_error is the null's, not the estimate's"
    ),
    "deniable.collection.server._live.LiveRow": "a printed row: a live estimate beside the truth",
    "deniable.collection.study._demo_study.StudyRow": "a printed row: an estimate beside the truth",
    "deniable.data._demo.DemoRow": "a printed row of the demo's table",
}

#: Abstract bases: the vocabulary itself, not a fit one can build.
BASES = {
    "deniable._fitting._results.CoefficientsMixin",
    "deniable._fitting._results.LikelihoodFit",
    "deniable._fitting._results.PosteriorMixin",
    "deniable._fitting._results.WaldResult",
    "deniable.list_experiment._list_fit.ListFit",
}


def _classes() -> dict[str, type]:
    """Every class defined in the package (the Spark and CLI modules aside: they define
    no result), by qualified name."""
    found: dict[str, type] = {}
    for info in pkgutil.walk_packages(deniable.__path__, "deniable."):
        if info.name.endswith(".spark") or ".cli" in info.name:
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if inspect.isclass(obj) and obj.__module__ == module.__name__:
                found[f"{obj.__module__}.{name}"] = obj
    return found


def _has_errors(cls: type) -> bool:
    names = set(dir(cls)) | set(getattr(cls, "__dataclass_fields__", {}))
    return "std_error" in names or "bse" in names


def _binary(n: int = 2000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    design = ForcedResponse(p_yes=1 / 6, p_no=1 / 6)
    x = rng.normal(size=n)
    truth = rng.random(n) < 1 / (1 + np.exp(1 - x))
    return pd.DataFrame({"r": design.randomize(truth, rng), "x": x, "truth": truth})


def _lists(n: int = 1500, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    t = rng.integers(0, 2, n)
    x = rng.normal(size=n)
    z = rng.random(n) < 1 / (1 + np.exp(1 - x))
    v = rng.random(n) < 1 / (1 + np.exp(-(0.3 * x - 1.0 * z)))
    return pd.DataFrame(
        {"y": rng.binomial(3, 0.5, n) + t * z, "x": x, "treat": t, "v": v.astype(int),
         "g": rng.integers(0, 5, n)}
    )  # fmt: skip


def _shares() -> dict[str, Any]:
    return {
        "control": estimate(Warner(p=0.8), np.array([1] * 30 + [0] * 70)),
        "treated": estimate(Warner(p=0.8), np.array([1] * 50 + [0] * 50)),
    }


def _anchor(regression: bool) -> Any:
    from deniable.analysis import anchor_correction, anchor_regression

    rng = np.random.default_rng(1)
    n = 2000
    female = rng.integers(0, 2, n)
    attentive = rng.random(n) < 0.8
    carrier = rng.random(n) < 1 / (1 + np.exp(1.5 - 0.6 * female))
    y = np.where(attentive, (rng.random(n) < 0.1) == carrier, rng.random(n) < 0.5)
    a = np.where(attentive, rng.random(n) >= 0.15, rng.random(n) < 0.5)
    if not regression:
        return anchor_correction(y, a, p=0.1, p_anchor=0.15)
    data = pd.DataFrame({"Y": y.astype(int), "A": a.astype(int), "female": female})
    return anchor_regression("Y ~ female", data, anchor="A", p=0.1, p_anchor=0.15)


def _oracle(kind: str) -> Any:
    from deniable import LocalHashing, heavy_hitters
    from deniable.estimation import estimate_histogram, estimate_mean, find_heavy_hitters
    from deniable.mechanisms import DBitFlip, DuchiMean, PrefixExtension, Rappor

    rng = np.random.default_rng(1)
    if kind == "rappor":
        rappor = Rappor(n_bloom_bits=32, h=2, n_cohorts=4).with_candidates(["a", "b", "c"])
        return estimate(rappor, rappor.randomize(["a"] * 3000 + ["b"] * 1000, rng=rng))
    if kind == "heavy":
        oracle = LocalHashing(k=20, epsilon=2.0)
        values = np.where(np.arange(5000) % 2 == 0, 3, np.arange(5000) % 20)
        return heavy_hitters(estimate(oracle, oracle.randomize(values, rng)))
    if kind == "prefix":
        pem = PrefixExtension(4.0, max_length=3)
        words = np.array(["abc"] * 3000 + ["xyz"] * 2000 + ["q"] * 5000)
        return find_heavy_hitters(pem, pem.randomize(words, rng), threshold=0.1)
    if kind == "histogram":
        oracle = DBitFlip(k=10, epsilon=1.0)
        return estimate_histogram(oracle, oracle.randomize(np.arange(5000) % 10, rng))
    duchi = DuchiMean(1.0, low=0.0, high=10.0)
    return estimate_mean(duchi, duchi.randomize(np.full(5000, 4.0), rng))


def _analysis(kind: str) -> Any:
    design = ForcedResponse(p_yes=1 / 6, p_no=1 / 6)
    data = _binary()
    if kind == "logit":
        return an.rr_logit("r ~ x", data, design)
    if kind == "bayes_logit":
        return an.rr_logit_bayes("r ~ x", data, design, chains=2, draws=300, burn_in=200,
                                max_rhat=1.5, rng=0)  # fmt: skip
    if kind == "linear":
        data["y"] = 1.0 + 2.0 * data["truth"] + np.random.default_rng(3).normal(size=len(data))
        return an.rr_linear("y ~ r", data, design, "r")
    if kind == "mixed":
        data["school"] = np.arange(len(data)) % 20
        return an.rr_mixed_logit("r ~ x + (1 | school)", data, design)
    if kind == "predictor":
        rng = np.random.default_rng(4)
        data["y"] = (rng.random(len(data)) < np.where(data["truth"], 0.7, 0.3)).astype(int)
        return an.rr_predictor("y ~ r", data, design, rr_item="r")
    if kind == "correlation":
        return an.rr_correlation(data, ["r", "x"], {"r": design}, bootstrap=20)
    if kind == "channel":
        rng = np.random.default_rng(0)
        groups = np.arange(4000) % 2 + 1
        truth = rng.random(4000) < 0.2
        cheat = rng.random(4000) < np.where(groups == 1, 0.3, 0.7)
        return an.estimate_channel(
            an.CheatingDetection([0.3, 0.7]), np.where(cheat, 1, truth).astype(int), groups
        )
    if kind == "parity":
        rng = np.random.default_rng(0)
        outcome = Warner(p=0.8).randomize(rng.random(4000) < 0.3, rng)
        return an.statistical_parity(outcome, np.repeat([0, 1], 2000), outcome_design=Warner(p=0.8))
    raise AssertionError(kind)


def _subgroups() -> Any:
    from deniable.analysis import subgroup_prevalence

    reports = np.array([1] * 40 + [0] * 60 + [1] * 60 + [0] * 40)
    return subgroup_prevalence(Warner(p=0.8), reports, np.repeat(["a", "b"], 100))


def _list(kind: str) -> Any:
    data = _lists()
    if kind == "dim":
        return an.list_difference_in_means(data.y, data.treat, items=3)
    if kind == "ml":
        return an.list_regression("y ~ x", data, treat="treat", items=3)
    if kind == "robust":
        return an.list_robust("y ~ x", data, treat="treat", items=3)
    if kind == "joint":
        return an.list_joint_regression("y ~ x", data, treat="treat", items=3, outcome="v")
    if kind == "multi":
        arm = np.random.default_rng(2).integers(0, 3, len(data))
        multi = data.assign(treat=arm, y=data.y - data.treat * (data.y > 0) + (arm > 0))
        return an.list_regression_multi("y ~ x", multi, treat="treat", items=3)
    if kind == "bayes":
        return an.list_bayes("y ~ x", data, treat="treat", items=3, draws=300, burn_in=200, rng=1)
    return an.list_bayes_hierarchical("y ~ x", data, treat="treat", items=3, group="g",
                                     draws=100, burn_in=100, rng=1)  # fmt: skip


def _waves() -> Any:
    from deniable.analysis import wave_change

    d, rng = Warner(p=0.8), np.random.default_rng(2)
    return wave_change(d, d.randomize(rng.random(2000) < 0.2, rng),
                       d, d.randomize(rng.random(2000) < 0.3, rng))  # fmt: skip


def _power() -> Any:
    from deniable.analysis import power_difference

    return power_difference(Warner(p=0.8), 1000, 1000, 0.1, 0.2)


def _predicted() -> Any:
    return an.rr_logit(
        "r ~ x", _binary(), ForcedResponse(p_yes=1 / 6, p_no=1 / 6)
    ).predicted_prevalence()


FACTORIES: dict[str, Callable[[], Any]] = {
    "deniable.estimation._estimates.PrevalenceEstimate": lambda: _shares()["control"],
    "deniable.estimation._estimates.RapporEstimate": lambda: _oracle("rappor"),
    "deniable.estimation._heavy_hitters.HeavyHitters": lambda: _oracle("heavy"),
    "deniable.estimation._level_search.PrefixHeavyHitters": lambda: _oracle("prefix"),
    "deniable.estimation._means.HistogramEstimate": lambda: _oracle("histogram"),
    "deniable.estimation._means.MeanEstimate": lambda: _oracle("mean"),
    "deniable.estimation._means.RangeMean": lambda: RangeMean(
        _shares()["control"], low=0.0, high=40.0, unit="hours"
    ),
    "deniable.analysis._comparison.ArmDifferences": lambda: an.arm_differences(
        _shares(), "control"
    ),
    "deniable.analysis._comparison.ArmStudy": lambda: an.ArmStudy(
        "q", "Q?", "yes", False, ["a", "b"], ["warner", "warner"], list(_shares().values())
    ),
    "deniable.analysis._complex.SurveyEstimate": lambda: an.survey_estimate(
        Warner(p=0.8), np.array([1] * 70 + [0] * 30), pi=np.full(100, 0.1)
    ),
    "deniable.analysis._regression.RRLogitResult": lambda: _analysis("logit"),
    "deniable.analysis._bayes_logit.RRLogitBayesResult": lambda: _analysis("bayes_logit"),
    "deniable.analysis._linear.RRLinearResult": lambda: _analysis("linear"),
    "deniable.analysis._mixed_logit.RRMixedLogitResult": lambda: _analysis("mixed"),
    "deniable.analysis._predictor.RRPredictorResult": lambda: _analysis("predictor"),
    "deniable.analysis._correlation.CorrelationResult": lambda: _analysis("correlation"),
    "deniable.analysis._prevalence.ChannelEstimate": lambda: _analysis("channel"),
    "deniable.analysis._study_fits.GroupFit": lambda: an.GroupFit(
        "cheating-detection", "Clark & Desharnais 1998", _analysis("channel"), "gamma"
    ),
    "deniable.analysis._fairness.ParityResult": lambda: _analysis("parity"),
    "deniable.analysis._ratings.RankingResult": lambda: an.rank_items(
        ["a", "a", "b"], [4, 3, 0], k=5
    ),
    "deniable._fitting._results.PredictedPrevalence": _predicted,
    "deniable.analysis._subgroups.SubgroupResult": _subgroups,
    "deniable.analysis._subgroups.Contrast": lambda: _subgroups().difference("b", "a"),
    "deniable.analysis._waves._change.WaveChange": _waves,
    "deniable.analysis._power.PowerResult": _power,
    "deniable.analysis._known._anchor.AnchorCorrection": lambda: _anchor(False),
    "deniable.analysis._known._anchor.AnchorRegressionResult": lambda: _anchor(True),
    "deniable.list_experiment._item_count.ListEstimate": lambda: _list("dim"),
    "deniable.list_experiment._item_count_ml.ListRegressionResult": lambda: _list("ml"),
    "deniable.list_experiment._robust.RobustListResult": lambda: _list("robust"),
    "deniable.list_experiment._joint.JointListResult": lambda: _list("joint"),
    "deniable.list_experiment._multi_item.MultiItemListResult": lambda: _list("multi"),
    "deniable.list_experiment._posterior.ListBayesResult": lambda: _list("bayes"),
    "deniable.list_experiment._hierarchical.ListHierarchicalResult": lambda: _list("hier"),
}


@pytest.fixture(scope="module")
def classes() -> dict[str, type]:
    return _classes()


def test_every_fit_derives_from_the_common_base(classes) -> None:
    """A class with standard errors that is not on the base fails, named."""
    off = [
        name
        for name, cls in classes.items()
        if _has_errors(cls) and name not in NOT_FITS and not issubclass(cls, EstimateResult)
    ]
    assert not off, f"fits off the common base (derive from EstimateResult): {off}"


def test_every_fit_has_a_factory_here(classes) -> None:
    """Every fit is built below and asked the shared questions: a new one needs a
    factory, an old name here must still be a fit."""
    fits = {n for n, c in classes.items() if issubclass(c, EstimateResult)}
    fits -= BASES | {"deniable.estimation._base.EstimateResult"}
    assert not fits - set(FACTORIES), f"fits without a factory: {sorted(fits - set(FACTORIES))}"
    assert not set(FACTORIES) - fits, f"factories of no fit: {sorted(set(FACTORIES) - fits)}"


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_every_fit_answers_the_shared_questions(name: str) -> None:
    result = FACTORIES[name]()
    assert f"{type(result).__module__}.{type(result).__name__}" == name
    assert isinstance(result, EstimateResult)
    labels = result.labels
    est, se = np.atleast_1d(result.estimate), np.atleast_1d(result.std_error)
    assert est.shape == se.shape == (len(labels),), name
    ci = result.confidence_interval(confidence_level=0.9)
    assert np.atleast_1d(ci.low).shape == est.shape == np.atleast_1d(ci.high).shape
    finite = np.isfinite(np.atleast_1d(ci.low)) & np.isfinite(np.atleast_1d(ci.high))
    assert np.all(np.atleast_1d(ci.low)[finite] <= np.atleast_1d(ci.high)[finite] + 1e-12)
    summary = result.summary()
    assert isinstance(summary, Summary) and isinstance(summary, str) and summary
    assert repr(summary) == str(summary)  # typed bare: the table, not an escaped line
    html = result._repr_html_()  # a notebook shows the summary as HTML
    assert html.startswith(("<table", "<pre>"))
    if isinstance(result, CoefficientsMixin) and coefficient_table(result) in str(summary):
        # the coefficients as a table, as statsmodels shows them, its text around it
        assert html.count('<table class="deniable-summary">') == 1
        assert all(f"<th>{html_escape(str(t))}</th>" in html for t in result.params.index)
    else:
        assert html == summary._repr_html_()
    assert ("</table>" in html) or (html_escape(str(summary).splitlines()[0]) in html)
    frame = result.to_frame(confidence_level=0.9)
    assert {"estimate", "std_error", "low", "high"} <= set(frame.columns)
    assert [str(i) for i in frame.index] == [str(label) for label in labels]
    shape = json.loads(json.dumps(result.to_dict(confidence_level=0.9)))
    assert shape["result"] == type(result).__name__
    assert {"labels", "estimate", "std_error", "interval", "warnings"} <= set(shape)
    assert shape["interval"]["confidence_level"] == 0.9
    if hasattr(result, "params"):  # a coefficient fit: statsmodels' names too
        params, bse = result.params, result.bse
        assert list(params.index) == list(bse.index)
        np.testing.assert_allclose(np.asarray(params, float), est.astype(float))
        table = result.conf_int(confidence_level=0.9)
        assert list(table.columns) == ["low", "high"]
        np.testing.assert_allclose(table["low"], np.asarray(ci.low, float))
        assert result.cov_params().shape == (len(params), len(params))


def test_the_old_names_warn_and_answer_the_same() -> None:
    """``level=`` and ``seed=`` (the list experiment's words) still work for one release,
    with a DeprecationWarning, and give what ``confidence_level=`` and ``rng=`` give."""
    dim = _list("dim")
    with pytest.warns(DeprecationWarning, match="level= is renamed confidence_level="):
        old = dim.confidence_interval(level=0.8)
    assert tuple(old) == tuple(dim.confidence_interval(confidence_level=0.8))
    ml = _list("ml")
    with pytest.warns(DeprecationWarning, match="level= is renamed"):
        pd.testing.assert_frame_equal(ml.conf_int(level=0.8), ml.conf_int(confidence_level=0.8))
    data = _lists(400)
    kwargs = {"treat": "treat", "items": 3, "draws": 100, "burn_in": 100}
    with pytest.warns(DeprecationWarning, match="seed= is renamed rng="):
        by_seed = an.list_bayes("y ~ x", data, seed=3, **kwargs)
    pd.testing.assert_frame_equal(
        by_seed.draws, an.list_bayes("y ~ x", data, rng=3, **kwargs).draws
    )
    with pytest.warns(DeprecationWarning, match="confidence_interval"):
        by_seed.credible_interval(0.9)


def test_a_summary_renders_as_an_html_table_with_its_warnings_set_apart() -> None:
    """A prevalence estimate outside [0, 1]: its summary prints as the plain table with a
    ``warning:`` line, and renders as an HTML table whose cells are the estimates and
    whose warning is a paragraph of its own (labels escaped)."""
    import xml.etree.ElementTree as ET

    design = KaryRR(k=2, epsilon=1.0, labels=("no", "<yes & more>"))
    result = estimate(design, np.array([0] * 30))  # every report "no": below 0
    summary = result.summary()
    assert "warning: " in summary and summary.startswith(repr(design))
    html = summary._repr_html_()
    table = ET.fromstring(html[: html.index("</table>") + len("</table>")])
    rows = table.findall("./tbody/tr")
    assert [r.find("th").text for r in rows] == ["no", "<yes & more>"]  # escaped, read back
    cells = [float(td.text) for td in rows[1].findall("td")]
    np.testing.assert_allclose(cells[:2], [result.estimate[1], result.std_error[1]], atol=5e-5)
    assert html.count("<strong>warning:</strong>") == len(result.warnings) >= 1
