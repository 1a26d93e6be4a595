"""The two paths of the inner loops: numba's compiled kernels and their NumPy twins.

Every kernel is run on both paths with the same inputs and must give the same values;
the Feldman-Cousins ends agree to the precision of their bisection (the mass at the
crossing share is level +- 1e-13 on both, so the last steps may split: 1e-9 bounds the
difference for n <= 3,000). The UE randomizer's NumPy path draws other bytes than the
lazy compiled one, so it is tested on its distribution. A core-only interpreter (numba
hidden) estimates with the NumPy path.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from deniable import LocalHashing, UnaryEncoding, Warner, estimate
from deniable.estimation import _unified_numpy
from deniable.mechanisms import _kernels, _kernels_numpy

numba_kernels = pytest.importorskip(
    "deniable.mechanisms._kernels_numba", reason="numba (the fast extra) is not installed"
)


def _hash_inputs(n: int, g: int, seed: int = 7) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2**63, n, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    b = rng.integers(0, 2**63, n, dtype=np.uint64)
    width = np.full(n, (2**32 + g - 1) // g, dtype=np.uint64)
    lo = rng.integers(0, g, n).astype(np.uint64) * width
    return a, b, lo, width


@pytest.mark.parametrize(("n", "k"), [(0, 5), (1, 1), (257, 33), (3000, 700)])
def test_local_hashing_kernels_agree(n: int, k: int) -> None:
    a, b, lo, width = _hash_inputs(n, 5)
    for name in ("olh_support_counts", "olh_support_pairs"):
        got = getattr(_kernels_numpy, name)(a, b, lo, width, k)
        want = getattr(numba_kernels, name)(a, b, lo, width, k)
        for g, w in zip(
            np.atleast_1d(got) if name.endswith("counts") else got,
            np.atleast_1d(want) if name.endswith("counts") else want,
            strict=True,
        ):
            np.testing.assert_array_equal(g, w)
    cands = np.random.default_rng(1).integers(0, 2**40, 300, dtype=np.uint64)
    np.testing.assert_array_equal(
        _kernels_numpy.olh_candidate_counts(a, b, lo, width, cands),
        numba_kernels.olh_candidate_counts(a, b, lo, width, cands),
    )


def test_local_hashing_kernels_agree_at_the_edges_of_a_bucket() -> None:
    # one bucket (every value supports), empty buckets, buckets past 2^32, random ones
    rng = np.random.default_rng(9)
    n = 400
    a, b, _lo, _w = _hash_inputs(n, 3)
    lo = rng.integers(0, 2**32, n, dtype=np.uint64)
    width = rng.integers(0, 2**33, n, dtype=np.uint64)
    lo[:50], width[:50] = 0, 2**32
    width[50:100] = 0
    lo[100:150], width[100:150] = 2**32 - 5, 2**32
    lo[150:200] = 2**32 + 7
    for name in ("olh_support_counts", "olh_support_pairs"):
        got = getattr(_kernels_numpy, name)(a, b, lo, width, 57)
        want = getattr(numba_kernels, name)(a, b, lo, width, 57)
        for g, w in zip(
            got if isinstance(got, tuple) else [got],
            want if isinstance(want, tuple) else [want],
            strict=True,
        ):
            np.testing.assert_array_equal(g, w)


def test_local_hashing_kernels_agree_past_one_block() -> None:
    # more candidates than a block holds: the columns are split as well as the rows
    a, b, lo, width = _hash_inputs(3, 7)
    k = _kernels_numpy._BLOCK + 5
    np.testing.assert_array_equal(
        _kernels_numpy.olh_support_counts(a, b, lo, width, k),
        numba_kernels.olh_support_counts(a, b, lo, width, k),
    )
    for got, want in zip(
        _kernels_numpy.olh_support_pairs(a, b, lo, width, k),
        numba_kernels.olh_support_pairs(a, b, lo, width, k),
        strict=True,
    ):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("bounds", ["one width", "edges of a bucket"])
def test_the_candidate_walk_agrees_with_the_compiled_kernel(
    bounds: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # many reports walk the candidates one by one on slices in threads: shrink the slice
    # so that a small input crosses slices, threads, bound groups and the bounds fallback
    monkeypatch.setattr(_kernels_numpy, "_WALK", 64)
    monkeypatch.setattr(_kernels_numpy, "_WALK_FROM", 128)
    rng = np.random.default_rng(11)
    n = 1000
    a, b, lo, width = _hash_inputs(n, 6)
    if bounds == "edges of a bucket":
        lo = rng.integers(0, 2**32, n, dtype=np.uint64)
        width = rng.integers(0, 2**33, n, dtype=np.uint64)
        lo[:50], width[:50] = 0, 2**32
        width[50:100] = 0
        lo[100:150] = 2**32 + 7
    for k in (1, 2, 59):
        np.testing.assert_array_equal(
            _kernels_numpy.olh_support_counts(a, b, lo, width, k),
            numba_kernels.olh_support_counts(a, b, lo, width, k),
        )
    # unsorted, repeated, consecutive and far-apart candidates
    cands = np.concatenate(
        [
            rng.integers(0, 2**40, 40, dtype=np.uint64),
            np.arange(30, dtype=np.uint64)[::-1],
            np.array([5, 5, 2**64 - 1, 0], dtype=np.uint64),
        ]
    )
    np.testing.assert_array_equal(
        _kernels_numpy.olh_candidate_counts(a, b, lo, width, cands),
        numba_kernels.olh_candidate_counts(a, b, lo, width, cands),
    )


def test_the_candidate_walk_takes_large_inputs() -> None:
    # at the real slice size: more reports than _WALK_FROM, two bounds (the last bucket)
    a, b, lo, width = _hash_inputs(_kernels_numpy._WALK_FROM + 3001, 5, seed=3)
    np.testing.assert_array_equal(
        _kernels_numpy.olh_support_counts(a, b, lo, width, 9),
        numba_kernels.olh_support_counts(a, b, lo, width, 9),
    )


def test_encoders_agree() -> None:
    rng = np.random.default_rng(3)
    n, g = 5000, 9
    values = rng.integers(0, 10**6, n).astype(np.int64)
    a, b, _lo, _w = _hash_inputs(n, g)
    keep = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    other = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    args = (values, a, b, keep, other, g, 2**31)
    np.testing.assert_array_equal(_kernels_numpy.olh_encode(*args), numba_kernels.olh_encode(*args))
    u = rng.random(n)
    truths = rng.integers(0, 3, n)
    thr = np.array([0.2, 0.5, 0.9])
    np.testing.assert_array_equal(
        _kernels_numpy.binary_draw(truths, u, thr), numba_kernels.binary_draw(truths, u, thr)
    )
    bools = truths == 1
    np.testing.assert_array_equal(
        _kernels_numpy.binary_draw(bools, u, thr[:2]), numba_kernels.binary_draw(bools, u, thr[:2])
    )
    x = rng.uniform(-1, 1, n)
    for params in [(2.5, 0.6, 1.0, 1.0), (1.8, 0.7, 0.4, 1.3)]:
        np.testing.assert_array_equal(
            _kernels_numpy.piecewise_draw(x, u, *params),
            numba_kernels.piecewise_draw(x, u, *params),
        )


def test_counting_kernels_agree() -> None:
    rng = np.random.default_rng(5)
    for shape in [(0, 3), (1, 1), (999, 13), (2000, 130), (300_000, 9)]:  # 9: two blocks
        packed = rng.integers(0, 256, shape, dtype=np.uint8)
        np.testing.assert_array_equal(
            _kernels_numpy.byte_histograms(packed), numba_kernels.byte_histograms(packed)
        )
        np.testing.assert_array_equal(
            _kernels_numpy.packed_column_bit_counts(packed),
            numba_kernels.packed_column_bit_counts(packed),
        )
    words = rng.integers(0, 2**64, 10_000, dtype=np.uint64)
    one, two = words.view(np.float64).copy(), words.view(np.float64).copy()
    _kernels_numpy.words_to_uniforms(one)
    numba_kernels.words_to_uniforms(two)
    np.testing.assert_array_equal(one, two)
    assert one.min() >= 0.0 and one.max() < 1.0


def test_byte_pem_kernels_agree() -> None:
    """Byte-PEM's spectra and the Walsh-Hadamard transform, on both paths: random rows
    and buckets for r = 1..8, several parents, and a transform whose sums pass 2^31
    (the NumPy path's int64 branch)."""
    rng = np.random.default_rng(29)
    for r, n, parents, width in [(1, 0, 2, 256), (3, 500, 5, 256), (8, 300, 3, 65536)]:
        a = rng.integers(0, 2**64, (n, r), dtype=np.uint64)
        y = rng.integers(0, 1 << r, n).astype(np.uint8)
        w = rng.integers(0, width, (n, 1 << r))
        hashes = rng.integers(0, 2**64, parents, dtype=np.uint64)
        np.testing.assert_array_equal(
            _kernels_numpy.hadamard_spectrum(a, y, w, hashes, width),
            numba_kernels.hadamard_spectrum(a, y, w, hashes, width),
        )
        ids = rng.integers(0, 2**64, 2 * parents, dtype=np.uint64)
        direct = _kernels_numpy.linear_hash_counts(a, y, ids)
        np.testing.assert_array_equal(direct, numba_kernels.linear_hash_counts(a, y, ids))
        bits = np.bitwise_count(a[:, None, :] & ids[None, :, None]) & 1  # (n, E, r)
        bucket = (bits.astype(np.int64) << np.arange(r)).sum(axis=2)
        np.testing.assert_array_equal(direct, (bucket == y[:, None]).sum(axis=0))
    for bound in (2**20, 2**40):
        values = rng.integers(-bound // 4096, bound // 4096, (3, 4096))
        one, two = values.copy(), values.copy()
        _kernels_numpy.walsh_hadamard_rows(one, bound)
        numba_kernels.walsh_hadamard_rows(two, bound)
        np.testing.assert_array_equal(one, two)
        assert np.abs(one).max() > (2**31 if bound > 2**31 else 0)


@pytest.mark.parametrize(
    ("n", "a", "b", "level"),
    [
        (1, 0.0, 1.0, 0.95),
        (7, 0.0, 1.0, 0.9),
        (40, 0.25, 0.75, 0.95),
        (300, 0.3, 0.7, 0.99),
        (200, 0.0, 0.5, 0.95),
        (150, 0.1, 1.0, 0.95),
    ],
)
def test_feldman_cousins_ends_agree(n: int, a: float, b: float, level: float) -> None:
    from deniable.estimation._unified_numba import unified_share_interval as compiled

    y = np.arange(n + 1)
    trials = np.full(n + 1, n)
    low, high = _unified_numpy.unified_share_interval(y, trials, a, b, level)
    want_low, want_high = compiled(y, trials, a, b, level)
    np.testing.assert_allclose(low, want_low, rtol=0, atol=1e-9)
    np.testing.assert_allclose(high, want_high, rtol=0, atol=1e-9)
    # n = 0 gives the whole range on both paths
    assert _unified_numpy.unified_share_interval(np.array([0]), np.array([0]), a, b, level) == (
        np.array([a]),
        np.array([b]),
    )


def test_feldman_cousins_regions_at_the_edge_shares_agree() -> None:
    """At a share on the edge of [a, b] every count beyond it has the ratio 0: the
    NumPy path takes that side in chunks (no window doubling to its end), and gets the
    compiled loop's region, count for count, including n up to 10^5, a = 0 or b = 1
    (one edge only) and the share where the flat side alone reaches the level."""
    from deniable.estimation._unified_numba import _region

    for a, b in [(0.25, 0.75), (0.1, 0.95), (1 / 6, 5 / 6), (0.0, 0.8), (0.3, 1.0)]:
        for n in [1, 2, 3, 10, 37, 1000, 12_345, 100_000]:
            for lam in [x for x in (a, b) if 0 < x < 1]:
                for level in (0.5, 0.95, 0.99):
                    lo, hi = _unified_numpy._regions(np.array([n]), np.array([lam]), a, b, level)
                    assert (int(lo[0]), int(hi[0])) == _region(n, lam, a, b, level)


def test_the_backend_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(_kernels.ENV, "numpy")
    assert _kernels.kernel_backend() == "numpy"
    monkeypatch.setenv(_kernels.ENV, "numba")
    assert _kernels.kernel_backend() == "numba"
    monkeypatch.setenv(_kernels.ENV, "fortran")
    with pytest.raises(ValueError, match="DENIABLE_KERNELS must be 'numba', 'numpy' or unset"):
        _kernels.kernel_backend()


@pytest.mark.parametrize("optimized", [True, False])
def test_unary_randomizer_numpy_path_has_the_design_probabilities(
    monkeypatch: pytest.MonkeyPatch, optimized: bool
) -> None:
    monkeypatch.setenv(_kernels.ENV, "numpy")
    oue = UnaryEncoding(k=37, epsilon=1.3, optimized=optimized)
    n = 40_000
    truths = np.arange(n) % oue.k
    bits = np.unpackbits(
        oue.randomize(truths, np.random.default_rng(11)), axis=1, count=oue.k, bitorder="little"
    ).astype(bool)
    on_truth = bits[np.arange(n), truths]
    off = bits.copy()
    off[np.arange(n), truths] = False
    # 4 sigma from the binomial variance of each rate
    for rate, p, trials in [
        (on_truth.mean(), oue.p_star, n),
        (off.sum() / (n * (oue.k - 1)), oue.q_star, n * (oue.k - 1)),
    ]:
        assert abs(rate - p) <= 4 * np.sqrt(p * (1 - p) / trials)
    # padding bits stay 0, and the estimate is unbiased on the NumPy path
    est = estimate(oue, oue.randomize(truths))
    sigma = est.std_error
    assert np.all(np.abs(est.estimate - 1 / oue.k) <= 4.5 * sigma)


def test_a_core_only_interpreter_estimates_with_the_numpy_path() -> None:
    """numba hidden as if not installed: randomize, tally and estimate on every path."""
    code = (
        "import sys; sys.modules['numba'] = None\n"
        "import numpy as np, deniable\n"
        "from deniable.mechanisms._kernels import kernel_backend\n"
        "assert kernel_backend() == 'numpy'\n"
        "rng = np.random.default_rng(0)\n"
        "w = deniable.Warner(p=0.7); truths = rng.random(20000) < 0.3\n"
        "e = deniable.estimate(w, w.randomize(truths, rng))\n"
        "lo, hi = e.confidence_interval().low[1], e.confidence_interval().high[1]\n"
        "assert lo < 0.3 < hi, (lo, hi)\n"
        "for o in (deniable.LocalHashing(k=50, epsilon=2.0),\n"
        "          deniable.UnaryEncoding(k=50, epsilon=2.0)):\n"
        "    v = rng.integers(0, 50, 20000); r = o.randomize(v, rng)\n"
        "    est = deniable.estimate(o, r); assert abs(est.estimate.sum() - 1) < 0.2\n"
        "print('numba' in sys.modules and sys.modules['numba'] is not None)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_local_hashing_estimates_the_same_on_both_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    olh = LocalHashing(k=40, epsilon=1.5)
    reports = olh.randomize(np.arange(8000) % 40, np.random.default_rng(2))
    compiled = estimate(olh, reports).estimate
    monkeypatch.setenv(_kernels.ENV, "numpy")
    np.testing.assert_array_equal(estimate(olh, reports).estimate, compiled)
    np.testing.assert_array_equal(
        olh.randomize(np.arange(8000) % 40, np.random.default_rng(2)), reports
    )
    w = Warner(p=0.7)
    assert w.randomize(np.arange(10) % 2 == 0, np.random.default_rng(4)).tolist() == (
        w.randomize(np.arange(10) % 2 == 0, np.random.default_rng(4)).tolist()
    )
