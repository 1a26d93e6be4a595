"""The example notebook (docs/examples/first-hour.ipynb) executes from a fresh kernel
(nbconvert's ExecutePreprocessor), and its outputs hold what a newcomer should see:
HTML tables of the results, the plots as PNG images, and the warning of a tiny sample
by its own category. The PNGs are written under ``tmp_path`` to be looked at."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "docs" / "examples" / "first-hour.ipynb"


@pytest.mark.slow  # a kernel's start and the regression: about 15 s
def test_the_example_notebook_runs_and_shows_tables_and_plots(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    preprocessors = pytest.importorskip("nbconvert.preprocessors")
    monkeypatch.delenv("MPLBACKEND", raising=False)  # the kernel's inline backend draws
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), "stored clean"
    executor = preprocessors.ExecutePreprocessor(timeout=300, kernel_name="python3")
    executor.preprocess(nb, {"metadata": {"path": str(tmp_path)}})
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    html = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    pngs = [o["data"]["image/png"] for o in outputs if "image/png" in o.get("data", {})]
    # the prevalence, its summary and the regression, each an HTML table
    assert len([h for h in html if "<table" in h]) >= 3
    assert any("rr.q1" in h or "cov.female" in h for h in html)
    # four plots: subgroups, odds ratios, heavy hitters, sample size
    assert len(pngs) == 4
    for i, data in enumerate(pngs):
        raw = base64.b64decode(data)
        assert raw[:8] == b"\x89PNG\r\n\x1a\n" and len(raw) > 5_000
        (tmp_path / f"plot{i}.png").write_bytes(raw)
    texts = " ".join(str(o.get("data", {}).get("text/plain", "")) for o in outputs)
    assert "FewReportsWarning" in texts
