"""The files people have, and the inputs that used to fail (issue 63): each gives the
right estimate, or a clear message with exit 2 and no traceback."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from deniable import Warner, estimate
from deniable.cli import app

DESIGN = "warner:p=0.8"


def _reports(n: int = 1000, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    sex = np.where(rng.random(n) < 0.5, "männlich", "weiblich")
    truth = rng.random(n) < np.where(sex == "männlich", 0.3, 0.15)
    return sex, Warner(p=0.8).randomize(truth, rng)


def _run(*args: str) -> tuple[int, str, object]:
    done = CliRunner().invoke(app, list(args))
    return done.exit_code, done.output, done.exception


def _estimate_of(output: str) -> list[float]:
    return json.loads(output)["estimate"]


@pytest.mark.parametrize("suffix", [".xlsx", ".sav", ".dta", ".tsv"])
def test_excel_spss_stata_and_tab_files_give_the_librarys_estimate(tmp_path, suffix):
    sex, reports = _reports()
    frame = pd.DataFrame({"sex": sex, "report": reports})
    path = tmp_path / f"r{suffix}"
    if suffix == ".xlsx":
        frame.to_excel(path, index=False)
    elif suffix == ".sav":
        import pyreadstat

        pyreadstat.write_sav(frame, str(path))
    elif suffix == ".dta":
        frame.to_stata(path, write_index=False)
    else:
        frame.to_csv(path, sep="\t", index=False)
    code, out, exc = _run("analyze", str(path), "--design", DESIGN, "--json")
    assert code == 0, (out, exc)
    np.testing.assert_allclose(_estimate_of(out), estimate(Warner(p=0.8), reports).estimate)


@pytest.mark.parametrize("given", [None, "latin-1"])
def test_a_latin1_csv_from_german_excel_reads_by_subgroup(tmp_path, given):
    """Excel's "CSV" in Germany: Windows-1252, ";" would be its separator in a German
    locale, here "," as the file says. Detected (with a note), or given."""
    sex, reports = _reports()
    path = tmp_path / "umfrage.csv"
    pd.DataFrame({"geschlecht": sex, "report": reports}).to_csv(
        path, index=False, encoding="cp1252"
    )
    args = ["analyze", str(path), "--design", DESIGN, "--by", "geschlecht", "--json"]
    code, out, exc = _run(*args, *(["--encoding", given] if given else []))
    assert code == 0, (out, exc)
    shown = json.loads(out[out.index("{") :])
    assert sorted(shown["labels"]) == ["männlich", "weiblich"]
    for label, got in zip(shown["labels"], shown["estimate"], strict=True):
        want = estimate(Warner(p=0.8), reports[sex == label]).estimate[1]
        assert got == pytest.approx(want, abs=1e-12)
    if given is None:
        assert "read as cp1252" in " ".join(out.split())


def test_an_encoding_that_cannot_decode_the_file_is_named(tmp_path):
    path = tmp_path / "r.csv"
    path.write_bytes("report,sex\n1,m\xe4nnlich\n".encode("cp1252"))
    code, out, exc = _run("analyze", str(path), "--design", DESIGN, "--encoding", "utf-8")
    assert code == 2 and (exc is None or isinstance(exc, SystemExit))
    assert "is not utf-8: byte 0xe4 at offset 14" in " ".join(out.split())
    code, out, _ = _run("analyze", str(path), "--design", DESIGN, "--encoding", "klingon")
    assert code == 2 and "not an encoding Python knows" in out


def test_blank_cells_of_a_one_column_csv_are_counted_as_missing(tmp_path):
    rng = np.random.default_rng(5)
    codes = rng.integers(0, 2, 1000).astype(object)
    blank = rng.choice(1000, 153, replace=False)
    codes[blank] = None
    path = tmp_path / "one.csv"
    pd.Series(codes, name="report").to_csv(path, index=False, na_rep="")
    code, out, _ = _run("analyze", str(path), "--design", DESIGN)
    assert code == 0, out
    assert "n = 847 reports (153 missing)" in " ".join(out.split())


def test_sizes_are_bounded_by_name_before_anything_is_allocated(tmp_path):
    code, out, exc = _run("plan", "--design", "kary-rr:k=1000000000000,epsilon=1")
    assert code == 2 and not isinstance(exc, MemoryError)
    assert "k must be an integer in 2..4,096" in " ".join(out.split())
    code, out, _ = _run("plan", "--design", "olh:k=100,epsilon=1")
    assert code == 2 and "'olh' is a frequency oracle" in " ".join(out.split())
    pop = tmp_path / "pop.csv"
    pop.write_text("income\n" + ">50K\n<=50K\n" * 10_000)  # 20,000 reports of k bits
    for k, words in [(10**12, "k at most 10,000,000"), (10**6, "randomize at most")]:
        code, out, exc = _run("simulate", str(pop), "--column", "income", "--design",
                              f"oue:k={k},epsilon=1", "-o", str(tmp_path / "r.csv"))  # fmt: skip
        assert code == 2 and (exc is None or isinstance(exc, SystemExit)), out
        assert words in " ".join(out.split()), out


def test_a_file_over_the_limit_is_refused_naming_the_limit(tmp_path, monkeypatch):
    from deniable.tables import _files

    monkeypatch.setattr(_files, "MAX_TABLE_BYTES", 100)
    path = tmp_path / "big.csv"
    path.write_text("report\n" + "1\n" * 200)
    code, out, _ = _run("analyze", str(path), "--design", DESIGN)
    assert code == 2 and "over the 100 bytes" in " ".join(out.split())


def test_a_misspelt_key_is_named_by_its_question_and_line_with_the_field_it_meant(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(
        "format: 1\nid: s\nversion: 1\ntitle: S\nprivacy_budget: 2\nquestions:\n"
        "  - id: drugs\n    text: Q?\n    desing: {name: warner, params: {p: 0.75}}\n"
    )
    code, out, _ = _run("survey", "check", str(path))
    shown = " ".join(out.split())
    assert code == 2
    assert (
        "questions.0.desing: 'desing' is not a field of a question; did you mean 'design'?"
        " (question 'drugs', line 9)"
    ) in shown
    assert "questions.0.design: Field required (question 'drugs', line 7)" in shown


def test_deniables_export_of_one_survey_read_with_anothers_file_is_refused(tmp_path):
    """A wide export of survey 'walk' read as a host's export of the campus survey (the
    column 'cheat' in both): exit 2 naming both surveys, not a wrong estimate."""
    from pathlib import Path

    path = tmp_path / "walk.wide.csv"
    path.write_text("survey,response_id,version,release,cheat\nwalk,a,1,1,1\nwalk,b,1,1,0\n")
    campus = Path(__file__).resolve().parents[1] / "examples" / "campus.yaml"
    code, out, _ = _run("analyze", str(path), "--survey", str(campus))
    shown = " ".join(out.split())
    assert code == 2, out
    assert "is deniable's export of survey 'walk', not of the survey file's 'campus'" in shown
