// deniable-rr: one randomized question inside another survey tool (jsPsych, oTree,
// Qualtrics, LimeSurvey). An ES module; version COMPONENT_VERSION; licence: the
// project's (see LICENSE).
//
// mount(container, question, options) renders one question of a deniable survey file as
// its respondent view serves it (deniable.collection.model._views.question_view: texts, matrix
// columns, instructions, disclosure, design_digest), draws with the respondent page's own
// randomizer (randomizer.js, crypto.getRandomValues only) and resolves to
// {question, report, digest, version}: the report code, the design's digest and this
// component's version. Never the true answer, never the die or the coin. A list
// experiment (question.list) shows the list of the group the device draws and resolves
// to the count chosen and that group as well: nothing is randomized there, and the page
// says so, and that a count of 0 or of every item is seen for certain.
//
// The true answer's inputs belong to no form (their form attribute names a form that
// does not exist), carry no name a host would recognize and are cleared after the draw,
// so the host never submits, autosaves or keeps them for "continue later".
//
// A panel question (two layers) keeps its permanent layer only where the host gives a
// participant id and a storage (options.participant, options.storage: anything with
// getItem/setItem, such as window.localStorage); without them it says so plainly and
// draws each time from the composed channel, which spends the question's epsilon again.
//
// Kept state is named by the participant's *tag*, never the id: PBKDF2-HMAC-SHA256 of the
// id (crypto.subtle, 100,000 iterations, 128 bits), because a host's id (an oTree
// participant code, a LimeSurvey token) is a credential, and the next person on the same
// device can read every storage key. Without crypto.subtle (a page not served over https
// or from localhost) nothing is kept under the participant: as without an id.
import { explainRisk, plainRisk } from "./explain.js";
import { drawReport, newSecret, panelReport, uniform53 } from "./randomizer.js";

export const COMPONENT_VERSION = "0.2.0";

/** A form id no page has: inputs naming it are owned by no form. */
const NO_FORM = "deniable-no-form";

/** PBKDF2 iterations of a participant's tag: a guess of the id costs this many HMACs. */
const TAG_ITERATIONS = 100000;
const TAG_SALT = "deniable participant tag v1";

let mounted = 0;

/**
 * Render `question` into `container`; resolve to {question, report, digest, version}
 * once the respondent has a report.
 *
 * @param {HTMLElement} container
 * @param {object} question  A question as deniable's respondent view serves it.
 * @param {object} options   messages (the catalog of the survey's language), lang,
 *   participant and storage (for a panel question's permanent layer).
 * @returns {Promise<{question: string, report: number, digest: string, version: string}>}
 */
export function mount(container, question, options = {}) {
  const q = question;
  const messages = options.messages || {};
  const lang = options.lang || "en";
  const t = (key, vars = {}) =>
    String(messages[key] ?? key).replace(/\{(\w+)\}/g, (m, n) => (n in vars ? String(vars[n]) : m));
  if (q.list) return mountList(container, q, options, t);
  if (q.direct) throw new Error(`question ${q.id} is asked directly: it needs no component`);
  style();
  const ready = memoOf(options);
  let memo = null; // set once the participant's tag is derived; the buttons wait for it
  const uid = `deniable-${q.id}-${(mounted += 1)}`;
  const fs = fieldset(q, uid, "deniable-rr");
  if (q.innocuous_question) fs.appendChild(para(t("innocuous", { question: q.innocuous_question })));

  const truthBox = document.createElement("div");
  truthBox.setAttribute("role", "radiogroup");
  truthBox.setAttribute("aria-label", t("true_answer_label"));
  truthBox.appendChild(para(t("true_answer"), "deniable-hint"));
  let numberInput = null;
  if (q.numeric) {
    numberInput = document.createElement("input");
    Object.assign(numberInput, { type: "number", id: `${uid}-number`, step: "any", autocomplete: "off" });
    numberInput.setAttribute("form", NO_FORM);
    const label = document.createElement("label");
    label.htmlFor = numberInput.id;
    label.textContent = t("number_label", { low: q.numeric.low, high: q.numeric.high, unit: "" });
    truthBox.append(label, numberInput);
  } else {
    q.choices.forEach((label, a) => truthBox.appendChild(radio(`${uid}-truth`, a, label)));
  }
  fs.appendChild(truthBox);

  const draw = button(t("draw"));
  const own = button(t("physical"), true);
  own.hidden = q.by_hand === false || Boolean(q.panel);
  fs.append(draw, own);
  if (q.by_hand === false || q.panel) fs.appendChild(para(q.instructions, "deniable-hint"));

  const physicalBox = document.createElement("div");
  physicalBox.hidden = true;
  physicalBox.appendChild(para(q.instructions));
  const outcomes = document.createElement("div");
  outcomes.setAttribute("role", "radiogroup");
  outcomes.setAttribute("aria-label", t("outcome_label"));
  q.reports.forEach((label, r) => outcomes.appendChild(radio(`${uid}-outcome`, r, label)));
  const useOutcome = button(t("use_outcome"));
  physicalBox.append(outcomes, useOutcome);
  fs.appendChild(physicalBox);

  const line = para("", "deniable-report");
  line.setAttribute("aria-live", "polite");
  line.hidden = true;
  fs.appendChild(line);
  if (q.panel) {
    const keeps = Boolean(options.storage && options.participant && globalThis.crypto?.subtle);
    fs.appendChild(para(keeps ? q.panel.note : t("panel_no_storage"), "deniable-hint"));
  }
  fs.appendChild(para(plainRisk(q, t, lang), "deniable-risk"));
  const details = document.createElement("details");
  const summary = document.createElement("summary");
  summary.textContent = t("details");
  details.append(summary, para(explainRisk(q, t, lang)));
  fs.appendChild(details);
  container.appendChild(fs);

  return new Promise((resolve) => {
    const finish = (report, how) => {
      fs.querySelectorAll("input, button").forEach((el) => {
        el.disabled = true;
        if (el.type === "radio") el.checked = false; // the answer is not kept on the page
      });
      if (numberInput) numberInput.value = "";
      line.hidden = false;
      // the host records it: there is no deniable server here to name
      line.textContent = t("report_recorded", { report: q.reports[report], how });
      line.dataset.report = String(report);
      if (memo.store) memo.store.setItem(memo.key("report", q), String(report));
      resolve({ question: q.id, report, digest: q.design_digest, version: COMPONENT_VERSION });
    };
    draw.disabled = true;
    own.disabled = true;
    ready.then((found) => {
      memo = found;
      // drawn before (a reload, a second tab of the same participant): that report again,
      // never a new draw, so reloading until another report comes up gains nothing
      const kept = memo.store ? memo.store.getItem(memo.key("report", q)) : null;
      if (kept !== null && /^\d+$/.test(kept) && Number(kept) < q.reports.length) {
        finish(Number(kept), t(memo.shared ? "how_kept_participant" : "how_kept"));
        return;
      }
      draw.disabled = false;
      own.disabled = false;
    });
    draw.addEventListener("click", async () => {
      const truth = readTruth();
      if (truth === null) return;
      finish(await randomize(truth), t("how_device"));
    });
    own.addEventListener("click", () => {
      const on = physicalBox.hidden; // switching own-coin mode on
      physicalBox.hidden = !on;
      truthBox.hidden = on;
      draw.hidden = on;
      own.textContent = on ? t("physical_back") : t("physical");
    });
    useOutcome.addEventListener("click", () => {
      const checked = outcomes.querySelector("input:checked");
      if (checked) finish(Number(checked.value), t("how_physical"));
    });
  });

  /** The true answer's code (a numeric question: its bound drawn by rounding), or null. */
  function readTruth() {
    if (numberInput) {
      const value = Number(numberInput.value);
      const { low, high } = q.numeric;
      if (numberInput.value.trim() === "" || !(value >= low && value <= high)) {
        say(t("number_invalid", { low, high }));
        return null;
      }
      return uniform53() < (value - low) / (high - low) ? 1 : 0;
    }
    const checked = truthBox.querySelector("input:checked");
    if (!checked) {
      say(t("choose_first"));
      return null;
    }
    return Number(checked.value);
  }

  /** One report of `truth`: both layers of a panel question where a secret can be kept. */
  async function randomize(truth) {
    if (!q.panel) return drawReport(q.columns[truth], uniform53());
    if (memo.shared) {
      const key = `deniable/panel/${memo.tag}`;
      let secret = memo.store.getItem(key);
      if (typeof secret !== "string" || secret.length !== 43) {
        secret = keptUnderTheId(memo.store, options.participant) ?? newSecret();
        memo.store.setItem(key, secret);
      }
      return panelReport(q, truth, secret);
    }
    // no participant or storage: the composed channel, drawn afresh
    const composed = q.columns[0].map((_, r) =>
      q.panel.columns[truth].reduce((sum, ps, s) => sum + ps * q.columns[s][r], 0));
    return drawReport(composed, uniform53());
  }

  function say(text) {
    line.hidden = false;
    line.textContent = text;
  }
}

/**
 * A list experiment (item count technique): the device draws the respondent's group
 * (equal chances, crypto.getRandomValues; kept per participant where the host gives a
 * participant id and a storage, so a reload shows the same list), shows that group's
 * list and the counts it allows, and says that a count of 0 or of every item is seen for
 * certain. Nothing is randomized: the count is sent as chosen. Resolves to {question,
 * report (the count), group, digest, version}.
 */
async function mountList(container, q, options, t) {
  style();
  const uid = `deniable-${q.id}-${(mounted += 1)}`;
  const group = listGroup(q, await memoOf(options));
  const view = q.groups[group];
  const fs = fieldset(q, uid, "deniable-rr deniable-list");
  const items = document.createElement("ul");
  for (const text of view.items) {
    const li = document.createElement("li");
    li.textContent = text;
    items.appendChild(li);
  }
  fs.appendChild(items);
  fs.appendChild(para(view.list_note, "deniable-hint"));
  const counts = document.createElement("div");
  counts.setAttribute("role", "radiogroup");
  counts.setAttribute("aria-label", q.text);
  view.choices.forEach((label, c) => counts.appendChild(radio(`${uid}-count`, c, label)));
  fs.appendChild(counts);
  const take = button(t("use_answer"));
  fs.appendChild(take);
  const line = para("", "deniable-report");
  line.setAttribute("aria-live", "polite");
  line.hidden = true;
  fs.appendChild(line);
  container.appendChild(fs);
  return new Promise((resolve) => {
    take.addEventListener("click", () => {
      const checked = counts.querySelector("input:checked");
      if (!checked) {
        line.hidden = false;
        line.textContent = t("choose_first");
        return;
      }
      const count = Number(checked.value);
      fs.querySelectorAll("input, button").forEach((el) => {
        el.disabled = true;
      });
      line.hidden = false;
      line.textContent = t("count_shown", { count: view.choices[count] });
      line.dataset.report = String(count);
      resolve({ question: q.id, report: count, group, digest: q.design_digest, version: COMPONENT_VERSION });
    });
  });
}

/** Where a drawn report and a list's group are kept: under the participant's tag
 * (:func:`participantTag`) in the host's storage where the host gives an id and a storage
 * and the page has crypto.subtle (every tab of that participant), otherwise in this tab's
 * sessionStorage (a reload keeps it; the next participant at a shared lab computer, in a
 * new tab, starts fresh). Only reports and groups are kept, never an answer. Resolves to
 * {store, shared, tag, key(kind, q)}. */
async function memoOf(options) {
  const { storage, participant } = options;
  const tag = storage && participant ? await participantTag(participant) : null;
  let store = tag ? storage : null;
  if (!store) {
    try {
      store = globalThis.sessionStorage || null;
    } catch {
      store = null; // storage blocked (a sandboxed frame): nothing kept, said nowhere
    }
  }
  const who = tag ?? "session";
  return {
    store,
    tag,
    shared: tag !== null, // every tab of the participant, not this tab only
    key: (kind, q) => `deniable/${kind}/${who}/${q.id}/${q.design_digest}`,
  };
}

const tags = new Map();

/**
 * The name a participant's kept state goes under: PBKDF2-HMAC-SHA256 of the host's
 * participant id (RFC 8018; crypto.subtle, TAG_ITERATIONS iterations, a fixed salt,
 * 128 bits) as 32 hex digits, so storage keys never show the id and a guess of it costs
 * 100,000 HMACs. Null where the page has no crypto.subtle (not https, not localhost).
 *
 * @param {string} participant  The host's participant id.
 * @returns {Promise<string|null>}
 */
export function participantTag(participant) {
  const subtle = globalThis.crypto?.subtle;
  if (!subtle) return Promise.resolve(null);
  const id = String(participant);
  if (!tags.has(id)) {
    const text = new TextEncoder();
    tags.set(id, subtle.importKey("raw", text.encode(id), "PBKDF2", false, ["deriveBits"])
      .then((key) => subtle.deriveBits(
        { name: "PBKDF2", hash: "SHA-256", salt: text.encode(TAG_SALT), iterations: TAG_ITERATIONS },
        key, 128))
      .then((bits) => [...new Uint8Array(bits)].map((b) => b.toString(16).padStart(2, "0")).join("")));
  }
  return tags.get(id);
}

/** A panel secret an earlier version kept under the raw participant id: moved (returned,
 * and its old key removed) so the permanent layer stays the same, or null. */
function keptUnderTheId(store, participant) {
  const old = `deniable/panel/${participant}`;
  const secret = store.getItem(old);
  if (typeof secret !== "string" || secret.length !== 43) return null;
  if (typeof store.removeItem === "function") store.removeItem(old);
  return secret;
}

/** The respondent's group for a list question: drawn once with equal chances, and kept
 * (:func:`memoOf`) so a reload or a second tab shows the same list. */
function listGroup(q, memo) {
  const kept = memo.store ? memo.store.getItem(memo.key("list", q)) : null;
  if (kept === "0" || kept === "1") return Number(kept);
  const group = uniform53() < 0.5 ? 0 : 1;
  if (memo.store) memo.store.setItem(memo.key("list", q), String(group));
  return group;
}

/** A few rules of layout, scoped to the component, added once per page (hosts style
 * the rest): one answer a line, space between the buttons. */
function style() {
  if (document.getElementById("deniable-rr-style")) return;
  const css = document.createElement("style");
  css.id = "deniable-rr-style";
  css.textContent = [
    ".deniable-rr{border:1px solid #bbb;border-radius:6px;padding:.75rem 1rem;margin:1rem 0;",
    "text-align:left;max-width:40rem}",
    ".deniable-rr legend{font-weight:600;padding:0 .25rem}",
    ".deniable-rr label{display:block;margin:.35rem 0}",
    ".deniable-rr button{margin:.5rem .5rem .25rem 0;padding:.45rem .9rem;font:inherit}",
    ".deniable-rr .deniable-hint,.deniable-rr .deniable-risk{margin:.5rem 0}",
    ".deniable-rr .deniable-report{font-weight:600}",
  ].join("");
  document.head.appendChild(css);
}

/** The question's fieldset, its legend the question's text. */
function fieldset(q, id, className) {
  const fs = document.createElement("fieldset");
  fs.className = className;
  fs.id = id;
  const legend = document.createElement("legend");
  legend.textContent = q.text;
  fs.appendChild(legend);
  return fs;
}

function para(text, className = "") {
  const p = document.createElement("p");
  p.textContent = text;
  if (className) p.className = className;
  return p;
}

function button(text, secondary = false) {
  const b = document.createElement("button");
  b.type = "button"; // never submits the host's form
  b.textContent = text;
  if (secondary) b.className = "deniable-secondary";
  return b;
}

function radio(group, value, label) {
  const wrap = document.createElement("label");
  const input = document.createElement("input");
  input.type = "radio";
  input.name = group; // unique to this component; owned by no form
  input.value = String(value);
  input.autocomplete = "off";
  input.setAttribute("form", NO_FORM);
  wrap.append(input, document.createTextNode(` ${label}`));
  return wrap;
}
