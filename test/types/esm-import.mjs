// ESM interop smoke check: lib/index.js is CommonJS, so Node must expose its exports both as the
// default export (the whole module.exports object) and as named exports (via cjs-module-lexer, which
// recognises the `module.exports = { ... }` literal form). Prints a JSON summary on stdout.
import * as ns from "../../lib/index.js";
import def from "../../lib/index.js";

const summary = {
  named: Object.keys(ns).sort(),
  defaultKeys: Object.keys(def).sort(),
  version: ns.version,
};
process.stdout.write(JSON.stringify(summary) + "\n");
