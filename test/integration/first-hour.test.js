"use strict";

// Issue 15 against a real kern: stderr is the workload's own, what kern's
// notices said arrives as result.limits and one process warning, kern's
// error lines still make startup_failed, and doctor() agrees with the boxes.
const assert = require("assert");
const { spawnSync } = require("child_process");
const h = require("../lib/harness");
const { realKern, why } = require("../lib/realkern");

describe("integration: the first hour with a real kern (issue 15)", function () {
  this.timeout(120000);
  beforeEach(function () {
    if (why !== null) h.skipHost(this, why);
  });

  it("stderr === \"x\\n\", exit 3, no fault, limits as kern reported them, one warning per " +
    "process where the cap is not enforced", function () {
    const script = `
      const kern = require(${JSON.stringify(h.repo)});
      const warnings = [];
      process.on("warning", (w) => warnings.push(w.code));
      (async () => {
        const rs = [];
        for (let i = 0; i < 3; i++)
          rs.push(await kern.runCode("import sys; print('x', file=sys.stderr); sys.exit(3)"));
        await new Promise((r) => setImmediate(r));
        console.log(JSON.stringify({ rs: rs.map((r) => ({ stderr: r.stderr, exitCode: r.exitCode,
          fault: r.fault, limits: r.limits })), warnings }));
      })();`;
    const out = spawnSync(process.execPath, ["--no-warnings", "-e", script],
      { encoding: "utf8", timeout: 60000, env: { ...process.env, KERN_BIN: realKern } });
    assert.strictEqual(out.status, 0, out.stderr);
    const { rs, warnings } = JSON.parse(out.stdout);
    for (const r of rs) {
      assert.strictEqual(r.stderr, "x\n");
      assert.strictEqual(r.exitCode, 3);
      assert.strictEqual(r.fault, null);
      assert.ok(["enforced", "not_enforced"].includes(r.limits.memory), JSON.stringify(r.limits));
    }
    const unenforced = rs[0].limits.memory === "not_enforced";
    assert.deepStrictEqual(warnings, unenforced ? ["KERN_SANDBOX_MEMORY_NOT_ENFORCED"] : []);
    h.note(`this host: limits.memory ${rs[0].limits.memory}, ${warnings.length} warning(s) in 3 calls`);
  });

  it("a missing image is still startup_failed with kern's error line", async function () {
    const saved = process.env.KERN_BIN;
    process.env.KERN_BIN = realKern;
    try {
      const kern = require("../..");
      const r = await kern.runCode("print(1)", { image: "ks-no-such-image:latest" });
      assert.strictEqual(r.fault && r.fault.type, "startup_failed", JSON.stringify(r));
      assert.match(r.fault.message, /^error:/);
      assert.strictEqual(r.limits, null);
    } finally {
      process.env.KERN_BIN = saved;
    }
  });

  it("doctor() with this kern: a box can run, and its cgroup check matches the boxes' limits",
    function () {
      const out = spawnSync(process.execPath, [require("path").join(h.repo, "bin", "kern-sandbox.js"),
        "doctor", "--json"], { encoding: "utf8", timeout: 60000, env: { ...process.env, KERN_BIN: realKern } });
      assert.strictEqual(out.status, 0, out.stdout + out.stderr);
      const report = JSON.parse(out.stdout);
      const c = Object.fromEntries(report.checks.map((x) => [x.id, x]));
      assert.strictEqual(report.ok, true);
      assert.ok(c.kern.detail.startsWith(realKern), c.kern.detail);
      assert.strictEqual(c.box.ok, true, c.box.detail);
      assert.strictEqual(c.image.ok, true);
      assert.ok(["enforced", "not_enforced"].includes(report.controllers.memory));
      h.note(`doctor: ${c.cgroup.detail}`);
    });
});
