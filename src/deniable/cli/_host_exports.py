"""``deniable analyze EXPORT --survey SURVEY_FILE``: a host's export (jsPsych, oTree,
Qualtrics, LimeSurvey; :mod:`deniable.collection.exports`) read as deniable's own export."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    pass


if TYPE_CHECKING:
    from ..collection.exports import HostExport
from ._common import console, emit_json, err, fail

__all__ = ["host_estimates", "host_wide_export"]


def host_wide_export(
    path: Path, survey_file: Path, host: str | None, bundle: Path | None, as_json: bool
) -> tuple[Path, HostExport]:
    """A host's export read as deniable's wide export (:mod:`deniable.collection.exports`),
    written with its survey file to a temporary folder (or ``bundle``, with the R
    script); the refused rows said on standard error. Returns the wide CSV's path and
    the export as read."""
    import tempfile

    from ..collection.exports import r_script, read_host_export, sidecar_path
    from ..collection.model import load_survey
    from ..errors import SurveyError

    try:
        survey = load_survey(survey_file)
    except (OSError, SurveyError) as exc:
        raise fail(f"--survey {survey_file}: {exc}") from None
    try:
        read = read_host_export(path, survey, host)
    except (OSError, ValueError) as exc:
        raise fail(str(exc)) from None
    folder = bundle or Path(tempfile.mkdtemp(prefix="deniable-host-"))
    folder.mkdir(parents=True, exist_ok=True)
    wide = folder / f"{survey.id}.wide.csv"
    read.frame.to_csv(wide, index=False)
    sidecar_path(wide).write_text(
        json.dumps({"survey": survey.id, "versions": [json.loads(survey.canonical_json())]}),
        encoding="utf-8",
    )
    if bundle is not None:
        (folder / f"{survey.id}.R").write_text(r_script(survey, wide.name), encoding="utf-8")
    for qid, n in read.refused.items():
        if n:
            err.print(f"{qid}: {n} row(s) refused: their design digest is not this survey file's")
    for qid, n in read.missing_digest.items():
        if n:
            err.print(f"[yellow]{qid}: {n} row(s) carry no design digest (not checked)[/]")
    for qid, n in read.duplicates.items():
        if n:
            kept = "the first report of each kept" if read.host == "jspsych" else "each row kept"
            err.print(f"[yellow]{qid}: {n} participant(s) sent it more than once ({kept})[/]")
    if not as_json:
        err.print(f"{read.host} export: {read.rows} row(s) read")
    return wide, read


def host_estimates(path: Path, read: HostExport, level: float, as_json: bool) -> None:
    """Every randomized question of a host's export (read to ``path``): the one JSON
    shape of an estimate per question, beside the rows refused; a list experiment's
    ``list`` entry (the difference in means, :mod:`deniable.collection.study._list_study`)."""
    import numpy as np
    from rich.table import Table

    from ..collection.exports import read_export
    from ..collection.study import has_variants, list_item
    from ..estimation import estimate

    frame, (survey,) = read_export(path)
    out: list[dict[str, Any]] = []
    for q in survey.questions:
        counts = {
            "refused": read.refused.get(q.id, 0),
            "missing_digest": read.missing_digest.get(q.id, 0),
            "duplicates": read.duplicates.get(q.id, 0),
        }
        given = q.id in frame and bool(frame[q.id].notna().any())
        if not given and counts["refused"] and (q.is_list or not q.is_direct):  # said
            note = f"every row refused ({counts['refused']}): another design's digest"
            out.append({"question": q.id} | counts | {"n": 0, "note": note})
            continue
        if q.is_list and given:
            out.append({"question": q.id} | counts | list_item(frame, q, level))
            continue
        if q.is_direct or not given or has_variants(survey, q.id):
            continue
        codes = frame[q.id].dropna().to_numpy(np.int64)
        est = estimate(q.mechanism, codes)
        out.append({"question": q.id} | counts | est.to_dict(level))
    if not any("note" not in item for item in out):
        refused = "; ".join(f"{item['question']}: {item['note']}" for item in out)
        raise fail(
            "no randomized question or list experiment of the survey file has reports in "
            "this export" + (f" ({refused})" if refused else "")
        )
    if as_json:
        emit_json({"host": read.host, "rows": read.rows, "questions": out})
        return
    table = Table(title=f"{survey.title} ({read.host} export)", title_justify="left")
    for col in ("question", "answer", "n", "estimate", "SE", f"{level:.0%} CI", "refused"):
        table.add_column(col, justify="left" if col in ("question", "answer") else "right")
    for item in out:
        if "note" in item:  # every row refused
            table.add_row(item["question"], "", "0", item["note"], "", "", str(item["refused"]))
            continue
        if "list" in item:  # a list experiment: the difference in means
            got = item["list"]
            if "estimate" not in got:
                table.add_row(item["question"], "yes (list)", "", got["note"], "", "", "")
                continue
            table.add_row(
                item["question"], f"yes (list of {got['items']})",
                f"{got['n_treated'] + got['n_control']:,}", f"{got['estimate']:.4f}",
                f"{got['std_error']:.4f}",
                f"{got['interval']['low']:.4f} - {got['interval']['high']:.4f}",
                str(item["refused"]),
            )  # fmt: skip
            continue
        for j, label in enumerate(item["labels"]):
            table.add_row(
                item["question"] if j == 0 else "",
                label,
                f"{item['n']:,}",
                f"{item['estimate'][j]:.4f}",
                f"{item['std_error'][j]:.4f}",
                f"{item['interval']['low'][j]:.4f} - {item['interval']['high'][j]:.4f}",
                str(item["refused"]) if j == 0 else "",
            )
    console.print(table)
    for item in out:  # what a list experiment could not give (a pilot's few rows)
        for note in item.get("list", {}).get("warnings") or []:
            err.print(f"{item['question']}: {note}")
