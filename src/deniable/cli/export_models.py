"""``deniable analyze EXPORT --question ID`` with ``--by`` or ``--formula``: the
randomized question of a deniable export against the survey's other questions (the
direct ones: faculty, year), entered by their answer labels."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from .analyze import NumericQuestionMean, _analyze_by, _analyze_formula, _export_question
from .common import err, fail

__all__ = ["analyze_export_model"]


#: Names a formula may use that are not columns.
_FORMULA_FUNCTIONS = {"C", "I", "np", "log", "exp", "sqrt", "center", "scale", "poly"}


def analyze_export_model(
    path: Path,
    question: str,
    version: int | None,
    formula: str | None,
    by: str | None,
    level: float,
    as_json: bool,
) -> None:
    """``--question`` with ``--by`` or ``--formula`` on a deniable export: the other
    questions named (direct questions, the covariates) enter by their answer labels;
    rows where one is missing (unanswered, or recoded to missing in a small cell) are
    left out."""
    from ..collection.export import read_export

    d, _, _ = _export_question(path, question, version)  # a clear error for a bad file
    frame, versions = read_export(path)
    if isinstance(d, NumericQuestionMean):
        raise fail(f"--question {question!r} is numeric: --by and --formula take a choice")
    survey = [s for s in versions if version is None or s.version == version][-1]
    rows = frame.loc[frame["version"].astype(int) == survey.version].copy()
    if formula:
        lhs, _, rhs = formula.partition("~")
        if lhs.strip() != question:
            raise fail(f"--formula must have --question {question!r} on its left, got {formula!r}")
        named = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", rhs)) - _FORMULA_FUNCTIONS
    else:
        assert by is not None
        named = {by}
    known = {q.id: q for q in survey.questions}
    for name in sorted(named):
        if name not in known or name == question:
            raise fail(
                f"{'--by' if by else '--formula'}: {name!r} must be another question of "
                f"the survey: one of {sorted(set(known) - {question})}"
            )
        labels = known[name].report_labels
        rows[name] = rows[name].map(lambda c, labels=labels: None if pd.isna(c) else labels[int(c)])
    used = rows.dropna(subset=[question, *named])
    if not as_json:
        err.print(f"{len(rows) - len(used)} of {len(rows)} responses left out (a missing answer)")
    used = used.astype({question: "int64"})
    if formula:
        _analyze_formula(used, d, formula, level, as_json)
    else:
        assert by is not None
        _analyze_by(used, d, question, by, level, as_json)
