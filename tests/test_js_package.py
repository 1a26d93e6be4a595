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
