"""The arm an invitation fixes: the draw a respondent's device makes (the page's
``assign`` and :func:`deniable.collection.respondent.assign`) and the server binds the
invitation to (:class:`deniable.collection.store.Store`), in one place for both.

NumPy and the standard library only: the terminal client imports it on start-up.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["arm_index", "invitation_arm", "token_uniform"]


def token_uniform(token: str, survey_id: str) -> float:
    """A uniform on [0, 1) that the invitation ``token`` fixes: the first 53 bits of
    ``HMAC-SHA256(key=token, "deniable arm|" + survey_id)`` (RFC 2104), as the page
    computes it with ``crypto.subtle``. Whoever holds the token (the respondent's
    devices, and an analyst who kept the links file) can compute it."""
    mac = hmac.new(token.encode(), f"deniable arm|{survey_id}".encode(), hashlib.sha256).digest()
    hi, lo = int.from_bytes(mac[0:4], "big"), int.from_bytes(mac[4:8], "big")
    return ((hi >> 5) * 67108864 + (lo >> 6)) / 2**53


def arm_index(weights: Sequence[float], u: float) -> int:
    """The arm drawn by the weights from a uniform ``u`` on [0, 1): the first whose
    cumulative weight exceeds ``u`` times their sum (the page's ``pickWeighted``).

    Parameters
    ----------
    weights : sequence of float, each > 0
    u : float in [0, 1)
    """
    total = u * sum(weights)
    return next((i for i, c in enumerate(np.cumsum(weights)) if total < c), len(weights) - 1)


def invitation_arm(survey: Any, fixed: str) -> int | None:
    """The arm (index) an invitation is bound to in a study with arms: the one the
    respondent's device draws from ``fixed`` (a named recipient's owner tag, else the
    token: :func:`~deniable.collection.respondent.assign`, the page's ``assign``);
    ``None`` without arms.

    Parameters
    ----------
    survey : Survey
    fixed : str
        The owner tag or the token.
    """
    if not survey.arms:
        return None
    weights = [float(a.weight) for a in survey.arms.values()]
    return arm_index(weights, token_uniform(fixed, survey.id))
