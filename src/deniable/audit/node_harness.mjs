// The privacy auditor's Node harness (deniable.audit, runtime "node"): it draws reports
// with a browser randomizer module as the page does, drawReport(column, uniform53()),
// whose randomness is crypto.getRandomValues. Input on stdin: one JSON line
// {"module": path, "columns": [[Pr(report r | truth t) ...] per truth t], "seed": null}
// then one byte per respondent, the truth code; output on stdout: one byte per
// respondent, the report code. With "seed" a number, crypto.getRandomValues is replaced
// by seeded_random.mjs's stream, for the auditor's source check only. With "time" true,
// each call is timed instead (process.hrtime.bigint), and the output is one float64 of
// nanoseconds per truth, little-endian. With "panel" {"key", "columns"} (the permanent
// layer's columns), each report is panelReport({panel, columns}, truth, secret), the
// page's panel question: secret = "secrets"[i] when given (base64url), else a new
// owner's newSecret(), one per respondent.
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

import { seededGetRandomValues } from "./seeded_random.mjs";

const input = readFileSync(0);
const newline = input.indexOf(10);
const header = JSON.parse(input.subarray(0, newline).toString("utf8"));
const truths = input.subarray(newline + 1);

if (header.seed !== null && header.seed !== undefined) {
  Object.defineProperty(globalThis, "crypto", {
    value: { getRandomValues: seededGetRandomValues(header.seed), subtle: globalThis.crypto.subtle },
    configurable: true,
  });
}

const randomizer = await import(pathToFileURL(header.module).href);
if (header.panel) {
  const q = { panel: header.panel, columns: header.columns };
  const out = new Uint8Array(truths.length);
  for (let i = 0; i < truths.length; i++) {
    const secret = header.secrets ? header.secrets[i] : randomizer.newSecret();
    out[i] = await randomizer.panelReport(q, truths[i], secret);
  }
  process.stdout.write(out);
} else if (header.time) {
  // one call a truth, each timed by the monotonic clock in nanoseconds, after a warm-up
  const times = new Float64Array(truths.length);
  let sink = 0;
  for (let i = 0; i < Math.min(truths.length, 2000); i++) {
    sink += randomizer.drawReport(header.columns[truths[i]], randomizer.uniform53());
  }
  for (let i = 0; i < truths.length; i++) {
    const column = header.columns[truths[i]];
    const start = process.hrtime.bigint();
    sink += randomizer.drawReport(column, randomizer.uniform53());
    times[i] = Number(process.hrtime.bigint() - start);
  }
  process.stderr.write(`sink ${sink}\n`);
  process.stdout.write(new Uint8Array(times.buffer));
} else {
  const out = new Uint8Array(truths.length);
  for (let i = 0; i < truths.length; i++) {
    out[i] = randomizer.drawReport(header.columns[truths[i]], randomizer.uniform53());
  }
  process.stdout.write(out);
}
