"""Analysis of a study's collected responses by arm and by group.

One function serves the dashboard and ``deniable analyze EXPORT --arms``: both read the
same rows (the wide export of a version, small cells recoded to missing), so both give
the same numbers.

For each randomized yes/no question that arms ask in different ways or that uses a
group design (:mod:`deniable.collection.model`):

- per arm: the estimate of the arm's design from its own rows (a group design's two
  groups pooled through their stacked design, :func:`deniable.estimation.estimate` with
  ``groups``), with its standard error and default interval;
- each arm against the reference arm (the first arm that asks a question directly
  which another randomizes, else the first arm): the difference of the two estimates,
  its Wald interval and the one-sided test of "the arm's estimate is larger" (the
  "more is better" criterion of Lensvelt-Mulders et al. 2005 and Höglinger, Jann &
  Diekmann 2016: a design that protects better elicits more admissions);
- pooled over the arms that randomize the question (a direct arm only with ``pool:
  true``, :func:`pooled_arms`): the joint maximum likelihood through every arm's and
  group's design, each arm weighted by its information at the common prevalence, with
  Cochran's Q of the arms' estimates (Cochran 1954);
- for a group design: the joint maximum-likelihood fit of the prevalence and the
  design's non-adherence parameter (cheaters ``gamma``, Clark & Desharnais 1998;
  honesty ``t``, Moshagen, Musch & Erdfelder 2012), and for the extended crosswise
  model its likelihood-ratio test of fit, chi-square with 1 degree of freedom (Heck,
  Hoffmann & Moshagen 2018), from :func:`deniable.analysis.estimate_channel`.

A question declared ``control: zero`` is flagged: its estimate measures false positives.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ...errors import IntervalCoverageWarning
from ...estimation import estimate
from ...mechanisms import Design
from ..exports import GROUP_SUFFIX

if TYPE_CHECKING:
    from ...analysis import ArmStudy, GroupFit, StudyRegression
    from ..model import Question, Survey

__all__ = [
    "MAX_COVARIATES",
    "answer_labels",
    "arm_analysis",
    "covariate_ids",
    "design_keys",
    "has_variants",
    "pooled_arms",
    "pooled_estimate",
    "pooled_rows",
    "regressable",
    "regression",
    "study_frame",
]


def has_variants(survey: Survey, question_id: str) -> bool:
    """Whether a question's reports come through more than one design: arms that ask it
    differently, or a group design."""
    variants = survey.variants(question_id)
    if variants[0].is_list:  # two lists, not two designs: :mod:`._list_study`
        return False
    return len({v.content_digest for v in variants}) > 1 or len(variants[0].groups) > 1


def pooled_arms(survey: Survey, question_id: str) -> list[str]:
    """The arms whose reports of ``question_id`` join the estimate pooled over the arms:
    every arm that randomizes it, and an arm that asks it directly only with ``pool:
    true`` in the survey file (the arm a validation study suspects of under-reporting).
    Empty for a survey without arms (every row joins)."""
    if not survey.arms:
        return []
    variants = survey.variants(question_id)
    return [
        name
        for name, v in zip(survey.arm_names, variants, strict=True)
        if not v.is_direct or survey.arms[name].pool
    ]


def study_frame(frame: pd.DataFrame, survey: Survey) -> pd.DataFrame:
    """The rows of one version of a wide export (``arm`` as text, empty without arms)."""
    return _arms_as_text(frame.loc[frame["version"].astype(int) == survey.version].copy())


def _arms_as_text(rows: pd.DataFrame) -> pd.DataFrame:
    if "arm" not in rows:
        rows["arm"] = ""
    rows["arm"] = rows["arm"].fillna("").astype(str)
    return rows


def design_keys(
    rows: pd.DataFrame, survey: Survey, question_id: str
) -> tuple[pd.Series, dict[str, Design]]:
    """Each row's design key and the design of each key, for
    :func:`~deniable.estimation.estimate` with ``groups`` or ``rr_logit`` with ``group``:
    arms that ask the question alike share a key (``"0"``, ``"1"``, ... in arm order,
    ``"0:g"`` for group ``g`` of a group design), so the stacked design has one block
    per distinct design and group, whatever the arms; ``""`` for a row without a
    group.

    Raises
    ------
    ValueError
        For an arm the survey does not have, or a group column missing.
    """
    designs: dict[str, Design] = {}
    arms = survey.arm_names or [""]
    keys = pd.Series("", index=rows.index, dtype=object)
    digests: list[str] = []  # arms that ask the question alike share their key
    for arm, q in zip(arms, survey.variants(question_id), strict=True):
        if q.content_digest not in digests:
            digests.append(q.content_digest)
        label = str(digests.index(q.content_digest))
        mine = rows["arm"] == arm
        if len(q.groups) > 1:
            column = question_id + GROUP_SUFFIX
            if column not in rows:
                raise ValueError(f"the export has no column {column!r} (the group drawn)")
            group = rows.loc[mine, column]
            labels = (label + ":") + group.fillna(0).astype(int).astype(str)
            keys.loc[mine] = labels.where(group.notna(), "")
            for g, d in enumerate(q.groups):
                designs[f"{label}:{g}"] = d
        else:
            keys.loc[mine] = label
            designs[label] = q.mechanism
    present = set(pd.unique(rows["arm"]).tolist())  # not a loop over the rows
    unknown = sorted(present - set(arms))
    if unknown:
        found = sorted({str(a) for a in present})
        named = ", ".join(repr(a) if a else "'' (rows without an arm)" for a in found)
        raise ValueError(
            f"the export's arm column holds {named}; the survey file's arms are "
            f"{', '.join(map(repr, arms))}: is the export of another survey, or of a "
            "version without arms?"
        )
    return keys, designs


def _pooled_estimate(
    codes: np.ndarray, keys: np.ndarray, designs: dict[str, Design], method: str = "moment"
) -> Any:
    """The estimate pooled over the designs the rows used (one design: its own)."""
    used = {k: d for k, d in designs.items() if k in set(keys.tolist())}
    if len(used) == 1:
        return estimate(next(iter(used.values())), codes, method)
    return estimate(used, codes, method, groups=keys)


def _pooled(codes: np.ndarray, keys: np.ndarray, designs: dict[str, Design]) -> Any:
    """The estimate pooled over the designs the rows used."""
    with warnings.catch_warnings():
        # the stacked design's only interval is the (power-constrained) Wald interval:
        # the grid warning of single designs' Wald intervals does not apply to it
        if len(set(keys.tolist())) > 1:
            warnings.simplefilter("ignore", IntervalCoverageWarning)
        return _pooled_estimate(codes, keys, designs)


def pooled_estimate(
    frame: pd.DataFrame,
    survey: Survey,
    question_id: str,
    versions: Sequence[Survey] | None = None,
    method: str = "moment",
) -> Any:
    """A question asked through several designs (arms, groups), estimated from every
    row through its own design (:func:`deniable.estimate` with a mapping of designs:
    moment on the stacked design, or ``mle``); rows of ``versions`` that ask it
    unchanged with ``versions`` (:func:`pooled_rows`). ``None`` without a row.

    Parameters
    ----------
    frame : pandas.DataFrame
        A wide export (as :func:`arm_analysis`).
    survey : Survey
        The version whose question is estimated.
    question_id : str
    versions : sequence of Survey, optional
        Other versions whose rows ask the question unchanged (default: this one only).
    method : {"moment", "mle"}, default "moment"

    Returns
    -------
    PrevalenceEstimate or None

    Examples
    --------
    >>> from deniable.collection.exports._export import wide_frame
    >>> from deniable.collection.study import campus_store
    >>> campus = campus_store(release=True)  # 600 simulated responses
    >>> store, survey = campus.store, campus.survey
    >>> pooled = pooled_estimate(wide_frame(store, "campus"), survey, "cheat")
    >>> pooled.labels, bool(0 <= pooled.estimate[1] <= 1)
    (['no', 'yes'], True)
    """
    one = study_frame(frame, survey)
    rows = one if versions is None else pooled_rows(frame, survey, versions, question_id)
    keys, designs = design_keys(rows, survey, question_id)
    used = rows[question_id].notna() & (keys != "")
    if survey.arms:  # the randomized arms, and a direct one only with pool: true
        used &= rows["arm"].isin(pooled_arms(survey, question_id))
    if not used.any():
        return None
    codes = rows.loc[used, question_id].to_numpy(np.int64)
    return _pooled_estimate(codes, keys[used].to_numpy(dtype=str), designs, method)


def pooled_rows(
    frame: pd.DataFrame, survey: Survey, versions: Sequence[Survey], question_id: str
) -> pd.DataFrame:
    """The rows of every version that asks ``question_id`` as ``survey`` does: the same
    arms and, in every arm, the same question (text, labels, design, groups), as the
    dashboard's pooled view and ``deniable analyze arms --pooled`` pool them."""
    from ..model import variants_digest

    digest = variants_digest(survey.variants(question_id))
    same = [
        s.version
        for s in versions
        if question_id in [q.id for q in s.questions]
        and s.arm_names == survey.arm_names
        and variants_digest(s.variants(question_id)) == digest
    ]
    return _arms_as_text(frame.loc[frame["version"].astype(int).isin(same)].copy())


def arm_analysis(
    frame: pd.DataFrame,
    survey: Survey,
    *,
    versions: Sequence[Survey] | None = None,
) -> list[ArmStudy]:
    """Per question with several designs (:func:`has_variants`): estimates by arm, the
    differences to the reference arm, the pooled estimate and a group design's fit.

    Parameters
    ----------
    frame : pandas.DataFrame
        A wide export (one row per response: ``version``, ``arm``, a report-code
        column per question, ``ID__group`` per group design), e.g.
        :func:`deniable.collection.exports.read_export`'s.
    survey : Survey
        The version analysed (its rows are selected).
    versions : sequence of Survey, optional
        Pool the rows of every one of these versions that asks a question unchanged
        (:func:`pooled_rows`); default ``survey``'s rows only.

    Returns
    -------
    list of ArmStudy
        One :class:`~deniable.analysis.ArmStudy` per question, a result on the common
        base (its intervals at any level). Its ``to_dict(level)`` (whose keys
        :meth:`ArmStudy.to_dict` lists) is what the dashboard, the API and ``analyze
        arms`` print; a validation item's arms
        carry their :func:`~deniable.analysis.validation_check`.

    Examples
    --------
    >>> from deniable.collection.exports._export import wide_frame
    >>> from deniable.collection.study import campus_store
    >>> campus = campus_store(release=True)  # 600 simulated responses
    >>> store, survey = campus.store, campus.survey
    >>> study = arm_analysis(wide_frame(store, "campus"), survey)
    >>> [(item.question, item.labels) for item in study]
    [('cheat', ['dq', 'rr']), ('plagiarism', [])]
    """
    from ...analysis import ArmStudy, arm_differences

    one = study_frame(frame, survey)
    out: list[ArmStudy] = []
    for q in survey.questions:
        if q.range is not None or q.mechanism.n_truths != 2 or not has_variants(survey, q.id):
            continue
        rows = one if versions is None else pooled_rows(frame, survey, versions, q.id)
        keys, designs = design_keys(rows, survey, q.id)
        used = rows[q.id].notna() & (keys != "")
        codes = rows.loc[used, q.id].to_numpy(np.int64)
        key_array = keys[used].to_numpy(dtype=str)
        arm_array = rows.loc[used, "arm"].to_numpy(dtype=str)
        study = ArmStudy(q.id, q.text, q.choice_labels[1], q.control == "zero", [], [], [])
        if codes.size == 0:
            out.append(study)
            continue
        by_arm: dict[str, Any] = {}
        names: list[str] = []
        if survey.arms and len({v.content_digest for v in survey.variants(q.id)}) > 1:
            for arm, v in zip(survey.arm_names, survey.variants(q.id), strict=True):
                mine = arm_array == arm
                if mine.any():
                    by_arm[arm] = _pooled(codes[mine], key_array[mine], designs)
                    names.append(_design_name(v))
        reference = (survey.control_arms or survey.arm_names or [""])[0]
        pooled, pool, heterogeneity = _pooled_fit(
            q.id, survey, codes, key_array, arm_array, designs
        )
        out.append(
            replace(
                study,
                labels=list(by_arm),
                designs=names,
                arms=list(by_arm.values()),
                differences=arm_differences(by_arm, reference) if reference in by_arm else None,
                pooled=pooled,
                pooled_arms=pool,
                heterogeneity=heterogeneity,
                groups=_group_fit(q, survey, rows) if len(q.groups) > 1 else None,
                known=q.validation_prevalence,
                validation=_validation(q, list(by_arm.values())),
            )
        )
    return out


def _validation(q: Question, arms: list[Any]) -> list[Any] | None:
    """A validation item's check against its known prevalence, arm by arm (one design
    an arm: a group design's arm is a stacked estimate, not checked)."""
    from ...analysis import validation_check

    known = q.validation_prevalence
    if known is None or len(q.groups) > 1:
        return None
    return [validation_check(a, known) for a in arms]


def _pooled_fit(
    question_id: str,
    survey: Survey,
    codes: np.ndarray,
    keys: np.ndarray,
    arms: np.ndarray,
    designs: dict[str, Design],
) -> tuple[Any, list[str], Any]:
    """The estimate pooled over :func:`pooled_arms` by joint maximum likelihood (each
    arm weighted by its information at the common prevalence, iterated to convergence
    by EM), the arms pooled (those with rows), and Cochran's Q of the arms' estimates
    around it."""
    from ...analysis import cochran_q
    from ...estimation import moment_covariance_at

    pool = pooled_arms(survey, question_id)
    keep = np.isin(arms, pool) if pool else np.ones(codes.size, dtype=bool)
    if not keep.any():
        return None, pool, None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IntervalCoverageWarning)
        est = _pooled_estimate(codes[keep], keys[keep], designs, "mle")
    present = [a for a in pool if (arms == a).any()]
    pool = present if pool else pool  # an arm that drew nobody contributed nothing
    if len(present) < 2:
        return est, pool, None
    pi = float(est.estimate[1])
    means, variances = [], []
    for a in present:
        mine = arms == a
        mine_designs = {k: designs[k] for k in set(keys[mine].tolist())}
        cov = moment_covariance_at(mine_designs, keys[mine], codes[mine], [1 - pi, pi])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", IntervalCoverageWarning)
            means.append(float(_pooled_estimate(codes[mine], keys[mine], designs).estimate[1]))
        variances.append(float(cov[1, 1]))
    if not all(v > 0 for v in variances):
        return est, pool, None
    return est, pool, cochran_q(means, variances, pi)


def _design_name(q: Question) -> str:
    return q.design.name + (
        "(" + ", ".join(f"{k}={v:g}" for k, v in q.design.params.items()) + ")"
        if q.design.params
        else ""
    )


def _group_fit(q: Question, survey: Survey, rows: pd.DataFrame) -> GroupFit | None:
    """The group design's joint fit on the rows of the arms that ask it so."""
    from ...analysis import GroupFit, estimate_channel
    from ..model import GROUP_DESIGNS

    arms = [
        arm
        for arm, v in zip(survey.arm_names or [""], survey.variants(q.id), strict=True)
        if v.content_digest == q.content_digest
    ]
    column = q.id + GROUP_SUFFIX
    mine = rows["arm"].isin(arms) & rows[q.id].notna() & rows[column].notna()
    if not mine.any():
        return None
    fit = estimate_channel(
        q.group_channel,
        rows.loc[mine, q.id].to_numpy(np.int64),
        rows.loc[mine, column].to_numpy(np.int64),
    )
    spec = GROUP_DESIGNS[q.design.name]
    return GroupFit(_design_name(q), spec.source, fit, spec.non_adherence)


def answer_labels(codes: pd.Series, labels: list[str]) -> pd.Series:
    """A direct question's codes as its answer labels, categorical in the question's
    order (so a regression's reference is its first answer, as R's factors have it);
    missing stays missing."""
    values = pd.Categorical.from_codes(codes.fillna(-1).astype(int), categories=pd.Index(labels))
    return pd.Series(values, index=codes.index)


def regressable(survey: Survey) -> list[str]:
    """The questions :func:`regression` takes: yes/no, randomized in some arm."""
    return [
        q.id
        for q in survey.questions
        if not all(v.is_direct for v in survey.variants(q.id))
        and q.range is None
        and q.mechanism.n_truths == 2
    ]


def covariate_ids(survey: Survey) -> list[str]:
    """The questions :func:`regression` takes as covariates: asked directly in every
    arm, with choices or bins."""
    return [q.id for q in survey.direct_questions if q.range is None or q.bins]


#: Most direct questions a dashboard regression takes.
MAX_COVARIATES = 5


def regression(
    frame: pd.DataFrame,
    survey: Survey,
    question_id: str,
    covariates: list[str],
    information: str = "observed",
) -> StudyRegression:
    """Logistic regression of a randomized yes/no question on direct questions
    (:func:`deniable.analysis.rr_logit`, each row through its own arm's and group's
    design), as ``deniable analyze EXPORT --question Q --formula 'Q ~ A + B'`` fits it:
    the covariates enter by their answer labels (categorical, first label the
    reference); rows missing any of them are left out.

    Parameters
    ----------
    frame : pandas.DataFrame
        A wide export (see :func:`arm_analysis`).
    survey : Survey
    question_id : str
        A randomized question with two answers.
    covariates : list of str
        1 to :data:`MAX_COVARIATES` ids of questions asked directly in every arm.
    information : {"observed", "opg", "expected"}
        The standard errors' information (``rr_logit``'s; GLMMRR uses ``expected``).

    Returns
    -------
    StudyRegression
        The fit with ``question``, ``covariates`` and ``notes`` (each answer of a
        covariate that no released response gave, left out); its ``to_dict()`` is
        what the dashboard and the API print.

    Raises
    ------
    ValueError
        Naming the allowed questions, for a question or covariate that does not fit.
    """
    from ...analysis import StudyRegression, rr_logit

    randomized = regressable(survey)
    if question_id not in randomized:
        raise ValueError(f"regress must be one of {randomized}, got {question_id!r}")
    direct = covariate_ids(survey)
    if not 1 <= len(covariates) <= MAX_COVARIATES or len(set(covariates)) != len(covariates):
        raise ValueError(f"on must name 1 to {MAX_COVARIATES} different questions of {direct}")
    unknown = [c for c in covariates if c not in direct]
    if unknown:
        raise ValueError(f"on must name questions asked directly: {direct}; got {unknown}")
    rows = study_frame(frame, survey)
    data = pd.DataFrame({question_id: rows[question_id]})
    for c in covariates:
        data[c] = answer_labels(rows[c], survey.question(c).report_labels)
    design: Any = survey.question(question_id).mechanism
    group = None
    if has_variants(survey, question_id):
        keys, design = design_keys(rows, survey, question_id)
        data["design_key"] = keys.where(keys != "")
        group = "design_key"
    data = data.dropna().astype({question_id: "int64"})
    notes = []
    for c in covariates:  # a level no released row has: no coefficient, a note
        empty = [str(v) for v, n in data[c].value_counts(sort=False).items() if n == 0]
        if empty:
            data[c] = data[c].cat.remove_unused_categories()
            notes.append(
                f"{c}: no released response answered {', '.join(map(repr, empty))}; "
                "left out of the regression (no coefficient)"
            )
    if len(data) == 0:
        raise ValueError(f"regress: no released response answers {question_id} and {covariates}")
    names = [f"`{c}`" if "-" in c else c for c in covariates]
    formula = f"{question_id} ~ {' + '.join(names)}"
    fit = rr_logit(formula, data, design, group=group, information=information)
    return StudyRegression(question_id, covariates, fit, notes)
