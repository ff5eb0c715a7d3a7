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
const { until, httpGet } = require("../lib/procs");


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

  it("stdout across the handover to the JS thread: every byte once, in order (cold and prewarmed)", async function () {
    let want = "";
    for (let i = 1; i <= 300000; i++) want += `${i}\n`;
    for (const prewarm of [0, 1]) {
      await kern.withSandbox({ prewarm }, async (s) => {
        if (prewarm) {
          await s.run(["true"]);
          await h.poolReady(s);
        }
        const p = await s.spawn(["seq", "1", "300000"], { stdin: false, keepBytes: 8 << 20 });
        const chunks = [];
        p.stdout.on("data", (c) => chunks.push(c));
        assert.strictEqual((await p.wait()).exitCode, 0);
        await new Promise((resolve) => p.stdout.once("end", resolve));
        assert.strictEqual(Buffer.concat(chunks).toString(), want, `prewarm ${prewarm}`);
      });
    }
  });

  it("kill() reaches the workload's process group through the init; no fault", async function () {
    await kern.withSandbox({ prewarm: 0 }, async (s) => {
      const p = await s.spawn(["sh", "-c",
        "sh -c 'trap \"echo child-term; exit 0\" TERM; while :; do sleep 0.05; done' & " +
        "trap 'wait; echo got-term; exit 7' TERM; echo ready; while :; do sleep 0.05; done"], { timeoutS: 30 });
      await until(p.stdout, (t) => t.includes("ready"), 20000);
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
        const seen = until(cat.stdout, (t) => t.endsWith(line), 20000);
        cat.stdin.write(line);
        await seen;
      }
      cat.stdin.end();
      assert.strictEqual((await cat.wait()).stdout, "alpha\nbeta\ngamma\n");
      const py = await s.spawnCode("import sys\nfor l in sys.stdin:\n    print(int(l) * 2, flush=True)\n");
      for (const n of [1, 21, 50]) {
        const seen = until(py.stdout, (t) => t.endsWith(`${n * 2}\n`), 20000);
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

describe("integration: published ports with a real kern (issue 33 item 4, F4)", function () {
  this.timeout(300000);
  const net = require("net");
  const pkg = useRealKern();
  let kern;
  before(function () {
    kern = pkg();
  });


  function refused(port, host = "127.0.0.1") {
    return new Promise((resolve) => {
      const s = net.connect(port, host);
      s.once("connect", () => {
        s.destroy();
        resolve(false);
      });
      s.once("error", (e) => resolve(e.code === "ECONNREFUSED"));
    });
  }

  it("http.server in a box answers the host; the box reaches nothing outside; an unpublished port is refused", async function () {
    await kern.withSandbox({ prewarm: 0 }, async (s) => {
      await s.writeFile("index.html", "from the box\n");
      const p = await s.spawn(["sh", "-c", "python3 -m http.server 8001 --bind 127.0.0.1 >/dev/null 2>&1 & " +
        "exec python3 -m http.server 8000 --bind 127.0.0.1"], { ports: [8000], timeoutS: null, stdin: false });
      await p.waitForPort(8000, { timeoutS: 30 });
      const res = await httpGet(`${p.ports[8000].url}/index.html`);
      assert.strictEqual(res.status, 200);
      assert.strictEqual(res.body, "from the box\n");
      // The box's 8001 listens too, but only 8000 is published.
      assert.ok(await refused(8001), "an unpublished box port is not reachable from the host");
      // From inside a box with a published port: no route out.
      const out = await s.run(["python3", "-c", "import socket,sys\n" +
        "for a in [('1.1.1.1', 80), ('10.0.2.2', 22), ('192.168.1.1', 80)]:\n" +
        "    try:\n        socket.create_connection(a, timeout=2); print('reached', a)\n" +
        "    except OSError as e: print('no', a[0], type(e).__name__)\n"], { timeoutS: 30 });
      assert.ok(!out.stdout.includes("reached"), out.stdout);
      // Positive control: the same client reaches the box's own listener.
      p.kill();
      const r = await p.wait();
      assert.strictEqual(r.fault, null);
      assert.ok(!r.stderr.includes("publishing"), r.stderr);
    });
  });

  it("50 services at once each answer; close() ends them all and frees every host port within 1 s", async function () {
    const s = await new kern.Sandbox({ prewarm: 0 }).open();
    try {
      const procs = await Promise.all(Array.from({ length: 50 }, async (_, i) => {
        await s.writeFile(`d${i}/index.html`, `service ${i}\n`);
        return s.spawn(["python3", "-m", "http.server", "8000", "--bind", "127.0.0.1", "-d", `d${i}`],
          { ports: [8000], timeoutS: null, stdin: false });
      }));
      await Promise.all(procs.map((p) => p.waitForPort(8000, { timeoutS: 120 })));
      const bodies = await Promise.all(procs.map((p) => httpGet(`${p.ports[8000].url}/index.html`)));
      bodies.forEach((b, i) => assert.strictEqual(b.body, `service ${i}\n`));
      const hostPorts = procs.map((p) => p.ports[8000].port);
      await s.close();
      const t0 = Date.now();
      for (const port of hostPorts) {
        while (!(await refused(port))) {
          assert.ok(Date.now() - t0 < 1000, `host port ${port} still open 1 s after close()`);
          await h.sleep(20);
        }
      }
      h.note(`50 services: host ports all free ${Date.now() - t0} ms after close()`);
    } finally {
      await s.close();
    }
  });
});
