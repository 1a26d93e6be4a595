"""Every mechanism behind one protocol, the channel carrying the arithmetic.

Numeric means, dBitFlip and PEM satisfy the same generic ``Mechanism`` protocol as the
designs and oracles: ``estimate`` takes all of them and asks the channel; reports
round-trip through their text and binary column forms (and Arrow); and no module
outside ``deniable.mechanisms`` asks a mechanism what class it is.
"""

from __future__ import annotations

import ast
import inspect
import math
from pathlib import Path

import numpy as np
import pytest

import deniable.mechanisms as mechanisms_package
from deniable import estimate, mechanism_from_spec
from deniable.estimation import EstimateResult, PrevalenceEstimate
from deniable.estimation._level_search import PrefixHeavyHitters
from deniable.estimation._means import HistogramEstimate, MeanEstimate
from deniable.mechanisms import CHANNELS, Mechanism
from deniable.mechanisms._protocol import CategoricalMechanism

from .conftest import parse_python
from .test_protocol import OTHER_SPECS, SPECS

SRC = Path(__file__).resolve().parents[1] / "src" / "deniable"
ALL_SPECS = SPECS + OTHER_SPECS


def _truths(mech: Mechanism, n: int, rng: np.random.Generator) -> np.ndarray:
    """Truths the mechanism takes: codes, strings (RAPPOR, PEM) or values in range."""
    name = mech.spec_name
    if name == "rappor":
        return np.array([f"v{i}" for i in rng.integers(0, 16, n)])
    if name in ("pem", "pem-bytes"):
        return rng.choice(np.array(["abc", "abd", "zz", "q"]), n, p=[0.5, 0.3, 0.15, 0.05])
    if name == "dbitflip":
        return rng.integers(0, 10, n)
    if isinstance(mech, CategoricalMechanism):
        return rng.integers(0, mech.n_truths, n)
    return rng.uniform(mech.params["low"], mech.params["high"], n)


@pytest.mark.parametrize("spec", ALL_SPECS)
def test_every_mechanism_has_a_channel_and_both_column_forms(spec: str) -> None:
    mech = mechanism_from_spec(spec)
    assert isinstance(mech, Mechanism)
    assert isinstance(mech.channel, CHANNELS)
    rng = np.random.default_rng(1)
    reports = mech.randomize(_truths(mech, 300, rng), rng)
    arrays = mech.report_arrays(reports)
    assert [f.name for f in mech.report_fields] == list(arrays)
    for field in mech.report_fields:
        arr = arrays[field.name]
        if field.kind == "bytes":
            assert arr.dtype == np.uint8 and arr.shape == (300, field.width)
        else:
            assert arr.ndim == 1 and arr.dtype.kind == (
                "f" if field.kind == "float" else "i" if arr.dtype.kind == "i" else "u"
            )
    again = mech.reports_from_arrays(arrays)
    text = mech.reports_from_columns(mech.report_columns(reports))
    for back in (again, text):
        for name, arr in mech.report_arrays(back).items():
            np.testing.assert_array_equal(arr, arrays[name])


@pytest.mark.parametrize("spec", ALL_SPECS)
def test_reports_round_trip_through_arrow(spec: str) -> None:
    pytest.importorskip("pyarrow")
    from deniable.tables.arrow import report_table, reports_from_batch

    mech = mechanism_from_spec(spec)
    rng = np.random.default_rng(2)
    reports = mech.randomize(_truths(mech, 200, rng), rng)
    back = reports_from_batch(mech, report_table(mech, reports))
    for name, arr in mech.report_arrays(back).items():
        np.testing.assert_array_equal(arr, mech.report_arrays(reports)[name])


@pytest.mark.parametrize(
    ("spec", "kind"),
    [
        ("duchi:epsilon=1,low=0,high=10", MeanEstimate),
        ("piecewise:epsilon=1,low=0,high=10", MeanEstimate),
        ("hybrid:epsilon=1,low=0,high=10", MeanEstimate),
        ("1bitmean:epsilon=1,low=0,high=10", MeanEstimate),
    ],
)
def test_numeric_means_estimate_through_the_one_function(spec: str, kind: type) -> None:
    mech = mechanism_from_spec(spec)
    rng = np.random.default_rng(5)
    values = rng.uniform(2, 9, 20_000)
    reports = mech.randomize(values, rng)
    result = estimate(mech, reports)
    assert isinstance(result, kind) and isinstance(result, EstimateResult)
    # the same as from the tally, and within 4 standard errors of the values' mean
    assert estimate(mech, mech.tally(reports)).estimate == pytest.approx(result.estimate)
    assert abs(result.estimate - values.mean()) <= 4 * result.std_error


def test_dbitflip_and_pem_estimate_through_the_one_function() -> None:
    rng = np.random.default_rng(7)
    dbf = mechanism_from_spec("dbitflip:k=10,epsilon=1,d=2")
    truths = rng.integers(0, 10, 20_000)
    hist = estimate(dbf, dbf.randomize(truths, rng))
    assert isinstance(hist, HistogramEstimate)
    share = np.bincount(truths, minlength=10) / truths.size
    assert np.all(np.abs(hist.estimate - share) <= 4.5 * hist.std_error)
    pem = mechanism_from_spec("pem:epsilon=4,max_length=3")
    values = _truths(pem, 20_000, rng)
    found = estimate(pem, pem.randomize(values, rng), threshold=0.1)
    assert isinstance(found, PrefixHeavyHitters)
    assert {"abc", "abd", "zz"} <= set(found.values)


def test_channels_refuse_what_they_do_not_take() -> None:
    mean = mechanism_from_spec("piecewise:epsilon=1")
    reports = mean.randomize(np.zeros(10))
    with pytest.raises(ValueError, match="one estimator"):
        estimate(mean, reports, "mle")
    with pytest.raises(TypeError, match="takes no options, got threshold"):
        estimate(mean, reports, threshold=0.1)  # type: ignore[call-overload]
    design = mechanism_from_spec("warner:p=0.7")
    with pytest.raises(TypeError, match="takes no options"):
        estimate(design, np.array([0, 1]), threshold=0.1)  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="must be a deniable Mechanism"):
        estimate(object(), np.array([0, 1]))  # type: ignore[call-overload]
    assert isinstance(estimate(design, np.array([0, 1, 1])), PrevalenceEstimate)


def _mechanism_classes() -> set[str]:
    """Names of the classes in deniable.mechanisms whose instances are mechanisms."""
    names = set()
    for name in dir(mechanisms_package):
        obj = getattr(mechanisms_package, name)
        if inspect.isclass(obj) and hasattr(obj, "spec") and hasattr(obj, "randomize"):
            names.add(name)
    return names


def test_no_module_outside_the_mechanisms_asks_a_mechanism_its_class() -> None:
    """No ``isinstance(x, C)`` (nor ``type(x) is C``) with C a mechanism class or a
    channel class, outside ``deniable.mechanisms``: what a caller needs comes from the
    protocol, or from the channel's record (``frequency_oracle``, ``string_truths``)."""
    classes = _mechanism_classes() | {c.__name__ for c in mechanisms_package.CHANNELS}
    assert {"BloomChannel", "SupportChannel", "PrefixChannel"} <= classes
    assert {"Warner", "Rappor", "LocalHashing", "Piecewise", "DBitFlip", "Design"} <= classes
    found = []
    for path in SRC.rglob("*.py"):
        if path.parent.name == "mechanisms":
            continue
        tree = parse_python(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance":
                named = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
                named |= {n.attr for n in ast.walk(node.args[1]) if isinstance(n, ast.Attribute)}
                if named & classes:
                    found.append(f"{path.relative_to(SRC)}:{node.lineno} {sorted(named & classes)}")
            if isinstance(node, ast.Compare) and any(isinstance(o, ast.Is) for o in node.ops):
                text = ast.unparse(node)
                if text.startswith("type(") and any(f" {c}" in text for c in classes):
                    found.append(f"{path.relative_to(SRC)}:{node.lineno} {text}")
    assert found == []


def test_the_detector_finds_an_isinstance_of_a_mechanism_class() -> None:
    source = "def f(d):\n    return isinstance(d, Warner)\n"
    call = next(n for n in ast.walk(parse_python(source)) if isinstance(n, ast.Call))
    named = {n.id for n in ast.walk(call.args[1]) if isinstance(n, ast.Name)}
    assert named & _mechanism_classes() == {"Warner"}
    assert math.isfinite(mechanism_from_spec("warner:p=0.7").epsilon)


def test_old_names_warn_for_one_release_and_still_work() -> None:
    """``PrevalenceEstimate.prevalence`` and ``deniable.analysis.Channel`` (CHANGELOG)."""
    result = estimate(mechanism_from_spec("warner:p=0.7"), np.array([0, 1, 1]))
    with pytest.warns(DeprecationWarning, match=r"use \.estimate"):
        old = result.prevalence
    np.testing.assert_array_equal(old, result.estimate)
    pytest.importorskip("pandas")
    import deniable.analysis as analysis

    with pytest.warns(DeprecationWarning, match="renamed GroupModel"):
        assert analysis.Channel is analysis.GroupModel
