"use strict";

// Issue 16 against a real kern: the equality table in its three modes, what
// differs once the workload is no longer the box's PID 1, a pooled box used
// once (its /tmp and root never seen again), the idle box's CPU, no kern left
// after close(), and the leak census after 1,000 mixed prewarmed calls.
// SKIPs without a real kern or its images.
const assert = require("assert");
const crypto = require("crypto");
const h = require("../lib/harness");
const { haveImage, useRealKern } = require("../lib/realkern");
const { PROGRAMS, runTable } = require("../lib/equality");
const { POOL_STATS } = require("../../lib/internal");
const { ENGINE } = require("../../lib/internal");

const NODE_IMAGE = "node:20-slim";

describe("integration: fast boxes with a real kern (issue 16)", function () {
  this.timeout(600000);
  const pkg = useRealKern();
  let kern;
  before(function () {
    kern = pkg();
  });

  /** kern processes whose argv names marker (the tests tag a session's boxes with a
   * read-only mount of a directory named after it: the image must stay a real one). */
  const kernsWith = (marker) => h.processes().filter((p) => p.argv.includes(marker) && p.state !== "Z");

  it(`the equality table: ${PROGRAMS.length} programs, identical direct, cold with the init and ` +
    "prewarmed", async function () {
    const kinds = haveImage(NODE_IMAGE) ? ["python", "sh", "node"] : ["python", "sh"];
    if (kinds.length < 3) console.log(`      (no ${NODE_IMAGE} image: the node programs are left out)`);
    const { results, prewarmed } = await runTable({ kinds, images: { node: NODE_IMAGE }, readyMs: 250 });
    let compared = 0;
    for (const p of PROGRAMS.filter((q) => kinds.includes(q.kind))) {
      const d = results.direct[p.name];
      assert.deepStrictEqual(results.cold[p.name], d, `${p.name}: cold with the init differs`);
      assert.deepStrictEqual(results.prewarmed[p.name], d, `${p.name}: prewarmed differs`);
      assert.strictEqual(prewarmed[p.name], true, `${p.name} did not run in a prewarmed box`);
      compared++;
    }
    h.note(`${compared} programs identical in the three modes`);
  });

  it("documented differences: the workload is not PID 1, so $$ is not 1 and kill -9 $$ takes " +
    "effect (as the box's PID 1 it was ignored)", async function () {
    const prog = ["sh", "-c", "echo $$; kill -9 $$; echo alive"];
    const direct = await kern.withSandbox({ [ENGINE]: "direct", prewarm: 0 }, (s) => s.run(prog));
    const init = await kern.withSandbox({ prewarm: 0, [ENGINE]: "init" }, (s) => s.run(prog));
    assert.deepStrictEqual([direct.stdout, direct.exitCode], ["1\nalive\n", 0]);
    assert.notStrictEqual(init.stdout.split("\n")[0], "1");
    assert.strictEqual(init.exitCode, 137);
    assert.strictEqual(init.fault.type, "killed");
  });

  it("E4: a prewarmed box is used once: what one call leaves in /tmp and in the root is never " +
    "seen by the next", async function () {
    const s = await new kern.Sandbox({ prewarm: 1 }).open();
    try {
      const seen = [];
      for (let i = 0; i < 20; i++) {
        await h.sleep(250);
        const r = await s.runCode([
          "import os",
          "print(os.path.exists('/tmp/ks-mark'), os.path.exists('/ks-root-mark'))",
          "open('/tmp/ks-mark', 'w').write('x')",
          "try: open('/ks-root-mark', 'w').write('x')",
          "except OSError: pass",
        ].join("\n"));
        seen.push(r.stdout);
      }
      assert.deepStrictEqual(seen, Array(20).fill("False False\n"));
      assert.ok(s[POOL_STATS]().prewarmedRuns >= 18, `prewarmed runs: ${s[POOL_STATS]().prewarmedRuns}`);
    } finally {
      await s.close();
    }
  });

  describe("E4 with a real kern: a claim whose argv the calling thread sent itself runs once, " +
    "wherever it ran", function () {
    // test/42 runs these against the double; here kern's own box, PID
    // namespace and teardown decide when the parked box is gone.
    const binding = require("../../lib/binding");
    const fs = require("fs");
    const path = require("path");
    const SCRIPT = "echo ran >> count; sleep 0.2; exit 3";
    let ws;
    let s;
    let orig;
    beforeEach(async function () {
      ws = h.tmpDir("claim-real-");
      s = await new kern.Sandbox({ prewarm: 1, workspace: ws }).open();
      await s.run(["true"]); // the pool's kind: boxes that wait for an argv
      assert.ok(await h.waitFor(() => binding.liveBoxes() === 1 && binding.tailBoxes() === 0, 5000),
        "one box parked");
      await h.sleep(300); // its init is up and waiting
      orig = { run: binding.run, claimSend: binding.claimSend };
    });
    afterEach(async function () {
      if (orig) Object.assign(binding, orig);
      if (s) await s.close();
      fs.rmSync(ws, { recursive: true, force: true });
    });
    const count = () => fs.readFileSync(path.join(ws, "count"), "utf8");
    const waitingInit = () => h.processes().some((p) => p.state !== "Z" && p.argv.includes("ks-init") &&
      p.argv.includes("--wait"));
    const killParked = () => {
      for (const p of kernsWith(ws)) process.kill(p.pid, "SIGKILL");
    };

    it("positive control: untouched, the call runs in the prewarmed box", async function () {
      assert.ok(waitingInit(), "the parked box's init waits for an argv");
      const r = await s.run(["sh", "-c", SCRIPT]);
      assert.strictEqual(r.exitCode, 3);
      assert.strictEqual(s[POOL_STATS]().prewarmedRuns, 1);
      assert.strictEqual(count(), "ran\n");
    });

    it("the box is killed after its init took the argv: the call ran there, and only there",
      async function () {
        binding.run = function (...args) {
          const terms = args[14];
          if (terms === null || terms.claimOnly !== true || terms.run !== null)
            return orig.run.apply(this, args);
          return (async () => {
            assert.ok(await h.waitFor(() => fs.existsSync(path.join(ws, "count")), 5000));
            killParked();
            assert.ok(await h.waitFor(() => binding.liveBoxes() === 0, 5000), "the parked box ended");
            return orig.run.apply(this, args); // finds no parked box: `missed`
          })();
        };
        const r = await s.run(["sh", "-c", SCRIPT]);
        await h.sleep(400); // a second run, if there were one, would have written by now
        assert.strictEqual(count(), "ran\n");
        assert.notStrictEqual(r.exitCode, 3, JSON.stringify(r));
        assert.strictEqual(r.fault?.type, "killed", JSON.stringify(r));
      });

    it("the box is killed before its init could take the argv: the call runs cold, once",
      async function () {
        assert.ok(waitingInit(), "positive control: the parked box's init is there");
        let unsent = null;
        binding.claimSend = function (fd, argv) {
          killParked();
          // Blocking this thread until none of the box is left: the send
          // comes before the JS thread could hear that it ended.
          const until = Date.now() + 5000;
          while ((kernsWith(ws).length > 0 || waitingInit()) && Date.now() < until);
          unsent = orig.claimSend.call(this, fd, argv);
          return unsent;
        };
        const r = await s.run(["sh", "-c", SCRIPT]);
        // Usually all of the frame: the box's end is closed. Once in about
        // ten runs here the send still went through (something of the dying
        // box held its end a moment longer); nothing read it, and what
        // counts holds either way: the call ran once, cold.
        h.note(`bytes of the frame the dead box's channel did not take: ${unsent}`);
        assert.ok(unsent !== null, "positive control: the argv went to the parked box's channel");
        assert.strictEqual(r.exitCode, 3, JSON.stringify(r));
        assert.strictEqual(s[POOL_STATS]().prewarmedRuns, 0);
        assert.strictEqual(count(), "ran\n");
      });
  });

  it("E4 with a real kern: a Python claim whose box was killed before the engine took it over " +
    "runs cold, once", async function () {
    const binding = require("../../lib/binding");
    const fs = require("fs");
    const path = require("path");
    const ws = h.tmpDir("pyclaim-real-");
    const s = await new kern.Sandbox({ prewarm: 1, workspace: ws }).open();
    const orig = binding.run;
    const code = "open('count', 'a').write('ran\\n'); print(7)";
    const parked = () => h.waitFor(() => binding.liveBoxes() === 1 && binding.tailBoxes() === 0, 5000);
    try {
      await s.runCode("print(0)"); // the pool's kind: booted interpreters
      assert.ok(await parked(), "one box parked");
      await h.sleep(500); // its interpreter is up and waiting
      let r = await s.runCode(code);
      assert.strictEqual(r.stdout, "7\n");
      const before = s[POOL_STATS]().prewarmedRuns;
      assert.ok(before >= 1, "positive control: untouched, the claim runs in the parked box");
      assert.ok(await parked(), "one box parked again");
      await h.sleep(500);
      let claims = 0;
      let missed = null;
      binding.run = function (...args) {
        const terms = args[14];
        if (terms === null || terms.claimOnly !== true || terms.run === null) return orig.apply(this, args);
        claims++;
        assert.strictEqual(args[1].length, 0, "the claim brings no kern argv of its own");
        return (async () => {
          for (const p of kernsWith(ws)) process.kill(p.pid, "SIGKILL");
          assert.ok(await h.waitFor(() => binding.liveBoxes() === 0, 5000), "the parked box ended");
          const raw = await orig.apply(this, args); // finds no parked box: `missed`
          missed = raw.missed;
          return raw;
        })();
      };
      r = await s.runCode(code);
      assert.strictEqual(claims, 1, "the call claimed the parked box");
      assert.strictEqual(missed, true, "the engine found no box to take over: `missed`");
      assert.strictEqual(r.stdout, "7\n", JSON.stringify(r));
      assert.strictEqual(s[POOL_STATS]().prewarmedRuns, before, "it ran cold");
      assert.strictEqual(fs.readFileSync(path.join(ws, "count"), "utf8"), "ran\nran\n");
    } finally {
      binding.run = orig;
      await s.close();
      fs.rmSync(ws, { recursive: true, force: true });
    }
  });

  it("an idle prewarmed box uses 0% CPU over 10 s; no kern of the session 500 ms after close()",
    async function () {
      const tag = `ks-idle-${crypto.randomBytes(4).toString("hex")}`;
      const dir = h.tmpDir(tag);
      const s = await new kern.Sandbox({ prewarm: 1, mounts: { [dir]: ["/mnt/tag", "ro"] } }).open();
      let closed = false;
      try {
        await h.sleep(1000);
        // kern forks a child of its own (same argv): the box's top is the one
        // whose parent is not one of them.
        const kerns = kernsWith(tag);
        const tops = kerns.filter((k) => !kerns.some((q) => q.pid === k.ppid));
        assert.strictEqual(tops.length, 1, "positive control: one prewarmed box");
        const all = h.processes();
        const tree = new Set([tops[0].pid]);
        for (let grew = true; grew;) {
          grew = false;
          for (const p of all) if (tree.has(p.ppid) && !tree.has(p.pid)) { tree.add(p.pid); grew = true; }
        }
        assert.ok(tree.size >= 3, `kern, the init and python: ${[...tree]}`);
        const cpu = () => [...tree].reduce((n, pid) => n + h.cpuTicks(pid), 0);
        const t0 = cpu();
        await h.sleep(10000);
        const used = cpu() - t0;
        h.note(`${tree.size} processes of an idle box: ${used} CPU ticks in 10 s`);
        assert.strictEqual(used, 0);
        await s.runCode("print(1)"); // a tail, and a refilled box, at close()
        await s.close();
        closed = true;
        await h.sleep(500);
        assert.deepStrictEqual(kernsWith(tag).map((p) => p.pid), []);
      } finally {
        if (!closed) await s.close();
      }
    });

  it("leak census 0 after 1,000 mixed prewarmed calls with random aborts and closes",
    async function () {
      const { watchClosesSettled } = require("../../lib/session");
      const binding = require("../../lib/binding");
      const fds = h.openFds().length;
      let s = await new kern.Sandbox({ prewarm: 1 }).open();
      const counts = { ok: 0, aborted: 0, prewarmed: 0, closes: 0 };
      for (let i = 0; i < 1000; i++) {
        const r = Math.random();
        if (r < 0.05) {
          counts.prewarmed += s[POOL_STATS]().prewarmedRuns;
          await s.close();
          counts.closes++;
          s = await new kern.Sandbox({ prewarm: 1 }).open();
          continue;
        }
        const ac = new AbortController();
        const p = r < 0.6 ? s.runCode(`print(${i})`, { signal: ac.signal })
          : s.run(["sh", "-c", `echo ${i}`], { signal: ac.signal });
        if (r > 0.85) setTimeout(() => ac.abort(), Math.floor(Math.random() * 15));
        const res = await p.catch((e) => {
          if (e.name !== "AbortError") throw e;
          return null;
        });
        if (res === null) counts.aborted++;
        else {
          assert.strictEqual(res.stdout, `${i}\n`);
          counts.ok++;
        }
        if (i % 3 === 0) await h.sleep(40);
      }
      counts.prewarmed += s[POOL_STATS]().prewarmedRuns;
      await s.close();
      await watchClosesSettled();
      h.note(JSON.stringify(counts));
      assert.ok(counts.prewarmed > 200, JSON.stringify(counts));
      assert.ok(await h.waitFor(() => binding.liveBoxes() === 0 && binding.tailBoxes() === 0, 5000));
      assert.ok(await h.waitFor(() => h.openFds().length === fds, 3000),
        `descriptors: ${h.openFds().length} vs ${fds}`);
      assert.strictEqual(binding.cancelledGroups(), 0);
      assert.deepStrictEqual(h.processes().filter((p) => /kern box ksbx-/.test(p.argv.replace(/\0/g, " ")) &&
        p.state !== "Z").map((p) => p.pid), []);
    });
});
