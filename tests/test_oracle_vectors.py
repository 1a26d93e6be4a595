"""Python and JavaScript oracle encoders agree bit for bit on shared test vectors.

tests/data/oracle_vectors.json holds (parameters, value, random bytes, report) for
OUE, OLH, RAPPOR, PEM and byte-PEM. The Python encoders must reproduce it (so a change
to either encoder shows up here), and so must
src/deniable/collection/respondent/web/oracles.js, run in Node.js when it is installed and in
Debian's chromium through Playwright (the respondent's case).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from importlib import resources
from pathlib import Path

import pytest

from .make_oracle_vectors import OUT, vectors

JS = resources.files("deniable.collection.respondent") / "web" / "oracles.js"
CHROMIUM = Path("/usr/bin/chromium")

HARNESS = r"""
const run = async (O, V, hex, tohex) => {
  const out = {oue: [], olh: [], rappor: [], pem: [], bytepem: []};
  for (const v of V.oue) out.oue.push(tohex(O.encodeOUE(v.params, v.value, hex(v.random))));
  for (const v of V.olh) out.olh.push(O.encodeOLH(v.params, v.value, hex(v.random)));
  for (const v of V.pem) out.pem.push(O.encodePEM(v.params, v.value, hex(v.random)));
  for (const v of V.bytepem) {
    out.bytepem.push(O.encodeBytePEM(v.params, v.value, hex(v.random)));
  }
  for (const v of V.rappor) {
    const r = await O.encodeRappor(v.params, hex(v.secret), v.value, hex(v.random));
    out.rappor.push({cohort: r.cohort, bits: tohex(r.bits)});
  }
  return out;
};
const hex = (s) => new Uint8Array((s.match(/../g) || []).map((h) => parseInt(h, 16)));
const tohex = (u) => Array.from(u, (b) => b.toString(16).padStart(2, "0")).join("");
"""


def expected() -> dict[str, list[object]]:
    data = json.loads(OUT.read_text())
    return {
        "oue": [v["report"] for v in data["oue"]],
        "olh": [v["report"] for v in data["olh"]],
        "rappor": [v["report"] for v in data["rappor"]],
        "pem": [v["report"] for v in data["pem"]],
        "bytepem": [v["report"] for v in data["bytepem"]],
    }


def test_python_encoders_reproduce_the_vectors():
    assert vectors() == json.loads(OUT.read_text())


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")
def test_javascript_encoders_in_node(tmp_path):
    script = tmp_path / "run.js"
    script.write_text(
        "const fs = require('fs'); const vm = require('vm');\n"
        f"vm.runInThisContext(fs.readFileSync({json.dumps(str(JS))}, 'utf8'));\n"
        + HARNESS
        + f"const V = JSON.parse(fs.readFileSync({json.dumps(str(OUT))}, 'utf8'));\n"
        "run(globalThis.deniableOracles, V, hex, tohex)"
        ".then((o) => console.log(JSON.stringify(o)));\n"
    )
    out = subprocess.run(["node", str(script)], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == expected()


@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium (.ci/run installs it)")
def test_javascript_encoders_in_chromium(tmp_path):
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
                page.add_script_tag(url=f"{base}/static/oracles.js")
                got = page.evaluate(
                    "async (V) => {" + HARNESS + " return await run(globalThis.deniableOracles, V,"
                    " hex, tohex); }",
                    json.loads(OUT.read_text()),
                )
        finally:
            store.close()
            browser.close()
    assert got == expected()
