"""Lint, types and the public surface, run as part of the test suite."""

from __future__ import annotations

import functools
import subprocess
import sys
from pathlib import Path

import pytest

import deniable

ROOT = Path(__file__).resolve().parents[1]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True)


@functools.cache
def _typed_scripts() -> subprocess.CompletedProcess[str]:
    """One ``mypy --strict --disallow-any-expr`` run over the three user scripts (they
    share the analysis of the package: one run instead of three)."""
    folder = Path(__file__).parent / "typing"
    return run(
        "mypy", "--strict", "--disallow-any-expr",
        *(str(folder / name) for name in ("overloads.py", "user_script.py", "study_script.py")),
    )  # fmt: skip


def _errors_in(result: subprocess.CompletedProcess[str], name: str) -> list[str]:
    return [line for line in result.stdout.splitlines() if f"typing/{name}:" in line]


def test_ruff_lint_and_format():
    lint = run("ruff", "check", "src", "tests", "bench")
    assert lint.returncode == 0, lint.stdout + lint.stderr
    fmt = run("ruff", "format", "--check", "src", "tests", "bench")
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr


@pytest.mark.slow  # over 5 s on 2 cores
def test_mypy_strict_on_src():
    result = run("mypy")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow  # over 5 s on 2 cores
def test_a_users_script_sees_the_overloaded_types():
    """``tests/typing/overloads.py`` type-checks under ``mypy --strict
    --disallow-any-expr``: tallies and estimates with ``group_by`` are dicts, without it
    one result (no union to narrow); ``estimate`` gives each mechanism its own result
    type; no expression of the script has a type containing ``Any``."""
    result = _typed_scripts()
    assert _errors_in(result, "overloads.py") == [], result.stdout + result.stderr
    assert "error:" not in result.stderr


@pytest.mark.slow  # over 5 s on 2 cores
def test_a_users_script_over_every_public_area_has_no_any():
    """``tests/typing/user_script.py`` (prevalence, oracles, heavy hitters, means,
    regression, the Bayesian logit, planning, shuffle amplification, the client,
    exports) passes ``mypy --strict --disallow-any-expr``: ``mechanism_from_spec`` and
    ``estimate`` compose, reports have concrete dtypes, regression coefficients are
    ``Series[float]``; no ``Any`` but NumPy's shape parameter."""
    result = _typed_scripts()
    assert _errors_in(result, "user_script.py") == [], result.stdout + result.stderr
    assert result.returncode == 0 and "Success: no issues found in 3 source files" in result.stdout


@pytest.mark.slow  # over 5 s on 2 cores
def test_a_users_study_script_has_no_any():
    """``tests/typing/study_script.py`` (``mechanism_from_spec`` through ``randomize``,
    ``tally`` and ``estimate`` without narrowing; the list experiment's fits; arms and
    their differences; the change between waves; a survey file, its store, its exports,
    the study by arm and the waves) passes ``mypy --strict --disallow-any-expr``
    without a cast: every result's ``to_dict`` is JSON, not ``dict[str, Any]``."""
    result = _typed_scripts()
    assert _errors_in(result, "study_script.py") == [], result.stdout + result.stderr
    assert "cast(" not in (Path(__file__).parent / "typing" / "study_script.py").read_text()


def test_public_names_are_sorted_and_exported():
    assert deniable.__all__ == sorted(deniable.__all__)
    for name in deniable.__all__:
        assert hasattr(deniable, name), name


def test_no_weak_randomness_in_src():
    """Our code never uses a non-cryptographic generator. The vendored blind-signature
    bundle (web/vendor) contains sjcl's unused generator; the browser tests run the whole
    credential exchange with Math.random replaced by a function that throws."""
    paths = [*(ROOT / "src").rglob("*.py"), *(ROOT / "src").rglob("*.js")]
    assert any(p.suffix == ".js" for p in paths)
    vendor = ROOT / "src" / "deniable" / "collection" / "respondent" / "web" / "vendor"
    for path in paths:
        if path.is_relative_to(vendor):
            continue
        text = path.read_text()
        assert "import random\n" not in text, path
        assert "from random import" not in text, path
        assert "Math.random" not in text, path


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    command = "python -m pip install uv && python -m uv run --locked pytest"
    assert command in readme and command in ci
    assert "python -m pip install uv && python -m uv run --locked deniable demo" in readme
