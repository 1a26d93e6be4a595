// Build the npm package deniable-rr from the one source: the browser modules that the
// Python package serves (src/deniable/collection/respondent/web/) are copied unchanged into dist/,
// with the project's LICENSE. Run by `npm run build`, `npm test` and `npm pack`.
import { copyFileSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const web = join(here, "..", "src", "deniable", "collection", "respondent", "web");
mkdirSync(join(here, "dist"), { recursive: true });
for (const name of ["component.js", "randomizer.js", "explain.js", "plugin-deniable-rr.js"]) {
  copyFileSync(join(web, name), join(here, "dist", name));
}
copyFileSync(join(here, "..", "LICENSE"), join(here, "LICENSE"));
