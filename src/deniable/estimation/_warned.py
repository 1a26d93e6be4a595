"""What a prevalence estimate must warn of, each warning with its category
(:mod:`deniable.errors`): :func:`estimate_warnings`, which
:attr:`PrevalenceEstimate.warned <deniable.estimation.PrevalenceEstimate.warned>` gives
and :func:`~deniable.estimation.estimate` issues as Python warnings."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..errors import (
    DegenerateTallyWarning,
    DeniableWarning,
    EstimateOutsideWarning,
    FewReportsWarning,
)

if TYPE_CHECKING:
    from ._estimates import PrevalenceEstimate

__all__ = ["FEW_REPORTS", "FLAG_Z", "estimate_warnings"]

#: Estimates more standard errors than this outside [0, 1] (at the nearest prevalence
#: inside) are flagged (two-sided 0.1% under the normal approximation): a sign of
#: flooding, of respondents not following the design, or of a design other than the
#: one published.
FLAG_Z = 3.29

#: Fewer reports than this, and an estimate says so (:class:`FewReportsWarning`): the
#: smallest crowd the collection server releases (``min_release``'s default).
FEW_REPORTS = 30


def estimate_warnings(result: PrevalenceEstimate) -> list[tuple[type[DeniableWarning], str]]:
    """The warnings a table of ``result`` must carry, each with its category.

    Fewer than :data:`FEW_REPORTS` reports (:class:`FewReportsWarning`). For a design
    (not an oracle, whose many rare values make it routine): each unbiased (moment)
    estimate outside [0, 1], by how many standard errors (taken at the nearest
    prevalence inside, the standard error named), what its interval then means, and
    that ``method="mle"`` stays inside (:class:`EstimateOutsideWarning`); beyond
    :data:`FLAG_Z` standard errors, that the reports fit no prevalence (respondents not
    following the design, or flooding); and a standard error of 0, every report in one
    category (:class:`DegenerateTallyWarning`).

    Parameters
    ----------
    result : PrevalenceEstimate

    Returns
    -------
    list of (category, str)
    """
    out: list[tuple[type[DeniableWarning], str]] = []
    if result.n < FEW_REPORTS:
        out.append(
            (
                FewReportsWarning,
                f"an estimate from {result.n} report{'' if result.n == 1 else 's'}: fewer "
                f"than {FEW_REPORTS}, its standard error and interval rest on "
                "approximations that need more",
            )
        )
    estimate, std_error = np.asarray(result.estimate), result.std_error
    inside = bool(np.all((estimate >= 0.0) & (estimate <= 1.0)))
    if inside and not (std_error == 0).any():
        return out  # nothing else to say: skip the costlier check
    z = result._outside_z()
    if z is None:
        return out
    for label, value, zj in zip(result.labels, result.estimate, z, strict=True):
        if 0.0 <= value <= 1.0:
            continue
        edge = 0.0 if value < 0 else 1.0
        distance = f"{zj:.2g} standard error{'' if f'{zj:.2g}' == '1' else 's'}"
        at_edge = abs(value - edge) / zj if zj > 0 else float("nan")
        text = (
            f"the unbiased estimate for {label!r} is {value:.4g}, {distance} "
            f"{'below 0' if edge == 0 else 'above 1'} (the standard error at {edge:g}, "
            f"{at_edge:.2g}): the true prevalence is near {edge:g} "
            f"and the interval reaches {edge:g}; method='mle' gives an estimate inside "
            "[0, 1]"
        )
        if zj > FLAG_Z:
            text += (
                f". More than {FLAG_Z} standard errors out, the reports fit no prevalence: "
                "check for flooding or respondents not following the design"
            )
        out.append((EstimateOutsideWarning, text))
    if (result.std_error == 0).any():
        out.append(
            (
                DegenerateTallyWarning,
                "a standard error of 0 means every report fell in one category, where "
                "the plug-in variance vanishes; the interval still reflects the sample "
                "size",
            )
        )
    return out
