// The privacy auditor's Node harness (deniable.audit, runtime "node"): it draws reports
// with a browser randomizer module as the page does, drawReport(column, uniform53()),
// whose randomness is crypto.getRandomValues. Input on stdin: one JSON line
// {"module": path, "columns": [[Pr(report r | truth t) ...] per truth t], "seed": null}
// then one byte per respondent, the truth code; output on stdout: one byte per
// respondent, the report code. With "seed" a number, crypto.getRandomValues is replaced
// by seeded_random.mjs's stream, for the auditor's source check only.
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
const out = new Uint8Array(truths.length);
for (let i = 0; i < truths.length; i++) {
  out[i] = randomizer.drawReport(header.columns[truths[i]], randomizer.uniform53());
}
process.stdout.write(out);
