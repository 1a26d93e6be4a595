"""``deniable analyze EXPORT --question ID`` with ``--by`` or ``--formula``: the
randomized question of a deniable export against the survey's other questions (the
direct ones: faculty, year), entered by their answer labels."""

from __future__ import annotations

import re
from collections.abc import Hashable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd


from ._common import console, emit_json, err, fail
from ._fits import _analyze_by, _analyze_formula
from ._stream import is_parquet

if TYPE_CHECKING:
    from ..collection.model import Survey
    from ..mechanisms import Design

__all__ = [
    "NumericQuestionMean",
    "analyze_export_arms",
    "analyze_export_model",
    "analyze_export_waves",
    "export_question",
    "formula_question",
    "print_arm_rows",
]


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
    host_columns: bool = False,
) -> None:
    """``--question`` with ``--by`` or ``--formula`` on a deniable export: the other
    questions named (direct questions, the covariates) enter by their answer labels;
    rows where one is missing (unanswered, or recoded to missing in a small cell) are
    left out. With ``host_columns`` (a host's export, ``--survey``) the host's other
    columns may be named too: ``--by`` takes their values as groups, ``--formula`` as
    they are (numbers, or text as categories)."""
    from ..collection.study import answer_labels, design_keys, has_variants, study_frame

    frame, versions = _read(path)
    survey = _version(versions, question, version)
    rows = study_frame(frame, survey)
    group = None
    d: Design | dict[Hashable, Design]
    if has_variants(survey, question):  # arms or groups: the design of each row
        keys, by_key = design_keys(rows, survey, question)
        d = {k: v for k, v in by_key.items()}
        rows["design_key"] = keys
        rows = rows[keys != ""]
        group = "design_key"
    else:
        one, _, _ = export_question(path, question, version)  # a clear error for a bad file
        if isinstance(one, NumericQuestionMean):
            raise fail(f"--question {question!r} is numeric: --by and --formula take a choice")
        d = one
    if formula:
        lhs, _, rhs = formula.partition("~")
        if lhs.strip() != question:
            raise fail(f"--formula must have --question {question!r} on its left, got {formula!r}")
        # a host's dotted name (oTree's rr.1.player.age) is one name
        named, rhs = _host_names(rhs, rows.columns) if host_columns else (set(), rhs)
        named |= set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", rhs)) - _FORMULA_FUNCTIONS
    else:
        assert by is not None
        named = {by}
    known = {q.id: q for q in survey.questions}
    for name in sorted(named):
        if host_columns and name not in known and name in rows.columns and name != question:
            if by:
                rows[name] = rows[name].astype("string").astype("category")
            continue
        if name not in known or name == question:
            raise fail(
                f"{'--by' if by else '--formula'}: {name!r} must be another question of "
                f"the survey: one of {sorted(set(known) - {question})}"
            )
        if not all(v.is_direct and v.release_channel is None for v in survey.variants(name)):
            raise fail(
                f"{'--by' if by else '--formula'}: {name!r} holds randomized values (a "
                "report, or an answer the server post-randomized), not answers: a predictor "
                "or group must be a question stored as sent in every arm, one of "
                f"{[q.id for q in survey.direct_questions if q.id != question]}"
            )
        rows[name] = answer_labels(rows[name], known[name].report_labels)
    used = rows.dropna(subset=[question, *named])
    if not as_json:
        err.print(f"{len(rows) - len(used)} of {len(rows)} responses left out (a missing answer)")
    used = used.astype({question: "int64"})
    for name in sorted(named):  # an answer no released response gave: no coefficient
        empty = [str(v) for v, n in used[name].value_counts(sort=False).items() if n == 0]
        if empty and formula:
            used[name] = used[name].cat.remove_unused_categories()
            err.print(
                f"{name}: no response answered {', '.join(map(repr, empty))}; left out of "
                "the regression (no coefficient)"
            )
    if formula:
        _analyze_formula(used, d, formula, level, as_json, group)
    else:
        assert by is not None
        _analyze_by(used, d, question, by, level, as_json, group)


def _host_names(rhs: str, columns: Any) -> tuple[set[str], str]:
    """The host's column names that are not Python identifiers (oTree's
    ``rr.1.player.age``, a name with a space in backticks) named whole in a formula's
    right side, longest first (the formula frame quotes them for formulaic), and the
    right side without them."""
    named: set[str] = set()
    odd = sorted((str(c) for c in columns if not str(c).isidentifier()), key=len, reverse=True)
    for name in odd:
        pattern = rf"(?<![\w.`])`?{re.escape(name)}`?(?![\w.`])"
        if re.search(pattern, rhs):
            named.add(name)
            rhs = re.sub(pattern, " ", rhs)
    return named, rhs


def formula_question(formula: str, reports: Path, host: bool) -> str | None:
    """The question a formula's left side names, on a file that carries its survey (a
    host's export read with ``--survey``, a deniable export with its survey file beside
    it, or a Parquet export); None elsewhere (then ``--design`` is needed)."""
    from ..collection.exports import sidecar_path

    lhs = formula.partition("~")[0].strip()
    carries = host or is_parquet(reports) or sidecar_path(reports).exists()
    return lhs if lhs.isidentifier() and carries else None


class NumericQuestionMean(NamedTuple):
    """A numeric survey question's design (Warner over its bounds) and the question."""

    design: Design
    question: Any


def export_question(
    path: Path, question: str, version: int | None, pooled: bool = False
) -> tuple[Design | NumericQuestionMean, np.ndarray, int]:
    """(design, report codes, missing) of one question of a deniable export: of one
    version, or with ``pooled`` of every version that asks it unchanged (the same
    content digest, so one design)."""
    import numpy as np

    from ..collection.study import has_variants

    frame, versions = _read(path)
    survey = _version(versions, question, version)
    asked = [s for s in versions if question in [q.id for q in s.questions]]

    if has_variants(survey, question):
        raise fail(
            f"--question {question!r} is asked through several designs (arms or groups): "
            "add --arms for its estimates, or --formula (designs by row)"
        )
    d = survey.question(question).mechanism
    digest = survey.question(question).content_digest
    numbers = (
        [s.version for s in asked if s.question(question).content_digest == digest]
        if pooled
        else [survey.version]
    )
    raw = frame.loc[frame["version"].astype(int).isin(numbers), question]
    values = raw.dropna().to_numpy(dtype=np.int64)
    if not np.all((values >= 0) & (values < d.n_reports)):
        raise fail(f"column {question!r} must hold report codes 0..{d.n_reports - 1}")
    if survey.question(question).numeric is not None:
        return NumericQuestionMean(d, survey.question(question)), values, int(raw.isna().sum())
    return d, values, int(raw.isna().sum())


def _read(path: Path) -> tuple[pd.DataFrame, list[Survey]]:
    """The export and its versions; on stderr, the responses it lacks and why (waiting
    for a release, or withheld at the close: fewer than ``min_release``)."""
    from ..collection.exports import export_definition, not_exported, read_export

    try:
        found = read_export(path)
        note = not_exported(export_definition(path))
    except (FileNotFoundError, ValueError) as exc:
        raise fail(str(exc)) from None
    if note:
        err.print(f"note: {note}", markup=False, highlight=False)
    return found


def _version(versions: list[Survey], question: str | None, version: int | None) -> Survey:
    """The version analysed: ``version`` (default the latest) among those asking
    ``question`` (any, without one)."""
    asked = [s for s in versions if question is None or question in [q.id for q in s.questions]]
    if not asked:
        raise fail(f"--question must be one of the survey's question ids, got {question!r}")
    chosen = [s for s in asked if version is None or s.version == version]
    if not chosen:
        raise fail(f"--version must be one of {[s.version for s in asked]}, got {version}")
    return chosen[-1]


def analyze_export_arms(
    path: Path,
    question: str | None,
    version: int | None,
    level: float,
    as_json: bool,
    pooled: bool = False,
) -> None:
    """``deniable analyze EXPORT --arms``: :func:`deniable.collection.study.arm_analysis`
    on the export's rows of one version, or with ``pooled`` of every version that asks
    each question unchanged (the dashboard's numbers, its pooled view's with
    ``--pooled``), printed as tables or JSON (``{"survey", "version", "pooled",
    "confidence_level", "questions": [...]}``)."""
    from ..collection.study import arm_analysis

    frame, versions = _read(path)
    survey = _version(versions, question, version)
    try:
        rows = [
            item.to_dict(level)
            for item in arm_analysis(frame, survey, versions=versions if pooled else None)
        ]
    except ValueError as exc:
        raise fail(str(exc)) from None
    if question is not None:
        rows = [r for r in rows if r["question"] == question]
        if not rows:
            raise fail(f"--question {question!r} is asked through one design only: drop --arms")
    if not rows:
        raise fail("no question of this version is asked through several designs (arms, groups)")
    if as_json:
        emit_json(
            {
                "survey": survey.id,
                "version": survey.version,
                "pooled": pooled,
                "confidence_level": level,
                "questions": rows,
            }
        )
        return
    for r in rows:
        print_arm_rows(r, level)


def analyze_export_waves(path: Path, question: str | None, level: float, as_json: bool) -> None:
    """``deniable analyze EXPORT --waves``: :func:`deniable.collection.store.wave_analysis`
    on the export's rows (the dashboard's numbers), as tables or JSON (``{"survey",
    "confidence_level", "changes": [...]}``)."""
    from rich.table import Table

    from ..collection.store import wave_analysis

    frame, versions = _read(path)
    if len(versions) < 2:
        raise fail("--waves needs an export of two or more waves (versions); this has one")
    try:
        changes: list[dict[str, Any]] = wave_analysis(frame, versions, level)
    except ValueError as exc:
        raise fail(str(exc)) from None
    if question is not None:
        changes = [c for c in changes if c["question"] == question]
    if not changes:
        raise fail(
            "no question is asked unchanged in two consecutive waves with released responses"
            + (f" (--question {question!r})" if question else "")
        )
    if as_json:
        emit_json({"survey": versions[0].id, "confidence_level": level, "changes": changes})
        return
    for c in changes:
        table = Table(
            title=f"{c['question']}: {c['text']} (wave {c['first']} to wave {c['second']})",
            title_justify="left",
        )
        for col in ("arm", "answer", "n", f"wave {c['first']} (SE)", f"wave {c['second']} (SE)",
                    f"change ({level:.0%} CI)"):  # fmt: skip
            table.add_column(col, justify="left" if col in ("arm", "answer") else "right")
        for r in c["rows"]:
            table.add_row(
                r["arm"],
                r["answer"],
                f"{r['n'][0]:,}, {r['n'][1]:,}",
                f"{r['first']:.4f} ({r['first_std_error']:.4f})",
                f"{r['second']:.4f} ({r['second_std_error']:.4f})",
                f"{r['difference']:+.4f} ({r['low']:.4f} - {r['high']:.4f})",
            )
        console.print(table)
    console.print(
        "The change is between the two waves' respondent populations (people's own change "
        "only if those who left answer like those who stayed); the interval treats the "
        "waves as independent, conservative unless answers are negatively correlated "
        "across waves (docs/collection.md, Running a panel)."
    )


def print_arm_rows(r: dict[str, Any], level: float) -> None:
    """One question's arms, differences, pooled estimate and group fit as text."""
    from rich.table import Table

    title = f'{r["question"]}: {r["text"]} ("{r["answer"]}")'
    if r["control"]:
        title += " (zero-prevalence control)"
    table = Table(title=title, title_justify="left")
    for col in ("arm", "design", "n", "estimate", "SE", f"{level:.0%} CI", "difference", "p"):
        table.add_column(col, justify="left" if col in ("arm", "design") else "right")
    diffs = {d["arm"]: d for d in r["differences"]}
    for a in r["arms"]:
        d = diffs.get(a["arm"])
        table.add_row(
            a["arm"],
            a["design"],
            f"{a['n']:,}",
            f"{a['estimate']:.4f}",
            f"{a['std_error']:.4f}",
            f"{a['low']:.4f} - {a['high']:.4f}",
            "reference"
            if d is None
            else f"{d['difference']:+.4f} ({d['low']:.4f} - {d['high']:.4f})",
            "" if d is None else f"{d['pvalue']:.3g}",
        )
    if r["arms"]:
        console.print(table)
    p = r["pooled"]
    if p is not None:
        over = ", ".join(p["arms"]) if p["arms"] else "the groups"
        line = (
            f"  pooled over {over} (maximum likelihood): {p['estimate']:.4f} (SE "
            f"{p['std_error']:.4f}, {level:.0%} CI {p['low']:.4f} - {p['high']:.4f}, "
            f"n = {p['n']:,})"
        )
        if p["heterogeneity"] is not None:
            h = p["heterogeneity"]
            line += f"; Cochran's Q = {h['statistic']:.2f} on {h['df']} df, p = {h['pvalue']:.3g}"
        console.print(line)
    g = r["groups"]
    if g is not None:
        line = (
            f"  {g['design']} ({g['source']}): prevalence {g['estimate']:.4f} "
            f"(SE {g['std_error']:.4f}, {level:.0%} CI {g['interval']['low']:.4f} - "
            f"{g['interval']['high']:.4f})"
        )
        if g["parameter"] is not None:
            q = g["parameter"]
            line += f"; {q['name']} {q['estimate']:.4f} (SE {q['std_error']:.4f})"
        if g["fit"] is not None:
            f = g["fit"]
            line += f"; fit G2 = {f['statistic']:.3f} on {f['df']} df, p = {f['pvalue']:.3g}"
        console.print(line)
