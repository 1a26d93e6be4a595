// The privacy auditor's seeded stand-in for crypto.getRandomValues (splitmix32), for the
// source check only: an encoder that reads its randomness from crypto.getRandomValues
// alone draws the same reports twice from one seed; one that also reads a non-cryptographic generator or
// the clock does not. Never a source for a respondent. deniable.audit's Node harness
// imports it; its page check evaluates this text in the page.
export function seededGetRandomValues(seed) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x9e3779b9) >>> 0;
    let z = state;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
  return (array) => {
    const words = new Uint32Array(array.buffer, array.byteOffset, array.byteLength >>> 2);
    for (let i = 0; i < words.length; i++) words[i] = next();
    return array;
  };
}
