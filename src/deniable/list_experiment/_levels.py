"""The group levels of the multilevel list-experiment regression (R's
``ictregBayesHier`` with two, three or four levels; Blair, Imai & Lyall 2014).

Level 2 is the respondents' group (village); levels 3 and 4, where given, group the
groups (district, province), each unit of a level inside one unit of the next. For each
model ``m`` (control, then each sensitive item), a level-``l`` unit ``u`` has the
intercept

``a_{m,l,u} ~ Normal(a_{m,l+1,parent(u)} + v_{l,u}' gamma_{m,l}, sigma_{m,l}^2)``

below the top level, and ``Normal(v_{L,u}' gamma_{m,L}, sigma_{m,L}^2)`` at the top
``L``: the unit above takes the place of the intercept, so only the top level's
covariates keep theirs (R's model: its village-level design is the district dummies
beside the village covariates). A unit's covariates are the means over its rows of the
level's formula, as R. Priors: ``gamma_{m,l} ~ N(0, I / group_coef_precision)`` and
``sigma_{m,l}^2 ~ nu0 s0 / chi^2_nu0`` at every level (R's defaults: 1, 5, 1).

Given the level-2 intercepts, one Gibbs scan per model updates, level by level from 2
up, ``gamma_{m,l}`` and ``sigma_{m,l}^2`` from their conjugate normal and scaled inverse
chi-squared conditionals (the regression of the level's intercepts, less their parents',
on its covariates), then the next level's intercepts from their conjugate normal
conditional: prior precision ``1 / sigma_{m,l+1}^2`` about their own mean, and each child
``c`` a datum ``a_{m,l,c} - v_{l,c}' gamma_{m,l}`` of variance ``sigma_{m,l}^2``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from .._fitting import quote_columns

__all__ = ["MAX_GROUPS", "Level", "LevelState", "build_levels", "level_columns"]

#: Units of a level at most.
MAX_GROUPS = 10_000


@dataclass(frozen=True)
class Level:
    """One group level: its units' covariates ``v`` (units, q), each unit's parent in
    the next level (units,) (``None`` at the top), the units in order, the covariates'
    names and the data's column that names the units."""

    v: NDArray[np.float64]
    parent: NDArray[np.int64] | None
    units: list[Any]
    terms: list[str]
    column: str


def _as_names(value: object, what: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value):
        return list(value)
    raise ValueError(f"{what} must be a column name or a list of 1..3 of them, got {value!r}")


def _covariates(
    data: pd.DataFrame, rows: Any, formula: str, codes: NDArray[np.int64], top: bool
) -> tuple[NDArray[np.float64], list[str]]:
    """The mean over each unit's rows of ``formula``'s columns, and their names; the
    intercept dropped below the top level."""
    from formulaic import model_matrix  # lazy, as in _formula: its import is slow

    if not isinstance(formula, str) or not formula.strip().startswith("~"):
        raise ValueError(f"group_formula must read '~ terms', got {formula!r}")
    text = quote_columns(formula, [str(c) for c in data.columns])
    try:
        v = model_matrix(text, data.loc[rows], na_action="raise")
    except Exception as exc:  # formulaic raises several types; name the formula
        raise ValueError(f"cannot build the group covariates of {formula!r}: {exc}") from None
    names = [str(t).replace("`", "") for t in v.columns]
    if not names or names[0] != "Intercept":
        raise ValueError(f"group_formula must keep the intercept, got {formula!r}")
    means = pd.DataFrame(np.asarray(v, dtype=np.float64)).groupby(codes).mean().to_numpy()
    if top:
        return np.asarray(means, dtype=np.float64), names
    return np.asarray(means[:, 1:], dtype=np.float64), names[1:]


def _codes(data: pd.DataFrame, rows: Any, column: str) -> tuple[NDArray[np.int64], list[Any]]:
    if column not in data.columns:
        raise ValueError(
            f"group must name a column of data; columns: {', '.join(map(str, data.columns))}"
        )
    values = data.loc[rows, column]
    if values.isna().any():
        raise ValueError(f"group {column!r} is missing on {int(values.isna().sum())} used rows")
    codes, uniques = pd.factorize(values, sort=True)
    if not 2 <= len(uniques) <= MAX_GROUPS:
        raise ValueError(f"group {column!r} must have 2..{MAX_GROUPS:,} groups, got {len(uniques)}")
    return codes.astype(np.int64), list(uniques)


def _parents(
    low: NDArray[np.int64], high: NDArray[np.int64], names: tuple[str, str], units: list[Any]
) -> NDArray[np.int64]:
    """Each unit of the lower level's one unit above; raises where a unit lies in two."""
    parent = np.full(len(units), -1, dtype=np.int64)
    parent[low] = high
    if (parent[low] != high).any():
        bad = units[int(low[parent[low] != high][0])]
        raise ValueError(
            f"group {names[0]!r} must be nested in {names[1]!r}: {bad!r} lies in several of "
            f"its units (give each {names[0]} a name unique across {names[1]})"
        )
    return parent


def build_levels(
    data: pd.DataFrame, rows: Any, group: object, group_formula: object
) -> tuple[NDArray[np.int64], list[Level]]:
    """Each row's level-2 code (n,) and the levels from 2 up (module text).

    ``group``: a column or a list of 1..3 distinct columns, lowest level first;
    ``group_formula``: one formula, used at every level, or one per column.

    Raises
    ------
    ValueError
        Naming the argument: a column that is missing or not distinct, missing on a used
        row, with fewer than 2 or more than :data:`MAX_GROUPS` units, a level not nested
        in the next, a malformed formula or a formula count that does not match.
    """
    columns = _as_names(group, "group")
    if not 1 <= len(columns) <= 3 or len(set(columns)) != len(columns):
        raise ValueError(f"group must name 1..3 distinct columns, got {columns!r}")
    formulas = (
        [group_formula] * len(columns)
        if isinstance(group_formula, str)
        else _as_names(group_formula, "group_formula")
    )
    if len(formulas) != len(columns):
        raise ValueError(
            f"group_formula must be one formula or one per group column ({len(columns)}), "
            f"got {len(formulas)}"
        )
    coded = [_codes(data, rows, column) for column in columns]
    levels = []
    for i, (column, (codes, units)) in enumerate(zip(columns, coded, strict=True)):
        top = i == len(columns) - 1
        parent = None
        if not top:
            parent = _parents(codes, coded[i + 1][0], (column, columns[i + 1]), units)
        v, terms = _covariates(data, rows, formulas[i], codes, top)
        levels.append(Level(v, parent, units, terms, column))
    return coded[0][0], levels


def level_columns(models: list[str], levels: list[Level]) -> list[str]:
    """The draws' columns of the levels: level 2's ``<model>.group.<term>``,
    ``<model>.sigma2``, ``<model>.intercept[<unit>]``; level ``l >= 3``'s the same under
    ``<model>.level<l>.``."""
    cols = []
    for i, level in enumerate(levels):
        tag = "" if i == 0 else f"level{i + 2}."
        cols += [f"{m}.{tag}group.{t}" for m in models for t in level.terms]
        cols += [f"{m}.{tag}sigma2" for m in models]
        cols += [f"{m}.{tag}intercept[{u}]" for m in models for u in level.units]
    return cols


class LevelState:
    """The chain's state above the level-2 intercepts ``a`` (models, G), which the
    chain holds: each level's ``gamma`` (models, q_l) and ``s2`` (models,), and the
    intercepts of levels 3 and up (models, units_l)."""

    def __init__(
        self, levels: list[Level], start: NDArray[np.float64], priors: tuple[float, float, float]
    ) -> None:
        """``start``: each model's intercept (models,); the upper levels' intercepts and
        the top level's constant start there, the other coefficients at 0."""
        self.levels = levels
        self.gamma_prec, self.nu0, self.s0 = priors
        models = start.size
        self.gamma = [np.zeros((models, lv.v.shape[1])) for lv in levels]
        self.gamma[-1][:, 0] = start
        self.s2 = [np.ones(models) for _ in levels]
        self.a = [np.repeat(start[:, None], len(lv.units), axis=1) for lv in levels[1:]]

    def mean(self, m: int, i: int = 0) -> NDArray[np.float64]:
        """The prior mean of level ``i + 2``'s intercepts of model ``m``."""
        level = self.levels[i]
        out = level.v @ self.gamma[i][m]
        if level.parent is not None:
            out = out + self.a[i][m, level.parent]
        return np.asarray(out, dtype=np.float64)

    @property
    def top_constant(self) -> NDArray[np.float64]:
        """The top level's intercept coefficient per model (models,)."""
        return self.gamma[-1][:, 0]

    def shift(self, step: NDArray[np.float64]) -> None:
        """Move every upper level's intercepts and the top constant by ``step``
        (models,): with the level-2 intercepts, every prior but the constant's is
        unchanged."""
        for a in self.a:
            a += step[:, None]
        self.gamma[-1][:, 0] += step

    def update(self, m: int, a2: NDArray[np.float64], rng: np.random.Generator) -> None:
        """One Gibbs scan of model ``m``'s levels given its level-2 intercepts (module
        text)."""
        below = a2
        for i, level in enumerate(self.levels):
            parent_mean = (
                self.a[i][m, level.parent] if level.parent is not None else np.zeros(len(below))
            )
            target = below - parent_mean
            v = level.v
            if v.shape[1]:
                precision = v.T @ v / self.s2[i][m] + self.gamma_prec * np.eye(v.shape[1])
                root = np.linalg.cholesky(precision)
                centre = np.linalg.solve(precision, v.T @ target / self.s2[i][m])
                # N(centre, precision^-1): centre + L^-T e
                self.gamma[i][m] = centre + np.linalg.solve(root.T, rng.standard_normal(v.shape[1]))
            resid = target - v @ self.gamma[i][m]
            self.s2[i][m] = (resid @ resid + self.nu0 * self.s0) / rng.chisquare(
                len(below) + self.nu0
            )
            if level.parent is None:
                return
            # the next level's intercepts: their prior and their children's residuals
            data = below - v @ self.gamma[i][m]
            units = len(self.levels[i + 1].units)
            count = np.bincount(level.parent, minlength=units)
            total = np.bincount(level.parent, weights=data, minlength=units)
            prior = self.mean(m, i + 1)
            precision_u = 1.0 / self.s2[i + 1][m] + count / self.s2[i][m]
            centre_u = (prior / self.s2[i + 1][m] + total / self.s2[i][m]) / precision_u
            self.a[i][m] = centre_u + rng.standard_normal(units) / np.sqrt(precision_u)
            below = self.a[i][m]

    def row(self, a2: NDArray[np.float64]) -> NDArray[np.float64]:
        """The kept values in the order of :func:`level_columns`."""
        parts = [self.gamma[0].ravel(), self.s2[0], a2.ravel()]
        for i in range(1, len(self.levels)):
            parts += [self.gamma[i].ravel(), self.s2[i], self.a[i - 1].ravel()]
        return np.concatenate(parts)
