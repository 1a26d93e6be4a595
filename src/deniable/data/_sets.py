"""The shipped data sets: where they are, how they load, and the designs their
studies used."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable

from .._extras import require

require("pandas", "analysis")

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ..mechanisms import Crosswise, Design, ForcedResponse, UnrelatedQuestion

__all__ = [
    "ADULT_COLUMNS",
    "HORVITZ_INNOCUOUS",
    "RR_SURVEYS",
    "RealSurveyItem",
    "data_file",
    "load_adult",
    "load_rr_survey",
    "real_survey_items",
]

ADULT_COLUMNS = (
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
    "income",
)

#: Shipped randomized-response surveys: name -> file below ``data/rr-surveys``.
RR_SURVEYS = {
    "rr/nigeria": "rr/nigeria.csv",
    "RRreg/minarets": "RRreg/minarets.csv",
    "RRTCS/BarLevData": "RRTCS/BarLevData.csv",
    "RRTCS/ChaudhuriChristofidesData": "RRTCS/ChaudhuriChristofidesData.csv",
    "RRTCS/ChristofidesData": "RRTCS/ChristofidesData.csv",
    "RRTCS/DevoreData": "RRTCS/DevoreData.csv",
    "RRTCS/DianaPerri1Data": "RRTCS/DianaPerri1Data.csv",
    "RRTCS/DianaPerri2Data": "RRTCS/DianaPerri2Data.csv",
    "RRTCS/EichhornHayreData": "RRTCS/EichhornHayreData.csv",
    "RRTCS/ErikssonData": "RRTCS/ErikssonData.csv",
    "RRTCS/ForcedResponseData": "RRTCS/ForcedResponseData.csv",
    "RRTCS/ForcedResponseDataSt": "RRTCS/ForcedResponseDataSt.csv",
    "RRTCS/HorvitzData": "RRTCS/HorvitzData.csv",
    "RRTCS/HorvitzDataRealSurvey": "RRTCS/HorvitzDataRealSurvey.csv",
    "RRTCS/HorvitzDataStCl": "RRTCS/HorvitzDataStCl.csv",
    "RRTCS/HorvitzUBData": "RRTCS/HorvitzUBData.csv",
    "RRTCS/KukData": "RRTCS/KukData.csv",
    "RRTCS/MangatSinghData": "RRTCS/MangatSinghData.csv",
    "RRTCS/MangatSinghSinghData": "RRTCS/MangatSinghSinghData.csv",
    "RRTCS/MangatSinghSinghUBData": "RRTCS/MangatSinghSinghUBData.csv",
    "RRTCS/SahaData": "RRTCS/SahaData.csv",
    "RRTCS/SinghJoarderData": "RRTCS/SinghJoarderData.csv",
    "RRTCS/SoberanisCruzData": "RRTCS/SoberanisCruzData.csv",
    "RRTCS/WarnerData": "RRTCS/WarnerData.csv",
    "GLMMRR/Plagiarism": "GLMMRR/Plagiarism.csv",
    "GLMMRR/MTURK": "GLMMRR/MTURK.csv.gz",
    "GLMMRR/ETHBE": "GLMMRR/ETHBE.csv.gz",
}


def data_file(*parts: str) -> Traversable:
    """A shipped data file, e.g. ``data_file("adult", "README.md")``.

    Parameters
    ----------
    *parts : str
        The path inside ``deniable/data``.

    Returns
    -------
    importlib.resources.abc.Traversable

    Examples
    --------
    >>> from deniable.data import data_file
    >>> data_file("adult", "README.md").name
    'README.md'
    """
    node = resources.files("deniable").joinpath("data")
    for part in parts:
        node = node.joinpath(part)
    return node


def load_adult(split: str = "all") -> pd.DataFrame:
    """The UCI Adult population as a DataFrame with named columns.

    Parameters
    ----------
    split : {"all", "train", "test"}
        ``train`` = ``adult.data`` (32,561 rows), ``test`` = ``adult.test`` (16,281),
        ``all`` = both (48,842). Surrounding spaces are stripped, ``?`` becomes missing,
        and the test split's trailing period on ``income`` is removed.

    Returns
    -------
    pandas.DataFrame
        One row per person, the columns of :data:`ADULT_COLUMNS`.

    Raises
    ------
    ValueError
        For an unknown split.

    Examples
    --------
    >>> from deniable.data import load_adult
    >>> load_adult().shape
    (48842, 15)
    """
    files = {"train": ["adult.data.gz"], "test": ["adult.test.gz"]}
    files["all"] = files["train"] + files["test"]
    if split not in files:
        raise ValueError(f"split must be one of all, train, test; got {split!r}")
    frames = []
    for name in files[split]:
        with data_file("adult", name).open("rb") as fh:
            frames.append(
                pd.read_csv(
                    fh,
                    compression="gzip",
                    header=None,
                    names=list(ADULT_COLUMNS),
                    skipinitialspace=True,
                    na_values=["?"],
                    comment="|",
                )
            )
    df = pd.concat(frames, ignore_index=True).dropna(subset=["income"])
    df["income"] = df["income"].str.rstrip(".")
    return df.reset_index(drop=True)


def load_rr_survey(name: str) -> pd.DataFrame:
    """One of the shipped randomized-response surveys (:data:`RR_SURVEYS`).

    Parameters
    ----------
    name : str
        One of :data:`RR_SURVEYS` (``"rr/nigeria"``, ``"RRreg/minarets"``, ...).

    Returns
    -------
    pandas.DataFrame
        The survey's rows as its R package ships them.

    Raises
    ------
    ValueError
        For an unknown name (the message lists the allowed names).

    Examples
    --------
    >>> from deniable.data import load_rr_survey
    >>> load_rr_survey("rr/nigeria").shape
    (2457, 8)
    """
    if name not in RR_SURVEYS:
        raise ValueError(f"unknown survey {name!r}; allowed: {', '.join(sorted(RR_SURVEYS))}")
    path = RR_SURVEYS[name]
    with data_file("rr-surveys", *path.split("/")).open("rb") as fh:
        return pd.read_csv(fh, compression="gzip" if path.endswith(".gz") else None)


@dataclass(frozen=True)
class RealSurveyItem:
    """One randomized question of a shipped survey, ready to estimate.

    Attributes
    ----------
    survey, question : str
        Where it comes from and what it asks.
    design : Design
        The design the study used (parameters from the data README).
    reports : ndarray of uint8, shape (n,)
        Recorded randomized answers (missing ones dropped).
    true_prevalence : float or None
        Known truth, where the study observed it.
    source : str
        The R package that ships it, for cross-checking.

    Examples
    --------
    >>> from deniable.data import real_survey_items
    >>> item = real_survey_items()[0]
    >>> item.survey, item.design
    ('rr/nigeria', ForcedResponse(p_yes=0.16666666666666666, p_no=0.16666666666666666))
    """

    survey: str
    question: str
    design: Design
    reports: NDArray[np.uint8]
    true_prevalence: float | None
    source: str


def _codes(series: pd.Series) -> NDArray[np.uint8]:
    return np.asarray(series.dropna().to_numpy(), dtype=np.uint8)


HORVITZ_INNOCUOUS = {
    "copied": ("Have you ever copied in an exam?", 1 / 12),
    "fought": ("Have you ever fought with a teacher?", 1 / 10),
    "bullied": ("Have you been bullied?", 20 / 30),
    "bullying": ("Have you ever bullied someone?", 1 / 10),
    "drug": ("Have you ever taken drugs on the campus?", 10 / 30),
    "sex": ("Have you had sex on the premises of the university?", 1 / 12),
}


def real_survey_items() -> list[RealSurveyItem]:
    """The randomized questions of the shipped real surveys, with their designs.

    * ``rr/nigeria``: contact with armed groups, forced response (truthful 2/3,
      forced yes 1/6, forced no 1/6; Blair, Imai & Zhou 2015).
    * ``RRTCS/HorvitzDataRealSurvey``: six items, unrelated question with ``p = 0.5``
      and each item's innocuous prevalence.
    * ``GLMMRR/Plagiarism``: partial and severe plagiarism, crosswise with ``p = 0.25``
      (Jann, Jerke & Krumpal 2012).
    * ``GLMMRR/MTURK``: "cheated in the dice game" in the roll-a-six variant, where the
      truth is observed (Hoeglinger & Jann 2018), one item per design group.

    Returns
    -------
    list of RealSurveyItem

    Examples
    --------
    >>> from deniable.data import real_survey_items
    >>> len(real_survey_items()), real_survey_items()[0].survey
    (16, 'rr/nigeria')
    """
    items: list[RealSurveyItem] = []
    nigeria = load_rr_survey("rr/nigeria")
    items.append(
        RealSurveyItem(
            "rr/nigeria",
            "Direct social connections with members of armed groups?",
            ForcedResponse(p_yes=1 / 6, p_no=1 / 6),
            _codes(nigeria["rr.q1"]),
            None,
            "rr::rrreg, RRreg::RRuni",
        )
    )
    horvitz = load_rr_survey("RRTCS/HorvitzDataRealSurvey")
    for column, (question, innocuous) in HORVITZ_INNOCUOUS.items():
        items.append(
            RealSurveyItem(
                f"RRTCS/HorvitzDataRealSurvey:{column}",
                question,
                UnrelatedQuestion(p=0.5, innocuous_prevalence=innocuous),
                _codes(horvitz[column]),
                None,
                "RRTCS::Horvitz",
            )
        )
    plag = load_rr_survey("GLMMRR/Plagiarism")
    for number, label in ((3, "partial"), (4, "severe")):
        rows = plag[(plag["question"] == number) & (plag["RRmodel"] == "Crosswise")]
        items.append(
            RealSurveyItem(
                f"GLMMRR/Plagiarism:q{number}",
                f"Ever handed in a paper with {label} plagiarism?",
                Crosswise(p=float(rows["RRp1"].iloc[0])),
                _codes(rows["response"]),
                None,
                "GLMMRR, RRreg::RRuni",
            )
        )
    items.extend(_mturk_items())
    return items


def _mturk_design(model: str, p1: float, p2: float) -> Design | None:
    if model == "Crosswise":
        return Crosswise(p=p1)
    if model == "Forced":
        # GLMMRR: answer truthfully with p1, else "yes" with share p2 of the forced answers
        return ForcedResponse(p_yes=(1 - p1) * p2, p_no=(1 - p1) * (1 - p2))
    if model == "UQM":
        return UnrelatedQuestion(p=p1, innocuous_prevalence=p2)
    return None


def _mturk_items() -> list[RealSurveyItem]:
    mturk = load_rr_survey("GLMMRR/MTURK")
    dice = mturk[(mturk["Question"] == "cheating dice game") & (mturk["dicegame"] == 2)]
    dice = dice.dropna(subset=["RR_response"])
    items = []
    for key, rows in dice.groupby(["RRmodel", "RRp1", "RRp2"], sort=True):
        model, p1, p2 = str(key[0]), float(key[1]), float(key[2])  # type: ignore[arg-type]
        design = _mturk_design(model, p1, p2)
        if design is None:
            continue
        items.append(
            RealSurveyItem(
                f"GLMMRR/MTURK:{model}({p1:.4g},{p2:.4g})",
                "Did you cheat in the roll-a-six dice game?",
                design,
                _codes(rows["RR_response"]),
                float((rows["cheater"] == "cheater").mean()),
                "GLMMRR",
            )
        )
    return items
