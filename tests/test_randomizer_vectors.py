"""The browser's randomizer (web/randomizer.js, the one source of the respondent page's
and the embeddable component's draws) against Python on shared vectors
(tests/data/randomizer_vectors.json): the same report for the same uniform, the same
HMAC uniforms; in Node and in Debian's Chromium (the respondent's case)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from .make_randomizer_vectors import OUT, vectors

JS = Path(__file__).resolve().parents[1] / "src" / "deniable" / "collection" / "respondent" / "web"
CHROMIUM = Path("/usr/bin/chromium")

#: Runs every vector through the module R (the randomizer's exports); returns what differs.
HARNESS = """
async function check(R, V) {
  const hexBytes = (h) => Uint8Array.from(h.match(/../g).map((x) => parseInt(x, 16)));
  const wrong = [];
  for (const c of V.designs) {
    c.truths.forEach((t, i) => {
      const got = R.drawReport(c.columns[t], c.u[i]);
      if (got !== c.reports[i]) wrong.push([c.design, i, got, c.reports[i]]);
    });
  }
  for (const c of V.hmac) {
    const got = await R.permanentUniform(R.b64url(hexBytes(c.secret)), c.key, c.answer);
    if (got !== c.u) wrong.push(["hmac", c.key, got, c.u]);
  }
  for (const c of V.tokens) {
    const got = await R.tokenUniform(c.token, c.survey);
    if (got !== c.u) wrong.push(["token", c.token, got, c.u]);
  }
  return { wrong, checked: V.designs.length * 64 + V.hmac.length + V.tokens.length };
}
"""


def test_python_reproduces_the_vectors():
    assert vectors() == json.loads(OUT.read_text())


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")
def test_the_randomizer_module_in_node(tmp_path):
    script = tmp_path / "run.mjs"
    script.write_text(
        f"import * as R from {json.dumps((JS / 'randomizer.js').as_uri())};\n"
        "import { readFileSync } from 'node:fs';\n"
        + HARNESS
        + f"const V = JSON.parse(readFileSync({json.dumps(str(OUT))}, 'utf8'));\n"
        "console.log(JSON.stringify(await check(R, V)));\n"
    )
    out = subprocess.run(["node", str(script)], capture_output=True, text=True, check=True)
    result = json.loads(out.stdout)
    assert result["wrong"] == [] and result["checked"] == 7 * 64 + 8 + 6


@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium (.ci/run installs it)")
def test_the_randomizer_module_in_chromium(tmp_path):
    from playwright.sync_api import sync_playwright

    from deniable.collection.server._live import serve_in_thread
    from deniable.collection.store._storage import Store

    from .test_browser import ARGS

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        store = Store(f"sqlite:///{tmp_path / 'v.sqlite'}")
        try:
            with serve_in_thread(store, "an-analyst-token-for-tests") as base:
                page = browser.new_page()
                page.goto(f"{base}/healthz")  # a secure (loopback) origin for WebCrypto
                got = page.evaluate(
                    "async ([url, V]) => {" + HARNESS + " const R = await import(url);"
                    " return await check(R, V); }",
                    [f"{base}/static/randomizer.js", json.loads(OUT.read_text())],
                )
        finally:
            store.close()
            browser.close()
    assert got["wrong"] == [] and got["checked"] == 7 * 64 + 8 + 6
