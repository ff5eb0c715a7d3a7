"use strict";

// Issue 32: the native contract's tables agree. The raw result of a run is
// laid out by one table (csrc/napi/raw-result.h): the addon exports its
// names, lib/binding.js makes its object from them, and types/binding.d.ts
// must declare exactly those fields.
const assert = require("assert");
const fs = require("fs");
const path = require("path");
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
});
