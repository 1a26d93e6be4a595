// The package's modules in Node: the randomizer equals Python's on the shared vectors,
// the package's version is the component's, and no module uses Math.random.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as R from "../dist/randomizer.js";
import { COMPONENT_VERSION } from "../dist/component.js";

const here = dirname(fileURLToPath(import.meta.url));
const vectors = JSON.parse(
  readFileSync(join(here, "..", "..", "tests", "data", "randomizer_vectors.json"), "utf8"));

test("drawReport gives Python's report for the same uniform", () => {
  for (const c of vectors.designs) {
    c.truths.forEach((t, i) => assert.equal(R.drawReport(c.columns[t], c.u[i]), c.reports[i]));
  }
});

test("the HMAC uniforms equal Python's", async () => {
  const bytes = (h) => Uint8Array.from(h.match(/../g).map((x) => parseInt(x, 16)));
  for (const c of vectors.hmac) {
    assert.equal(await R.permanentUniform(R.b64url(bytes(c.secret)), c.key, c.answer), c.u);
  }
});

test("the package's version is the component's", () => {
  const pkg = JSON.parse(readFileSync(join(here, "..", "package.json"), "utf8"));
  assert.equal(pkg.version, COMPONENT_VERSION);
  assert.equal(pkg.license, "MIT");
});

test("no module uses Math.random", () => {
  for (const name of readdirSync(join(here, "..", "dist"))) {
    assert.ok(!readFileSync(join(here, "..", "dist", name), "utf8").includes("Math.random"), name);
  }
});
