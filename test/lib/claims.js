"use strict";

// SECURITY-CASES E4, the claim of a prewarmed box, as one set of cases that
// test/42 runs against the double and test/integration/fast-boxes against a
// real kern (where kern's own box, PID namespace and teardown decide when a
// parked box is gone). The calling thread writes an exec claim's argv to the
// parked box's channel before the engine takes the box over (claimSend), so
// a box that dies in between may or may not have started the call; a Python
// claim's code goes out only once the engine has the box. Either way a call
// runs exactly once.
const assert = require("assert");
const fs = require("fs");
const path = require("path");
const h = require("./harness");
const binding = require("../../lib/binding");
const init = require("../../lib/init");
const { POOL_STATS } = require("../../lib/internal");

const SCRIPT = "echo ran >> count; sleep 0.2; exit 3";
const runs = (s) => s[POOL_STATS]().prewarmedRuns;

/** kern processes whose argv names marker (a box's workspace, say). */
function kernsWith(marker) {
  return h.processes().filter((p) => p.argv.includes(marker) && p.state !== "Z");
}

/** The init of a parked exec box, waiting for its argv. */
const waitingInit = () => h.processes().some((p) => p.state !== "Z" && p.argv.includes("ks-init") &&
  p.argv.includes("--wait"));

/** Replaces binding.claimBox for the claims (exec or Python, by python)
 * that the calling thread has handed to the box already: around(args,
 * orig) runs instead of the engine's claimBox (args: [parked, opts]).
 * Returns the undo. */
function hookClaims(python, around) {
  const orig = binding.claimBox;
  binding.claimBox = function (...args) {
    const opts = args[1];
    if (opts.claimOnly !== true || (opts.init.run !== null) !== python) return orig.apply(this, args);
    return around(args, (...a) => orig.apply(this, a));
  };
  return () => {
    binding.claimBox = orig;
  };
}

/**
 * Defines the cases. opts:
 *   title: the describe's title;
 *   Sandbox(): the Sandbox class to test;
 *   parked(s): resolves once the session's one box is parked and its init
 *     (or interpreter) is up;
 *   settleMs: how long a second run, if there were one, takes to show;
 *   exactUnsent: whether a dead box's channel takes none of the frame (the
 *     double), or may take some while the box dies (a real kern);
 *   extra(ctx): more cases in the same describe, with ctx.session(),
 *     ctx.workspace() and ctx.holdSubmission(file, before).
 */
function describeClaimCases(opts) {
  describe(opts.title, function () {
    let ws;
    let s;
    let undo = [];
    beforeEach(async function () {
      ws = h.tmpDir("claim-");
      s = await new (opts.Sandbox())({ prewarm: 1, workspace: ws }).open();
      await s.run(["true"]); // the pool's kind: boxes that wait for an argv
      await opts.parked(s);
    });
    afterEach(async function () {
      for (const u of undo.reverse()) u();
      undo = [];
      if (s) await s.close();
      fs.rmSync(ws, { recursive: true, force: true });
    });
    const count = () => fs.readFileSync(path.join(ws, "count"), "utf8");
    const killParked = async () => {
      for (const p of kernsWith(ws)) process.kill(p.pid, "SIGKILL");
      assert.ok(await h.waitFor(() => binding.liveBoxes() === 0, 5000), "the parked box ended");
    };
    /** Holds back the submission of an exec claim until file exists in the
     * workspace (the workload wrote it), then runs before() and submits. */
    const holdSubmission = (file, before = async () => {}) => {
      undo.push(hookClaims(false, async (args, run) => {
        assert.ok(await h.waitFor(() => fs.existsSync(path.join(ws, file)), 5000));
        await before();
        return run(...args);
      }));
    };

    it("positive control: untouched, the call runs in the prewarmed box", async function () {
      assert.ok(waitingInit(), "the parked box's init waits for an argv");
      const r = await s.run(["sh", "-c", SCRIPT]);
      assert.strictEqual(r.exitCode, 3);
      assert.strictEqual(runs(s), 1);
      assert.strictEqual(count(), "ran\n");
    });

    it("the box dies after its init took the argv: the call ran there, and only there " +
      "(its result is that box's death, never a second run)", async function () {
      holdSubmission("count", killParked); // the claim then finds no parked box: `missed`
      const r = await s.run(["sh", "-c", SCRIPT]);
      await h.sleep(opts.settleMs);
      assert.strictEqual(count(), "ran\n");
      assert.notStrictEqual(r.exitCode, 3, JSON.stringify(r));
      assert.strictEqual(r.fault?.type, "killed", JSON.stringify(r));
    });

    it("the box died before its init could take the argv: the call runs cold, once",
      async function () {
        assert.ok(waitingInit(), "positive control: the parked box's init is there");
        let unsent = null;
        const orig = binding.claimSend;
        undo.push(() => {
          binding.claimSend = orig;
        });
        // claimSend runs on the call's path, before the JS thread could hear
        // that the box ended: kill it there, wait (blocking this thread)
        // until none of it is left, then send.
        binding.claimSend = function (parked, argv) {
          for (const p of kernsWith(ws)) process.kill(p.pid, "SIGKILL");
          const until = Date.now() + 5000;
          while ((kernsWith(ws).length > 0 || waitingInit()) && Date.now() < until);
          unsent = orig.call(this, parked, argv);
          return unsent;
        };
        const r = await s.run(["sh", "-c", SCRIPT]);
        assert.ok(unsent !== null, "positive control: the argv went to the parked box's channel");
        if (opts.exactUnsent) {
          assert.strictEqual(unsent, init.specFrame(["sh", "-c", SCRIPT]).length,
            "the channel of a dead box takes nothing");
        } else {
          // Usually all of the frame. Once in about ten runs with a real
          // kern the send still went through (something of the dying box
          // held its end a moment longer); nothing read it, and what counts
          // holds either way: the call ran once, cold.
          h.note(`bytes of the frame the dead box's channel did not take: ${unsent}`);
        }
        assert.strictEqual(r.exitCode, 3, JSON.stringify(r));
        assert.strictEqual(runs(s), 0);
        assert.strictEqual(count(), "ran\n");
      });

    it("a Python claim whose box died before the engine took it over runs cold, once " +
      "(the claim brings no box of its own: the engine answers `missed`)", async function () {
      const code = "open('count', 'a').write('ran\\n'); print(7)";
      await s.runCode("print(0)"); // the pool's kind: booted interpreters
      await opts.parked(s);
      // Positive control: untouched, the claim runs in the parked box.
      let r = await s.runCode(code);
      assert.strictEqual(r.stdout, "7\n");
      const before = runs(s);
      assert.ok(before >= 1, "positive control: the call ran in a prewarmed box");
      await opts.parked(s);
      let claims = 0;
      let missed = null;
      undo.push(hookClaims(true, async (args, run) => {
        claims++;
        assert.strictEqual(args[1].argv.length, 0, "the claim brings no kern argv of its own");
        await killParked();
        const raw = await run(...args);
        missed = raw.missed;
        return raw;
      }));
      r = await s.runCode(code);
      assert.strictEqual(claims, 1, "the call claimed the parked box");
      assert.strictEqual(missed, true, "the engine found no box to take over: `missed`");
      assert.strictEqual(r.stdout, "7\n", JSON.stringify(r));
      assert.strictEqual(r.exitCode, 0);
      assert.strictEqual(runs(s), before, "it ran cold, not in the dead box");
      await h.sleep(opts.settleMs);
      assert.strictEqual(count(), "ran\nran\n", "each call ran exactly once");
    });

    if (opts.extra) opts.extra({ session: () => s, workspace: () => ws, holdSubmission });
  });
}

module.exports = { describeClaimCases, kernsWith, runs };
