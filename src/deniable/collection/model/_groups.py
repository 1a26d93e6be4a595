"""Group designs: a question randomized in one of two groups, each respondent's group
drawn on the device with equal chance, so that the analysis can test the design's fit
or estimate a share of respondents who do not follow the instructions.

Each group's randomizer is a classical :class:`~deniable.mechanisms.Design`, and the
analysis is the library's joint maximum likelihood over the groups
(:func:`deniable.analysis.estimate_channel`):

``extended-crosswise {p}``
    Heck, Hoffmann & Moshagen (2018): the crosswise design (Yu, Tian & Tang 2008) with
    an innocuous question of prevalence ``p`` in group 0 and its complement (``1 - p``)
    in group 1. Two groups and one unknown (the prevalence) leave one degree of
    freedom: the likelihood-ratio test of fit, chi-square(1), detects systematic
    answers such as self-protective "different" reports. ``p`` in (0, 1), not 0.5.
``cheating-detection {p1, p2}``
    Clark & Desharnais (1998): a forced "yes" with probability ``p_g`` (forced response
    without forced "no"), otherwise the truth; the model estimates the share of honest
    carriers and the share ``gamma`` of cheaters who say "no" whatever the device says.
    ``p1 != p2`` in (0, 1). A "no" report rules out an honest "yes", so the question
    needs ``allow_infinite_epsilon: true``; it costs its protected epsilon
    ``-ln min(p1, p2)``.
``stochastic-lie-detector {p1, p2}``
    Moshagen, Musch & Erdfelder (2012): carriers answer "yes"; non-carriers answer the
    sensitive statement with probability ``p_g`` and its negation otherwise (Mangat's
    1994 device); the model estimates the prevalence and the carriers' honesty ``t``.
    ``p1 != p2`` in (0, 1), ``allow_infinite_epsilon: true``, cost
    ``-ln(1 - max(p1, p2))``.

Parameter names follow RRreg (``p = c(p1, p2)`` for the CDM and the SLD). A question's
privacy cost is the largest over its groups.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...mechanisms import Crosswise, Design, ForcedResponse, Mangat
from ._survey_designs import innocuous_designs, survey_design

if TYPE_CHECKING:
    from ...analysis import GroupModel

__all__ = [
    "GROUP_DESIGNS",
    "INNOCUOUS_DESIGNS",
    "GroupDesign",
    "check_innocuous",
    "check_validation_item",
    "group_design",
]

#: Designs that ask an innocuous question beside the sensitive one (they alone take
#: ``innocuous_question``; Greenberg et al. 1969, Yu, Tian & Tang 2008, Heck et al. 2018).
INNOCUOUS_DESIGNS = innocuous_designs()


def check_validation_item(design: str, ranged: bool, answers: int, question: Any) -> None:
    """Refuse ``known_prevalence`` (a validation item, Höglinger & Diekmann 2017) on what
    cannot be one: a direct or numeric question, other than two answers, or beside
    ``control: zero`` (which is the known prevalence 0)."""
    if question.known_prevalence is None:
        return
    if survey_design(design).kind != "finite" or ranged or answers != 2:
        raise ValueError(
            "known_prevalence: only a randomized question with two answers can be a "
            f"validation item (design {design!r}, {answers} answers)"
        )
    if question.control is not None:
        raise ValueError(
            "known_prevalence: a control (control: zero) already has a known prevalence of "
            "0; give one of the two"
        )


def check_innocuous(design: str, innocuous: str | None, numeric: bool) -> None:
    """Refuse an innocuous question on a design that asks none (a direct or numeric
    question is checked elsewhere).

    Raises
    ------
    ValueError
        Naming ``innocuous_question``, the design and the designs that take one.
    """
    if innocuous and design not in (*INNOCUOUS_DESIGNS, "direct") and not numeric:
        raise ValueError(
            f"innocuous_question: design {design!r} asks no innocuous question; only "
            f"{', '.join(INNOCUOUS_DESIGNS)} do (remove it, or choose one of them)"
        )


@dataclass(frozen=True)
class GroupDesign:
    """One group design: its parameter names, the randomizer of each group, the channel
    the analysis fits, the name of its non-adherence parameter (``None`` for the ECWM,
    which tests its fit instead) and its source."""

    params: tuple[str, ...]
    build: Callable[[Mapping[str, float]], tuple[Design, Design]]
    channel: Callable[[Mapping[str, float]], GroupModel]
    non_adherence: str | None
    source: str


def _ecwm(p: Mapping[str, float]) -> tuple[Design, Design]:
    if p["p"] == 0.5:
        raise ValueError("design.params.p must not be 0.5 (both groups would be the same)")
    return Crosswise(p=p["p"]), Crosswise(p=1.0 - p["p"])


def _two(p: Mapping[str, float]) -> tuple[float, float]:
    if p["p1"] == p["p2"]:
        raise ValueError("design.params.p1 and p2 must differ (the groups identify the model)")
    return p["p1"], p["p2"]


def _cdm(p: Mapping[str, float]) -> tuple[Design, Design]:
    p1, p2 = _two(p)
    return ForcedResponse(p_yes=p1, p_no=0.0), ForcedResponse(p_yes=p2, p_no=0.0)


def _sld(p: Mapping[str, float]) -> tuple[Design, Design]:
    p1, p2 = _two(p)
    return Mangat(p=p1), Mangat(p=p2)


# the channels import the analysis subpackage (SciPy) only when an analysis asks
def _ecwm_channel(p: Mapping[str, float]) -> GroupModel:
    from ...analysis import KnownChannel

    return KnownChannel(dict(enumerate(_ecwm(p))))


def _cdm_channel(p: Mapping[str, float]) -> GroupModel:
    from ...analysis import CheatingDetection

    return CheatingDetection([p["p1"], p["p2"]], group_labels=[0, 1])


def _sld_channel(p: Mapping[str, float]) -> GroupModel:
    from ...analysis import StochasticLieDetector

    return StochasticLieDetector([p["p1"], p["p2"]], group_labels=[0, 1])


#: The group designs a survey question may use, by name.
GROUP_DESIGNS: dict[str, GroupDesign] = {
    "extended-crosswise": GroupDesign(
        ("p",),
        _ecwm,
        _ecwm_channel,
        None,
        "Heck, Hoffmann & Moshagen (2018)",
    ),
    "cheating-detection": GroupDesign(
        ("p1", "p2"),
        _cdm,
        _cdm_channel,
        "gamma",
        "Clark & Desharnais (1998)",
    ),
    "stochastic-lie-detector": GroupDesign(
        ("p1", "p2"),
        _sld,
        _sld_channel,
        "t",
        "Moshagen, Musch & Erdfelder (2012)",
    ),
}


def group_design(name: str, params: Mapping[str, float]) -> tuple[Design, Design]:
    """The two groups' randomizers of a group design.

    Raises
    ------
    ValueError
        Naming the parameters the design takes, or an invalid value.
    """
    spec = GROUP_DESIGNS[name]
    if set(params) != set(spec.params):
        raise ValueError(
            f"design.params of {name!r} must be exactly {{{', '.join(spec.params)}}}, "
            f"got {{{', '.join(sorted(params))}}}"
        )
    for key in spec.params:
        if not 0.0 < params[key] < 1.0:
            raise ValueError(f"design.params.{key} must be in (0, 1), got {params[key]:g}")
    return spec.build(params)
