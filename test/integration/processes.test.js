"use strict";

// Issue 33, items 2-3, with a real kern: spawned processes in real boxes.
// STARTED only for a process (cold and prewarmed), kill() through the init
// reaching the workload's whole process group, live lines through cat and
// python3 -u, and a 200 MB writer nobody reads finishing as fast as one
// that is read, with host RSS bounded and droppedBytes exact. SKIPs
// without a real kern.
const assert = require("assert");
const binding = require("../../lib/binding");
const h = require("../lib/harness");
const { useRealKern } = require("../lib/realkern");

function until(stream, pred, ms = 20000) {
  let text = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out; got ${JSON.stringify(text)}`)), ms);
    const onData = (d) => {
      text += d;
      if (!pred(text)) return;
      clearTimeout(timer);
      stream.off("data", onData);
      resolve(text);
    };
    stream.on("data", onData);
  });
}

describe("integration: processes with a real kern (issue 33)", function () {
  this.timeout(180000);
  const pkg = useRealKern();
  let kern;
  before(function () {
    kern = pkg();
  });

  it("cold and prewarmed process boxes say STARTED, a failed exec and a plain call do not", async function () {
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
          assert.strictEqual((await (await s.spawn(["true"])).wait()).exitCode, 0);
          if (prewarm) await h.poolReady(s);
          assert.strictEqual((await (await s.spawn(["/no/such/command"])).wait()).exitCode, 127);
          if (prewarm) await h.poolReady(s);
          assert.strictEqual((await s.run(["true"])).exitCode, 0);
        } finally {
          Object.assign(binding, orig);
        }
        assert.deepStrictEqual(raws.map((r) => [r.prewarmed, r.started]),
          [[prewarm === 1, true], [prewarm === 1, false], [prewarm === 1, false]]);
      });
    }
  });

  it("kill() reaches the workload's process group through the init; no fault", async function () {
    await kern.withSandbox({ prewarm: 0 }, async (s) => {
      const p = await s.spawn(["sh", "-c",
        "sh -c 'trap \"echo child-term; exit 0\" TERM; while :; do sleep 0.05; done' & " +
        "trap 'wait; echo got-term; exit 7' TERM; echo ready; while :; do sleep 0.05; done"], { timeoutS: 30 });
      await until(p.stdout, (t) => t.includes("ready"));
      await h.sleep(200);
      const t0 = Date.now();
      p.kill("SIGTERM", { graceS: 10 });
      const r = await p.wait();
      assert.strictEqual(r.exitCode, 7, r.stderr);
      assert.strictEqual(r.fault, null);
      assert.strictEqual(r.stdout, "ready\nchild-term\ngot-term\n");
      assert.ok(Date.now() - t0 < 8000, "ended at the signal, not the grace's kill");
    });
  });

  it("a spawned cat echoes each line; python3 -u answers each line before the next", async function () {
    await kern.withSandbox({ prewarm: 1 }, async (s) => {
      const cat = await s.spawn(["cat"]);
      for (const line of ["alpha\n", "beta\n", "gamma\n"]) {
        const seen = until(cat.stdout, (t) => t.endsWith(line));
        cat.stdin.write(line);
        await seen;
      }
      cat.stdin.end();
      assert.strictEqual((await cat.wait()).stdout, "alpha\nbeta\ngamma\n");
      const py = await s.spawnCode("import sys\nfor l in sys.stdin:\n    print(int(l) * 2, flush=True)\n");
      for (const n of [1, 21, 50]) {
        const seen = until(py.stdout, (t) => t.endsWith(`${n * 2}\n`));
        py.stdin.write(`${n}\n`);
        await seen;
      }
      py.stdin.end();
      const r = await py.wait();
      assert.strictEqual(r.stdout, "2\n42\n100\n", r.stderr);
    });
  });

  it("200 MB nobody reads: as fast as read, RSS bounded, droppedBytes exact (F2)", async function () {
    const total = 200 * 1024 * 1024;
    const argv = ["head", "-c", String(total), "/dev/zero"];
    await kern.withSandbox({ prewarm: 0 }, async (s) => {
      await (await s.spawn(["true"])).wait(); // warm
      const rss0 = process.memoryUsage().rss;
      let peak = rss0;
      const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
      try {
        const times = {};
        for (const mode of ["read", "unread", "read", "unread"]) {
          const t0 = process.hrtime.bigint();
          const p = await s.spawn(argv, { stdin: false });
          let read = 0;
          if (mode === "read") p.stdout.on("data", (c) => (read += c.length));
          await p.wait();
          if (mode === "unread") for await (const c of p.stdout) read += c.length;
          const ms = Number(process.hrtime.bigint() - t0) / 1e6;
          (times[mode] ??= []).push(ms);
          assert.strictEqual(read + p.droppedBytes.stdout, total, `${mode}: read + dropped == written`);
          if (mode === "unread") assert.ok(p.droppedBytes.stdout > total - 2 * 1024 * 1024);
        }
        const growth = (peak - rss0) / 1048576;
        h.note(`200 MB: read ${times.read.map((x) => x.toFixed(0))} ms, unread ` +
          `${times.unread.map((x) => x.toFixed(0))} ms; host RSS growth ${growth.toFixed(1)} MiB`);
        assert.ok(growth < 64, `host RSS grew ${growth.toFixed(1)} MiB`);
        assert.ok(Math.min(...times.unread) < 2 * Math.min(...times.read) + 500,
          "an unread stream does not slow the box");
      } finally {
        clearInterval(sampler);
      }
    });
  });
});
