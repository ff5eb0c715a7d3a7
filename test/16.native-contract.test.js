"use strict";

// Issue 32: the native contract's tables agree. The raw result of a run is
// laid out by one table (csrc/napi/raw-result.h): the addon exports its
// names, lib/binding.js makes its object from them, and types/binding.d.ts
// must declare exactly those fields.
const assert = require("assert");
const fs = require("fs");
const path = require("path");
const { execFileSync } = require("child_process");
const h = require("./lib/harness");
const binding = require("../lib/binding");

/** The fields of `interface name` in a .d.ts, in order. */
function interfaceFields(file, name) {
  const src = fs.readFileSync(file, "utf8");
  const start = src.indexOf(`export interface ${name} {`);
  assert.ok(start >= 0, `${name} is not in ${file}`);
  const body = src.slice(start, src.indexOf("\n}", start));
  return [...body.matchAll(/^ {2}([A-Za-z_$][\w$]*)\??:/gm)].map((m) => m[1]);
}

describe("the native contract (issue 32)", function () {
  it("RawRunResult in types/binding.d.ts has exactly the fields of csrc/napi/raw-result.h", function () {
    const declared = interfaceFields(path.join(h.repo, "types/binding.d.ts"), "RawRunResult");
    assert.deepStrictEqual([...declared].sort(), [...binding.RAW_RESULT_FIELDS].sort());
    const table = fs.readFileSync(path.join(h.repo, "csrc/napi/raw-result.h"), "utf8");
    const inTable = [...table.matchAll(/^ {2}X\((\w+),/gm)].map((m) => m[1]);
    assert.deepStrictEqual(inTable, binding.RAW_RESULT_FIELDS, "the addon exports the table's names");
    assert.deepStrictEqual(inTable.slice(-2), ["stdout", "stderr"], "the output comes last");
  });

  it("the Release addon has none of the test natives; the build the tests load has them all", function () {
    this.timeout(30000);
    const natives = ["liveBoxes", "tailBoxes", "spareFds", "cancelledGroups", "pendingCloses"];
    const release = path.join(h.repo, "build", "Release", "kern_sandbox.node");
    if (!fs.existsSync(release)) return h.skip(this, "build/Release is not built (npm run build)");
    // In a child: this process has loaded its own build under the same
    // module name; the Release file is loaded as is, with nothing set up.
    const exported = JSON.parse(execFileSync(process.execPath, ["-e",
      `process.stdout.write(JSON.stringify(Object.keys(require(${JSON.stringify(release)}))))`],
    { encoding: "utf8", env: { ...process.env, KERN_SANDBOX_BUILD: "" } }));
    assert.ok(exported.includes("wsOpen") && exported.includes("RAW_RESULT_FIELDS"),
      `positive control: the child did load the addon (${exported.join(", ")})`);
    assert.deepStrictEqual(natives.filter((n) => exported.includes(n)), [],
      "test natives in the Release build");
    assert.notStrictEqual(binding.flavour, "Release", "the suite runs on a build with the test natives");
    assert.deepStrictEqual(natives.filter((n) => typeof binding[n] !== "function"), [],
      `the ${binding.flavour} build lacks test natives`);
  });
});
