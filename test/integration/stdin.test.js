"use strict";

// Issue 33, work item 1 against a real kern: stdin on calls. Exact bytes
// through `cat` (0 B and 1 MiB), Python's sys.stdin and input(), prewarmed
// and cold exec boxes, an endless source with a deadline (SECURITY-CASES
// F1), and 1 GiB from a Readable, its md5 taken inside the box, with the
// host's RSS growth sampled during the run. SKIPs without a real kern.
const assert = require("assert");
const crypto = require("crypto");
const { Readable } = require("stream");
const h = require("../lib/harness");
const { useRealKern } = require("../lib/realkern");
const { POOL_STATS } = require("../../lib/internal");

const MIB = 1024 * 1024;
const md5 = (b) => crypto.createHash("md5").update(b).digest("hex");

describe("integration: stdin on calls with a real kern (issue 33)", function () {
  this.timeout(600000);
  const pkg = useRealKern();
  let kern;
  before(function () {
    kern = pkg();
  });

  it("cat returns exactly the bytes given: 0 B and 1 MiB, cold and prewarmed", async function () {
    const text = crypto.randomBytes(MIB / 2).toString("hex");
    for (const prewarm of [0, 1]) {
      await kern.withSandbox({ prewarm }, async (s) => {
        await s.run(["true"]); // the pool's kind: exec
        await new Promise((r) => setImmediate(r)); // its refill (setImmediate) drops the Python box
        if (prewarm) await h.poolReady(s);
        const before = s[POOL_STATS]()?.prewarmedRuns ?? 0;
        const e = await s.run(["cat"], { stdin: "" });
        assert.strictEqual(e.stdout, "");
        assert.strictEqual(e.exitCode, 0);
        if (prewarm) await h.poolReady(s);
        const r = await s.run(["cat"], { stdin: text });
        assert.strictEqual(r.exitCode, 0, r.stderr);
        assert.ok(r.stdout === text, `prewarm ${prewarm}: the bytes differ (${r.stdout.length} B)`);
        if (prewarm) assert.strictEqual(s[POOL_STATS]().prewarmedRuns - before, 2, "ran prewarmed");
        const bin = crypto.randomBytes(MIB + 3);
        if (prewarm) await h.poolReady(s);
        const m = await s.run(["sh", "-c", "md5sum | cut -d' ' -f1"], { stdin: bin });
        assert.strictEqual(m.stdout.trim(), md5(bin));
      });
    }
  });

  it("runCode: sys.stdin.read() gives x; without stdin input() fails at once with EOFError", async function () {
    await kern.withSandbox(async (s) => {
      const r = await s.runCode("import sys; print(sys.stdin.read())", { stdin: "x" });
      assert.strictEqual(r.stdout, "x\n", r.stderr);
      const t0 = Date.now();
      const e = await s.runCode("input()");
      assert.strictEqual(e.exitCode, 1);
      assert.match(e.stderr, /EOFError/);
      assert.ok(Date.now() - t0 < 5000);
    });
    const one = await kern.runCode("print(input()[::-1])", { stdin: "olleh\n" });
    assert.strictEqual(one.stdout, "hello\n");
  });

  it("F1: an endless Readable with a deadline ends with the timeout fault", async function () {
    let given = 0;
    const chunk = Buffer.alloc(65536, 0x61);
    const src = new Readable({
      read() {
        given += chunk.length;
        this.push(chunk);
      },
    });
    await kern.withSandbox({ prewarm: 0 }, async (s) => {
      const r = await s.run(["sleep", "60"], { stdin: src, timeoutS: 2 });
      assert.strictEqual(r.fault?.type, "timeout");
      assert.ok(given <= 8 * MIB, `the source gave ${given} bytes`);
    });
  });

  it("1 GiB from a Readable reaches the box intact (md5 inside), host RSS growth < 64 MiB", async function () {
    const TOTAL = 1024 * MIB;
    // One random block (not a multiple of the engine's 1 MiB chunk), pushed
    // again and again as views: the source itself allocates nothing per
    // chunk, so the RSS figure is the package's.
    const block = crypto.randomBytes(MIB + 7);
    const hash = crypto.createHash("md5");
    let made = 0;
    const src = new Readable({
      read() {
        if (made >= TOTAL) return this.push(null);
        const b = block.subarray(0, Math.min(block.length, TOTAL - made));
        hash.update(b);
        made += b.length;
        this.push(b);
      },
    });
    global.gc?.();
    const rss0 = process.memoryUsage().rss;
    let peak = rss0;
    const timer = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss);
    }, 20);
    const t0 = process.hrtime.bigint();
    let r;
    try {
      r = await kern.withSandbox({ prewarm: 0, timeoutS: 300 }, (s) =>
        s.run(["sh", "-c", "md5sum | cut -d' ' -f1"], { stdin: src }));
    } finally {
      clearInterval(timer);
    }
    peak = Math.max(peak, process.memoryUsage().rss);
    const s = Number(process.hrtime.bigint() - t0) / 1e9;
    const growth = (peak - rss0) / MIB;
    h.note(`1 GiB through stdin in ${s.toFixed(2)} s (${(1024 / s).toFixed(0)} MiB/s), ` +
      `host RSS ${(rss0 / MIB).toFixed(1)} -> peak ${(peak / MIB).toFixed(1)} MiB (+${growth.toFixed(1)} MiB)`);
    assert.strictEqual(r.fault, null, r.stderr);
    assert.strictEqual(r.stdout.trim(), hash.digest("hex"));
    assert.ok(growth < 64, `host RSS grew ${growth.toFixed(1)} MiB`);
  });
});
