"""Shared fixtures. Every simulation uses a fixed seed; tolerances come from exact variances."""

from __future__ import annotations

import numpy as np
import pytest

#: Two-sided z for a false-failure rate of about 6e-5 per assertion (4 sigma).
Z4 = 4.0


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261121)
