"""The command starts at once: ``deniable --help`` and every subcommand's ``--help`` load
none of the heavy libraries (the CPU time is measured by ``bench/cli_startup.py``)."""

from __future__ import annotations

import json
import subprocess
import sys

#: What a ``--help`` must not load (issue 63): each costs 0.1-1.7 s of CPU to import.
HEAVY = ["pandas", "numpy", "scipy", "sqlalchemy", "pydantic", "pyarrow", "matplotlib"]

PROBE = """
import json, sys
import typer
from typer.testing import CliRunner
from deniable.cli import app

heavy = set(json.loads(sys.argv[1]))
paths = [[]]
def walk(command, prefix):
    for name, sub in getattr(command, "commands", {}).items():
        paths.append(prefix + [name])
        walk(sub, prefix + [name])
walk(typer.main.get_command(app), [])
runner = CliRunner()
out = {}
for path in paths:
    done = runner.invoke(app, path + ["--help"])
    loaded = sorted({m.split(".")[0] for m in sys.modules} & heavy)
    out[" ".join(path) or "(top)"] = [done.exit_code, loaded]
print(json.dumps(out))
"""


def test_no_help_loads_a_heavy_library():
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(HEAVY)], capture_output=True, text=True, check=True
    )
    seen = json.loads(done.stdout)
    assert len(seen) >= 20 and "survey export" in seen and "analyze" in seen
    assert {name: loaded for name, (code, loaded) in seen.items() if loaded or code} == {}


def test_the_package_face_loads_nothing_until_a_name_is_used():
    code = (
        "import sys, deniable\n"
        "before = {m.split('.')[0] for m in sys.modules}\n"
        "deniable.estimate\n"
        "after = {m.split('.')[0] for m in sys.modules}\n"
        "print('numpy' in before, 'numpy' in after)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "True"]


def test_no_help_shows_sphinx_markup():
    """Help is read in a terminal: no :mod:`...` roles and no ``double backticks``."""
    import re

    import typer
    from typer.testing import CliRunner

    from deniable.cli import app

    paths: list[list[str]] = [[]]

    def walk(command: object, prefix: list[str]) -> None:
        for name, sub in getattr(command, "commands", {}).items():
            paths.append([*prefix, name])
            walk(sub, [*prefix, name])

    walk(typer.main.get_command(app), [])
    runner = CliRunner()
    leaks = {}
    for path in paths:
        shown = runner.invoke(app, [*path, "--help"]).output
        found = re.findall(r":\w+:`[^`]*`|``[^`]*``", shown)
        if found:
            leaks[" ".join(path)] = found
    assert leaks == {}


def test_a_core_only_install_names_the_extra_a_survey_file_needs():
    """Without pydantic (a core-only install: NumPy, SciPy, cryptography), reading a
    survey file says which extra to install, in one line, not a bare import error."""
    code = (
        "import importlib.abc, sys\n"
        "class Absent(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'pydantic':\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, Absent())\n"
        "try:\n"
        "    from deniable.collection.model import load_survey\n"
        "except ModuleNotFoundError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "needs pydantic" in done.stdout and "pip install 'deniable[server]'" in done.stdout


def test_every_command_that_prints_results_takes_json_and_one_meaning_per_name():
    """--json on every command but serve (which runs until stopped; the docs say so);
    -o wherever --output is; --yes only for "send without asking"; the fairness audit
    is `deniable fairness`, and `deniable audit` is the privacy auditor."""
    import typer

    from deniable.cli import app

    options: dict[str, dict[str, str]] = {}

    def walk(command: object, prefix: list[str]) -> None:
        for name, sub in getattr(command, "commands", {}).items():
            if hasattr(sub, "commands"):
                walk(sub, [*prefix, name])
                continue
            flags: dict[str, str] = {}
            for param in sub.params:
                for opt in getattr(param, "opts", []):
                    flags[opt] = str(getattr(param, "help", "") or "")
                for opt in getattr(param, "secondary_opts", []):
                    flags[opt] = ""
            options[" ".join([*prefix, name])] = flags

    walk(typer.main.get_command(app), [])
    assert "fairness" in options and "--runtime" in options["audit"]  # the privacy auditor
    assert sorted(c for c, f in options.items() if "--json" not in f) == ["serve"]
    for command, flags in options.items():
        if "--output" in flags:
            assert "-o" in flags, command
        if "--yes" in flags:
            assert "without asking" in flags["--yes"].lower(), command
    assert "--yes-value" in options["simulate"] and "--survey-version" in options["analyze export"]
