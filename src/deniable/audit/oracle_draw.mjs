// The privacy auditor's draw of frequency-oracle reports with the browser's encoders
// (web/oracles.js, which sets globalThis.deniableOracles), as the respondent's page
// draws them: each report from crypto.getRandomValues through the module's randomize*
// functions, a RAPPOR report with a fresh client secret (a new respondent each).
// Used by node_oracles.mjs in Node and, as its source, in a browser page.
//
// drawOracleReports(O, kind, params, values) -> Uint8Array, the reports packed in
// deniable's report layout, little-endian, one after another:
//   oue:     ceil(k / 8) bytes of bits (bit i = bit i % 8 of byte i / 8)
//   olh:     a u64, b u64, y u32                     (20 bytes)
//   pem:     level u8, a u64, b u64, y u32           (21 bytes)
//   bytepem: level u8, a u64 x r, y u8               (2 + 8 r bytes)
//   rappor:  cohort u32, ceil(k / 8) bytes of bits
export async function drawOracleReports(O, kind, params, values) {
  const n = values.length;
  const k = kind === "rappor" ? params.n_bloom_bits : params.k;
  const sizes = {
    oue: () => (k + 7) >> 3,
    olh: () => 20,
    pem: () => 21,
    bytepem: () => 2 + 8 * params.r,
    rappor: () => 4 + ((k + 7) >> 3),
  };
  if (!(kind in sizes)) throw new Error(`unknown oracle kind ${kind}`);
  const size = sizes[kind]();
  const out = new Uint8Array(size * n);
  const dv = new DataView(out.buffer);
  for (let i = 0; i < n; i++) {
    const at = size * i;
    const value = values[i];
    if (kind === "oue") {
      out.set(O.randomizeOUE(params, value), at);
    } else if (kind === "olh") {
      const r = O.randomizeOLH(params, value);
      dv.setBigUint64(at, BigInt(r.a), true);
      dv.setBigUint64(at + 8, BigInt(r.b), true);
      dv.setUint32(at + 16, r.y, true);
    } else if (kind === "pem") {
      const r = O.randomizePEM(params, value);
      out[at] = r.level;
      dv.setBigUint64(at + 1, BigInt(r.a), true);
      dv.setBigUint64(at + 9, BigInt(r.b), true);
      dv.setUint32(at + 17, r.y, true);
    } else if (kind === "bytepem") {
      const r = O.randomizeBytePEM(params, value);
      out[at] = r.level;
      r.a.forEach((row, j) => dv.setBigUint64(at + 1 + 8 * j, BigInt(row), true));
      out[at + 1 + 8 * params.r] = r.y;
    } else {
      const r = await O.randomizeRappor(params, O.randomBytes(32), value);
      dv.setUint32(at, r.cohort, true);
      out.set(r.bits, at + 4);
    }
  }
  return out;
}
