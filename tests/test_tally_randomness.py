"""Tallies and random sources."""

from __future__ import annotations

import os

import numpy as np
import pytest
from scipy import stats

from deniable import BlumBlumShub, ForcedResponse, ReportValidationError, SecureRandom, Tally
from deniable.mechanisms._randomness import BUFFER_BYTES, resolve_rng


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


# ---- the secure source: a keystream keyed from os.urandom (NIST SP 800-90A CTR_DRBG) ----


def _urandom_spy(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = os.urandom

    def spy(n: int) -> bytes:
        calls.append(n)
        return real(n)

    monkeypatch.setattr(os, "urandom", spy)
    return calls


def test_secure_source_keys_from_os_urandom_once_then_serves_every_draw_from_the_keystream(
    monkeypatch,
):
    calls = _urandom_spy(monkeypatch)
    source = SecureRandom()
    source.random(1)
    assert calls == [32, 16]  # AES-256 key and initial counter block
    for size in (1, 7, 1000, 70_000, 1 << 20):
        source.random(size)
        source.bytes(size)
    assert calls == [32, 16] and source.reseeds == 1


def test_secure_source_reseeds_from_os_urandom_after_its_interval(monkeypatch):
    calls = _urandom_spy(monkeypatch)
    source = SecureRandom(reseed_interval=BUFFER_BYTES)
    for _ in range(5):
        source.bytes(BUFFER_BYTES)  # each request reaches the interval
    assert source.reseeds == 5 and calls == [32, 16] * 5
    with pytest.raises(ValueError, match="reseed_interval"):
        SecureRandom(reseed_interval=10)


def test_secure_source_rekeys_after_every_request_and_zeroes_what_it_handed_out():
    source = SecureRandom()
    source.random(3)
    first = source._encryptor
    source.bytes(1 << 20)  # a large request ends with a new key
    assert source._encryptor is not first
    handed = source._pos
    assert handed > 0 and not any(source._buffer[:handed])  # served bytes are erased


def test_secure_source_output_is_uniform():
    """Distribution tests, each at alpha = 1e-6 (a false failure once in 10^6 runs)."""
    source = SecureRandom()
    small = np.concatenate([source.random(100) for _ in range(2000)])  # NumPy's path
    assert stats.kstest(small, "uniform").pvalue > 1e-6
    u = source.random(1_000_000)  # the compiled path
    assert stats.kstest(u, "uniform").pvalue > 1e-6
    # every one of the 53 bits of k = u * 2^53 is a fair coin: two-sided z < 5.33
    k = (u * 2.0**53).astype(np.uint64)
    ones = np.array([np.count_nonzero((k >> np.uint64(b)) & np.uint64(1)) for b in range(53)])
    z = (ones - u.size / 2) / np.sqrt(u.size / 4)
    assert np.abs(z).max() < stats.norm.isf(1e-6 / 2 / 53)  # Bonferroni over 53 bits
    # lag-1 serial correlation of uniforms: sqrt(n) * r ~ N(0, 1)
    r = np.corrcoef(u[:-1], u[1:])[0, 1]
    assert abs(r) * np.sqrt(u.size) < stats.norm.isf(1e-6 / 2)
    # bytes from small and large requests: chi-square on byte values, 255 df
    for data in (b"".join(source.bytes(17) for _ in range(20_000)), source.bytes(1 << 20)):
        counts = np.bincount(np.frombuffer(data, dtype=np.uint8), minlength=256)
        expected = len(data) / 256
        assert ((counts - expected) ** 2 / expected).sum() < stats.chi2.isf(1e-6, 255)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is not available on this platform")
def test_a_forked_child_never_repeats_its_parents_stream():
    source = SecureRandom()
    source.random(10)  # the parent holds a key and a buffer when it forks
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: send its next draws and exit at once
        try:
            os.write(write_end, bytes(source.bytes(64)) + source.random(8).tobytes())
        finally:
            os._exit(0)
    os.close(write_end)
    child = b""
    while len(child) < 128:
        piece = os.read(read_end, 128)
        if not piece:
            break
        child += piece
    os.close(read_end)
    os.waitpid(pid, 0)
    parent = bytes(source.bytes(64)) + source.random(8).tobytes()
    assert len(child) == 128 and child[:64] != parent[:64] and child[64:] != parent[64:]


@pytest.mark.parametrize("length", [0, 17, BUFFER_BYTES // 4 - 1, BUFFER_BYTES, (1 << 24) + 33])
def test_secure_bytes_are_a_read_only_view_of_exactly_the_keystream(length):
    """``bytes_view`` writes the keystream into an uninitialised buffer (no zero-fill, no
    trim: issue 44) and hands out a read-only view of exactly ``length`` bytes; two
    requests never overlap (each ends with a new key, or takes fresh buffer bytes)."""
    source = SecureRandom()
    out = source.bytes_view(length)
    assert isinstance(out, memoryview) and out.readonly and out.format == "B"
    assert len(out) == out.nbytes == length and bytes(out) == out.tobytes()
    with pytest.raises(TypeError):
        out[:1] = b"\0"  # the caller cannot scribble on it
    if length >= 64:
        again = source.bytes_view(length)
        assert bytes(out[:64]) != bytes(again[:64])  # 2^-512 to fail by chance
        assert np.frombuffer(out, dtype=np.uint8)[-32:].any()  # the tail is keystream too


@pytest.mark.parametrize("length", [0, 1, 17, BUFFER_BYTES + 3])
def test_secure_bytes_are_bytes_as_the_standard_sources_give(length):
    """``SecureRandom.bytes`` returns ``bytes``, as ``random.randbytes`` and NumPy's
    ``Generator.bytes`` do; two requests differ."""
    import random

    source = SecureRandom()
    out = source.bytes(length)
    assert type(out) is bytes is type(random.randbytes(length))
    assert type(out) is type(np.random.default_rng(0).bytes(length)) and len(out) == length
    if length >= 17:
        assert out != source.bytes(length)  # 2^-136 to fail by chance
