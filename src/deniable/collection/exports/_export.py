"""Exports of a survey's reports that go back into ``deniable analyze``.

Formats (:data:`EXPORT_FORMATS`, declared once in :mod:`._formats`; each one's writer is
in :data:`WRITERS`):

Every report export begins with the column ``survey``, the survey's id, so that an export
is never read with another survey's file (:func:`read_export` and
:func:`~deniable.collection.exports.read_host_export` refuse the pairing, naming both),
and carries beside each row's ``version`` its ``designs_digest``
(:func:`~deniable.collection.model.designs_digest`: what that version's reports mean), so
that a survey file whose version was edited after the export is refused too, naming the
version.

- ``csv``: one row per (response, question): ``survey, response_id, version,
  designs_digest, question_id, report, report_label, release, arm, group``
  (``store.released.export``).
- ``wide``: CSV, one row per response: ``survey, response_id, version,
  designs_digest, release``,
  ``arm`` (the arm's name, for a survey with arms), one column per question id holding
  its report code (empty where that response's version does not ask it) and
  ``ID__group`` (0 or 1) for each group-design question ``ID``.
- ``parquet``: the wide table; the survey file rides in the Parquet metadata
  (key ``deniable.survey``).
- ``sav`` (SPSS) and ``dta`` (Stata): the wide table through ``pyreadstat``, the
  question text as each variable's label (a randomized question's begins "Randomized
  report, not the answer:"; Stata keeps 80 characters) and the report labels as value labels.
- ``survey``: the survey file (JSON, every published version).

Every report export is read back by ``deniable analyze FILE --question ID``, which
takes each question's design from the survey file: from the Parquet metadata, or
from the sidecar ``FILE.survey.json`` that ``deniable survey export`` writes beside
the file (the ``survey`` download). No estimate is in any export: estimates are
released only through the results (see ``min_release``). No export carries a time:
``release`` numbers the version's releases; the response ids are drawn afresh and the
rows shuffled in every export (``store.released.export``).
"""

from __future__ import annotations

import io
import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..model import MIN_RELEASE, Survey, designs_digest, load_survey
from ._formats import FORMATS, SERVER_FORMATS, export_format

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from ..store import Store

__all__ = [
    "DIGEST_COLUMN",
    "EXPORT_FORMATS",
    "GROUP_SUFFIX",
    "MEDIA_TYPES",
    "PARQUET_KEY",
    "SURVEY_COLUMN",
    "WRITERS",
    "export_bytes",
    "export_definition",
    "not_exported",
    "read_export",
    "sidecar_path",
    "survey_file",
    "wide_frame",
]

#: The formats the server writes (:data:`._formats.FORMATS`).
EXPORT_FORMATS = SERVER_FORMATS
#: Media type of each format.
MEDIA_TYPES = {f.name: f.media_type for f in FORMATS if f.server}
#: Suffix of a group-design question's group column in the wide exports.
GROUP_SUFFIX = "__group"
#: The column of every report export that names its survey.
SURVEY_COLUMN = "survey"
#: The column of each row's version's :func:`~deniable.collection.model.designs_digest`.
DIGEST_COLUMN = "designs_digest"
#: Parquet metadata key holding the survey file.
PARQUET_KEY = b"deniable.survey"
_SUFFIX = {f.name: f.suffix for f in FORMATS if f.server}


def survey_file(store: Store, survey_id: str) -> dict[str, Any]:
    """``{"survey": id, "versions": [definition, ...], "waiting": n, "withheld": m,
    "closed": bool}``: every published version, and the responses not in an export made
    now: ``waiting`` for a crowd of ``min_release`` in their cell, and ``withheld`` for
    good at a close (their cell never reached it).

    Parameters
    ----------
    store : Store
    survey_id : str

    Returns
    -------
    dict
        JSON-ready: what ``deniable survey export`` writes beside an export.

    Examples
    --------
    >>> from deniable.collection.study import campus_store
    >>> campus = campus_store()  # the campus survey, 600 simulated responses
    >>> store, survey = campus.store, campus.survey
    >>> sorted(survey_file(store, "campus"))
    ['closed', 'survey', 'versions', 'waiting', 'withheld']
    """
    versions = store.versions(survey_id)
    return {
        "survey": survey_id,
        "versions": [json.loads(s.canonical_json()) for s in versions],
        "waiting": sum(store.waiting(survey_id).values()),
        "withheld": sum(v["withheld"] for v in store.released.withheld(survey_id).values()),
        "closed": store.is_closed(survey_id),
    }


def not_exported(definition: dict[str, Any]) -> str | None:
    """Why responses are missing from an export, from its survey file
    (:func:`survey_file`): ``"3 responses were withheld at the close, not exported:
    fewer than min_release = 30 in their cell, ..."``, or ``None`` when none are."""
    waiting = int(definition.get("waiting") or 0)
    withheld = int(definition.get("withheld") or 0)
    least = min(int(v.get("min_release", MIN_RELEASE)) for v in definition["versions"])
    said = []
    if withheld:
        were = "response was" if withheld == 1 else "responses were"
        said.append(f"{withheld} {were} withheld at the close, not exported: fewer than "
                    f"min_release = {least} in their cell, they are never released")  # fmt: skip
    if waiting:
        wait = "response waits" if waiting == 1 else "responses wait"
        said.append(f"{waiting} {wait} for a release, not exported yet: a release adds at "
                    f"least min_release = {least} to each cell it touches")  # fmt: skip
    return "; ".join(said) or None


def wide_frame(store: Store, survey_id: str) -> pd.DataFrame:
    """One row per response (see the module docstring); codes as nullable ``Int64``."""
    versions = store.versions(survey_id)
    return _tagged(_widen(store.released.export(survey_id), versions), survey_id, versions)


def _tagged(frame: pd.DataFrame, survey_id: str, versions: list[Survey]) -> pd.DataFrame:
    """``frame`` with the survey's id as its first column, ``survey``, and each row's
    version's designs digest after ``version``: an export names the survey and the
    designs it belongs to, so that it is never read with another survey's file."""
    out = frame.copy()
    out.insert(0, SURVEY_COLUMN, survey_id)
    digests = {v.version: designs_digest(v) for v in versions}
    at = list(out.columns).index("version") + 1
    out.insert(at, DIGEST_COLUMN, out["version"].map(digests).astype("string"))
    return out


def _widen(long: pd.DataFrame, versions: list[Survey]) -> pd.DataFrame:
    """The wide table of a long export (one row per response, ordered by its id): each
    report put in its response's row and its question's column at once (integer codes,
    no pivot of string keys and no loop per response)."""
    questions: list[str] = []
    grouped: list[str] = []
    for version in versions:
        for q in version.questions:
            if q.id not in questions:
                questions.append(q.id)
            if len(q.groups) > 1 and q.id not in grouped:
                grouped.append(q.id)
    row, ids = pd.factorize(long["response_id"], sort=True)
    first = np.unique(row, return_index=True)[1]  # each response's first report
    with_arms = any(v.arms for v in versions)
    meta = ["version", *(["release"] if "release" in long else []), *(["arm"] if with_arms else [])]
    frame = long.iloc[first][meta].reset_index(drop=True)
    frame.insert(0, "response_id", pd.Series(ids, dtype=long["response_id"].dtype))
    asked = pd.Index(questions).get_indexer(pd.Index(long["question_id"]))
    _spread(frame, row, asked, long["report"].to_numpy(), questions, "")
    if grouped and "group" in long:
        _spread(frame, row, pd.Index(grouped).get_indexer(pd.Index(long["question_id"])),
                long["group"].to_numpy(), grouped, GROUP_SUFFIX)  # fmt: skip
    return frame


def _spread(
    frame: pd.DataFrame,
    row: NDArray[np.intp],
    column: NDArray[np.intp],
    values: NDArray[Any],
    names: list[str],
    suffix: str,
) -> None:
    """Columns ``name + suffix`` (nullable ``Int64``) into ``frame``: ``values[i]`` at
    row ``row[i]`` of column ``column[i]`` (-1: none of ``names``), missing elsewhere."""
    data = np.zeros((len(frame), len(names)), dtype=np.int64)
    missing = np.ones(data.shape, dtype=bool)
    ok = column >= 0
    if not np.issubdtype(values.dtype, np.integer):  # a file's floats (.sav, .dta)
        as_float = np.asarray(values, dtype=np.float64)
        ok &= ~np.isnan(as_float)
        if (as_float[ok] != np.round(as_float[ok])).any():
            raise ValueError("report: every code of a long export is a whole number")
        values = np.where(ok, as_float, 0.0).astype(np.int64)
    data[row[ok], column[ok]] = values[ok]
    missing[row[ok], column[ok]] = False
    for j, name in enumerate(names):
        frame[name + suffix] = pd.arrays.IntegerArray(data[:, j].copy(), missing[:, j].copy())


def export_bytes(store: Store, survey_id: str, fmt: str) -> tuple[bytes, str, str]:
    """``(content, media type, file name)`` of one export.

    Parameters
    ----------
    store : Store
    survey_id : str
    fmt : str
        One of :data:`EXPORT_FORMATS` (``csv``, ``wide``, ``parquet``, ``sav``, ``dta``,
        ``survey``).

    Returns
    -------
    (bytes, str, str)
        The file's content, its media type and its name (``ID.FORMAT``).

    Raises
    ------
    ValueError
        For a format not in :data:`EXPORT_FORMATS`.
    SurveyNotFoundError
        For an unknown survey.

    Examples
    --------
    >>> from deniable.collection.study import campus_store
    >>> campus = campus_store()  # the campus survey, 600 simulated responses
    >>> store, survey = campus.store, campus.survey
    >>> content, media_type, name = export_bytes(store, "campus", "wide")
    >>> media_type, name
    ('text/csv', 'campus.wide.csv')
    """
    spec = export_format(fmt)
    if fmt not in WRITERS:
        raise ValueError(f"format must be one of {', '.join(WRITERS)}, got {fmt!r}")
    store.survey(survey_id)
    return WRITERS[fmt](store, survey_id), spec.media_type, survey_id + spec.suffix


def _parquet(store: Store, survey_id: str) -> bytes:
    """The wide table with the survey file in the Parquet metadata."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(wide_frame(store, survey_id), preserve_index=False)
    meta = dict(table.schema.metadata or {})
    meta[PARQUET_KEY] = json.dumps(survey_file(store, survey_id)).encode()
    buf = io.BytesIO()
    pq.write_table(table.replace_schema_metadata(meta), buf)
    return buf.getvalue()


def _readstat(fmt: str) -> Callable[[Store, str], bytes]:
    """The writer of SPSS (``sav``) or Stata (``dta``) files through ``pyreadstat``."""
    return lambda store, survey_id: _readstat_bytes(store, survey_id, fmt)


def _readstat_bytes(store: Store, survey_id: str, fmt: str) -> bytes:
    import pyreadstat

    frame = wide_frame(store, survey_id)
    latest = store.survey(survey_id)
    labels: dict[str, str] = {
        "response_id": "random response id",
        SURVEY_COLUMN: "the survey's id",
        "version": "survey version",
        DIGEST_COLUMN: "digest of what the version's reports mean (its designs)",
        "release": "number of the version's release that brought the response",
        "arm": "arm drawn at random on the device",
    }
    values: dict[str, dict[int | float, str]] = {}
    for version in store.versions(survey_id):
        for q in version.questions:
            if len(q.groups) > 1:
                labels[q.id + GROUP_SUFFIX] = f"group drawn at random on the device for {q.id}"
                values[q.id + GROUP_SUFFIX] = {0: "group 0", 1: "group 1"}
            # a randomized question's codes are reports, not answers: the label says so
            kind = "" if q.is_direct else "Randomized report, not the answer: "
            if q.release_channel is not None:  # post-randomized by the server
                kind = f"Post-randomized ({q.release_channel.spec}), not the answer: "
            labels[q.id] = (kind + q.text)[: 80 if fmt == "dta" else 250]  # Stata: 80
            values[q.id] = dict(enumerate(q.report_labels))
    out = frame.copy()
    for qid in values:
        out[qid] = out[qid].astype("float64")  # missing as system-missing
    column_labels: dict[str, str | None] = {c: labels.get(c, c) for c in out.columns}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"export.{fmt}"
        writer = pyreadstat.write_sav if fmt == "sav" else pyreadstat.write_dta
        writer(
            out,
            str(path),
            file_label=latest.title[:80],
            column_labels=column_labels,
            variable_value_labels=values,
        )
        return path.read_bytes()


def sidecar_path(path: Path) -> Path:
    """The survey file beside an export: ``FILE.survey.json`` (the export's name with
    its format suffix removed).

    Parameters
    ----------
    path : pathlib.Path
        An export file.

    Returns
    -------
    pathlib.Path

    Examples
    --------
    >>> from pathlib import Path
    >>> from deniable.collection.exports import sidecar_path
    >>> sidecar_path(Path("out/campus.wide.csv")).as_posix()
    'out/campus.survey.json'
    """
    stem = path.name
    for suffix in sorted(_SUFFIX.values(), key=len, reverse=True):
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    return path.with_name(stem + ".survey.json")


def read_export(path: Path) -> tuple[pd.DataFrame, list[Survey]]:
    """A report export (any format) and the survey versions that describe it.

    Returns the wide table (one row per response, a column per question; a ``csv``
    export is pivoted to it) and the versions, oldest first.

    Parameters
    ----------
    path : pathlib.Path
        An export of any format, with its survey file beside it (:func:`sidecar_path`).

    Returns
    -------
    (pandas.DataFrame, list of Survey)
        The wide table and the versions.

    Raises
    ------
    FileNotFoundError
        If the file, or the sidecar survey file it needs, is missing.

    Examples
    --------
    >>> from deniable.collection.study import campus_store
    >>> campus = campus_store()  # the campus survey, 600 simulated responses
    >>> store, survey, folder = campus.store, campus.survey, campus.folder
    >>> import json
    >>> content, _, name = export_bytes(store, "campus", "wide")
    >>> _ = (folder / name).write_bytes(content)
    >>> _ = sidecar_path(folder / name).write_text(json.dumps(survey_file(store, "campus")))
    >>> table, versions = read_export(folder / name)
    >>> len(versions), {"faculty", "cheat"} <= set(table.columns)
    (1, True)
    """
    suffix = path.suffix.lower()
    if suffix in (".parquet", ".pq"):
        import pyarrow.parquet as pq

        frame = pq.read_table(path).to_pandas()
    elif suffix in (".sav", ".dta"):
        import pyreadstat

        reader = pyreadstat.read_sav if suffix == ".sav" else pyreadstat.read_dta
        frame, _ = reader(str(path))
    else:
        from ...tables.frames import read_table_file  # any common encoding (Excel's too)

        frame = read_table_file(path, keep_default_na=False, na_values=[""]).frame
        if "arm" in frame and frame["arm"].isna().all():
            frame = frame.drop(columns="arm")  # a survey without arms
    definition = export_definition(path)
    versions = sorted((load_survey(d) for d in definition["versions"]), key=lambda s: s.version)
    _same_survey(frame, str(definition.get("survey", versions[-1].id)), path.name)
    _same_designs(frame, versions, path.name)
    if "question_id" in frame.columns:  # the long export
        frame = _widen(frame, versions)
    return frame, versions


def export_definition(path: Path) -> dict[str, Any]:
    """The survey file of an export (:func:`survey_file`'s shape): from the Parquet
    metadata, else the sidecar ``FILE.survey.json``.

    Raises
    ------
    FileNotFoundError
        When neither holds it.
    """
    if path.suffix.lower() in (".parquet", ".pq"):
        import pyarrow.parquet as pq

        raw = (pq.read_schema(path).metadata or {}).get(PARQUET_KEY)
        if raw:
            found: dict[str, Any] = json.loads(raw)
            return found
    side = sidecar_path(path)
    if not side.exists():
        raise FileNotFoundError(
            f"{side} not found: the survey file that describes {path.name} (download "
            "it with the export, or use 'deniable survey export', which writes it)"
        )
    found = json.loads(side.read_text(encoding="utf-8"))
    return found


def _same_survey(frame: pd.DataFrame, survey_id: str, name: str) -> None:
    """Refuse an export whose ``survey`` column names another survey than its survey
    file (an export moved beside another's ``.survey.json``)."""
    if SURVEY_COLUMN not in frame:
        return  # an export written before the column
    found = sorted({str(v) for v in frame[SURVEY_COLUMN].dropna().unique()})
    if found and found != [survey_id]:
        raise ValueError(
            f"{name} is an export of survey {', '.join(map(repr, found))}, but its survey "
            f"file describes survey {survey_id!r}: pair the export with its own survey file"
        )


def _same_designs(frame: pd.DataFrame, versions: list[Survey], name: str) -> None:
    """Refuse an export whose rows of a version were drawn under other designs than the
    survey file's version (a survey file edited after the export), naming the version."""
    if DIGEST_COLUMN not in frame or "version" not in frame:
        return  # an export written before the column
    ours = {v.version: designs_digest(v) for v in versions}
    pairs = frame[["version", DIGEST_COLUMN]].dropna().drop_duplicates()
    for version, digest in zip(pairs["version"], pairs[DIGEST_COLUMN], strict=True):
        expected = ours.get(int(version))
        if expected is not None and str(digest) != expected:
            raise ValueError(
                f"{name}: the reports of version {int(version)} were drawn under other "
                f"designs than the survey file's version {int(version)} (designs digest "
                f"{digest}, the survey file's {expected}): the survey file was edited after "
                "the export, or is another survey's; pair the export with the survey file "
                "exported with it"
            )


#: Each server format's writer, ``(store, survey_id) -> bytes``.
WRITERS: dict[str, Callable[[Store, str], bytes]] = {
    "csv": lambda store, survey_id: (
        _tagged(store.released.export(survey_id), survey_id, store.versions(survey_id))
        .to_csv(index=False)
        .encode()
    ),
    "wide": lambda store, survey_id: wide_frame(store, survey_id).to_csv(index=False).encode(),
    "parquet": _parquet,
    "sav": _readstat("sav"),
    "dta": _readstat("dta"),
    "survey": lambda store, survey_id: json.dumps(survey_file(store, survey_id), indent=1).encode(),
}
