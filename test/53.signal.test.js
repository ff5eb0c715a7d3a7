"use strict";

// Issue 33, work item 2 (its start): a caller's kill of a running call in
// the engine (ks_sup_signal_call, driven here by the test native
// signalCall until lib/process.js has kill()): the signal reaches the
// workload through the init's SIGNAL frame; a workload that ignores it is
// killed when the grace is over; either way the raw result says
// killedByCaller, and neither timedOut nor cancelled. Against the double.
const assert = require("assert");
const { Sandbox } = require("..");
const binding = require("../lib/binding");
const h = require("./lib/harness");

/** Runs argv with an AbortSignal (so the call has a cancel key) and calls
 * signalCall(key, signo, graceMs) once the workload printed "ready" (its
 * trap is set by then); resolves to { r, raw, rc }. */
async function runSignalled(sbx, argv, signo, graceMs) {
  const orig = binding.startBox;
  let key = null;
  let raw = null;
  let rc = null;
  binding.startBox = function (opts) {
    key = opts.cancelKey;
    return orig.call(this, opts).then((x) => (raw = x));
  };
  const onStdout = (chunk) => {
    if (rc === null && String(chunk).includes("ready")) rc = binding.signalCall(key, signo, graceMs);
  };
  try {
    const r = await sbx.run(argv, { signal: new AbortController().signal, timeoutS: 20, onStdout });
    return { r, raw, rc };
  } finally {
    binding.startBox = orig;
  }
}

describe("a caller's kill in the engine (issue 33)", function () {
  this.timeout(60000);
  let sbx;
  before(async function () {
    if (typeof binding.signalCall !== "function") return h.skip(this, "no test natives in this build");
    sbx = await new Sandbox({ prewarm: 0 }).open();
  });
  after(async function () {
    if (sbx) await sbx.close();
  });

  it("SIGTERM reaches the workload through the init; it exits on its own", async function () {
    const t0 = Date.now();
    const { r, raw, rc } = await runSignalled(sbx,
      ["sh", "-c", "trap 'echo got-term; exit 7' TERM; echo ready; while :; do sleep 0.05; done"],
      15, 5000);
    assert.strictEqual(rc, 0);
    assert.strictEqual(r.stdout, "ready\ngot-term\n", r.stderr);
    assert.strictEqual(r.exitCode, 7);
    assert.ok(Date.now() - t0 < 4000, "it ended at the signal, not at the grace's kill");
    assert.strictEqual(raw.killedByCaller, true);
    assert.strictEqual(raw.timedOut, false);
    assert.strictEqual(raw.cancelled, false);
  });

  it("a workload that ignores the signal is killed when the grace is over", async function () {
    const t0 = Date.now();
    const { r, raw, rc } = await runSignalled(sbx,
      ["sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.05; done"], 15, 300);
    const ms = Date.now() - t0;
    assert.strictEqual(rc, 0);
    assert.strictEqual(r.stdout, "ready\n");
    assert.ok(ms >= 300 && ms < 5000, `ended after ${ms} ms`);
    assert.strictEqual(raw.killedByCaller, true);
    assert.strictEqual(raw.timedOut, false, "the grace's kill is no timeout");
    assert.strictEqual(raw.cancelled, false, "nor a cancel");
  });

  it("positive control: without a kill the same workload runs to its deadline", async function () {
    const r = await sbx.run(["sh", "-c", "trap '' TERM; sleep 1.5; echo done"], { timeoutS: 20 });
    assert.strictEqual(r.stdout, "done\n");
  });
});
