"""Allocations that grow with reports x candidates are refused before they are made.

Each case asks for more than its ``memory_limit``: the error names the limit and the
size asked for, and tracemalloc sees no allocation near that size.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from deniable._validation import MEMORY_LIMIT, check_memory
from deniable.errors import MemoryLimitError
from deniable.estimation._postprocess import oracle_em
from deniable.estimation._rappor_decoding import decode_rappor
from deniable.mechanisms import HadamardResponse, LocalHashing, Rappor, UnaryEncoding


def _refused(call: Callable[[], Any], limit: int) -> MemoryLimitError:
    tracemalloc.start()
    try:
        with pytest.raises(MemoryLimitError) as said:
            call()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    error = said.value
    assert error.limit == limit and error.asked > limit
    assert f"memory_limit = {limit:,} bytes" in str(error)
    assert f"{error.asked:,} bytes" in str(error)
    assert peak < max(error.asked // 4, 10**7)  # nothing near the size asked was allocated
    return error


def test_the_default_limit_is_two_gibibytes() -> None:
    assert MEMORY_LIMIT == 2**31
    check_memory("a table", 2**31, MEMORY_LIMIT)  # at the limit: allowed
    with pytest.raises(MemoryLimitError, match="a table would take 2,147,483,649 bytes"):
        check_memory("a table", 2**31 + 1, MEMORY_LIMIT)
    with pytest.raises(ValueError, match="memory_limit"):
        check_memory("a table", 1, 0)


def test_local_hashing_support_matrix() -> None:
    olh = LocalHashing(k=10**6, epsilon=1.0)
    reports = olh.randomize(np.arange(20_000) % 10, np.random.default_rng(0))
    # 20,000 reports x 250,000 supported values each: 5e9 entries, 200 GB
    error = _refused(lambda: olh.support_matrix(reports), MEMORY_LIMIT)
    assert "support matrix of 20,000 reports x k = 1,000,000" in str(error)
    _refused(lambda: oracle_em(olh, reports), MEMORY_LIMIT)
    small = LocalHashing(k=50, epsilon=1.0)
    few = small.randomize(np.arange(200) % 50, np.random.default_rng(1))
    assert small.support_matrix(few).shape == (200, 50)
    _refused(lambda: small.support_matrix(few, memory_limit=1000), 1000)


def test_unary_and_hadamard_support_matrices() -> None:
    oue = UnaryEncoding(k=64, epsilon=1.0)
    reports = oue.randomize(np.arange(1000) % 64, np.random.default_rng(2))
    _refused(lambda: oue.support_matrix(reports, memory_limit=10**5), 10**5)
    _refused(lambda: oracle_em(oue, reports, memory_limit=10**5), 10**5)
    hr = HadamardResponse(k=4096, epsilon=1.0)
    hr_reports = hr.randomize(np.arange(5000) % 4096, np.random.default_rng(3))
    _refused(lambda: hr.support_matrix(hr_reports, memory_limit=10**6), 10**6)
    assert hr.support_matrix(hr_reports[:10]).shape == (10, 4096)


def test_rappor_design_matrices() -> None:
    pytest.importorskip("sklearn.linear_model", reason="scikit-learn (the rappor extra)")
    pytest.importorskip("scipy.sparse")  # imported outside the traced calls
    candidates = [f"value-{i}" for i in range(2000)]
    rappor = Rappor(n_bloom_bits=128, h=2, n_cohorts=64, candidates=candidates)
    # 64 cohorts x 2,000 candidates x 2 hashes at 48 bytes: 12.3 MB; dense: 131 MB
    error = _refused(lambda: rappor.sparse_design_matrix(memory_limit=10**7), 10**7)
    assert "2,000 candidates in 64 cohorts" in str(error)
    _refused(lambda: rappor.design_matrix(memory_limit=10**8), 10**8)
    reports = rappor.randomize(candidates[:3] * 100, np.random.default_rng(4))
    _refused(lambda: decode_rappor(rappor, reports, memory_limit=10**7), 10**7)
    assert rappor.sparse_design_matrix().shape == (64 * 128, 2000)
