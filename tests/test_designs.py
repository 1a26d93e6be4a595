"""Designs: matrices from the published parameters, epsilon from both sides, randomizers."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from scipy import stats

from deniable import (
    Crosswise,
    ForcedResponse,
    KaryRR,
    Kuk,
    Mangat,
    MatrixDesign,
    PrivacyWarning,
    Triangular,
    UnrelatedQuestion,
    Warner,
    design_from_spec,
)
from deniable.mechanisms._designs import ldp_epsilon

# Each design with its exact epsilon (nats), computed by hand from the published formulas.
DESIGNS = [
    (ForcedResponse(p_yes=0.25, p_no=0.25), math.log(3)),
    (ForcedResponse(p_yes=1 / 6, p_no=1 / 6), math.log(5)),
    (ForcedResponse(p_yes=0.1, p_no=0.3), math.log(0.7 / 0.1)),
    (Warner(p=0.7), math.log(0.7 / 0.3)),
    (Warner(p=0.2), math.log(0.8 / 0.2)),
    (UnrelatedQuestion(p=0.5, innocuous_prevalence=1 / 3), math.log((0.5 + 1 / 6) / (1 / 6))),
    (Crosswise(p=0.25), math.log(3)),
    (Kuk(p_carrier=0.6, p_noncarrier=0.2), math.log(0.6 / 0.2)),
    (Kuk(p_carrier=0.6, p_noncarrier=0.2, draws=3), math.log((0.6 / 0.2) ** 3)),
    (KaryRR(k=10, epsilon=math.log(3)), math.log(3)),
    (KaryRR(k=3, epsilon=2.0), 2.0),
    (KaryRR.from_keep_probability(k=4, keep_probability=0.5), math.log(0.5 * 3 / 0.5)),
    (MatrixDesign([[0.6, 0.1, 0.2], [0.2, 0.8, 0.2], [0.2, 0.1, 0.6]]), math.log(6)),
]


@pytest.mark.parametrize(("design", "exact"), DESIGNS, ids=lambda d: repr(d))
def test_epsilon_is_never_under_reported_and_tight(design, exact):
    # never under-reported ...
    assert design.epsilon >= exact
    # ... and only rounded up by the 2^-53 allowance (a few ulps relative to the entries)
    assert design.epsilon - exact < 1e-12
    # the definition holds at the reported epsilon, and fails just below the exact one
    assert design.is_epsilon_ldp(design.epsilon)
    assert not design.is_epsilon_ldp(exact - 1e-6)


def test_two_coin_epsilon_is_ln3_from_both_sides():
    coins = ForcedResponse(p_yes=0.25, p_no=0.25)
    assert coins.epsilon >= math.log(3)
    assert coins.epsilon == pytest.approx(math.log(3), abs=1e-14)
    assert coins.is_epsilon_ldp(math.log(3))
    assert not coins.is_epsilon_ldp(math.log(2.999))


@pytest.mark.parametrize(("design", "_"), DESIGNS, ids=lambda d: repr(d))
def test_matrix_is_column_stochastic(design, _):
    P = design.matrix
    assert P.shape == (design.n_reports, design.n_truths)
    np.testing.assert_allclose(P.sum(axis=0), 1.0, atol=1e-12)
    assert np.all(P >= 0)
    assert not P.flags.writeable


def test_named_matrices_follow_the_published_definitions():
    np.testing.assert_allclose(
        ForcedResponse(p_yes=0.25, p_no=0.25).matrix, [[0.75, 0.25], [0.25, 0.75]]
    )
    np.testing.assert_allclose(ForcedResponse(p_yes=0.1, p_no=0.3).matrix, [[0.9, 0.3], [0.1, 0.7]])
    np.testing.assert_allclose(Warner(p=0.7).matrix, [[0.7, 0.3], [0.3, 0.7]])
    uq = UnrelatedQuestion(p=0.5, innocuous_prevalence=0.6)
    np.testing.assert_allclose(uq.matrix[1], [0.3, 0.8])  # (1-p) pi_u, p + (1-p) pi_u
    np.testing.assert_allclose(Crosswise(p=0.2).matrix[1], [0.8, 0.2])  # Pr(same | no, yes)
    np.testing.assert_allclose(Mangat(p=0.3).matrix[1], [0.7, 1.0])
    np.testing.assert_allclose(Triangular(p=0.2).matrix[1], [0.2, 1.0])
    kuk = Kuk(p_carrier=0.6, p_noncarrier=0.2, draws=2)
    np.testing.assert_allclose(kuk.matrix[:, 1], [0.16, 0.48, 0.36])
    k = KaryRR(k=10, epsilon=math.log(3))
    assert k.keep_probability == pytest.approx(0.25)
    assert k.other_probability == pytest.approx(1 / 12)


def test_one_sided_designs_have_infinite_epsilon_and_state_their_protection():
    mangat, tri = Mangat(p=0.3), Triangular(p=0.2)
    for design in (mangat, tri):
        assert design.epsilon == math.inf
        assert design.requires_opt_in
        assert design.protected_truth == 1
        assert design.likelihood_ratio_bound(0) == math.inf
    assert mangat.protected_likelihood_ratio == pytest.approx(1 / 0.7)
    assert tri.protected_likelihood_ratio == pytest.approx(1 / 0.2)
    assert not ForcedResponse(p_yes=0.25, p_no=0.25).requires_opt_in


@pytest.mark.parametrize(
    ("factory", "name"),
    [
        (lambda: Warner(p=1.3), "p"),
        (lambda: Warner(p=0.5), "p"),
        (lambda: ForcedResponse(p_yes=-0.1, p_no=0.2), "p_yes"),
        (lambda: ForcedResponse(p_yes=0.6, p_no=0.5), "p_yes \\+ p_no"),
        (lambda: UnrelatedQuestion(p=0.0, innocuous_prevalence=0.5), "p"),
        (lambda: UnrelatedQuestion(p=0.5, innocuous_prevalence=2), "innocuous_prevalence"),
        (lambda: Crosswise(p=0.5), "p"),
        (lambda: Kuk(p_carrier=0.3, p_noncarrier=0.3), "p_carrier"),
        (lambda: Kuk(p_carrier=0.6, p_noncarrier=0.2, draws=0), "draws"),
        (lambda: Mangat(p=1.0), "p"),
        (lambda: Triangular(p=0.0), "p"),
        (lambda: KaryRR(k=1, epsilon=1.0), "k"),
        (lambda: KaryRR(k=3, epsilon=0.0), "epsilon"),
        (lambda: KaryRR.from_keep_probability(k=4, keep_probability=0.2), "keep_probability"),
        (lambda: MatrixDesign([[0.5, 0.5], [0.5, 0.5]]), "rank"),
        (lambda: MatrixDesign([[0.5, 0.2], [0.6, 0.8]]), "sum to 1"),
        (lambda: MatrixDesign([[1.0, 0.0, 0.0], [0.0, 1.0, 1.0]]), "m >= k"),
    ],
)
def test_bad_parameters_raise_value_error_naming_the_parameter(factory, name):
    with pytest.raises(ValueError, match=name):
        factory()


def test_wrong_types_raise_type_error():
    with pytest.raises(TypeError, match="p must be a real number"):
        Warner(p="0.7")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="k must be an integer"):
        KaryRR(k=2.5, epsilon=1.0)  # type: ignore[arg-type]


def test_designs_are_keyword_only():
    with pytest.raises(TypeError):
        Warner(0.7)  # type: ignore[misc]


def test_large_epsilon_warns():
    with pytest.warns(PrivacyWarning, match="epsilon"):
        KaryRR(k=2, epsilon=6.0)


def test_ldp_epsilon_ignores_impossible_reports():
    P = np.array([[0.5, 0.25], [0.5, 0.75], [0.0, 0.0]])
    assert ldp_epsilon(P) == pytest.approx(math.log(2), abs=1e-12)


@pytest.mark.parametrize(("design", "_"), DESIGNS, ids=lambda d: repr(d))
def test_randomize_draws_reports_from_the_matrix_column(design, _, rng):
    # chi-square goodness of fit per truth; false-failure rate 1e-6 per truth and design
    n = 60_000
    for t in range(design.n_truths):
        reports = design.randomize(np.full(n, t), rng)
        observed = np.bincount(reports, minlength=design.n_reports)
        expected = design.matrix[:, t] * n
        keep = expected > 0
        assert observed[~keep].sum() == 0
        if keep.sum() > 1:
            chi2 = float((((observed - expected) ** 2)[keep] / expected[keep]).sum())
            assert stats.chi2.sf(chi2, keep.sum() - 1) > 1e-6


class CountingSource:
    def __init__(self) -> None:
        self.drawn = 0
        self._g = np.random.default_rng(0)

    def random(self, size: int) -> np.ndarray:
        self.drawn += size
        return self._g.random(size)


@pytest.mark.parametrize(("design", "_"), DESIGNS, ids=lambda d: repr(d))
def test_randomize_uses_the_same_randomness_whatever_the_truth(design, _):
    used = []
    for t in range(design.n_truths):
        src = CountingSource()
        design.randomize(np.full(1000, t), src)
        used.append(src.drawn)
    assert used == [1000] * design.n_truths


def test_randomize_accepts_bool_and_rejects_bad_truths():
    coins = ForcedResponse(p_yes=0.25, p_no=0.25)
    out = coins.randomize(np.array([True, False, True]))
    assert out.shape == (3,) and out.dtype == np.uint8
    with pytest.raises(ValueError, match=r"codes in 0\.\.1"):
        coins.randomize(np.array([0, 2]))
    with pytest.raises(TypeError, match="integer or bool"):
        coins.randomize(np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match="1-D"):
        coins.randomize(np.zeros((2, 2), dtype=int))


def test_design_from_spec_round_trip():
    assert design_from_spec("forced-response:p_yes=0.25,p_no=0.25") == ForcedResponse(
        p_yes=0.25, p_no=0.25
    )
    assert design_from_spec("kary-rr:k=5,epsilon=1") == KaryRR(k=5, epsilon=1.0)
    assert design_from_spec("unrelated_question:p=1/2,innocuous-prevalence=1/3") == (
        UnrelatedQuestion(p=0.5, innocuous_prevalence=1 / 3)
    )
    with pytest.raises(ValueError, match="unknown design 'coin'; allowed"):
        design_from_spec("coin:p=0.5")
    with pytest.raises(ValueError, match="name=value"):
        design_from_spec("warner:0.7")
    with pytest.raises(ValueError, match="must be a number"):
        design_from_spec("warner:p=abc")
    with pytest.raises(ValueError, match="design 'warner' takes p; got q"):
        design_from_spec("warner:q=0.7")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("warner:q=0.7", "design 'warner' takes p; got q"),
        ("forced-response:p_yes=0.2", "design 'forced-response' needs p_no (it takes p_yes, p_no)"),
        ("crosswise:p=0.25,k=3", "design 'crosswise' takes p; got k"),
    ],
)
def test_a_wrong_parameter_names_the_allowed_ones(spec, message):
    from deniable.mechanisms._registry import design_from_spec, mechanism_from_spec

    with pytest.raises(ValueError, match=re.escape(message)):
        design_from_spec(spec)
    with pytest.raises(ValueError, match="takes k, epsilon, g; got eps"):
        mechanism_from_spec("olh:k=10,eps=1")
