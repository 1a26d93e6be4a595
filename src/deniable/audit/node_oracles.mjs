// The privacy auditor's Node harness for the browser's frequency-oracle encoders
// (deniable.audit.node_oracle_encoders). Input on stdin: one JSON line
// {"module": path of oracles.js, "kind": "oue" | "olh" | "pem" | "bytepem" | "rappor",
//  "params": the mechanism's client_params(), "values": [...], "seed": null};
// output on stdout: the reports, packed as oracle_draw.mjs says. With "seed" a number,
// crypto.getRandomValues is replaced by seeded_random.mjs's stream, for the auditor's
// source check only.
import { readFileSync } from "node:fs";
import { runInThisContext } from "node:vm";

import { drawOracleReports } from "./oracle_draw.mjs";
import { seededGetRandomValues } from "./seeded_random.mjs";

const header = JSON.parse(readFileSync(0, "utf8"));

if (header.seed !== null && header.seed !== undefined) {
  Object.defineProperty(globalThis, "crypto", {
    value: { getRandomValues: seededGetRandomValues(header.seed), subtle: globalThis.crypto.subtle },
    configurable: true,
  });
}

// oracles.js is a classic script, as the page loads it: it sets globalThis.deniableOracles
runInThisContext(readFileSync(header.module, "utf8"), { filename: header.module });
const out = await drawOracleReports(globalThis.deniableOracles, header.kind, header.params, header.values);
process.stdout.write(out);
