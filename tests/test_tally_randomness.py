"""Tallies and random sources."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from deniable import BlumBlumShub, ForcedResponse, ReportValidationError, SecureRandom, Tally
from deniable.mechanisms.randomness import resolve_rng


def test_tally_counts_and_merges():
    t = Tally.from_reports(np.array([0, 2, 2, 1]), n_reports=3)
    assert t.counts.tolist() == [1, 1, 2] and t.n == 4
    merged = t + Tally.from_reports(np.array([2]), n_reports=3)
    assert merged.counts.tolist() == [1, 1, 3]
    np.testing.assert_allclose(merged.shares, [0.2, 0.2, 0.6])
    with pytest.raises(ReportValidationError, match="cannot merge"):
        t + Tally([1, 2])


@pytest.mark.parametrize("bad", [[-1, 2], [[1, 2]], [1.5, 2], ["a", "b"], [3]])
def test_tally_rejects_malformed_counts(bad):
    with pytest.raises(ReportValidationError):
        Tally(np.array(bad))


def test_tally_rejects_out_of_range_reports():
    with pytest.raises(ReportValidationError, match=r"codes in 0\.\.1"):
        Tally.from_reports(np.array([0, 1, 2]), n_reports=2)


def test_secure_random_is_uniform_and_unseedable():
    u = SecureRandom().random(200_000)
    assert u.dtype == np.float64 and u.min() >= 0 and u.max() < 1
    # Kolmogorov-Smirnov against U(0,1); false-failure rate 1e-6
    assert stats.kstest(u, "uniform").pvalue > 1e-6
    assert resolve_rng(None).__class__ is SecureRandom


def test_default_randomize_uses_the_secure_source(monkeypatch):
    calls = []
    real = SecureRandom.random

    def spy(self, size):
        calls.append(size)
        return real(self, size)

    monkeypatch.setattr(SecureRandom, "random", spy)
    ForcedResponse(p_yes=0.25, p_no=0.25).randomize(np.array([0, 1, 1]))
    assert calls == [3]


def test_blum_blum_shub_is_reproducible_uniform_and_usable_as_rng():
    a = BlumBlumShub(p=499, q=547, seed=159201).random(5)
    b = BlumBlumShub(p=499, q=547, seed=159201).random(5)
    np.testing.assert_array_equal(a, b)
    bbs = BlumBlumShub(modulus_bits=256)
    u = bbs.random(5000)
    assert stats.kstest(u, "uniform").pvalue > 1e-6
    reports = ForcedResponse(p_yes=0.25, p_no=0.25).randomize(np.ones(100, dtype=int), bbs)
    assert reports.shape == (100,)


def test_blum_blum_shub_validates_its_parameters():
    with pytest.raises(ValueError, match="3 mod 4"):
        BlumBlumShub(p=13, q=547)
    with pytest.raises(ValueError, match="together"):
        BlumBlumShub(p=499)
    with pytest.raises(ValueError, match="coprime"):
        BlumBlumShub(p=499, q=547, seed=499)
    with pytest.raises(ValueError, match="modulus_bits"):
        BlumBlumShub(modulus_bits=16)


def test_rng_without_random_method_is_a_type_error():
    with pytest.raises(TypeError, match="rng must be"):
        ForcedResponse(p_yes=0.25, p_no=0.25).randomize(np.array([1]), rng=42)  # type: ignore[arg-type]
