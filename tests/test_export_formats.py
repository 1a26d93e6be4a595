"""The export formats are declared once (``collection/exports/_formats.py``): every list
of them (the server's writers and its ``?format=`` values, the dashboard's buttons, the
command line's ``--format``, the file names and the survey file beside them) comes
from that registry, and a format missing from it, or a registry entry missing its
writer, fails here with its name."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from deniable.cli import app
from deniable.collection.exports._export import EXPORT_FORMATS, MEDIA_TYPES, WRITERS, sidecar_path
from deniable.collection.exports._formats import CLI_FORMATS, FORMATS, export_format

SERVER = [f for f in FORMATS if f.server]


def test_every_server_format_has_a_writer_and_every_writer_an_entry() -> None:
    declared, written = {f.name for f in SERVER}, set(WRITERS)
    assert not declared - written, (
        f"formats without a writer in _export.WRITERS: {declared - written}"
    )
    assert not written - declared, (
        f"writers without an entry in _formats.FORMATS: {written - declared}"
    )
    assert tuple(f.name for f in SERVER) == EXPORT_FORMATS
    assert all(MEDIA_TYPES[f.name] == f.media_type and f.media_type for f in SERVER)


def test_names_and_suffixes_are_unique_and_the_survey_file_is_found_beside_each() -> None:
    names = [f.name for f in FORMATS]
    suffixes = [f.suffix for f in FORMATS]
    assert len(set(names)) == len(names) and len(set(suffixes)) == len(suffixes)
    for f in SERVER:
        if f.name != "survey":
            assert sidecar_path(Path(f"out/campus{f.suffix}")) == Path("out/campus.survey.json")


def test_an_unknown_format_names_every_allowed_one() -> None:
    try:
        export_format("xlsx")
    except ValueError as exc:
        assert all(f.name in str(exc) for f in FORMATS)
    else:
        raise AssertionError("xlsx was accepted")


def test_the_command_line_offers_the_registrys_formats() -> None:
    result = CliRunner().invoke(app, ["survey", "export", "campus", "--format", "xlsx"])
    assert result.exit_code == 2
    assert all(name in result.output for name in CLI_FORMATS), result.output
    assert "survey" not in CLI_FORMATS and "bundle" in CLI_FORMATS


def test_the_dashboard_offers_every_server_format() -> None:
    """The template lists the formats it is given, none of its own."""
    template = Path(__file__).parents[1] / "src/deniable/collection/server/templates/results.html"
    text = template.read_text(encoding="utf-8")
    assert "{% for f in formats %}" in text
    assert not any(f'"{f.name}", "' in text for f in FORMATS), "a format listed in the template"
