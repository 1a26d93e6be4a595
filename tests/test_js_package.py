"""The npm package deniable-rr (js/, issue 41 item 1): built from the one source of the
browser modules, tested with Node's own runner, and packed with its version, licence and
README only."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from .test_jspsych import JSPSYCH, npm_installed

JS = Path(__file__).resolve().parents[1] / "js"
WEB = Path(__file__).resolve().parents[1] / "src" / "deniable" / "collection" / "respondent" / "web"

pytestmark = pytest.mark.skipif(shutil.which("npm") is None, reason="needs npm (.ci/run: apt)")


def test_the_package_builds_and_passes_its_node_tests():
    done = subprocess.run(["npm", "test"], cwd=JS, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert re.search(r"# pass 4\b", done.stdout) and re.search(r"# fail 0\b", done.stdout)
    for name in ("component.js", "randomizer.js", "explain.js", "plugin-deniable-rr.js"):
        assert (JS / "dist" / name).read_bytes() == (WEB / name).read_bytes()  # unchanged


def test_the_packed_tarball_holds_the_modules_licence_and_readme_only():
    done = subprocess.run(
        ["npm", "pack", "--dry-run", "--json"], cwd=JS, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (packed,) = json.loads(done.stdout)
    files = sorted(f["path"] for f in packed["files"])
    assert files == [
        "LICENSE",
        "README.md",
        "dist/component.js",
        "dist/explain.js",
        "dist/plugin-deniable-rr.js",
        "dist/randomizer.js",
        "package.json",
    ]
    version = re.search(r'COMPONENT_VERSION = "([^"]+)"', (WEB / "component.js").read_text())
    assert version is not None and packed["version"] == version.group(1)


#: esbuild, the bundler the bundling test uses (from the npm registry).
ESBUILD = "0.24.0"


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """A user's project with deniable-rr installed as npm installs it (the package's
    files copied, not linked) beside jsPsych from the registry."""
    done = subprocess.run(["node", "build.mjs"], cwd=JS, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    root = tmp_path_factory.mktemp("project")
    modules = root / "node_modules"
    (modules / "deniable-rr").mkdir(parents=True)
    shutil.copy(JS / "package.json", modules / "deniable-rr" / "package.json")
    shutil.copytree(JS / "dist", modules / "deniable-rr" / "dist")
    (modules / "jspsych").symlink_to(npm_installed("jspsych", JSPSYCH, "dist/index.js") / "jspsych")
    (root / "package.json").write_text('{"type": "module"}')
    return root


#: What the user's code does: import the plugin from the package and jsPsych beside it.
#: jsPsych's own module assigns ``window.jsPsych``: Node has no window (jsPsych's tests
#: run under jsdom), so the script gives it one.
USER = """globalThis.window ??= globalThis;
const { default: plugin } = await import("deniable-rr/jspsych");
const { ParameterType } = await import("jspsych");
console.log(JSON.stringify({
  name: plugin.info.name,
  question: plugin.info.parameters.question.type === ParameterType.OBJECT,
  report: plugin.info.data.report.type === ParameterType.INT,
}));
"""


def test_the_jspsych_entry_imports_in_node_without_jspsychs_browser_build(project: Path):
    """`import "deniable-rr/jspsych"` in Node: no ``jsPsychModule`` global, the parameter
    types come from the ``jspsych`` package (it threw on ``globalThis.jsPsychModule``)."""
    (project / "user.mjs").write_text(USER)
    done = subprocess.run(
        ["node", "user.mjs"], cwd=project, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == {"name": "deniable-rr", "question": True, "report": True}


def test_the_jspsych_entry_bundles_with_esbuild_and_runs(project: Path, tmp_path: Path):
    """A bundler (esbuild) resolves the package's ``exports`` and jsPsych beside it; the
    bundle, one file with neither package left to resolve, runs and gives the plugin."""
    esbuild = npm_installed("esbuild", ESBUILD, "package.json") / ".bin" / "esbuild"
    (project / "entry.js").write_text(USER)
    done = subprocess.run(
        [str(esbuild), "entry.js", "--bundle", "--format=esm", "--platform=neutral",
         "--main-fields=module,main", "--outfile=bundle.mjs"],
        cwd=project, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    bundle = (project / "bundle.mjs").read_text()
    assert 'from "jspsych"' not in bundle and "deniable-rr" in bundle
    shutil.copy(project / "bundle.mjs", tmp_path / "bundle.mjs")  # no node_modules there
    run = subprocess.run(
        ["node", "bundle.mjs"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert json.loads(run.stdout) == {"name": "deniable-rr", "question": True, "report": True}
