"use strict";

// Issue 16, item 5: the equality table against the double. Every program's
// result is the same, field by field (durationMs and usage aside), with the
// workload as the box's command (0.1.1's argv), on a cold box with the
// in-box init, and on a prewarmed box; and in the prewarmed mode every call
// did run in a prewarmed box. test/integration/fast-boxes.test.js runs the
// same table against a real kern.
const assert = require("assert");
const h = require("./lib/harness");
const { PROGRAMS, runTable } = require("./lib/equality");

// The table runs once (its sessions and pool drive the modes); each program
// is then a test of its own, so a difference names its program.
describe("the equality table (issue 16)", function () {
  let table = null;
  before(async function () {
    this.timeout(h.startWait(240000));
    assert.ok(PROGRAMS.length >= 40);
    table = await runTable({ kinds: ["python", "sh", "node"], readyMs: 150 });
  });
  for (const p of PROGRAMS) {
    it(`${p.kind}: ${p.name}: identical direct, cold with the init, and prewarmed`, function () {
      const { results, prewarmed } = table;
      const d = results.direct[p.name];
      assert.deepStrictEqual(results.cold[p.name], d, `${p.name}: cold with the init differs`);
      assert.deepStrictEqual(results.prewarmed[p.name], d, `${p.name}: prewarmed differs`);
      assert.strictEqual(prewarmed[p.name], true, `${p.name} did not run in a prewarmed box`);
    });
  }
});
