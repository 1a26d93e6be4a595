"""The API reference is generated from the docstrings and builds without a warning."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "deniable"


def public_modules() -> set[str]:
    names = set()
    for path in SRC.rglob("*.py"):
        parts = ["deniable", *path.relative_to(SRC).with_suffix("").parts]
        if parts[-1] == "__init__":
            continue  # packages are documented through their modules
        if any(p.startswith("_") for p in parts) or parts[1] == "cli":
            continue  # the command is documented by its --help
        names.add(".".join(parts))
    return names


def test_every_public_module_is_in_the_api_reference():
    pages = "\n".join(p.read_text() for p in (ROOT / "docs" / "api").glob("*.md"))
    documented = set(re.findall(r"^::: (deniable[\w.]*)", pages, re.M))
    assert public_modules() - documented == set()


@pytest.mark.slow
def test_api_reference_builds_with_warnings_as_errors(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    page = (tmp_path / "api" / "mechanisms" / "index.html").read_text()
    for name in ("Mechanism", "ForcedResponse", "UnaryEncoding", "mechanism_from_spec"):
        assert 'id="deniable.mechanisms.' in page and name in page
    estimation = (tmp_path / "api" / "estimation" / "index.html").read_text()
    assert "confidence_interval" in estimation and "ConfidenceInterval" in estimation


def test_the_design_page_names_every_module():
    """docs/design.md draws the floors and names every module by its path under
    src/deniable (a package by its folder or its ``__init__.py``)."""
    text = (ROOT / "docs" / "design.md").read_text()
    src = ROOT / "src" / "deniable"
    missing = []
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src).as_posix()
        names = {rel}
        if path.name == "__init__.py":
            names.add(rel.removesuffix("__init__.py"))
        if "__pycache__" not in rel and not any(f"`{n}`" in text or f"{n} " in text for n in names):
            missing.append(rel)
    assert missing == []


#: The faces whose every name has a numpydoc docstring with examples: every public
#: module (no part of its path starts with an underscore), as issue 42 asks.
DOCUMENTED_FACES = tuple(
    sorted(
        ".".join(
            ("deniable", *path.relative_to(ROOT / "src" / "deniable").with_suffix("").parts)
        ).removesuffix(".__init__")
        for path in (ROOT / "src" / "deniable").rglob("*.py")
        if not any(
            part.startswith("_") and part != "__init__.py"
            for part in path.relative_to(ROOT / "src").parts
        )
        and "web" not in path.parts
    )
)


def _face_docstrings() -> dict[str, tuple[object, str]]:
    import importlib
    import inspect

    out = {}
    for face in DOCUMENTED_FACES:
        module = importlib.import_module(face)
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isfunction(obj) or inspect.isclass(obj):
                out[f"{face}.{name}"] = (obj, inspect.getdoc(obj) or "")
    return out


def test_every_name_of_the_package_face_has_numpydoc_sections():
    """Each function and class of the documented faces (``deniable``, its mechanisms,
    estimation and planning) has an Examples section; each function also has Parameters
    and Returns, and Raises where it refuses input (numpydoc's sections). The examples
    run as doctests in every run of the suite (``--doctest-modules`` over ``src``,
    pyproject's pytest options)."""
    import inspect

    missing: dict[str, list[str]] = {}
    for name, (obj, doc) in _face_docstrings().items():
        needed = ["Examples"]
        if inspect.isfunction(obj):
            takes = bool(inspect.signature(obj).parameters)  # numpydoc omits an empty one
            needed += ["Parameters", "Returns"] if takes else ["Returns"]
            source = inspect.getsource(obj)
            if "raise " in source or "check_" in source:  # it refuses some input
                needed.append("Raises")
        lacking = [s for s in needed if f"\n{s}\n" + "-" * len(s) not in doc]
        if lacking:
            missing[name] = lacking
    assert missing == {}


#: Lines that rebuild an example's simulated data instead of importing it.
REBUILT = {
    "the regression survey (deniable.data.regression_example)": (
        "truth = rng.random(2000) < 1 / (1 + np.exp(1 - x))"
    ),
    "the list experiment (deniable.data.list_example)": (
        '>>> data = pd.DataFrame({"y": rng.binomial(3, 0.5, n) + t * z, "x": x, "treat": t})'
    ),
    "the campus store (deniable.collection.study.campus_store)": (
        "rng.integers(0, 2, 600) for q in survey.questions}, rng)"
    ),
}


def test_examples_import_the_shared_example_data_instead_of_rebuilding_it():
    """The examples' simulated surveys are built once (``deniable.data._examples``,
    ``deniable.collection.study._campus``) and imported; no docstring rebuilds one."""
    found = [
        f"{path.relative_to(SRC.parent)}: rebuilds {what}"
        for path in sorted(SRC.rglob("*.py"))
        if path.name not in ("_examples.py", "_campus.py")
        for what, line in REBUILT.items()
        if line in path.read_text(encoding="utf-8")
    ]
    assert found == []
