// jsPsych 8 plugin "deniable-rr": one randomized question of a deniable survey file,
// drawn in the participant's browser by deniable's component (component.js). An ES
// module; its data holds the report code, the design's digest and the component's
// version, never the true answer, the die or the coin. Licence: the project's.
//
// In a page, load jsPsych's browser build first (it defines jsPsychModule), then import
// this module: deniable embed jspsych writes an experiment.html that does both. In Node
// or a bundler (import "deniable-rr/jspsych"), jsPsych comes from the "jspsych" package.
import { COMPONENT_VERSION, mount } from "./component.js";
import { drawReport, uniform53 } from "./randomizer.js";

const { ParameterType } = globalThis.jsPsychModule ?? (await import("jspsych"));

const info = {
  name: "deniable-rr",
  version: COMPONENT_VERSION,
  parameters: {
    /** The question as deniable's respondent view serves it (deniable-questions.js). */
    question: { type: ParameterType.OBJECT, default: undefined },
    /** The message catalog of the survey's language (deniable-questions.js). */
    messages: { type: ParameterType.OBJECT, default: {} },
    /** The language's code, for numbers. */
    lang: { type: ParameterType.STRING, default: "en" },
    /** A participant id: with it a panel question keeps its permanent layer in localStorage. */
    participant: { type: ParameterType.STRING, default: null },
    /** The label of the button that ends the trial once the report is drawn (default:
     * the survey language's word, messages.continue: "Continue", "Weiter"). */
    button_label: { type: ParameterType.STRING, default: null },
  },
  data: {
    /** The question's id in the survey file. */
    question: { type: ParameterType.STRING },
    /** The report code (0..m-1); never the true answer. A list experiment: the count. */
    report: { type: ParameterType.INT },
    /** A list experiment's group (0: the control list, 1: with the sensitive item), drawn
     * on the device; null for a randomized question. */
    group: { type: ParameterType.INT },
    /** SHA-256 of the question's design: deniable analyze --survey checks it. */
    digest: { type: ParameterType.STRING },
    /** The component's version. */
    component_version: { type: ParameterType.STRING },
    /** Milliseconds from the question's display to the report. */
    rt: { type: ParameterType.INT },
  },
  citations: {
    apa: "Warner, S. L. (1965). Randomized response: A survey technique for eliminating evasive answer bias. Journal of the American Statistical Association, 60(309), 63-69.",
    bibtex: "@article{warner1965, author = {Warner, Stanley L.}, title = {Randomized Response: A Survey Technique for Eliminating Evasive Answer Bias}, journal = {Journal of the American Statistical Association}, volume = {60}, number = {309}, pages = {63--69}, year = {1965}}",
  },
};

class DeniableRrPlugin {
  static info = info;

  constructor(jsPsych) {
    this.jsPsych = jsPsych;
  }

  trial(display_element, trial) {
    const start = performance.now();
    const storage = trial.participant ? globalThis.localStorage : null;
    mount(display_element, trial.question, {
      messages: trial.messages, lang: trial.lang, participant: trial.participant, storage,
    }).then((result) => {
      const rt = Math.round(performance.now() - start);
      const next = document.createElement("button");
      next.type = "button";
      next.className = "jspsych-btn";
      next.textContent = trial.button_label ?? trial.messages?.continue ?? "Continue";
      next.addEventListener("click", () => this.jsPsych.finishTrial({
        question: result.question, report: result.report, group: result.group ?? null,
        digest: result.digest, component_version: result.version, rt,
      }));
      display_element.appendChild(next);
    });
  }

  simulate(trial, simulation_mode, simulation_options, load_callback) {
    if (simulation_mode === "visual") {
      this.trial(this.jsPsych.getDisplayElement(), trial);
      load_callback();
      const el = this.jsPsych.getDisplayElement();
      const truth = simulation_options?.data?.truth ?? 0;
      const radios = el.querySelectorAll("fieldset.deniable-rr div[role=radiogroup] input");
      this.jsPsych.pluginAPI.clickTarget(radios[truth], 200);
      this.jsPsych.pluginAPI.clickTarget(el.querySelector("fieldset.deniable-rr button"), 400);
      setTimeout(() => this.jsPsych.pluginAPI.clickTarget(el.querySelector(".jspsych-btn")), 700);
      return;
    }
    // data-only: a report of the given (or a uniformly drawn) true answer, by the design;
    // a list experiment: a group drawn with equal chances and a count its list allows
    const q = trial.question;
    let report;
    let group = null;
    if (q.list) {
      group = uniform53() < 0.5 ? 0 : 1;
      const allowed = q.groups[group].choices.length;
      report = Math.min(simulation_options?.data?.truth ?? Math.floor(uniform53() * allowed), allowed - 1);
    } else {
      const truth = simulation_options?.data?.truth ?? Math.floor(uniform53() * q.choices.length);
      report = drawReport(q.columns[truth], uniform53());
    }
    const data = this.jsPsych.pluginAPI.mergeSimulationData({
      question: q.id, report, group, digest: q.design_digest,
      component_version: COMPONENT_VERSION, rt: 3000,
    }, { ...simulation_options, data: { ...(simulation_options?.data || {}), truth: undefined } });
    delete data.truth;
    load_callback();
    this.jsPsych.finishTrial(data);
  }
}

export default DeniableRrPlugin;
