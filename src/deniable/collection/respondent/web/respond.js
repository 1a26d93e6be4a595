// deniable respondent page: randomizes each answer in this browser and sends only reports.
//
// Randomness comes from crypto.getRandomValues, never a non-cryptographic generator. Each question draws
// exactly one 53-bit uniform whatever the answer, and the inverse-CDF walk visits every
// entry of the design's matrix column, so neither the number of random bytes nor the
// work done depends on the true answer. The true answer is never stored or sent.
//
// The memo: each report drawn is kept in localStorage under its *owner* and the
// question's content digest (memo_key: text, answers, design; not the survey id or
// version), so a reload, a later version or another survey with the same question sends
// the same report instead of drawing again: an unchanged question costs no more privacy
// however often the person is invited. The owner is the named recipient's tag that all
// their links carry (#owner=...), or SHA-256 of the invitation for an anonymous link;
// another person on the same device, whose link carries another owner, never sees or
// sends it. Only reports are memoized, never an answer; a direct question (sent as
// given, not randomized) is never memoized at all.
//
// Panel questions (two layers; Erlingsson, Pihur & Korolova 2014): a question asked
// again in later waves memoizes no report. Its permanent report of an answer is fixed by
// this owner's secret (32 bytes from crypto.getRandomValues, kept in localStorage under
// deniable/memo/<owner>/panel/secret): the first 53 bits of HMAC-SHA256(secret,
// "deniable permanent|" + panel.key + "|" + answer) pick it from the permanent layer's
// column, and every wave sends a fresh instantaneous draw of it. The secret is the same
// whatever the answers, so the stored state does not tell which answers were given; it
// never travels in a transfer link or to the server. A wave's drawn report is kept
// (for a reload) until it is sent, then removed.
//
// Arms and groups: a study may assign each respondent at random to an arm (by weight)
// and, for a group design, to one of two groups (equal chances). The device draws
// them with crypto.getRandomValues once per survey and owner (the group once per
// question content and owner, like the report) and shows only that arm's and group's
// questions and instructions; they are sent with the response.
//
// Invitations: the link carries the token (and the version it is bound to, v=N) in the
// fragment, which the browser never sends to a server. The invitation is spent when the
// person first draws a report, not when the page opens (looking costs nothing): the page
// exchanges it for an unlinkable credential (RFC 9474 blind signature,
// vendor/blindrsa-ts), keeping the blinded request first so that a retry after a dropped
// connection asks for the same signature. The credential and the reports drawn can move
// to another device with a transfer link (fragment only).
"use strict";

const deniable = (() => {
  const R = globalThis.deniableRandomizer; // web/randomizer.js, loaded first
  const { b64url, fromB64 } = R;

  /**
   * Exchange an invitation token for a credential (RFC 9474, RSABSSA-SHA384-PSS-Randomized).
   * `post(path, body)` resolves to the server's JSON answer. The blinded request is made
   * once and handed to `keep` before it is sent; a later call with `saved` (after a
   * dropped connection) sends the same one, and the server answers it with the same
   * signature. Returns {message, signature} in base64url; the token is not part of it.
   * In a study with arms the invitation is bound to the person's `arm`: the request
   * names it and is blinded under that arm's key (view.credential_keys), so the
   * credential verifies for that arm only.
   */
  async function obtainCredential(view, token, post, saved = null, keep = () => {}, arm = null) {
    if (view.credential_variant !== "RSABSSA-SHA384-PSS-Randomized") {
      throw new Error(`unsupported credential variant ${view.credential_variant}`);
    }
    const keys = view.credential_keys || null;
    if (keys && !(arm in keys)) throw new Error(`no credential key for arm ${arm}`);
    const publicKey = await crypto.subtle.importKey(
      "spki", fromB64(keys ? keys[arm] : view.credential_key), { name: "RSA-PSS", hash: "SHA-384" },
      true, ["verify"],
    );
    const suite = blindrsa.RSABSSA.SHA384.PSS.Randomized();
    let request = saved;
    if (!request) {
      const prepared = suite.prepare(crypto.getRandomValues(new Uint8Array(32)));
      const { blindedMsg, inv } = await suite.blind(publicKey, prepared);
      request = { prepared: b64url(prepared), blinded: b64url(blindedMsg), inv: b64url(inv) };
      keep(request);
    }
    const body = { token, blinded_msg: request.blinded, version: view.version };
    if (keys) body.arm = arm;
    const answer = await post(`/api/surveys/${encodeURIComponent(view.id)}/credentials`, body);
    const signature = await suite.finalize(
      publicKey, fromB64(request.prepared), fromB64(answer.blind_sig), fromB64(request.inv),
    );
    return { message: request.prepared, signature: b64url(signature) };
  }

  return { ...R, obtainCredential };
})();

(async function page() {
  const node = document.getElementById("survey-data");
  if (!node) return;
  const survey = JSON.parse(node.textContent);
  const messages = JSON.parse(document.getElementById("messages").textContent);
  /** The catalog's text for ``key`` with ``{name}`` placeholders filled from ``vars``. */
  const t = (key, vars = {}) =>
    String(messages[key]).replace(/\{(\w+)\}/g, (m, name) => (name in vars ? String(vars[name]) : m));
  const container = document.getElementById("questions");
  const status = document.getElementById("status");
  const submit = document.getElementById("submit");
  const tokenBox = document.getElementById("token-box");
  const tokenInput = document.getElementById("token");
  const reports = {};

  // a second link pasted into this tab changes only the fragment: start again with it
  window.addEventListener("hashchange", () => window.location.reload());

  const tab = sessionStore(`deniable/${survey.id}`);
  const fragment = new URLSearchParams(window.location.hash.slice(1));
  // This tab remembers whose page it is for a reload (and for this page's own move to
  // the invitation's version) only: the bare address typed or followed later in the
  // same tab shows no one's reports.
  const navigation = performance.getEntriesByType("navigation")[0];
  const reloaded = Boolean(navigation) && navigation.type === "reload";
  if (!reloaded && !tab.get("carry") && !fragment.get("token") && !fragment.get("transfer")) {
    tab.clear();
  }
  tab.remove("carry");
  if (fragment.get("transfer")) {
    // reports and an unsent credential brought from another device
    const moved = readTransfer(fragment.get("transfer"));
    history.replaceState(null, "", window.location.pathname + window.location.search);
    if (moved) {
      tab.clear();
      tab.set("owner", moved.owner);
      const box = memo(`deniable/${survey.id}/${moved.owner}`);
      if (moved.credential) box.set(`credential/${moved.version}`, moved.credential);
      if (typeof moved.arm === "string") box.set("arm", moved.arm);
      Object.entries(moved.reports).forEach(([key, r]) =>
        memo(`deniable/memo/${moved.owner}`).set(key, r));
      if (moved.version !== survey.version) {
        return goToVersion(moved.version);
      }
    }
  }
  if (fragment.get("token")) {
    // keep the invitation out of the address bar, history and screenshots; this tab's
    // session storage keeps it for a reload (never the server: fragments are not sent)
    const token = fragment.get("token");
    tab.clear();
    tab.set("token", token);
    tab.set("owner", fragment.get("owner") ? `tag:${fragment.get("owner")}` : `token:${await sha256Hex(token)}`);
    tab.set("v", fragment.get("v") || "");
    history.replaceState(null, "", window.location.pathname + window.location.search);
  }
  const token = tab.get("token");
  const linkVersion = Number(tab.get("v") || 0);
  if (linkVersion && linkVersion !== survey.version) {
    return goToVersion(linkVersion); // the version the invitation is bound to
  }
  // Whose reports this page may show: the link's owner; on a survey without invitations,
  // this device. Without a link, nobody's: the bare address shows no one's reports.
  const owner = tab.get("owner") || (survey.requires_invitation ? null : "device");
  const store = memo(`deniable/${survey.id}/${owner}`);
  const reportMemo = memo(`deniable/memo/${owner}`);
  const assignment = owner === null ? { arm: null, groups: {} } : await assign();
  // only this arm's questions, and each group design as this person's group shows it
  survey.questions = survey.questions.map((q) => {
    const arm = survey.arms.find((a) => a.id === assignment.arm);
    const mine = (arm && arm.questions[q.id]) || q;
    const g = assignment.groups[q.id];
    return g === undefined ? mine : { ...mine, ...mine.groups[g], group: g };
  });
  const sentKey = `sent/${survey.version}`;
  const credentialKey = `credential/${survey.version}`;
  const movedKey = `moved/${survey.version}`; // a transfer link was made here
  const requestKey = `request/${survey.version}`;
  let credential = owner && survey.requires_invitation ? store.get(credentialKey) : null;

  document.getElementById("new-respondent").addEventListener("click", () => {
    if (!window.confirm(t("new_respondent_confirm"))) return;
    // this person's unsent invitation, credential and reports stay on the device under
    // their owner (only their own link shows them); this tab forgets them
    if (owner === "device") {
      store.clear();
      reportMemo.clear();
    }
    tab.clear();
    window.location.replace(window.location.pathname + window.location.search);
  });

  // what this person's questions spend (their arm's; the survey's worst case without
  // one): a randomized question its cost, a direct one the server's post-randomization
  const eps = owner === null || !survey.arms.length
    ? Number(survey.total_epsilon)
    : survey.questions.reduce((sum, q) => sum + (q.direct
      ? (q.release ? Number(q.release.epsilon) : 0) : Number(q.cost)), 0);
  const deviceDraws = survey.questions.some((q) => !q.direct);
  const serverDraws = survey.questions.some((q) => q.direct && q.release);
  // nothing to randomize on this device: no coin to offer, and say what is released
  document.getElementById("own-device").hidden = !deviceDraws;
  document.getElementById("budget").textContent = deviceDraws || !serverDraws
    ? t("budget", { times: times(Math.exp(eps)), eps: eps.toFixed(2), limit: survey.privacy_budget })
    : t("budget_released", { times: times(Math.exp(eps)), eps: eps.toFixed(2) });
  const direct = survey.questions.filter((q) => q.direct);
  if (direct.length) {
    // "no one can know your true answer" holds for the randomized questions only
    document.getElementById("how-body").textContent = t("how_body_direct");
    const apart = document.getElementById("direct-apart");
    apart.hidden = false;
    apart.textContent = t("direct_apart", {
      list: direct.map((q) => survey.questions.indexOf(q) + 1).join(", "),
    });
  }
  const worst = document.getElementById("worst");
  worst.textContent = worstCase();
  const proves = randomized().some((q) => answerFactors(q).includes(null));
  worst.className = proves ? "warning-top" : "risk";
  // a report that can prove an answer: "no one can know" would not be true
  if (proves) document.getElementById("how-body").textContent = t("how_body_proof");

  if (survey.closed) {
    const banner = document.getElementById("closed");
    banner.hidden = false;
    banner.textContent = t("closed");
  }
  if (owner === null) {
    // no invitation in this tab: ask for the code; show nothing of anyone
    tokenBox.hidden = false;
    survey.questions.forEach((q, index) => container.appendChild(renderQuestion(q, index, false)));
    lockAll();
    status.textContent = survey.closed ? t("closed") : t("hint_code");
    document.getElementById("token-use").addEventListener("click", async () => {
      const typed = tokenInput.value.trim();
      if (!typed) return;
      tab.set("token", typed);
      tab.set("owner", `token:${await sha256Hex(typed)}`);
      window.location.reload();
    });
    return;
  }
  survey.questions.forEach((q, index) => container.appendChild(renderQuestion(q, index, true)));
  if (store.get(sentKey)) {
    lockAll();
    status.textContent = t("already_sent");
  } else if (survey.closed) {
    lockAll();
  } else if (credential && store.get(movedKey)) {
    waitForOtherDevice();
  } else if (credential) {
    offerTransfer();
  }
  refresh();

  /**
   * This person's arm (once per survey and owner; from a named recipient's owner tag,
   * the same in every wave's link, so the person keeps one arm in every wave and on
   * every device; from an anonymous link's token, one arm per link) and groups (once
   * per question content and owner, as the report, with crypto.getRandomValues), kept
   * on the device.
   */
  async function assign() {
    let arm = store.get("arm");
    if (survey.arms.length && !survey.arms.some((a) => a.id === arm)) {
      // the owner tag (else the invitation) fixes the arm: every device draws the same
      const fixed = owner.startsWith("tag:") ? owner.slice(4) : token;
      const u = fixed ? await deniable.tokenUniform(fixed, survey.id) : deniable.uniform53();
      arm = survey.arms[deniable.pickWeighted(survey.arms.map((a) => a.weight), u)].id;
      store.set("arm", arm);
    }
    const groups = {};
    survey.questions.forEach((base) => {
      const a = survey.arms.find((x) => x.id === arm);
      const q = (a && a.questions[base.id]) || base;
      if (!q.groups.length) return;
      let g = reportMemo.get(`group/${q.memo_key}`);
      if (g !== 0 && g !== 1) {
        g = deniable.pickWeighted([1, 1]);
        reportMemo.set(`group/${q.memo_key}`, g);
      }
      groups[q.id] = g;
    });
    return { arm: survey.arms.length ? arm : null, groups };
  }

  function goToVersion(version) {
    tab.set("carry", "1");
    const query = new URLSearchParams(window.location.search);
    query.set("version", String(version));
    window.location.replace(`${window.location.pathname}?${query}`);
  }

  function readTransfer(text) {
    try {
      const data = JSON.parse(new TextDecoder().decode(deniable.fromB64(text)));
      const ok = typeof data.owner === "string" && Number.isInteger(data.version)
        && data.reports && typeof data.reports === "object";
      return ok ? data : null;
    } catch (e) {
      return null;
    }
  }

  /** A link that carries this person's unsent credential and reports to another device. */
  function transferLink() {
    const mine = {};
    survey.questions.forEach((q) => {
      const r = reportMemo.get(q.memo_key);
      if (r !== null) mine[q.memo_key] = r;
      if (q.group !== undefined) mine[`group/${q.memo_key}`] = q.group;
    });
    const data = {
      owner, version: survey.version, credential, reports: mine, arm: assignment.arm,
    };
    const text = deniable.b64url(new TextEncoder().encode(JSON.stringify(data)));
    return `${window.location.origin}${window.location.pathname}?version=${survey.version}#transfer=${text}`;
  }

  function offerTransfer() {
    if (!credential || store.get(sentKey)) return;
    const box = document.getElementById("transfer-box");
    box.hidden = false;
    const field = document.getElementById("transfer-link");
    document.getElementById("transfer-show").onclick = () => {
      field.value = transferLink();
      field.hidden = false;
      field.select();
      // from now on this device waits for the other one (until "continue here")
      store.set(movedKey, true);
      document.getElementById("moved-box").hidden = false;
      document.getElementById("moved-text").textContent = t("moved_here_after_link");
      document.getElementById("moved-here").onclick = continueHere;
    };
  }

  /**
   * This device made a transfer link: the answers were to be sent from the other
   * device. Say so instead of showing a blank form (nothing is asked of the server:
   * whether the other device sent is learned only if this one tries to send, and is
   * refused), and offer to continue here after all.
   */
  function waitForOtherDevice() {
    lockAll();
    document.getElementById("moved-box").hidden = false;
    document.getElementById("moved-text").textContent = t("moved_elsewhere");
    status.textContent = t("moved_elsewhere_status");
    const here = document.getElementById("moved-here");
    here.disabled = false;
    here.onclick = continueHere;
  }

  function continueHere() {
    store.remove(movedKey);
    window.location.reload(); // a reload keeps this tab's person (tab storage)
  }

  async function postJson(path, body) {
    const res = await fetch(path, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
      credentials: "omit",
      cache: "no-store",
      referrerPolicy: "no-referrer",
    });
    const answer = await res.json().catch(() => ({}));
    if (!res.ok) {
      const code = answer.error && answer.error.code;
      const known = code && `error_${code}` in messages ? t(`error_${code}`) : null;
      const msg = known || (answer.error && answer.error.message) || `HTTP ${res.status}`;
      const error = new Error(msg);
      error.code = code;
      throw error;
    }
    return answer;
  }

  /**
   * The credential, spending the invitation now if this person has none yet (their
   * first draw, or sending reports drawn earlier). A dropped connection is retried with
   * the same blinded request, so it does not burn the invitation.
   */
  async function ensureCredential() {
    if (!survey.requires_invitation || credential) return true;
    if (!token) {
      tokenBox.hidden = false;
      status.textContent = t("hint_code");
      return false;
    }
    status.textContent = t("exchanging");
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        credential = await deniable.obtainCredential(
          survey, token, postJson, store.get(requestKey), (req) => store.set(requestKey, req),
          assignment.arm,
        );
        store.set(credentialKey, credential);
        store.remove(requestKey);
        status.textContent = t("exchanged");
        offerTransfer();
        return true;
      } catch (e) {
        if (e instanceof TypeError && attempt < 2) { // no answer: ask again, same request
          await new Promise((resolve) => setTimeout(resolve, 500 * (attempt + 1)));
          continue;
        }
        status.textContent = e instanceof TypeError
          ? t("unreachable_exchange")
          : e.code === "invitation_used"
            ? t("used_elsewhere")
            : t("exchange_failed", { message: e.message });
        if (e.code === "invitation_used") lockAll();
        return false;
      } finally {
        refresh();
      }
    }
    return false;
  }

  submit.addEventListener("click", async () => {
    const body = { version: survey.version, reports: { ...reports } };
    if (assignment.arm !== null) body.arm = assignment.arm;
    if (Object.keys(assignment.groups).length) body.groups = { ...assignment.groups };
    submit.disabled = true;
    if (survey.requires_invitation) {
      if (!(await ensureCredential())) { refresh(); return; }
      body.credential = credential;
    }
    status.textContent = t("sending");
    try {
      await postJson(`/api/surveys/${encodeURIComponent(survey.id)}/responses`, body);
      finishSent(t("sent"));
    } catch (e) {
      if (e.code === "invalid_credential" && /already used/.test(e.message)) {
        finishSent(t("sent_elsewhere")); // sent from the other device already
        return;
      }
      status.textContent = e instanceof TypeError // fetch found no server
        ? t("unreachable")
        : t("not_stored", { message: e.message });
      submit.disabled = false;
    }
  });

  /** Where a panel question's drawn report waits for sending (this version only). */
  function waveKey(q) {
    return `wave/${survey.version}/${q.id}`;
  }

  /** This owner's secret of permanent reports (drawn on first use, kept). */
  function panelSecret() {
    let secret = reportMemo.get("panel/secret");
    if (typeof secret !== "string" || secret.length !== 43) {
      secret = deniable.newSecret();
      reportMemo.set("panel/secret", secret);
    }
    return secret;
  }

  function finishSent(message) {
    store.set(sentKey, true);
    survey.questions.forEach((q) => { if (q.panel) store.remove(waveKey(q)); });
    store.remove(credentialKey); // spent
    store.remove(movedKey);
    document.getElementById("moved-box").hidden = true;
    tab.remove("token");
    document.getElementById("transfer-box").hidden = true;
    lockAll();
    status.textContent = message;
  }

  function renderQuestion(q, index, active) {
    const fs = document.createElement("fieldset");
    fs.id = `q-${q.id}`;
    const legend = document.createElement("legend");
    legend.textContent = `${index + 1}. ${q.text}`;
    fs.appendChild(legend);
    if (q.innocuous_question) {
      const other = document.createElement("p");
      other.className = "innocuous";
      other.textContent = t("innocuous", { question: q.innocuous_question });
      fs.appendChild(other);
    }

    if (q.direct) return renderDirect(q, fs);
    const choiceGroup = document.createElement("div");
    const numeric = q.numeric || null;
    let numberInput = null;
    if (numeric) {
      // a number in [low, high]; like a choice, it never leaves this page
      numberInput = numberField(q, choiceGroup);
    } else {
      choiceGroup.setAttribute("role", "radiogroup");
      choiceGroup.setAttribute("aria-label", t("true_answer_label"));
      const hint = document.createElement("p");
      hint.className = "risk";
      hint.textContent = t("true_answer");
      choiceGroup.appendChild(hint);
      const factors = answerFactors(q);
      q.choices.forEach((label, a) => {
        const option = radio(`truth-${q.id}`, a, label, `truth-${q.id}-${a}`);
        if (factors[a] === null) {
          // some report proves this answer: say so beside it, whatever `sensitive` says
          const warn = document.createElement("strong");
          warn.className = "exposed";
          warn.textContent = ` (${t("answer_exposed")})`;
          option.appendChild(warn);
        }
        choiceGroup.appendChild(option);
      });
    }
    fs.appendChild(choiceGroup);

    const mode = document.createElement("div");
    mode.className = "mode";
    const draw = button(t("draw"), "draw");
    const physical = button(t("physical"), "physical", true);
    mode.append(draw, physical);
    if (q.by_hand === false) {
      physical.hidden = true; // no dice or coins give this design's chances
      const note = document.createElement("p");
      note.className = "risk";
      note.textContent = q.instructions;
      mode.appendChild(note);
    }
    fs.appendChild(mode);

    const physicalBox = document.createElement("div");
    physicalBox.hidden = true;
    const instr = document.createElement("p");
    instr.textContent = q.instructions;
    physicalBox.appendChild(instr);
    const outcome = document.createElement("div");
    outcome.setAttribute("role", "radiogroup");
    outcome.setAttribute("aria-label", t("outcome_label"));
    q.reports.forEach((label, r) => {
      outcome.appendChild(radio(`outcome-${q.id}`, r, label, `outcome-${q.id}-${r}`));
    });
    physicalBox.appendChild(outcome);
    const useOutcome = button(t("use_outcome"), "use-outcome");
    physicalBox.appendChild(useOutcome);
    fs.appendChild(physicalBox);

    const result = fs.appendChild(reportLine(q));

    if (q.panel) {
      const waves = document.createElement("p");
      waves.className = "risk panel-note";
      waves.textContent = q.panel.note;
      fs.appendChild(waves);
    }
    const risk = document.createElement("p");
    risk.className = "risk";
    risk.textContent = plainRisk(q);
    fs.appendChild(risk);
    const details = document.createElement("details");
    const summary = document.createElement("summary");
    summary.textContent = t("details");
    const technical = document.createElement("p");
    technical.className = "risk";
    technical.textContent = explainRisk(q);
    details.append(summary, technical);
    fs.appendChild(details);

    draw.addEventListener("click", async () => {
      // the invitation is spent on the first draw (opening the page spent nothing)
      if (!(await ensureCredential())) return;
      if (numeric) {
        const value = readNumber(q, numberInput, result);
        if (value === null) return;
        const z = (value - numeric.low) / (numeric.high - numeric.low);
        numberInput.value = ""; // the true answer is not kept on the page either
        if (q.panel) { // rounded at random to a bound, which both layers randomize
          const bound = deniable.uniform53() < z ? 1 : 0;
          setReport(q, await deniable.panelReport(q, bound, panelSecret()), t("how_device"));
          return;
        }
        const column = deniable.numericColumn(q.columns, z);
        setReport(q, deniable.drawReport(column, deniable.uniform53()), t("how_device"));
        return;
      }
      const checked = fs.querySelector(`input[name="truth-${q.id}"]:checked`);
      if (!checked) {
        result.hidden = false;
        result.textContent = t("choose_first");
        return;
      }
      const truth = Number(checked.value);
      const report = q.panel
        ? await deniable.panelReport(q, truth, panelSecret())
        : deniable.drawReport(q.columns[truth], deniable.uniform53());
      checked.checked = false; // the true answer is not kept on the page either
      setReport(q, report, t("how_device"));
    });
    physical.addEventListener("click", () => {
      const on = physicalBox.hidden; // switching the physical mode on
      physicalBox.hidden = !on;
      choiceGroup.hidden = on;
      draw.hidden = on;
      physical.textContent = on ? t("physical_back") : t("physical");
    });
    useOutcome.addEventListener("click", async () => {
      const checked = fs.querySelector(`input[name="outcome-${q.id}"]:checked`);
      if (!checked) return;
      if (!(await ensureCredential())) return;
      setReport(q, Number(checked.value), t("how_physical"));
    });

    const saved = !active ? null : q.panel ? store.get(waveKey(q)) : reportMemo.get(q.memo_key);
    if (saved !== null && Number.isInteger(saved) && saved >= 0 && saved < q.reports.length) {
      queueMicrotask(() => setReport(q, saved, t("how_memo")));
    }
    return fs;
  }

  /**
   * A direct question (sent as given): the choices, a plain note that the answer is not
   * randomized and is seen as given, and a button that takes it. Never memoized. A list
   * experiment is one: its group's list, the counts, and the note that 0 or every item
   * can be seen for certain.
   */
  function renderDirect(q, fs) {
    // a list experiment: the list this person's group sees; only the count is sent
    if (q.list && q.items) {
      const items = document.createElement("ul");
      items.className = "list-items";
      for (const text of q.items) {
        const li = document.createElement("li");
        li.textContent = text;
        items.appendChild(li);
      }
      fs.appendChild(items);
    }
    const note = document.createElement("p");
    note.className = q.list ? "direct list-note" : "direct";
    // a direct answer the server post-randomizes before its first write says so
    const release = q.release && t("release_note", { eps: Number(q.release.epsilon).toFixed(2) });
    note.textContent = q.list ? q.list_note : release || t("direct_note");
    fs.appendChild(note);
    if (q.list && release) {
      const more = document.createElement("p");
      more.className = "direct release-note";
      more.textContent = release;
      fs.appendChild(more);
    }
    if (q.bins) return renderBinned(q, fs);
    const choiceGroup = document.createElement("div");
    choiceGroup.setAttribute("role", "radiogroup");
    choiceGroup.setAttribute("aria-label", q.text);
    q.choices.forEach((label, a) => {
      choiceGroup.appendChild(radio(`truth-${q.id}`, a, label, `truth-${q.id}-${a}`));
    });
    if (q.allow_no_answer) {
      choiceGroup.appendChild(radio(`truth-${q.id}`, "none", t("no_answer"), `truth-${q.id}-none`));
    }
    fs.appendChild(choiceGroup);
    const take = button(t("use_answer"), "use-answer");
    fs.appendChild(take);
    const result = fs.appendChild(reportLine(q));
    take.addEventListener("click", async () => {
      const checked = fs.querySelector(`input[name="truth-${q.id}"]:checked`);
      if (!checked) {
        result.hidden = false;
        result.textContent = t("choose_first");
        return;
      }
      if (!(await ensureCredential())) return;
      setReport(q, checked.value === "none" ? null : Number(checked.value), t("how_direct"));
    });
    return fs;
  }

  /** A labelled number field for a question's range, appended to ``box``; the input. */
  function numberField(q, box) {
    const numeric = q.numeric;
    const label = document.createElement("label");
    label.htmlFor = `truth-${q.id}`;
    // a direct question sends the range the number falls in; a randomized one, nothing of it
    label.textContent = t(q.direct ? "number_label_direct" : "number_label", {
      low: num(numeric.low), high: num(numeric.high), unit: numeric.unit ? ` ${numeric.unit}` : "",
    });
    const input = document.createElement("input");
    Object.assign(input, {
      type: "number", id: `truth-${q.id}`, name: `truth-${q.id}`, min: String(numeric.low),
      max: String(numeric.high), step: "any", autocomplete: "off",
    });
    input.inputMode = "decimal";
    box.className = "number";
    box.append(label, input);
    return input;
  }

  /** The number entered, or null (saying so on the ``result`` line) if not in range. */
  function readNumber(q, input, result) {
    const { low, high } = q.numeric;
    const value = input.value.trim() === "" ? NaN : Number(input.value);
    if (Number.isFinite(value) && value >= low && value <= high) return value;
    result.hidden = false;
    result.textContent = t("number_invalid", { low: num(low), high: num(high) });
    return null;
  }

  /** The (hidden) line that will say what the server receives for a question. */
  function reportLine(q) {
    const result = document.createElement("p");
    result.className = "report";
    result.id = `report-${q.id}`;
    result.setAttribute("aria-live", "polite");
    result.hidden = true;
    return result;
  }

  /**
   * A direct numeric question: a number in [low, high], sent as the bin it falls in
   * (bins[i] <= value < bins[i + 1], the last bin closed at high).
   */
  function renderBinned(q, fs) {
    const input = numberField(q, fs.appendChild(document.createElement("div")));
    const take = fs.appendChild(button(t("use_answer"), "use-answer"));
    const skip = q.allow_no_answer ? fs.appendChild(button(t("no_answer"), "no-answer", true)) : null;
    const result = fs.appendChild(reportLine(q));
    take.addEventListener("click", async () => {
      const value = readNumber(q, input, result);
      if (value === null) return;
      if (!(await ensureCredential())) return;
      let bin = 0;
      while (bin < q.bins.length - 2 && value >= q.bins[bin + 1]) bin += 1;
      setReport(q, bin, t("how_direct"));
    });
    if (skip) {
      skip.addEventListener("click", async () => {
        if (!(await ensureCredential())) return;
        setReport(q, null, t("how_direct"));
      });
    }
    return fs;
  }

  /** The questions whose answers are randomized (not asked directly). */
  function randomized() {
    return survey.questions.filter((q) => !q.direct);
  }

  function setReport(q, report, how) {
    reports[q.id] = report;
    // a direct answer is never kept; a panel question's report until it is sent
    if (q.panel) store.set(waveKey(q), report);
    else if (!q.direct) reportMemo.set(q.memo_key, report);
    const fs = document.getElementById(`q-${q.id}`);
    fs.querySelectorAll("input, button").forEach((el) => (el.disabled = true));
    const result = document.getElementById(`report-${q.id}`);
    result.hidden = false;
    result.textContent = report === null
      ? t("no_answer_shown")
      : q.direct
        ? t("direct_shown", { report: q.reports[report] })
        : t("report_shown", { report: q.reports[report], how });
    result.dataset.report = String(report);
    refresh();
  }

  function refresh() {
    const missing = survey.questions.filter((q) => !(q.id in reports));
    const sent = store.get(sentKey) === true;
    submit.disabled = missing.length > 0 || sent || Boolean(survey.closed) || owner === null;
    const hint = document.getElementById("hint");
    const waiting = Boolean(credential) && store.get(movedKey) === true && !sent;
    hint.textContent = sent || waiting || survey.closed || owner === null ? "" : missing.length
      ? t("hint_missing", { list: missing.map((q) => survey.questions.indexOf(q) + 1).join(", ") })
      : survey.requires_invitation && !credential && !token
        ? t("hint_code")
        : "";
  }

  function lockAll() {
    container.querySelectorAll("input, button").forEach((el) => (el.disabled = true));
    submit.disabled = true;
  }

  // the plain-words disclosure: web/explain.js, shared with the embeddable component
  function answerFactors(q) {
    return globalThis.deniableExplain.answerFactors(q);
  }

  function finiteFactor(q) {
    return globalThis.deniableExplain.finiteFactor(q);
  }

  /** The worst case over the randomized questions, for the top of the page. */
  function worstCase() {
    for (const [n, q] of survey.questions.entries()) {
      if (q.direct) continue; // listed apart: sent as given
      const exposed = answerFactors(q).findIndex((x) => x === null);
      if (exposed >= 0) return t("worst_exposed", { n: n + 1, answer: q.choices[exposed] });
    }
    if (!randomized().length) return t("worst_none");
    return t("worst_odds", { times: times(Math.max(...randomized().map(finiteFactor))) });
  }

  function plainRisk(q) {
    return globalThis.deniableExplain.plainRisk(q, t, survey.lang);
  }

  function times(factor) {
    return globalThis.deniableExplain.times(factor, t, survey.lang);
  }

  function explainRisk(q) {
    return globalThis.deniableExplain.explainRisk(q, t, survey.lang);
  }

  function num(x) {
    return globalThis.deniableExplain.num(x, survey.lang);
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

  async function sha256Hex(text) {
    const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
    return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
  }

  function sessionStore(prefix) {
    let ss = null;
    try { ss = window.sessionStorage; } catch (e) { ss = null; }
    const mem = {};
    return {
      get(key) { return ss ? ss.getItem(`${prefix}/${key}`) : (mem[key] ?? null); },
      set(key, value) { if (ss) ss.setItem(`${prefix}/${key}`, value); else mem[key] = value; },
      remove(key) { if (ss) ss.removeItem(`${prefix}/${key}`); else delete mem[key]; },
      clear() {
        if (!ss) return;
        Object.keys(ss).filter((k) => k.startsWith(`${prefix}/`)).forEach((k) => ss.removeItem(k));
      },
    };
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
      remove(key) {
        if (ls) ls.removeItem(`${prefix}/${key}`); else delete mem[key];
      },
      clear() {
        if (ls) {
          Object.keys(ls).filter((k) => k.startsWith(`${prefix}/`)).forEach((k) => ls.removeItem(k));
        } else {
          Object.keys(mem).forEach((k) => delete mem[k]);
        }
      },
    };
  }
})();
