"""Exports of the survey tools that host a randomized question (jsPsych, oTree,
Qualtrics, LimeSurvey), read back as deniable's own wide export.

The contract with the host
--------------------------
A host stores, for every randomized question ``q`` of the survey file, two fields the
browser component hands back (never the true answer, the die or the coin):

* ``deniable_<q>``: the report code (``0..m-1``);
* ``deniable_<q>_digest``: the question's :func:`~deniable.collection.model.design_digest`
  (SHA-256 of its design: name, matrix, groups, range, permanent layer), so analysis
  can check that the reports came through the design it is given;

and, optionally, ``deniable_version`` (the component's version). Each host names them
its own way, and :func:`read_host_export` finds them:

=============  ==================================================================
host           where the fields are
=============  ==================================================================
jsPsych        one trial per question (``trial_type`` ``deniable-rr``) with
               ``question``, ``report``, ``digest``; JSON (``jsPsych.data.get().json()``)
               or CSV; pivoted to one row per participant (a column ``subject``,
               ``subject_id``, ``participant``, ``participant_id`` or ``PROLIFIC_PID``,
               else one row per trial)
oTree          the "All apps - wide" CSV: ``<app>.<round>.player.deniable_<q>``, one
               row per participant and round
Qualtrics      embedded data: ``__js_deniable_<q>`` (``setJSEmbeddedData``, the
               simplified engine prefixes ``__js_``) or ``deniable_<q>`` (the classic
               ``setEmbeddedData``); a CSV with three header rows (names, question
               texts, ``{"ImportId": ...}``) or two (the legacy format)
LimeSurvey     the response CSV with question codes as headers: the report is the
               answer code of ``deniable<q>`` (a "list with comment" question; a
               leading letter before the report code is dropped, ``A3`` is 3), its
               digest the comment, ``deniable<q>[comment]`` (or ``deniable<q>digest``)
=============  ==================================================================

A list experiment (``question.list``) adds the group the browser drew (0 the control
list, 1 the list with the sensitive item), its report being the count: ``group`` in a
jsPsych trial, ``deniable_<q>_group`` in oTree and Qualtrics, and in LimeSurvey the
answer code's letter (``A<count>`` on the control list, ``B<count>`` with the item). It
is read into ``<q>__group``, deniable's own wide column, beside the count.

A row whose digest is not the question's is refused for that question (its report set
to missing), counted and reported. Every other column of the host (ids, timestamps, the
host's own questions) is kept, to break estimates down by and to regress on.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ._export import GROUP_SUFFIX

if TYPE_CHECKING:
    import pandas as pd

    from ..model import Survey

__all__ = [
    "HOSTS",
    "MAX_EXPORT_BYTES",
    "TRIAL_TYPE",
    "HostExport",
    "detect_host",
    "read_host_export",
]

#: The hosts whose exports :func:`read_host_export` reads.
HOSTS = ("jspsych", "otree", "qualtrics", "limesurvey")

#: jsPsych columns that identify a participant across trials, in order of preference.
_PARTICIPANT = ("subject", "subject_id", "participant", "participant_id", "PROLIFIC_PID")
#: The jsPsych plugin's trial type.
TRIAL_TYPE = "deniable-rr"
#: Largest export read (bytes): bounded before anything is parsed.
MAX_EXPORT_BYTES = 512 * 2**20


@dataclass
class HostExport:
    """A host's export as deniable's wide export of one survey version.

    Attributes
    ----------
    host : str
        One of :data:`HOSTS`.
    frame : pandas.DataFrame
        One row per respondent: ``version``, a column per randomized question (report
        codes, missing where refused or not asked), and the host's other columns.
    rows : int
        Respondent rows read.
    refused : dict of str to int
        Per question, rows whose digest was not the question's (their report dropped).
    missing_digest : dict of str to int
        Per question, rows with a report but no digest (kept: a host that did not store
        it; said, so the analyst knows the design was not checked there).
    duplicates : dict of str to int
        Per question, participants who sent more than one report: jsPsych's extra
        trials of one participant (the first kept), or the other hosts' rows whose
        participant id (oTree's ``participant.code``, Qualtrics' ``ResponseId``,
        LimeSurvey's ``id``) came before (each row kept); said, never silent.

    Examples
    --------
    See :func:`read_host_export`.
    """

    host: str
    frame: pd.DataFrame
    rows: int
    refused: dict[str, int] = field(default_factory=dict)
    missing_digest: dict[str, int] = field(default_factory=dict)
    duplicates: dict[str, int] = field(default_factory=dict)


def _norm(name: str) -> str:
    """A column name compared loosely: lower case, letters and digits only."""
    return re.sub(r"[^a-z0-9]", "", str(name).lower())


def detect_host(path: Path) -> str:
    """The host whose export ``path`` is, from its first lines.

    Raises
    ------
    ValueError
        If the file matches none of :data:`HOSTS`.
    """
    if path.suffix.lower() == ".json":
        return "jspsych"
    with path.open(encoding="utf-8-sig", newline="") as fh:
        head = [fh.readline() for _ in range(3)]
    import csv

    rows = list(csv.reader(head, delimiter=_delimiter(path)))
    names = rows[0] if rows else []
    if "trial_type" in names:
        return "jspsych"
    if any(n.startswith("participant.") for n in names) or any(".player." in n for n in names):
        return "otree"
    if (
        "ResponseId" in names
        or "ResponseID" in names
        or (len(rows) > 2 and rows[2] and rows[2][0].startswith('{"ImportId"'))
    ):
        return "qualtrics"
    if "submitdate" in names or "lastpage" in names or "startlanguage" in names:
        return "limesurvey"
    raise ValueError(
        f"{path.name}: not an export of {', '.join(HOSTS)} that deniable knows; "
        "name the host with --host"
    )


def _not_another_surveys_export(frame: Any, survey: Survey, name: str) -> None:
    """Refuse deniable's own export of another survey read as a host's export of
    ``survey`` (its ``survey`` column names its survey): same-named question columns
    would be read as ``survey``'s reports."""
    from ._export import SURVEY_COLUMN

    if SURVEY_COLUMN not in frame or "response_id" not in frame:
        return
    found = sorted({str(v) for v in frame[SURVEY_COLUMN].dropna().unique()})
    if found and found != [survey.id]:
        raise ValueError(
            f"{name} is deniable's export of survey {', '.join(map(repr, found))}, not of "
            f"the survey file's {survey.id!r}: analyze it with its own survey file "
            f"({found[0]}.survey.json, beside it when 'deniable survey export' wrote it)"
        )


def read_host_export(path: Path, survey: Survey, host: str | None = None) -> HostExport:
    """Read a host's export of ``survey``'s randomized questions (the module docstring
    says where each host keeps them).

    Parameters
    ----------
    path : Path
        The export file (CSV; jsPsych also JSON), at most 512 MiB.
    survey : Survey
        The survey file the host was generated from (one version).
    host : str, optional
        One of :data:`HOSTS`; default :func:`detect_host`.

    Returns
    -------
    HostExport

    Raises
    ------
    ValueError
        For an unknown host, a file over the size bound, no report column of any
        randomized question, or a report that is not a code of its question.

    Examples
    --------
    An oTree "All apps - wide" export of the campus survey's ``cheat`` question:

    >>> import csv, tempfile, pathlib
    >>> from deniable.collection.model import load_survey
    >>> from deniable.collection.model import design_digest
    >>> from deniable.collection.exports import read_host_export
    >>> survey = load_survey("examples/campus.yaml")
    >>> digest = design_digest(next(q for q in survey.questions if q.id == "cheat"))
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "all_apps_wide.csv"
    >>> with path.open("w", newline="") as fh:
    ...     w = csv.writer(fh)
    ...     _ = w.writerow(["participant.code", "rr.1.player.deniable_cheat",
    ...                 "rr.1.player.deniable_cheat_digest"])
    ...     w.writerows([["a", 1, digest], ["b", 0, digest], ["c", 1, "0" * 64]])
    >>> back = read_host_export(path, survey)
    >>> back.host, back.rows, back.refused
    ('otree', 3, {'cheat': 1})
    """
    import pandas as pd

    if path.stat().st_size > MAX_EXPORT_BYTES:
        raise ValueError(f"{path.name} is over {MAX_EXPORT_BYTES // 2**20} MiB")
    if path.suffix.lower() == ".csv":  # deniable's own export of another survey?
        _not_another_surveys_export(pd.read_csv(path, nrows=20, dtype=str), survey, path.name)
    host = host or detect_host(path)
    if host not in HOSTS:
        raise ValueError(f"host must be one of {', '.join(HOSTS)}, got {host!r}")
    frame, collapsed = _read_frame(path, host, survey)
    _not_another_surveys_export(frame, survey, path.name)
    randomized = [q for q in survey.questions if not q.is_direct or q.is_list]
    out = HostExport(host, frame, len(frame))
    repeated = _repeated_participants(host, frame)
    columns = {_norm(c): c for c in frame.columns}
    found = 0
    result = frame.copy()
    for q in randomized:
        report_col, digest_col = _columns(host, q.id, frame.columns, columns)
        if report_col is None:
            result[q.id] = np.nan
            continue
        found += 1
        if host == "limesurvey":  # a "full answers" export: the answers' texts
            frame[report_col] = _answer_codes_of(survey, q.id, frame[report_col], report_col)
        codes = pd.to_numeric(
            frame[report_col].astype(str).str.replace(r"^[A-Za-z]+", "", regex=True),
            errors="coerce",
        ).where(frame[report_col].notna())
        if q.is_list:
            result[q.id + GROUP_SUFFIX] = _list_groups(host, q, frame, report_col, codes)
        out.duplicates[q.id] = collapsed.get(q.id, 0) + int((repeated & codes.notna()).sum())
        bad = codes.notna() & ~codes.isin(range(q.mechanism.n_reports))
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise ValueError(
                f"{report_col} row {row}: {frame[report_col].iloc[row]!r} is not a report "
                f"code of {q.id!r} (0..{q.mechanism.n_reports - 1})"
            )
        codes = _checked_digests(q, codes, None if digest_col is None else frame[digest_col], out)
        result[q.id] = codes.astype("Float64").astype("float64")
    if not found:
        raise ValueError(
            f"{path.name} ({host}) has no report column of {', '.join(q.id for q in randomized)}"
            " (see deniable.collection.exports._hosts for where each host keeps them)"
        )
    result["version"] = survey.version
    out.frame = result
    return out


def _read_frame(path: Path, host: str, survey: Survey) -> tuple[pd.DataFrame, dict[str, int]]:
    """The host's file as a frame of text cells, one row per respondent, and per
    question the participants whose extra reports were collapsed (jsPsych's trials)."""
    import pandas as pd

    if host == "jspsych":
        return _jspsych(path, survey)
    if host == "qualtrics":
        return _qualtrics(path), {}
    sep = _delimiter(path)
    return pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[""], sep=sep), {}


def _checked_digests(
    q: Any, codes: pd.Series, digests: pd.Series | None, out: HostExport
) -> pd.Series:
    """``codes`` without the rows whose design digest is not the question's (counted in
    ``out.refused``); rows with a report and no digest are kept and counted in
    ``out.missing_digest`` (a host that did not store it)."""
    from ..model import design_digest

    if digests is None:
        out.missing_digest[q.id] = int(codes.notna().sum())
        return codes
    given = digests.astype("string").str.strip()
    wrong = codes.notna() & given.notna() & (given != design_digest(q))
    out.refused[q.id] = int(wrong.sum())
    out.missing_digest[q.id] = int((codes.notna() & given.isna()).sum())
    return codes.where(~wrong)


def _list_groups(
    host: str, q: Any, frame: pd.DataFrame, report_col: str, codes: pd.Series
) -> pd.Series:
    """A list experiment's group per row (0 the control list, 1 with the sensitive item;
    missing where there is no count), from the host's group field (LimeSurvey: the
    answer code's letter, ``A`` or ``B``), checked with the counts each list allows.

    Raises
    ------
    ValueError
        For a count without a group, a group other than 0 and 1, or a count above what
        its group's list allows, naming the column and row.
    """
    import pandas as pd

    if host == "limesurvey":
        letters = frame[report_col].astype("string").str.strip().str[0].str.upper()
        raw = letters.map({"A": 0.0, "B": 1.0})
        where = report_col
    else:
        names = [
            str(c) for c in frame.columns if _norm(str(c)).endswith(_norm(f"deniable{q.id}group"))
        ]
        found = f"{q.id}{GROUP_SUFFIX}" if host == "jspsych" else (names[0] if names else None)
        if found is None or found not in frame:
            raise ValueError(
                f"list experiment {q.id!r} has counts but no group column "
                f"(deniable_{q.id}_group) in this {host} export"
            )
        where = found
        raw = pd.to_numeric(frame[where], errors="coerce")
    items = len(q.items or ())
    bad = codes.notna() & (~raw.isin([0.0, 1.0]) | (codes > items + raw.fillna(0)))
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise ValueError(
            f"{where} row {row}: list experiment {q.id!r} needs group 0 (counts 0..{items}) "
            f"or 1 (counts 0..{items + 1}); got group {frame[where].iloc[row]!r} with "
            f"count {codes.iloc[row]:g}"
        )
    return raw.where(codes.notna()).astype("float64")


def _columns(
    host: str, qid: str, names: Any, normalised: dict[str, str]
) -> tuple[str | None, str | None]:
    """The report and digest columns of question ``qid`` in a host's export."""
    if host == "jspsych":
        return (qid, f"{qid}__digest") if qid in names else (None, None)
    if host == "otree":
        reports = [c for c in names if str(c).endswith(f".player.deniable_{qid}")]
        if not reports:
            return None, None
        prefix = reports[0][: -len(f"deniable_{qid}")]
        otree_digest = f"{prefix}deniable_{qid}_digest"
        return reports[0], otree_digest if otree_digest in names else None
    base = _norm(f"deniable{qid}")
    report = normalised.get(base) or normalised.get("js" + base)
    digest = (
        normalised.get(base + "digest")
        or normalised.get("js" + base + "digest")
        or normalised.get(base + "comment")  # LimeSurvey: the list's comment field
    )
    return report, digest


def _qualtrics(path: Path) -> pd.DataFrame:
    """A Qualtrics CSV: its names row, then the question-text row and (current format)
    the ImportId row, both dropped; ``__js_`` prefixes kept (matched loosely)."""
    import pandas as pd

    frame = pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[""])
    skip = 0
    for i in range(min(2, len(frame))):
        cells = [str(v) for v in frame.iloc[i] if isinstance(v, str)]
        if any(v.startswith('{"ImportId"') or v in _QUALTRICS_LABELS for v in cells):
            skip = i + 1
    return _one_column_per_field(frame.iloc[skip:].reset_index(drop=True))


#: The question-text row's labels of the columns every Qualtrics export has (the header
#: rows are found by these or by the ImportId row, in whatever order the columns come).
_QUALTRICS_LABELS = frozenset(
    {"Start Date", "End Date", "Response Type", "Response ID", "Recorded Date", "StartDate"}
)


def _one_column_per_field(frame: pd.DataFrame) -> pd.DataFrame:
    """Qualtrics' two engines store one embedded field under two names (the classic
    engine's ``deniable_x``, the simplified engine's ``__js_deniable_x``), and the
    generated ``.qsf`` declares both, so both are columns of every export, one of them
    empty. Each field becomes one column (the first name) holding whichever value a
    row has, so the reader takes the column that holds the value, not the first that
    exists.

    Raises
    ------
    ValueError
        For a row whose two names hold different values, naming both columns and the
        row.
    """
    names: dict[str, list[str]] = {}
    for column in frame.columns:
        key = _norm(str(column))
        field = key.removeprefix("js") if key.startswith("jsdeniable") else key
        names.setdefault(field, []).append(column)
    for key, columns in names.items():
        if len(columns) < 2 or not key.startswith("deniable"):
            continue
        merged = frame[columns[0]]
        for other in columns[1:]:
            clash = merged.notna() & frame[other].notna() & (merged != frame[other])
            if clash.any():
                row = int(np.flatnonzero(clash.to_numpy())[0])
                raise ValueError(
                    f"{columns[0]} and {other} hold different values in row {row} "
                    f"({merged.iloc[row]!r} and {frame[other].iloc[row]!r}): one embedded "
                    "field, two engines' names"
                )
            merged = merged.fillna(frame[other])
        frame = frame.drop(columns=columns[1:]).assign(**{columns[0]: merged})
    return frame


def _delimiter(path: Path) -> str:
    """``;`` where the header line has more semicolons than commas outside quotes (a
    LimeSurvey or Excel export in a locale whose decimal mark is the comma), else ``,``."""
    with path.open(encoding="utf-8-sig", errors="replace") as fh:
        header = re.sub(r'"[^"]*"', "", fh.readline())
    return ";" if header.count(";") > header.count(",") else ","


def _answer_codes_of(survey: Survey, qid: str, values: pd.Series, column: str) -> pd.Series:
    """LimeSurvey's answers as their codes: a "full answers" export writes each
    answer's text (the report's label, in the language answered) where the "answer
    codes" export writes ``A<report>`` (a list's ``A``/``B<count>``); both read.

    Raises
    ------
    ValueError
        For a value that is neither an answer code nor an answer's text, naming the
        column, the row and what is allowed.
    """
    from ._host_limesurvey import answer_codes

    languages = ["en", *sorted(survey.translations)]
    texts: dict[str, str] = {}
    for lang in languages:
        view = next(v for v in survey.respondent_view(lang)["questions"] if v["id"] == qid)
        texts |= {label: code for code, label in answer_codes(view)}
    codes = set(texts.values())
    given = values.astype("string").str.strip()
    coded = given.str.fullmatch(r"[A-Za-z]\d+").fillna(False).astype(bool)  # checked later
    mapped = given.where(coded, given.map(texts))
    bad = given.notna() & ~coded & mapped.isna()
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise ValueError(
            f"{column} row {row}: {given.iloc[row]!r} is neither an answer code "
            f"({', '.join(sorted(codes))}) nor an answer's text of {qid!r} "
            f"({', '.join(repr(t) for t in texts)}): export answer codes or full answers"
        )
    return mapped


def _responses_as_columns(trials: pd.DataFrame) -> pd.DataFrame:
    """jsPsych's survey plugins keep a trial's answers in one ``response`` field, an
    object by question name (``{"gender": "f", "age": "31"}``; a JSON string in the
    CSV export): each name becomes a column of its own (``response.<name>`` where the
    trials already have a column of that name), so ``--by gender`` and ``--formula``
    can name it. Other values of ``response`` are left as they are."""
    import pandas as pd

    if "response" not in trials:
        return trials

    def as_object(value: Any) -> dict[str, Any] | None:
        if isinstance(value, str) and value.startswith("{"):
            try:
                value = json.loads(value)
            except ValueError:
                return None
        return value if isinstance(value, dict) else None

    objects = trials["response"].map(as_object)
    if not objects.notna().any():
        return trials
    expanded = pd.DataFrame.from_records(
        [o if o is not None else {} for o in objects], index=trials.index
    )
    names = {c: f"response.{c}" if c in trials else str(c) for c in expanded.columns}
    return trials.join(expanded.rename(columns=names))


def _repeated_participants(host: str, frame: pd.DataFrame) -> pd.Series:
    """Rows whose participant id came before in the export (False where a host keeps
    none, or for jsPsych, whose trials are already one row per participant)."""
    import pandas as pd

    names = {"otree": "participant.code", "qualtrics": "ResponseId", "limesurvey": "id"}
    column = next(
        (c for c in frame.columns if host in names and str(c).endswith(names[host])), None
    )
    if column is None:
        return pd.Series(False, index=frame.index)
    ids = frame[column]
    return ids.notna() & ids.duplicated(keep="first")


def _jspsych(path: Path, survey: Survey) -> tuple[pd.DataFrame, dict[str, int]]:
    """jsPsych's trials, the plugin's pivoted to one row per participant: ``<q>`` (the
    report) and ``<q>__digest`` per question; the participant's other data (from its
    first trial) kept. Also, per question, the participants with more than one of its
    trials (a participant saved twice): only the first is kept, and the count is said."""
    import pandas as pd

    if path.suffix.lower() == ".json":
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, list):
            raise ValueError(f"{path.name}: a jsPsych JSON export is a list of trials")
        trials = pd.DataFrame.from_records([t for t in data if isinstance(t, dict)])
    else:
        trials = pd.read_csv(path, keep_default_na=False, na_values=[""])
    if "trial_type" not in trials:
        raise ValueError(f"{path.name}: no trial_type column (not a jsPsych export)")
    ours = trials[trials["trial_type"] == TRIAL_TYPE].copy()
    for name in ("question", "report", "digest"):
        if name not in ours:
            raise ValueError(f"{path.name}: the {TRIAL_TYPE} trials have no {name!r} field")
    who = next((c for c in _PARTICIPANT if c in trials), None)
    if who is None:  # one respondent per trial
        ours["_respondent"] = np.arange(len(ours))
        who = "_respondent"
    ours["digest"] = ours["digest"].astype("string")
    values = ["report", "digest", *(["group"] if "group" in ours else [])]
    per = ours.groupby([who, "question"]).size()
    collapsed = {str(q): int(n) for q, n in (per > 1).groupby(level="question").sum().items()}
    wide = ours.pivot_table(index=who, columns="question", values=values, aggfunc="first")
    frame = pd.DataFrame(index=wide.index)
    ids = {q.id for q in survey.questions}
    for qid in sorted(set(ours["question"].astype(str)) & ids):
        frame[qid] = wide[("report", qid)]
        frame[f"{qid}__digest"] = wide.get(("digest", qid), None)
        if ("group", qid) in wide:
            frame[f"{qid}{GROUP_SUFFIX}"] = wide[("group", qid)]
    others = _responses_as_columns(trials[trials["trial_type"] != TRIAL_TYPE])
    if who in others and len(others):
        extra = others.groupby(who).first()
        extra = extra.drop(columns=[c for c in extra if c in ("trial_type", "trial_index")])
        frame = frame.join(extra, how="left")
    return frame.reset_index(), collapsed
