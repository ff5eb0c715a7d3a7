"use strict";

// Issue 15, part 3: every program in examples/ runs, against the kern test
// double, and prints what it says it does (integration/examples.test.js
// runs them against a real kern).
const assert = require("assert");
const fs = require("fs");
const path = require("path");
const h = require("./lib/harness");
const { EXPECT, runExample } = require("./lib/examples");

describe("examples (issue 15)", function () {
  this.timeout(120000);

  it("examples/ holds exactly the programs this test knows", function () {
    const files = fs.readdirSync(path.join(h.repo, "examples")).filter((f) => f.endsWith(".js")).sort();
    assert.deepStrictEqual(files, Object.keys(EXPECT).sort());
  });

  for (const [name, patterns] of Object.entries(EXPECT)) {
    it(`${name} runs and prints what it promises`, function () {
      const r = runExample(name, { KERN_BIN: h.fakeKern() });
      assert.strictEqual(r.status, 0, `${name}: exit ${r.status}\n${r.stdout}\n${r.stderr}`);
      for (const re of patterns) assert.match(r.stdout, re, name);
    });
  }
});
