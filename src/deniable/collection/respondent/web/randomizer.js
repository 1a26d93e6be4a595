// deniable's randomizer for the browser: the one source of every draw the respondent page
// (respond.js, through randomizer-global.js) and the embeddable component (component.js)
// make. Randomness comes from crypto.getRandomValues only; each draw takes exactly one
// 53-bit uniform whatever the answer, and the inverse-CDF walk visits every entry of the
// column, so neither the random bytes nor the work depend on the true answer. Given the
// same uniform, drawReport returns Python's report (deniable.mechanisms._designs.Design):
// for two reports, report 1 when u < Pr(report 1 | truth), else the first r with
// u < Pr(0) + ... + Pr(r) (tests/data/randomizer_vectors.json, checked in Node and Chromium).
// Licence: the project's (see LICENSE); version: the package's.

/** Uniform on [0, 1) with 53 random bits, like the Python randomizer's grid. */
export function uniform53() {
  const words = new Uint32Array(2);
  crypto.getRandomValues(words);
  return ((words[0] >>> 5) * 67108864 + (words[1] >>> 6)) / 9007199254740992;
}

/**
 * The first index r with u < p[0] + ... + p[r] (the last if rounding leaves a gap):
 * the inverse CDF of the distribution p. Constant work: every entry is visited.
 */
export function inverseCdf(p, u) {
  let index = p.length - 1;
  let cumulative = 0;
  let found = false;
  for (let r = 0; r < p.length; r++) {
    cumulative += p[r];
    const hit = !found && u < cumulative;
    index = hit ? r : index;
    found = found || hit;
  }
  return index;
}

/**
 * Report index for a uniform u, from a column of Pr(report r | truth), as Python's
 * Design.randomize draws it: with two reports, 1 when u < Pr(report 1), else 0; with
 * more, the inverse CDF. Constant work whatever u and the column are.
 */
export function drawReport(column, u) {
  const cdf = inverseCdf(column, u);
  return column.length === 2 ? (u < column[1] ? 1 : 0) : cdf;
}

/** An index drawn with chances proportional to ``weights`` (one 53-bit uniform). */
export function pickWeighted(weights, u = uniform53()) {
  const total = weights.reduce((a, b) => a + b, 0);
  return inverseCdf(weights.map((w) => w / total), u);
}

/**
 * A uniform on [0, 1) that an invitation token fixes: the first 53 bits of
 * HMAC-SHA256(key = token, "deniable arm|" + survey id), as the Python client's
 * token_uniform. Every device that opens the link draws the same arm with it.
 */
export async function tokenUniform(token, surveyId) {
  const enc = new TextEncoder();
  const key = await crypto.subtle.importKey(
    "raw", enc.encode(token), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = new Uint8Array(
    await crypto.subtle.sign("HMAC", key, enc.encode(`deniable arm|${surveyId}`)));
  const word = (i) => ((mac[i] << 24) | (mac[i + 1] << 16) | (mac[i + 2] << 8) | mac[i + 3]) >>> 0;
  return ((word(0) >>> 5) * 67108864 + (word(4) >>> 6)) / 9007199254740992;
}

/**
 * The report distribution of a numeric question for z = (v - low) / (high - low) in
 * [0, 1]: columns[0] and columns[1] are the distributions at low and high, and the
 * one-bit mechanisms (Duchi et al. 2018; Ding et al. 2017) are linear in z between them.
 */
export function numericColumn(columns, z) {
  return columns[0].map((p0, r) => (1 - z) * p0 + z * columns[1][r]);
}

/** n draws for one column (used by the statistical test of this randomizer). */
export function sample(column, n) {
  const out = new Array(column.length).fill(0);
  for (let i = 0; i < n; i++) out[drawReport(column, uniform53())] += 1;
  return out;
}

export function b64url(bytes) {
  let text = "";
  bytes.forEach((b) => { text += String.fromCharCode(b); });
  return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

export function fromB64(text) {
  const std = text.replace(/-/g, "+").replace(/_/g, "/");
  const raw = atob(std + "=".repeat((4 - (std.length % 4)) % 4));
  return Uint8Array.from(raw, (c) => c.charCodeAt(0));
}

/**
 * The uniform that fixes a panel question's permanent report of `answer` on this
 * device: the first 53 bits of HMAC-SHA256(key = secret, "deniable permanent|" + key +
 * "|" + answer), as the Python client's permanent_uniform. `secret`: base64url.
 */
export async function permanentUniform(secret, key, answer) {
  const enc = new TextEncoder();
  const hmacKey = await crypto.subtle.importKey(
    "raw", fromB64(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = new Uint8Array(await crypto.subtle.sign(
    "HMAC", hmacKey, enc.encode(`deniable permanent|${key}|${answer}`)));
  const word = (i) => ((mac[i] << 24) | (mac[i + 1] << 16) | (mac[i + 2] << 8) | mac[i + 3]) >>> 0;
  return ((word(0) >>> 5) * 67108864 + (word(4) >>> 6)) / 9007199254740992;
}

/**
 * One wave's report of a panel question: the permanent report of `truth` (fixed by
 * the owner's `secret`), randomized afresh by the instantaneous layer (q.columns).
 */
export async function panelReport(q, truth, secret) {
  const u = await permanentUniform(secret, q.panel.key, truth);
  const permanent = drawReport(q.panel.columns[truth], u);
  return drawReport(q.columns[permanent], uniform53());
}

/** A new owner secret: 32 bytes from crypto.getRandomValues, base64url. */
export function newSecret() {
  const bytes = new Uint8Array(32);
  crypto.getRandomValues(bytes);
  return b64url(bytes);
}
