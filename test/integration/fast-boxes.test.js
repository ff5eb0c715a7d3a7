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
const { describeClaimCases, kernsWith } = require("../lib/claims");

const NODE_IMAGE = "node:20-slim";

describe("integration: fast boxes with a real kern (issue 16)", function () {
  this.timeout(600000);
  const pkg = useRealKern();
  let kern;
  before(function () {
    kern = pkg();
  });

  // kernsWith(marker): kern processes whose argv names marker (the tests tag a session's
  // boxes with a read-only mount of a directory named after it: the image must stay a real one).

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
        await h.poolReady(s);
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

  // The cases test/42 runs against the double (test/lib/claims.js).
  describeClaimCases({
    title: "E4 with a real kern: a claim runs once, wherever it ran",
    Sandbox: () => kern.Sandbox,
    parked: async (s) => {
      const binding = require("../../lib/binding");
      assert.ok(await h.waitFor(() => binding.liveBoxes() === 1 && binding.tailBoxes() === 0, 5000),
        "one box parked");
      await h.poolReady(s); // its init (or interpreter) is up and waiting
    },
    settleMs: 400,
    exactUnsent: false,
  });

  it("an idle prewarmed box uses 0% CPU over 10 s; no kern of the session 500 ms after close()",
    async function () {
      const tag = `ks-idle-${crypto.randomBytes(4).toString("hex")}`;
      const dir = h.tmpDir(tag);
      const s = await new kern.Sandbox({ prewarm: 1, mounts: { [dir]: ["/mnt/tag", "ro"] } }).open();
      let closed = false;
      try {
        await h.poolReady(s);
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
      const { watchClosesSettled } = require("../../lib/census");
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
