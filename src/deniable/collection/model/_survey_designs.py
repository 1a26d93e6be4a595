"""What the survey tools know of each design a survey file may name, declared once.

Each design name of a survey file (``design.name``: the finite designs of
:data:`deniable.mechanisms.DESIGNS`, the group designs, the numeric mechanisms and the
list experiment) has one :class:`SurveyDesign` here: its kind, its source, whether it
asks an innocuous question, the coin or die instructions the respondent's page gives,
the extra columns it adds to the wide export, and its R counterparts (RRreg's
``RRuni`` model and ``p`` vector, GLMMRR's ``RRmodel`` and ``(p1, p2)``), or why R
has none (which the R bundle says). The R bundle, the page's instructions and the
survey file's checks read it; ``tests/test_survey_designs.py`` fails, naming what is
missing, when a design has no entry or an entry is incomplete.

Sources of the R names: Fox,
Klotzke & Veen (2016) for GLMMRR; Heck & Moshagen (2018) for RRreg.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "SURVEY_DESIGNS",
    "RModel",
    "SurveyDesign",
    "innocuous_designs",
    "survey_design",
]

#: A design's parameters as the survey file gives them.
Params = Mapping[str, float]


@dataclass(frozen=True)
class RModel:
    """An R package's model of a yes/no design.

    Attributes
    ----------
    model : str
        RRreg's ``RRuni(model = ...)`` or GLMMRR's ``RRmodel``.
    p : callable
        ``params -> tuple of float``: RRreg's ``p`` vector in its order, or GLMMRR's
        ``(p1, p2)``; ``None`` where these parameters have no model (a Warner design
        with ``p < 0.5`` in GLMMRR, Kuk's design with several draws).
    grouped : bool
        The model takes the group column (RRreg's ``group =``, for the cheating
        detection model and the stochastic lie detector).
    """

    model: str
    p: Callable[[Params], tuple[float, ...] | None]
    grouped: bool = False


@dataclass(frozen=True)
class SurveyDesign:
    """One design name of a survey file and what the survey tools do with it.

    Attributes
    ----------
    name : str
        The survey file's ``design.name``.
    kind : {"finite", "group", "numeric", "list", "direct"}
    source : str
        The paper the design comes from (author, year).
    innocuous : bool
        It asks an innocuous question beside the sensitive one (``innocuous_question``).
    recipe : str or None
        The key of its coin instructions in the page's catalog (``warner``,
        ``forced_response``, ...); ``None``: a die recipe read from the
        misclassification matrix where one exists (:func:`._recipes.dice_recipe`).
    rrreg, glmmrr : RModel or None
        Its R counterparts; ``None`` where the package has no model for it.
    no_r : str
        Why R has no model for it, said in the R bundle (required where ``rrreg`` and
        ``glmmrr`` are both ``None``).
    per_group : bool
        R fits each group's randomizer by its own entry (the extended crosswise
        model's two crosswise groups).
    export_columns : tuple of str
        Suffixes of the wide export's columns beside ``ID`` (``("__group",)`` where
        the device draws a group or a list).
    whole_params : tuple of str
        Parameters that are whole numbers: sizes, bounded before anything is allocated
        (k-ary RR's ``k``, Kuk's ``draws``).
    answers_from_choices : bool
        Its number of answers ``k`` is the question's ``choices`` (or ``params.k``),
        whose labels name the answers; where it is not a direct question, one of the
        two must be given.
    complement : bool
        It takes ``innocuous_complement`` (the extended crosswise model's second group).
    """

    name: str
    kind: Literal["finite", "group", "numeric", "list", "direct"]
    source: str
    innocuous: bool = False
    recipe: str | None = None
    rrreg: RModel | None = None
    glmmrr: RModel | None = None
    no_r: str = ""
    per_group: bool = False
    export_columns: tuple[str, ...] = ()
    whole_params: tuple[str, ...] = ()
    answers_from_choices: bool = False
    complement: bool = False

    @property
    def is_direct(self) -> bool:
        """Whether the answer is sent as given (direct questioning)."""
        return self.kind == "direct"


def _forced(p: Params) -> tuple[float, float]:
    """GLMMRR's forced response: ``p1`` the share answering truthfully, ``p2`` the share
    of "yes" among the forced answers."""
    forced = p["p_yes"] + p["p_no"]
    return 1.0 - forced, p["p_yes"] / forced if forced > 0 else 0.0


def _one_draw(p: Params) -> tuple[float, float] | None:
    """Kuk's two decks, only with one draw (R's models have no repeated draws)."""
    return (p["p_carrier"], p["p_noncarrier"]) if p.get("draws", 1) == 1 else None


_YES_NO_ONLY = (
    "RRreg and GLMMRR model yes/no designs only; the bundle's base-R moment estimate "
    "covers every answer"
)
_GROUP = "__group"

#: Every design name a survey file accepts.
SURVEY_DESIGNS: Mapping[str, SurveyDesign] = {
    d.name: d
    for d in (
        SurveyDesign(
            "forced-response", "finite", "Boruch (1971)", recipe="forced_response",
            rrreg=RModel("FR", lambda p: (p["p_no"], p["p_yes"])),
            glmmrr=RModel("Forced", _forced),
        ),
        SurveyDesign(
            "warner", "finite", "Warner (1965)", recipe="warner",
            rrreg=RModel("Warner", lambda p: (p["p"],)),
            glmmrr=RModel("Warner", lambda p: (p["p"], 0.0) if p["p"] >= 0.5 else None),
        ),
        SurveyDesign(
            "unrelated-question", "finite", "Greenberg et al. (1969)", innocuous=True,
            recipe="unrelated",
            rrreg=RModel("UQTknown", lambda p: (p["p"], p["innocuous_prevalence"])),
            glmmrr=RModel("UQM", lambda p: (p["p"], p["innocuous_prevalence"])),
        ),
        SurveyDesign(
            "crosswise", "finite", "Yu, Tian & Tang (2008)", innocuous=True,
            recipe="crosswise",
            rrreg=RModel("Crosswise", lambda p: (p["p"],)),
            glmmrr=RModel("Crosswise", lambda p: (p["p"], 0.0)),
        ),
        SurveyDesign(
            "triangular", "finite", "Yu, Tian & Tang (2008)", innocuous=True,
            rrreg=RModel("Triangular", lambda p: (p["p"],)),
            glmmrr=RModel("Triangular", lambda p: (p["p"], 0.0)),
        ),
        SurveyDesign(
            "kuk", "finite", "Kuk (1990)",
            rrreg=RModel("Kuk", _one_draw), glmmrr=RModel("Kuk", _one_draw),
            whole_params=("draws",),
        ),
        SurveyDesign(
            "mangat", "finite", "Mangat (1994)",
            rrreg=RModel("Mangat", lambda p: (p["p"],)),
            glmmrr=RModel("Forced", lambda p: (p["p"], 1.0)),  # non-carriers: "yes" w.p. 1 - p
        ),
        SurveyDesign(
            "kary-rr", "finite", "Warner (1965); Kairouz et al. (2016)", no_r=_YES_NO_ONLY,
            whole_params=("k",), answers_from_choices=True,
        ),
        SurveyDesign(
            "direct", "direct", "direct questioning (the control of validation studies)",
            glmmrr=RModel("DQ", lambda p: (0.0, 0.0)),
            no_r="a direct question: its sample share is the estimate",
            whole_params=("k",), answers_from_choices=True,
        ),
        SurveyDesign(
            "extended-crosswise", "group", "Heck, Hoffmann & Moshagen (2018)", innocuous=True,
            per_group=True, export_columns=(_GROUP,), complement=True,
            no_r="R has no model for the extended crosswise model's test of fit: "
            "deniable analyze FILE --arms gives its G2 on 1 df",
        ),
        SurveyDesign(
            "cheating-detection", "group", "Clark & Desharnais (1998)",
            rrreg=RModel("CDM", lambda p: (p["p1"], p["p2"]), grouped=True),
            export_columns=(_GROUP,),
        ),
        SurveyDesign(
            "stochastic-lie-detector", "group", "Moshagen, Musch & Erdfelder (2012)",
            rrreg=RModel("SLD", lambda p: (p["p1"], p["p2"]), grouped=True),
            export_columns=(_GROUP,),
        ),
        SurveyDesign(
            "duchi", "numeric", "Duchi, Jordan & Wainwright (2018)",
            no_r="RRreg and GLMMRR have no numeric mechanism; the bundle's base-R moment "
            "estimate of the mean",
        ),
        SurveyDesign(
            "1bitmean", "numeric", "Ding, Kulkarni & Yekhanin (2017)",
            no_r="RRreg and GLMMRR have no numeric mechanism; the bundle's base-R moment "
            "estimate of the mean",
        ),
        SurveyDesign(
            "list-experiment", "list", "Imai (2011); Blair & Imai (2012)",
            export_columns=(_GROUP,),
            no_r="R's list package fits list experiments (list::ictreg); the bundle gives "
            "the difference in means in base R",
        ),
    )
}  # fmt: skip


def survey_design(name: str) -> SurveyDesign:
    """The entry of a survey file's design name.

    Parameters
    ----------
    name : str

    Returns
    -------
    SurveyDesign

    Raises
    ------
    ValueError
        Naming the design names a survey file accepts.

    Examples
    --------
    >>> survey_design("warner").rrreg.model
    'Warner'
    """
    try:
        return SURVEY_DESIGNS[name]
    except KeyError:
        allowed = ", ".join(SURVEY_DESIGNS)
        raise ValueError(f"design.name must be one of {allowed}, got {name!r}") from None


def innocuous_designs() -> tuple[str, ...]:
    """The designs that ask an innocuous question beside the sensitive one.

    Examples
    --------
    >>> innocuous_designs()
    ('unrelated-question', 'crosswise', 'triangular', 'extended-crosswise')
    """
    return tuple(name for name, d in SURVEY_DESIGNS.items() if d.innocuous)
