// deniable: the plain-words disclosure of one randomized question, shared by the
// respondent page (respond.js) and the embeddable component (component.js). Each function
// takes the question as the survey's respondent view serves it, `t(key, vars)` for the
// page's message catalog, and the language's code for numbers.

/**
 * Per answer, the largest factor by which a report can multiply anyone's odds of it
 * (null: some report proves it); a numeric question's single factor for both bounds.
 */
export function answerFactors(q) {
  const f = q.disclosure.max_odds_factor;
  return Array.isArray(f) ? f.map((x) => (x === null ? null : Number(x))) : [Number(f), Number(f)];
}

/** The largest finite factor of a question (1 if every answer is provable). */
export function finiteFactor(q) {
  return Math.max(1, ...answerFactors(q).filter((x) => x !== null));
}

/** The risk in plain words: how much surer anyone can become of the answer. */
export function plainRisk(q, t, lang = "en") {
  const factors = answerFactors(q);
  const exposed = q.choices.filter((_, a) => factors[a] === null);
  if (exposed.length) {
    const answers = exposed.map((a) => `"${a}"`).join(t("or"));
    const safe = factors.some((x) => x !== null)
      ? " " + t("plain_risk_others", { times: times(finiteFactor(q), t, lang) })
      : "";
    return t("plain_risk_exposed", { answers }) + safe;
  }
  return t("plain_risk", { times: times(finiteFactor(q), t, lang) });
}

export function times(factor, t, lang = "en") {
  const n = factor < 10 ? Number(factor.toFixed(1)) : Math.round(factor);
  return t("times", { n: n.toLocaleString(lang || "en") });
}

export function explainRisk(q, t, lang = "en") {
  const pct = (x) => `${(100 * x).toFixed(0)}%`;
  const factor = finiteFactor(q);
  if (q.epsilon === "inf") {
    const factors = answerFactors(q);
    return q.choices.map((label, a) => `"${label}": ` + (factors[a] === null
      ? t("answer_exposed")
      : t("answer_odds", { times: times(factors[a], t, lang) }))).join("; ") + ".";
  }
  if (q.numeric) {
    return t("risk_numeric", {
      low: num(q.numeric.low, lang), high: num(q.numeric.high, lang), p_low: pct(q.columns[0][1]),
      p_high: pct(q.columns[1][1]), factor: factor.toFixed(2), eps: Number(q.epsilon).toFixed(2),
    });
  }
  let text = t("risk_odds", { factor: factor.toFixed(2), eps: Number(q.epsilon).toFixed(2) });
  if (q.choices.length === 2) {
    const prior = q.disclosure.prior[1];
    const post = q.disclosure.posterior.map((row) => row[1]);
    const parts = q.reports
      .map((label, r) => (post[r] === null ? null : t("risk_after", { report: label, pct: pct(post[r]) })))
      .filter(Boolean);
    text += " " + t("risk_posterior", { prior: pct(prior), answer: q.choices[1], parts: parts.join("; ") });
  }
  return text;
}

export function num(x, lang = "en") {
  return Number(x).toLocaleString(lang || "en");
}
