"""Named binary devices of RRTCS (Cobo, Rueda & Arcos) as revisions for complex samples.

Each device gives ``Pr(z = 1 | y) = c + d y`` for a yes/no trait ``y``, so its revision
is :func:`~deniable.analysis._complex.linear_binary` with the device's ``c`` and ``d``
(``r = (z - c) / d``, ``v = r (r - 1)``), as RRTCS's ``Qualitative`` computes it (the
model number in brackets). Parameters are probabilities in [0, 1].

=====================  =====================================================  =========
device                 ``Pr(z = 1 | y)``                                      RRTCS
=====================  =====================================================  =========
Devore (1977)          ``p y + (1 - p)``: truthful with chance ``p``, else     model 4
                       "yes"
Singh & Joarder (1997) ``(1 - p) + ((2p - 1) + p (1 - p)) y``                  model 9
Mangat & Singh (1990)  ``t y + (1 - t) [p y + (1 - p)(1 - y)]``: truthful      model 5
                       with chance ``t``, else Warner's device with ``p``
Mangat, Singh & Singh  ``(1 - p) alpha + (1 - (1 - p) alpha) y``               model 11
(1992)
Soberanis Cruz et al.  ``(1 - p) alpha + p y``                                 model 3
(2008)
=====================  =====================================================  =========

Two-reply designs with an unknown innocuous prevalence ("UB": Horvitz et al. 1967,
Mangat 1992, Mangat, Singh & Singh 1993) ask each respondent twice, with the sensitive
question's share ``p1`` and then ``p2``; RRTCS (models 12-14) revises the two replies
``I`` and ``J`` as ``r = ((1 - p2) I - (1 - p1) J) / (p1 - p2)``, ``v = r (r - 1)``.
:func:`unknown_innocuous_two_replies` takes the pair coded as ``z = 2 I + J``
(:func:`two_reply_codes`).
"""

from __future__ import annotations

import warnings

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import check_probability
from ._complex import Revision, linear_binary

__all__ = [
    "devore",
    "mangat_singh",
    "mangat_singh_singh",
    "singh_joarder",
    "soberanis_cruz",
    "two_reply_codes",
    "unknown_innocuous_two_replies",
]

_Array = NDArray[np.float64]


def devore(p: float) -> Revision:
    """Devore (1977): answer truthfully with chance ``p``, else "yes" (RRTCS ``Devore``).

    Parameters
    ----------
    p : float in [0, 1]
        The chance of answering truthfully.

    Returns
    -------
    Revision
        The device's revision ``r = (z - a) / b`` of each reply (Horvitz-Thompson on it
        estimates the prevalence) and its variance.

    Raises
    ------
    ValueError
        For a probability outside [0, 1].

    Examples
    --------
    >>> from deniable.analysis import devore
    >>> import numpy as np
    >>> devore(0.7).revise(np.array([0.0, 1.0]))[0].round(3).tolist()
    [-0.429, 1.0]
    """
    p = check_probability("p", p)
    return linear_binary(1 - p, p, f"Devore(p={p:g})")


def singh_joarder(p: float) -> Revision:
    """Singh & Joarder (1997): ``Pr(yes) = (1 - p) + ((2p - 1) + p (1 - p)) y``
    (RRTCS ``SinghJoarder``).

    Parameters
    ----------
    p : float in [0, 1]
        The device's probability.

    Returns
    -------
    Revision
        The device's revision ``r = (z - a) / b`` of each reply (Horvitz-Thompson on it
        estimates the prevalence) and its variance.

    Raises
    ------
    ValueError
        For a probability outside [0, 1].

    Examples
    --------
    >>> from deniable.analysis import singh_joarder
    >>> singh_joarder(0.7).name
    'SinghJoarder(p=0.7)'
    """
    p = check_probability("p", p)
    return linear_binary(1 - p, (2 * p - 1) + p * (1 - p), f"SinghJoarder(p={p:g})")


def mangat_singh(p: float, t: float) -> Revision:
    """Mangat & Singh (1990): truthful with chance ``t``, else Warner's device with
    ``p`` (RRTCS ``MangatSingh``).

    Parameters
    ----------
    p : float in [0, 1]
        Warner's device's probability.
    t : float in [0, 1]
        The chance of answering truthfully without the device.

    Returns
    -------
    Revision
        The device's revision ``r = (z - a) / b`` of each reply (Horvitz-Thompson on it
        estimates the prevalence) and its variance.

    Raises
    ------
    ValueError
        For a probability outside [0, 1].

    Examples
    --------
    >>> from deniable.analysis import mangat_singh
    >>> mangat_singh(0.7, 0.5).name
    'MangatSingh(p=0.7, t=0.5)'
    """
    p, t = check_probability("p", p), check_probability("t", t)
    return linear_binary(
        (1 - t) * (1 - p), t + (1 - t) * (2 * p - 1), f"MangatSingh(p={p:g}, t={t:g})"
    )


def _innocuous(value: float | None, alpha: float | None) -> float:
    """The innocuous prevalence, from its name or (until 0.3, warning) RRTCS's ``alpha``."""
    if alpha is not None:
        warnings.warn(
            "alpha= is deprecated here (alpha is a significance level only); use "
            "innocuous_prevalence= (removed in 0.3)",
            DeprecationWarning,
            stacklevel=3,
        )
        value = alpha if value is None else value
    if value is None:
        raise TypeError("innocuous_prevalence is required (a probability in [0, 1])")
    return check_probability("innocuous_prevalence", value)


def mangat_singh_singh(
    p: float, innocuous_prevalence: float | None = None, *, alpha: float | None = None
) -> Revision:
    """Mangat, Singh & Singh (1992): ``Pr(yes) = (1 - p) a + (1 - (1 - p) a) y`` with
    ``a`` the innocuous prevalence (RRTCS ``MangatSinghSingh``, whose ``alpha`` it is).

    Parameters
    ----------
    p : float in [0, 1]
        The chance of the sensitive question.
    innocuous_prevalence : float in [0, 1]
        The known prevalence of the innocuous trait (``alpha`` is RRTCS's name for it).

    Returns
    -------
    Revision
        The device's revision ``r = (z - a) / b`` of each reply (Horvitz-Thompson on it
        estimates the prevalence) and its variance.

    Raises
    ------
    ValueError, TypeError
        For a probability outside [0, 1], or no innocuous prevalence.

    Examples
    --------
    >>> from deniable.analysis import mangat_singh_singh
    >>> mangat_singh_singh(0.7, 0.3).name
    'MangatSinghSingh(p=0.7, innocuous_prevalence=0.3)'
    """
    p, a = check_probability("p", p), _innocuous(innocuous_prevalence, alpha)
    return linear_binary(
        (1 - p) * a, 1 - (1 - p) * a, f"MangatSinghSingh(p={p:g}, innocuous_prevalence={a:g})"
    )


def soberanis_cruz(
    p: float, innocuous_prevalence: float | None = None, *, alpha: float | None = None
) -> Revision:
    """Soberanis Cruz et al. (2008): ``Pr(yes) = (1 - p) a + p y`` with ``a`` the
    innocuous prevalence (RRTCS ``SoberanisCruz``, whose ``alpha`` it is).

    Parameters
    ----------
    p : float in [0, 1]
        The chance of the sensitive question.
    innocuous_prevalence : float in [0, 1]
        The known prevalence of the innocuous trait (``alpha`` is RRTCS's name for it).

    Returns
    -------
    Revision
        The device's revision ``r = (z - a) / b`` of each reply (Horvitz-Thompson on it
        estimates the prevalence) and its variance.

    Raises
    ------
    ValueError, TypeError
        For a probability outside [0, 1], or no innocuous prevalence.

    Examples
    --------
    >>> from deniable.analysis import soberanis_cruz
    >>> soberanis_cruz(0.7, 0.3).name
    'SoberanisCruz(p=0.7, innocuous_prevalence=0.3)'
    """
    p, a = check_probability("p", p), _innocuous(innocuous_prevalence, alpha)
    return linear_binary((1 - p) * a, p, f"SoberanisCruz(p={p:g}, innocuous_prevalence={a:g})")


def two_reply_codes(first: ArrayLike, second: ArrayLike) -> NDArray[np.int64]:
    """``2 I + J`` for the two yes/no replies of a UB design, shape (n,).

    Parameters
    ----------
    first, second : array_like of int in {0, 1}, shape (n,)
        Each respondent's first and second reply.

    Returns
    -------
    ndarray, shape (n,), int64
        Codes 0..3.

    Raises
    ------
    ValueError
        If the replies differ in length or are not 0/1.

    Examples
    --------
    >>> from deniable.analysis import two_reply_codes
    >>> two_reply_codes([0, 1, 1], [0, 0, 1]).tolist()
    [0, 2, 3]
    """
    i = np.asarray(first)
    j = np.asarray(second)
    if i.shape != j.shape or i.ndim != 1:
        raise ValueError("first and second must be 1-D arrays of the same length")
    if not (np.isin(i, (0, 1)).all() and np.isin(j, (0, 1)).all()):
        raise ValueError("both replies must be 0 or 1")
    return np.asarray(2 * i + j, dtype=np.int64)


def unknown_innocuous_two_replies(p1: float, p2: float) -> Revision:
    """Two replies with an unknown innocuous prevalence (RRTCS ``HorvitzUB``,
    ``MangatUB``, ``MangatSinghSinghUB``): ``z = 2 I + J`` (:func:`two_reply_codes`),
    ``r = ((1 - p2) I - (1 - p1) J) / (p1 - p2)``, ``v = r (r - 1)``.

    Parameters
    ----------
    p1, p2 : float in [0, 1], different
        The chance of the sensitive question in the first and the second reply.

    Returns
    -------
    Revision
        The device's revision ``r = (z - a) / b`` of each reply (Horvitz-Thompson on it
        estimates the prevalence) and its variance.

    Raises
    ------
    ValueError
        If ``p1 == p2`` (the two replies cannot separate the traits).

    Examples
    --------
    >>> from deniable.analysis import unknown_innocuous_two_replies
    >>> unknown_innocuous_two_replies(0.7, 0.3).name
    'UnknownInnocuousTwoReplies(p1=0.7, p2=0.3)'
    """
    p1, p2 = check_probability("p1", p1), check_probability("p2", p2)
    if p1 == p2:
        raise ValueError("p1 and p2 must differ")
    name = f"UnknownInnocuousTwoReplies(p1={p1:g}, p2={p2:g})"

    def revise(z: _Array) -> tuple[_Array, _Array | None]:
        if np.any(~np.isin(z, (0, 1, 2, 3))):
            raise ValueError(f"{name} replies z must be codes 2 I + J in 0..3")
        i, j = np.floor_divide(z, 2), np.mod(z, 2)
        r = ((1 - p2) * i - (1 - p1) * j) / (p1 - p2)
        return r, r * (r - 1)

    return Revision(name, revise, {"p1": p1, "p2": p2})
