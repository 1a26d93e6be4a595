// The respondent page's entry to the shared modules: a module script, run before
// respond.js (module and deferred scripts run in document order), that hands it the one
// source of its draws (randomizer.js) and of its plain-words disclosure (explain.js).
import * as explain from "./explain.js";
import * as randomizer from "./randomizer.js";

globalThis.deniableRandomizer = randomizer;
globalThis.deniableExplain = explain;
