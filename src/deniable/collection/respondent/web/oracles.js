/*
 * deniable: frequency-oracle encoders for the respondent's browser.
 *
 * The same deterministic encoders as deniable.mechanisms (Python): given the same random
 * bytes they produce the same report, bit for bit (checked by the shared test vectors
 * in tests/data/oracle_vectors.json). A Bernoulli draw is `word < threshold` for a
 * little-endian 32-bit word, so its probability is exactly threshold / 2^32; the
 * thresholds come from the server (Python computes them so the exact epsilon never
 * exceeds the one asked for). Randomness: crypto.getRandomValues only.
 *
 * - encodeOUE / randomizeOUE: unary encoding (Wang et al. 2017), 4k random bytes.
 * - encodeOLH / randomizeOLH: local hashing with the multiply-add-shift hash
 *   (Dietzfelbinger 1996), 24 random bytes.
 * - encodeRappor / randomizeRappor: RAPPOR (Erlingsson, Pihur & Korolova 2014), the
 *   permanent response memoized by HMAC-SHA256 of the client secret (WebCrypto).
 * - encodePEM / randomizePEM: the prefix extending method for heavy hitters without a
 *   candidate list (Wang et al. 2021): a level from a 32-bit word, then local hashing
 *   of the value's prefix of that level's length, 28 random bytes.
 *
 * - encodeBytePEM / randomizeBytePEM: PEM over the NFC UTF-8 bytes of a string of any
 *   length up to max_bytes, with a binary linear local hash (y = A id over GF(2)):
 *   13 + 8 r random bytes (deniable.mechanisms._byte_prefix).
 *
 * Every encoder does the same work whatever the value.
 */
(function (root) {
  "use strict";

  const TWO32 = 4294967296;

  function randomBytes(n) {
    const out = new Uint8Array(n);
    for (let i = 0; i < n; i += 65536) {
      root.crypto.getRandomValues(out.subarray(i, Math.min(n, i + 65536)));
    }
    return out;
  }

  function view(bytes) {
    return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  function need(bytes, n, what) {
    if (!(bytes instanceof Uint8Array) || bytes.length !== n) {
      throw new Error(what + " needs exactly " + n + " random bytes");
    }
  }

  function checkValue(value, k) {
    if (!Number.isInteger(value) || value < 0 || value >= k) {
      throw new Error("value must be an integer in 0.." + (k - 1));
    }
  }

  /* Unary encoding: params {k, threshold_p, threshold_q}; returns packed bits
     (Uint8Array of ceil(k/8), little-endian bit order). */
  function encodeOUE(params, value, bytes) {
    const k = params.k;
    checkValue(value, k);
    need(bytes, 4 * k, "unary encoding");
    const dv = view(bytes);
    const out = new Uint8Array((k + 7) >> 3);
    for (let i = 0; i < k; i++) {
      const threshold = i === value ? params.threshold_p : params.threshold_q;
      if (dv.getUint32(4 * i, true) < threshold) out[i >> 3] |= 1 << (i & 7);
    }
    return out;
  }

  /* Local hashing: params {k, g, threshold_p}; returns {a, b, y} with the 64-bit seed
     halves as decimal strings. */
  function encodeOLH(params, value, bytes) {
    checkValue(value, params.k);
    need(bytes, 24, "local hashing");
    const dv = view(bytes);
    const g = params.g;
    const a = dv.getBigUint64(0, true);
    const b = dv.getBigUint64(8, true);
    const keep = dv.getUint32(16, true);
    const other = dv.getUint32(20, true);
    const x = Number(BigInt.asUintN(64, a * BigInt(value) + b) >> 32n);
    const bucket = Math.floor((x * g) / TWO32); // x * g < 2^53: exact
    let y = bucket + 1 + Math.floor((other * (g - 1)) / TWO32);
    if (y >= g) y -= g;
    return { a: a.toString(), b: b.toString(), y: keep < params.threshold_p ? bucket : y };
  }

  function u32be(x) {
    const out = new Uint8Array(4);
    new DataView(out.buffer).setUint32(0, x, false);
    return out;
  }

  function concat(a, b) {
    const out = new Uint8Array(a.length + b.length);
    out.set(a, 0);
    out.set(b, a.length);
    return out;
  }

  async function hmac(key, message) {
    return new Uint8Array(await root.crypto.subtle.sign("HMAC", key, message));
  }

  /* RAPPOR: params {n_bloom_bits, h, n_cohorts, threshold_f, threshold_p, threshold_q};
     secret: the client's secret bytes; irr: 4 * n_bloom_bits fresh random bytes.
     Returns {cohort, bits}. */
  async function encodeRappor(params, secret, value, irr) {
    const k = params.n_bloom_bits;
    need(irr, 4 * k, "RAPPOR");
    const enc = new TextEncoder();
    const key = await root.crypto.subtle.importKey(
      "raw", secret, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]
    );
    const word = view(await hmac(key, enc.encode("cohort"))).getUint32(0, false);
    const cohort = Math.floor((word * params.n_cohorts) / TWO32);
    const valueBytes = enc.encode(value);
    const digest = new Uint8Array(
      await root.crypto.subtle.digest("SHA-256", concat(u32be(cohort), valueBytes))
    );
    const bloom = new Uint8Array(k);
    for (let j = 0; j < params.h; j++) bloom[view(digest).getUint32(4 * j, false) % k] = 1;
    const blocks = Math.ceil(k / 32);
    const prr = new Uint8Array(32 * blocks);
    for (let i = 0; i < blocks; i++) prr.set(await hmac(key, concat(valueBytes, u32be(i))), 32 * i);
    const dv = view(irr);
    const bits = new Uint8Array((k + 7) >> 3);
    for (let i = 0; i < k; i++) {
      const byte = prr[i];
      const permanent = (byte >> 1) < params.threshold_f ? byte & 1 : bloom[i];
      const threshold = permanent ? params.threshold_q : params.threshold_p;
      if (dv.getUint32(4 * i, true) < threshold) bits[i >> 3] |= 1 << (i & 7);
    }
    return { cohort: cohort, bits: bits };
  }

  /* PEM: params {alphabet, max_length, lengths, g, threshold_p}; value a string over
     the alphabet of at most max_length symbols; returns {level, a, b, y}. */
  function encodePEM(params, value, bytes) {
    need(bytes, 28, "PEM");
    const symbols = Array.from(String(value));
    if (symbols.length > params.max_length) {
      throw new Error("value must have at most " + params.max_length + " symbols");
    }
    const base = params.alphabet.length + 1;
    let code = 0;
    for (let i = 0; i < params.max_length; i++) {
      const digit = i < symbols.length ? params.alphabet.indexOf(symbols[i]) + 1 : 0;
      if (digit === 0 && i < symbols.length) {
        throw new Error("value must use only the symbols " + JSON.stringify(params.alphabet));
      }
      code = code * base + digit; // < 2^32: exact
    }
    const levels = params.lengths.length;
    const level = Math.floor((view(bytes).getUint32(0, true) * levels) / TWO32);
    const length = params.lengths[level];
    const prefix = Math.floor(code / Math.pow(base, params.max_length - length));
    const k = Math.pow(base, length);
    const r = encodeOLH({ k: k, g: params.g, threshold_p: params.threshold_p }, prefix, bytes.subarray(4));
    return { level: level, a: r.a, b: r.b, y: r.y };
  }

  const MASK64 = (1n << 64n) - 1n;
  const GOLDEN = 0x9e3779b97f4a7c15n;

  /* The SplitMix64 finaliser (Steele, Lea & Flood 2014), mod 2^64. */
  function mix(z) {
    z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK64;
    z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & MASK64;
    return z ^ (z >> 31n);
  }

  /* G: the 64-bit hash of the first `length` bytes of `padded` (prefix_hashes). */
  function prefixHash(padded, length) {
    let h = mix((BigInt(length) * GOLDEN) & MASK64);
    const words = Math.ceil(length / 8);
    const part = new Uint8Array(8 * words);
    part.set(padded.subarray(0, length));
    const dv = view(part);
    for (let w = 0; w < words; w++) h = mix(h ^ dv.getBigUint64(8 * w, true));
    return h;
  }

  function parity64(x) {
    let lo = Number(x & 0xffffffffn) >>> 0;
    let hi = Number(x >> 32n) >>> 0;
    let v = (lo ^ hi) >>> 0;
    v ^= v >>> 16;
    v ^= v >>> 8;
    v ^= v >>> 4;
    v ^= v >>> 2;
    v ^= v >>> 1;
    return v & 1;
  }

  /* PEM over bytes: params {max_bytes, step, levels, level_bounds, r, threshold}; the
     level is the number of level_bounds at most the level word; returns
     {level, a: [r decimal strings], y}. */
  function encodeBytePEM(params, value, bytes) {
    const r = params.r;
    need(bytes, 13 + 8 * r, "byte PEM");
    const raw = new TextEncoder().encode(String(value).normalize("NFC"));
    if (raw.length > params.max_bytes) {
      throw new Error("value must take at most " + params.max_bytes + " bytes of UTF-8");
    }
    if (raw.includes(0)) throw new Error("value must not contain NUL");
    const padded = new Uint8Array(params.max_bytes);
    padded.set(raw);
    const dv = view(bytes);
    const word = dv.getUint32(0, true);
    let level = 0;
    while (level < params.levels - 1 && params.level_bounds[level] <= word) level++;
    const start = params.step * level;
    let x = BigInt(padded[start]);
    if (params.step === 2) x |= BigInt(padded[start + 1]) << 8n;
    const id = prefixHash(padded, start) ^ x;
    const a = [];
    let bucket = 0;
    for (let k = 0; k < r; k++) {
      const row = dv.getBigUint64(4 + 8 * k, true);
      a.push(row.toString());
      bucket |= parity64(row & id) << k;
    }
    const keep = dv.getUint32(4 + 8 * r, true) < params.threshold;
    const noise = bytes[8 + 8 * r] & ((1 << r) - 1);
    return { level: level, a: a, y: keep ? bucket : noise };
  }

  const api = {
    randomBytes: randomBytes,
    encodeOUE: encodeOUE,
    encodeOLH: encodeOLH,
    encodeRappor: encodeRappor,
    encodePEM: encodePEM,
    encodeBytePEM: encodeBytePEM,
    randomizePEM: (params, value) => encodePEM(params, value, randomBytes(28)),
    randomizeBytePEM: (params, value) =>
      encodeBytePEM(params, value, randomBytes(13 + 8 * params.r)),
    randomizeOUE: (params, value) => encodeOUE(params, value, randomBytes(4 * params.k)),
    randomizeOLH: (params, value) => encodeOLH(params, value, randomBytes(24)),
    randomizeRappor: (params, secret, value) =>
      encodeRappor(params, secret, value, randomBytes(4 * params.n_bloom_bits)),
  };
  root.deniableOracles = api;
})(globalThis);
