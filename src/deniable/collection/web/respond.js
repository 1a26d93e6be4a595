// deniable respondent page: randomizes each answer in this browser and sends only reports.
//
// Randomness comes from crypto.getRandomValues, never a non-cryptographic generator. Each question draws
// exactly one 53-bit uniform whatever the answer, and the inverse-CDF walk visits every
// entry of the design's matrix column, so neither the number of random bytes nor the
// work done depends on the true answer. The true answer is never stored or sent: only
// the report is memoized (localStorage, per survey, version and question), so a reload
// or a second visit shows the same report instead of drawing again.
"use strict";

const deniable = (() => {
  /** Uniform on [0, 1) with 53 random bits, like the Python randomizer's grid. */
  function uniform53() {
    const words = new Uint32Array(2);
    crypto.getRandomValues(words);
    return ((words[0] >>> 5) * 67108864 + (words[1] >>> 6)) / 9007199254740992;
  }

  /**
   * Report index for a uniform u, from a column of Pr(report r | truth): the first r
   * with u < P[0] + ... + P[r] (the last report if rounding leaves a gap).
   * Constant work: every entry is visited whatever u and the column are.
   */
  function drawReport(column, u) {
    let report = column.length - 1;
    let cumulative = 0;
    let found = false;
    for (let r = 0; r < column.length; r++) {
      cumulative += column[r];
      const hit = !found && u < cumulative;
      report = hit ? r : report;
      found = found || hit;
    }
    return report;
  }

  /** n draws for one column (used by the statistical test of this randomizer). */
  function sample(column, n) {
    const out = new Array(column.length).fill(0);
    for (let i = 0; i < n; i++) out[drawReport(column, uniform53())] += 1;
    return out;
  }

  return { uniform53, drawReport, sample };
})();

(function page() {
  const node = document.getElementById("survey-data");
  if (!node) return;
  const survey = JSON.parse(node.textContent);
  const store = memo(`deniable/${survey.id}/${survey.version}`);
  const reports = {};
  const container = document.getElementById("questions");
  const status = document.getElementById("status");
  const submit = document.getElementById("submit");
  const tokenBox = document.getElementById("token-box");
  const tokenInput = document.getElementById("token");

  const params = new URLSearchParams(window.location.search);
  const urlToken = params.get("token");
  if (urlToken) {
    // keep the invitation out of the address bar, history and screenshots
    history.replaceState(null, "", window.location.pathname);
  }
  if (survey.requires_invitation && !urlToken) tokenBox.hidden = false;

  const eps = survey.total_epsilon;
  document.getElementById("budget").textContent =
    eps === "inf"
      ? "Some questions here protect only one of the answers (see each question)."
      : `In privacy terms, your whole response is ${Number(eps).toFixed(2)}-differentially ` +
        `private (epsilon in nats; the survey's limit is ${survey.privacy_budget}).`;

  survey.questions.forEach((q, index) => container.appendChild(renderQuestion(q, index)));
  if (store.get("submitted")) {
    lockAll();
    status.textContent = "You have already sent your reports for this survey. Thank you.";
  }
  refresh();

  submit.addEventListener("click", async () => {
    const body = { version: survey.version, reports: { ...reports } };
    const token = urlToken || tokenInput.value.trim();
    if (token) body.token = token;
    submit.disabled = true;
    status.textContent = "Sending your reports…";
    try {
      const res = await fetch(`/api/surveys/${encodeURIComponent(survey.id)}/responses`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(body),
        credentials: "omit",
        cache: "no-store",
        referrerPolicy: "no-referrer",
      });
      if (res.status === 201) {
        store.set("submitted", true);
        lockAll();
        status.textContent = "Sent and stored. Thank you. The server received only the reports shown above.";
      } else {
        const err = await res.json().catch(() => ({}));
        const msg = (err.error && err.error.message) || `the server answered ${res.status}`;
        status.textContent = `Not stored: ${msg}.`;
        submit.disabled = false;
      }
    } catch (e) {
      status.textContent = "Not sent: the server could not be reached. Your reports are kept; try again.";
      submit.disabled = false;
    }
  });

  function renderQuestion(q, index) {
    const fs = document.createElement("fieldset");
    fs.id = `q-${q.id}`;
    const legend = document.createElement("legend");
    legend.textContent = `${index + 1}. ${q.text}`;
    fs.appendChild(legend);

    const choiceGroup = document.createElement("div");
    choiceGroup.setAttribute("role", "radiogroup");
    choiceGroup.setAttribute("aria-label", "Your true answer (stays on this device)");
    const hint = document.createElement("p");
    hint.className = "risk";
    hint.textContent = "Your true answer (stays on this device):";
    choiceGroup.appendChild(hint);
    q.choices.forEach((label, t) => {
      choiceGroup.appendChild(radio(`truth-${q.id}`, t, label, `truth-${q.id}-${t}`));
    });
    fs.appendChild(choiceGroup);

    const mode = document.createElement("div");
    mode.className = "mode";
    const draw = button("Randomize my answer on this device", "draw");
    const physical = button("Use my own coin or die instead", "physical", true);
    mode.append(draw, physical);
    fs.appendChild(mode);

    const physicalBox = document.createElement("div");
    physicalBox.hidden = true;
    const instr = document.createElement("p");
    instr.textContent = q.instructions;
    physicalBox.appendChild(instr);
    const outcome = document.createElement("div");
    outcome.setAttribute("role", "radiogroup");
    outcome.setAttribute("aria-label", "The answer your coin or die told you to give");
    q.reports.forEach((label, r) => {
      outcome.appendChild(radio(`outcome-${q.id}`, r, label, `outcome-${q.id}-${r}`));
    });
    physicalBox.appendChild(outcome);
    const useOutcome = button("Use this outcome", "use-outcome");
    physicalBox.appendChild(useOutcome);
    fs.appendChild(physicalBox);

    const result = document.createElement("p");
    result.className = "report";
    result.id = `report-${q.id}`;
    result.setAttribute("aria-live", "polite");
    result.hidden = true;
    fs.appendChild(result);

    const risk = document.createElement("p");
    risk.className = "risk";
    risk.textContent = explainRisk(q);
    fs.appendChild(risk);

    draw.addEventListener("click", () => {
      const checked = fs.querySelector(`input[name="truth-${q.id}"]:checked`);
      if (!checked) {
        result.hidden = false;
        result.textContent = "Choose your true answer first.";
        return;
      }
      const truth = Number(checked.value);
      const report = deniable.drawReport(q.columns[truth], deniable.uniform53());
      checked.checked = false; // the true answer is not kept on the page either
      setReport(q, report, "randomized on this device");
    });
    physical.addEventListener("click", () => {
      const on = physicalBox.hidden; // switching the physical mode on
      physicalBox.hidden = !on;
      choiceGroup.hidden = on;
      draw.hidden = on;
      physical.textContent = on ? "Let this device randomize instead" : "Use my own coin or die instead";
    });
    useOutcome.addEventListener("click", () => {
      const checked = fs.querySelector(`input[name="outcome-${q.id}"]:checked`);
      if (!checked) return;
      setReport(q, Number(checked.value), "from your own coin or die");
    });

    const saved = store.get(`q/${q.id}`);
    if (saved !== null && Number.isInteger(saved) && saved >= 0 && saved < q.reports.length) {
      queueMicrotask(() => setReport(q, saved, "drawn earlier on this device; it cannot be redrawn"));
    }
    return fs;
  }

  function setReport(q, report, how) {
    reports[q.id] = report;
    store.set(`q/${q.id}`, report);
    const fs = document.getElementById(`q-${q.id}`);
    fs.querySelectorAll("input, button").forEach((el) => (el.disabled = true));
    const result = document.getElementById(`report-${q.id}`);
    result.hidden = false;
    result.textContent = `The server will receive the report "${q.reports[report]}" (${how}). ` +
      "It will not receive your true answer.";
    result.dataset.report = String(report);
    refresh();
  }

  function refresh() {
    const done = survey.questions.every((q) => q.id in reports);
    submit.disabled = !done || store.get("submitted") === true;
  }

  function lockAll() {
    container.querySelectorAll("input, button").forEach((el) => (el.disabled = true));
    submit.disabled = true;
  }

  function explainRisk(q) {
    const pct = (x) => `${(100 * x).toFixed(0)}%`;
    if (q.epsilon === "inf") {
      return "Careful: with this design one answer is fully protected but the other can be " +
        "revealed by the report. You agreed to this when the survey opted in.";
    }
    const factor = Number(q.disclosure.max_odds_factor);
    let text = `Whatever report is sent, it can shift anyone's odds about your true answer by ` +
      `at most a factor of ${factor.toFixed(2)} (epsilon = ${Number(q.epsilon).toFixed(2)}).`;
    if (q.choices.length === 2) {
      const prior = q.disclosure.prior[1];
      const post = q.disclosure.posterior.map((row) => row[1]);
      const parts = q.reports
        .map((label, r) => (post[r] === null ? null : `after "${label}", ${pct(post[r])}`))
        .filter(Boolean);
      text += ` Someone who thought beforehand that there was a ${pct(prior)} chance your true ` +
        `answer is "${q.choices[1]}" would afterwards think: ${parts.join("; ")}.`;
    }
    return text;
  }

  function radio(name, value, label, id) {
    const wrap = document.createElement("label");
    wrap.htmlFor = id;
    const input = document.createElement("input");
    input.type = "radio";
    input.name = name;
    input.value = String(value);
    input.id = id;
    wrap.append(input, document.createTextNode(label));
    return wrap;
  }

  function button(text, role, secondary = false) {
    const b = document.createElement("button");
    b.type = "button";
    b.textContent = text;
    b.dataset.role = role;
    if (secondary) b.className = "secondary";
    return b;
  }

  function memo(prefix) {
    const mem = {};
    let ls = null;
    try {
      ls = window.localStorage;
      ls.setItem(`${prefix}/probe`, "1");
      ls.removeItem(`${prefix}/probe`);
    } catch (e) {
      ls = null;
    }
    return {
      get(key) {
        const raw = ls ? ls.getItem(`${prefix}/${key}`) : mem[key];
        if (raw === null || raw === undefined) return null;
        try { return JSON.parse(raw); } catch (e) { return null; }
      },
      set(key, value) {
        const raw = JSON.stringify(value);
        if (ls) ls.setItem(`${prefix}/${key}`, raw); else mem[key] = raw;
      },
    };
  }
})();
