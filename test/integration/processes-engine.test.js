"use strict";

// Issue 33, work item 2 (its start), with a real kern: the init's STARTED
// frame from cold and prewarmed exec boxes, and a caller's kill through the
// init's SIGNAL frame (test native signalCall), which in a real box reaches
// the workload's whole process group. SKIPs without a real kern.
const assert = require("assert");
const binding = require("../../lib/binding");
const h = require("../lib/harness");
const { useRealKern } = require("../lib/realkern");

describe("integration: STARTED and a caller's kill with a real kern (issue 33)", function () {
  this.timeout(120000);
  const pkg = useRealKern();
  let kern;
  before(function () {
    kern = pkg();
    if (typeof binding.signalCall !== "function") return h.skip(this, "no test natives in this build");
  });

  it("cold and prewarmed exec boxes say STARTED; a failed exec does not", async function () {
    for (const prewarm of [0, 1]) {
      await kern.withSandbox({ prewarm }, async (s) => {
        await s.run(["true"]);
        await new Promise((r) => setImmediate(r));
        const orig = { startBox: binding.startBox, claimBox: binding.claimBox };
        const raws = [];
        for (const name of Object.keys(orig))
          binding[name] = (...a) => orig[name](...a).then((raw) => (raws.push(raw), raw));
        try {
          if (prewarm) await h.poolReady(s);
          assert.strictEqual((await s.run(["true"])).exitCode, 0);
          if (prewarm) await h.poolReady(s);
          assert.strictEqual((await s.run(["/no/such/command"])).exitCode, 127);
        } finally {
          Object.assign(binding, orig);
        }
        assert.deepStrictEqual(raws.map((r) => [r.prewarmed, r.started]),
          [[prewarm === 1, true], [prewarm === 1, false]]);
      });
    }
  });

  it("SIGTERM through the init reaches the workload's process group", async function () {
    await kern.withSandbox({ prewarm: 0 }, async (s) => {
      const orig = binding.startBox;
      let key = null;
      let raw = null;
      let rc = null;
      binding.startBox = (opts) => {
        key = opts.cancelKey;
        return orig(opts).then((x) => (raw = x));
      };
      const t0 = Date.now();
      try {
        const r = await s.run(["sh", "-c",
          "sh -c 'trap \"echo child-term; exit 0\" TERM; while :; do sleep 0.05; done' & " +
          "trap 'wait; echo got-term; exit 7' TERM; echo ready; while :; do sleep 0.05; done"], {
          signal: new AbortController().signal, timeoutS: 30,
          onStdout: (c) => {
            if (rc === null && String(c).includes("ready")) setTimeout(() => (rc = binding.signalCall(key, 15, 10000)), 200);
          },
        });
        assert.strictEqual(rc, 0);
        assert.strictEqual(r.exitCode, 7, r.stderr);
        assert.strictEqual(r.stdout, "ready\nchild-term\ngot-term\n");
        assert.ok(Date.now() - t0 < 8000, "ended at the signal, not the grace's kill");
        assert.strictEqual(raw.killedByCaller, true);
        assert.strictEqual(raw.timedOut, false);
        assert.strictEqual(raw.cancelled, false);
      } finally {
        binding.startBox = orig;
      }
    });
  });
});
