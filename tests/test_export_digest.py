"""Every export carries, beside each row's version, the digest of what that version's
reports mean (``designs_digest``), and an export read with a survey file whose version
means something else is refused naming the version; a reworded question is not a
different meaning."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from deniable.cli import app
from deniable.collection.exports import read_export
from deniable.collection.exports._export import (
    DIGEST_COLUMN,
    SURVEY_COLUMN,
    export_bytes,
    sidecar_path,
    survey_file,
)
from deniable.collection.model import designs_digest, load_survey
from deniable.collection.study import campus_store

CAMPUS = Path(__file__).resolve().parents[1] / "examples" / "campus.yaml"


@pytest.fixture(scope="module")
def campus(tmp_path_factory):
    """Two waves (versions 1 and 2) of the campus study, with its two arms, released;
    each export format written with its survey file beside it."""
    made = campus_store(waves=2, responses=300, release=True, path=CAMPUS)
    folder = tmp_path_factory.mktemp("exports")
    definition = survey_file(made.store, "campus")
    files = {}
    for fmt in ("csv", "wide", "parquet", "sav", "dta"):
        content, _, name = export_bytes(made.store, "campus", fmt)
        (folder / name).write_bytes(content)
        sidecar_path(folder / name).write_text(json.dumps(definition))
        files[fmt] = folder / name
    versions = made.store.versions("campus")
    yield files, definition, versions
    made.store.close()


def _frame(path: Path) -> pd.DataFrame:
    if path.suffix == ".parquet":
        return pd.read_parquet(path)
    if path.suffix in (".sav", ".dta"):
        import pyreadstat

        return (pyreadstat.read_sav if path.suffix == ".sav" else pyreadstat.read_dta)(str(path))[0]
    return pd.read_csv(io.StringIO(path.read_text()), dtype={DIGEST_COLUMN: str})


def test_every_export_carries_each_versions_designs_digest(campus):
    files, _, versions = campus
    expected = {v.version: designs_digest(v) for v in versions}
    assert len(set(expected.values())) == 1  # a wave asks the same questions the same way
    for fmt, path in files.items():
        frame = _frame(path)
        assert list(frame.columns[:1]) == [SURVEY_COLUMN], fmt
        at = list(frame.columns).index("version")
        assert frame.columns[at + 1] == DIGEST_COLUMN, fmt
        pairs = set(zip(frame["version"].astype(int), frame[DIGEST_COLUMN], strict=True))
        assert pairs == set(expected.items()), fmt


def test_the_digest_covers_every_arms_design_and_not_the_wording():
    survey = load_survey(CAMPUS)
    data = json.loads(survey.canonical_json())
    reworded = copy.deepcopy(data)
    reworded["questions"][1]["text"] = "Did you cheat in an exam in the last twelve months?"
    assert designs_digest(load_survey(reworded)) == designs_digest(survey)
    in_arm = copy.deepcopy(data)  # the control arm asks cheat by forced response instead
    in_arm["arms"]["dq"]["designs"]["cheat"] = {
        "name": "forced-response", "params": {"p_yes": 0.2, "p_no": 0.2}
    }  # fmt: skip
    assert designs_digest(load_survey(in_arm)) != designs_digest(survey)
    own = copy.deepcopy(data)
    cheat = next(q for q in own["questions"] if q["id"] == "cheat")
    cheat["design"]["params"]["p_yes"] = 0.3
    assert designs_digest(load_survey(own)) != designs_digest(survey)


# (a Parquet export carries its survey file inside, so it cannot be paired with another)
@pytest.mark.parametrize("fmt", ["csv", "wide", "sav", "dta"])
def test_a_survey_file_edited_after_the_export_is_refused_naming_the_version(campus, fmt, tmp_path):
    files, definition, _ = campus
    path = tmp_path / files[fmt].name
    path.write_bytes(files[fmt].read_bytes())
    edited = copy.deepcopy(definition)
    second = edited["versions"][1]
    cheat = next(q for q in second["questions"] if q["id"] == "cheat")
    cheat["design"]["params"] = {"p_yes": 0.3, "p_no": 0.2}
    sidecar_path(path).write_text(json.dumps(edited))
    with pytest.raises(ValueError, match="reports of version 2 were drawn under other designs"):
        read_export(path)
    out = CliRunner().invoke(app, ["analyze", "export", str(path), "--question", "cheat"])
    assert out.exit_code == 2
    assert "version 2 were drawn under other designs" in " ".join(out.output.split())
    # reworded, the same meaning: read, and the same estimate as with its own file
    reworded = copy.deepcopy(definition)
    reworded["versions"][1]["questions"][1]["text"] = "Cheated in an exam this year?"
    sidecar_path(path).write_text(json.dumps(reworded))
    ours = CliRunner().invoke(app, ["analyze", "arms", str(path), "--json"])
    sidecar_path(path).write_text(json.dumps(definition))
    theirs = CliRunner().invoke(app, ["analyze", "arms", str(path), "--json"])
    assert ours.exit_code == theirs.exit_code == 0, ours.output
    assert json.loads(ours.stdout) == json.loads(theirs.stdout)
