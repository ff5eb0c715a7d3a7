"use strict";

// Issue 33: the init's STARTED frame (csrc/init/protocol.h), sent once the
// workload's exec succeeded, seen in the raw result as `started`, and only
// for a process's box (spawn): a cold one (`ks-init --exec --started`) and
// a prewarmed one (`--wait`, claimed with a SPEC that asks for it) send it;
// an exec that fails does not, nor a claimed box whose waiting child never
// took the call, nor any plain call (a call pays for no frame it does not
// use). Against the kern test double, which runs the real ks-init.
const assert = require("assert");
const { Sandbox, withSandbox } = require("..");
const binding = require("../lib/binding");
const h = require("./lib/harness");

/** Runs fn with every raw result of startBox and claimBox recorded, in order. */
async function recordingRaw(fn) {
  const orig = { startBox: binding.startBox, claimBox: binding.claimBox };
  const raws = [];
  for (const name of Object.keys(orig)) {
    binding[name] = function (...args) {
      return orig[name].apply(this, args).then((raw) => {
        raws.push({ entry: name, raw });
        return raw;
      });
    };
  }
  try {
    await fn(raws);
  } finally {
    Object.assign(binding, orig);
  }
  return raws;
}

describe("the init's STARTED frame (issue 33)", function () {
  this.timeout(60000);

  it("a cold process box says STARTED; an exec that fails does not, nor a call", async function () {
    const sbx = await new Sandbox({ prewarm: 0 }).open();
    try {
      await recordingRaw(async (raws) => {
        const wait = async (argv, opts) => (await sbx.spawn(argv, opts)).wait();
        let r = await wait(["true"]);
        assert.strictEqual(r.exitCode, 0);
        r = await wait(["sh", "-c", "sleep 0.2; exit 3"]);
        assert.strictEqual(r.exitCode, 3);
        r = await wait(["/no/such/command"]);
        assert.strictEqual(r.exitCode, 127, r.stderr);
        r = await wait(["true"], { stdin: false }); // --exec --started, no --stdin
        assert.strictEqual(r.exitCode, 0);
        r = await sbx.run(["true"]); // a call: no STARTED
        assert.strictEqual(r.exitCode, 0);
        r = await sbx.run(["cat"], { stdin: "x" });
        assert.strictEqual(r.stdout, "x");
        assert.deepStrictEqual(raws.map((x) => [x.entry, x.raw.prewarmed, x.raw.started]), [
          ["startBox", false, true],
          ["startBox", false, true],
          ["startBox", false, false],
          ["startBox", false, true],
          ["startBox", false, false],
          ["startBox", false, false],
        ]);
        // Positive control: the frame came from the init the argv asked.
        assert.ok(h.recordedArgv().includes("--exec"), h.recordedArgv().join(" "));
      });
    } finally {
      await sbx.close();
    }
  });

  it("a prewarmed process box says STARTED once its waiting child took the call", async function () {
    await withSandbox({ prewarm: 1 }, async (s) => {
      await s.run(["true"]); // the pool learns the kind: exec boxes are parked from here on
      await new Promise((r) => setImmediate(r));
      await recordingRaw(async (raws) => {
        for (const [argv, code] of [[["true"], 0], [["sh", "-c", "exit 4"], 4], [["/no/such/command"], 127]]) {
          await h.poolReady(s);
          const r = await (await s.spawn(argv)).wait();
          assert.strictEqual(r.exitCode, code, r.stderr);
        }
        await h.poolReady(s);
        assert.strictEqual((await s.run(["true"])).exitCode, 0); // a claimed call: no STARTED
        const claims = raws.filter((x) => x.entry === "claimBox" && x.raw.prewarmed);
        assert.strictEqual(claims.length, 4, JSON.stringify(raws.map((x) => [x.entry, x.raw.prewarmed, x.raw.exitCode])));
        assert.deepStrictEqual(claims.map((x) => [x.raw.taken, x.raw.started]), [
          [true, true],
          [true, true],
          [true, false], // taken, but its exec failed: no STARTED
          [true, false], // a call's SPEC does not ask for it
        ]);
      });
    });
  });

  it("a claimed box whose waiting child never took the call says nothing", async function () {
    const ws = h.tmpDir("started-claim-");
    await withSandbox({ prewarm: 1, workspace: ws }, async (s) => {
      await s.run(["true"]);
      await h.poolReady(s);
      // (The pool's box is up once its init waits; the call's own box may
      // still be going away meanwhile.)
      const parked = () => h.processes().filter((p) => p.state !== "Z" && p.argv.includes("ks-init") &&
        p.argv.includes("--wait"));
      const waiting = await h.waitFor(() => (parked().length >= 1 ? parked() : null), 5000);
      assert.ok(waiting, "positive control: the parked init waits");
      // The init and its waiting child (both `ks-init --wait`) stopped:
      // the SPEC reaches the box but is never taken.
      for (const p of waiting) process.kill(p.pid, "SIGSTOP");
      const raws = await recordingRaw(async () => {
        setTimeout(() => {
          for (const p of h.processes().filter((q) => q.argv.includes(ws) && q.state !== "Z"))
            process.kill(p.pid, "SIGKILL");
        }, 300);
        const r = await (await s.spawn(["true"], { timeoutS: 20 })).wait();
        assert.strictEqual(r.exitCode, 0, r.stderr); // the cold retry ran it
      });
      const claim = raws.find((x) => x.entry === "claimBox" && x.raw.prewarmed);
      assert.ok(claim, JSON.stringify(raws.map((x) => [x.entry, x.raw.prewarmed])));
      assert.strictEqual(claim.raw.taken, false);
      assert.strictEqual(claim.raw.started, false);
      const retry = raws[raws.length - 1];
      assert.strictEqual(retry.raw.started, true, "the cold retry says STARTED");
    });
  });
});
