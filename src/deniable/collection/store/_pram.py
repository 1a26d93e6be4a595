"""Post-randomization of sensitive direct answers and list counts, before the first
write (PRAM: Gouweleeuw, Kooiman, Willenborg & de Wolf 1998).

The survey model says which answers are post-randomized and through which channel
(:mod:`deniable.collection.model`); this module applies it to validated responses in
the ingest path, so the true value never reaches the staging slots, the journal, a
write-ahead log or a backup. Each channelled answer draws exactly one uniform from the
secure source (:class:`~deniable.mechanisms.SecureRandom`, an AES-CTR keystream keyed
from ``os.urandom``), whatever the answer; a seeded generator is for simulation only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ._payload import NO_ANSWER, StagedResponse

__all__ = ["post_randomize"]


def post_randomize(
    items: Sequence[StagedResponse],
    channels: Sequence[Sequence[Any]],
    rng: Any = None,
) -> list[StagedResponse]:
    """The responses with every channelled code replaced by its randomized value.

    Parameters
    ----------
    items : sequence of StagedResponse
        Validated responses of one survey version (codes in question order; a skipped
        answer is ``NO_ANSWER`` and stays so).
    channels : sequence (per arm index) of sequences (per question) of Design or None
        :attr:`~deniable.collection.model.Survey.report_plan`'s ``channels``.
    rng : numpy.random.Generator, optional
        ``None`` (the default) draws from the secure source; a seeded generator only to
        simulate.

    Returns
    -------
    list of StagedResponse
        The same responses, in order, channelled codes randomized (one vectorised draw
        per arm and question).
    """
    if not items or not any(c is not None for arm in channels for c in arm):
        return list(items)
    codes = np.array([item.codes for item in items], dtype=np.int64)
    arms = np.array([item.arm for item in items], dtype=np.int64)
    for a, per_question in enumerate(channels):
        for i, channel in enumerate(per_question):
            if channel is None:
                continue
            rows = np.flatnonzero((arms == a) & (codes[:, i] != NO_ANSWER))
            if rows.size:
                codes[rows, i] = channel.randomize(codes[rows, i], rng)
    return [
        replace(item, codes=tuple(int(c) for c in row))
        for item, row in zip(items, codes.tolist(), strict=True)
    ]
