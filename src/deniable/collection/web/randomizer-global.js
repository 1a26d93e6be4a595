// The respondent page's entry to the randomizer: a module script, run before respond.js
// (module and deferred scripts run in document order), that hands it the one source.
import * as randomizer from "./randomizer.js";

globalThis.deniableRandomizer = randomizer;
