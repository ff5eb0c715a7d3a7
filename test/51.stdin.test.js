"use strict";

// Issue 33, work item 1: stdin on calls (run, runCode, the one-shot runCode)
// against the kern test double: the bytes given reach the workload exactly,
// then EOF; every kind of source; back-pressure (a source faster than the
// box is pulled only as the box reads); SECURITY-CASES F1 (an endless source
// and a deadline, a slow reader, a failing source, a workload that exits
// before reading); prewarmed and cold exec boxes; bad types.
const assert = require("assert");
const crypto = require("crypto");
const { Readable } = require("stream");
const kern = require("..");
const { Sandbox, SandboxError, withSandbox, runCode } = kern;
const h = require("./lib/harness");
const { POOL_STATS, ENGINE } = require("../lib/internal");

const MIB = 1024 * 1024;
const md5 = (b) => crypto.createHash("md5").update(b).digest("hex");

/** An endless Readable of 64 KiB chunks that counts what it gave. */
function endless() {
  const chunk = Buffer.alloc(64 * 1024, 0x61);
  const r = new Readable({
    read() {
      r.given += chunk.length;
      this.push(chunk);
    },
  });
  r.given = 0;
  return r;
}

describe("stdin on calls (issue 33)", function () {
  this.timeout(60000);

  describe("exact bytes, then EOF", function () {
    let sbx;
    before(async function () {
      sbx = await new Sandbox({ prewarm: 0 }).open();
    });
    after(async function () {
      await sbx.close();
    });

    it("cat with 0 bytes returns nothing and exits 0", async function () {
      for (const stdin of ["", Buffer.alloc(0), new Uint8Array(0)]) {
        const r = await sbx.run(["cat"], { stdin });
        assert.strictEqual(r.stdout, "");
        assert.strictEqual(r.exitCode, 0);
        assert.strictEqual(r.fault, null);
      }
    });

    it("cat with 1 MiB returns exactly the bytes given (string, Buffer, Uint8Array)", async function () {
      const text = crypto.randomBytes(MIB / 2).toString("hex");
      assert.strictEqual(text.length, MIB);
      let r = await sbx.run(["cat"], { stdin: text });
      assert.strictEqual(r.stdout.length, MIB);
      assert.ok(r.stdout === text, "string: the bytes differ");
      r = await sbx.run(["cat"], { stdin: Buffer.from(text) });
      assert.ok(r.stdout === text, "Buffer: the bytes differ");
      const u8 = new Uint8Array(Buffer.from(`xx${text}yy`)).subarray(2, 2 + MIB);
      r = await sbx.run(["cat"], { stdin: u8 });
      assert.ok(r.stdout === text, "Uint8Array view: the bytes differ");
    });

    it("binary bytes arrive intact (md5 of 3 MiB + 5 random bytes, inside the box)", async function () {
      const bin = crypto.randomBytes(3 * MIB + 5);
      const r = await sbx.run(["sh", "-c", "md5sum | cut -d' ' -f1"], { stdin: bin });
      assert.strictEqual(r.stdout.trim(), md5(bin));
    });

    it("a Node Readable and a web ReadableStream", async function () {
      const parts = ["alpha\n", "beta\n", "", "gamma\n"];
      let r = await sbx.run(["cat"], { stdin: Readable.from(parts.map((p) => Buffer.from(p))) });
      assert.strictEqual(r.stdout, parts.join(""));
      r = await sbx.run(["cat"], { stdin: Readable.from(parts) }); // strings: UTF-8
      assert.strictEqual(r.stdout, parts.join(""));
      let i = 0;
      const web = new ReadableStream({
        pull(c) {
          if (i < parts.length) c.enqueue(new TextEncoder().encode(parts[i++]));
          else c.close();
        },
      });
      r = await sbx.run(["cat"], { stdin: web });
      assert.strictEqual(r.stdout, parts.join(""));
      // A big web stream, byte-exact.
      const bin = crypto.randomBytes(2 * MIB + 17);
      let at = 0;
      const big = new ReadableStream({
        pull(c) {
          if (at >= bin.length) return c.close();
          const n = Math.min(100000, bin.length - at);
          c.enqueue(new Uint8Array(bin.subarray(at, at + n)));
          at += n;
        },
      });
      r = await sbx.run(["sh", "-c", "md5sum | cut -d' ' -f1"], { stdin: big });
      assert.strictEqual(r.stdout.trim(), md5(bin));
    });

    it("runCode: sys.stdin.read() gives x; bash and node read it too", async function () {
      let r = await sbx.runCode("import sys; print(sys.stdin.read())", { stdin: "x" });
      assert.strictEqual(r.stdout, "x\n");
      assert.strictEqual(r.exitCode, 0);
      r = await sbx.runCode("import sys; print(sys.stdin.read())", { stdin: "x", results: false });
      assert.strictEqual(r.stdout, "x\n");
      r = await sbx.runCode("read a; echo got $a", { language: "bash", stdin: "42\n" });
      assert.strictEqual(r.stdout, "got 42\n");
    });

    it("without stdin, input() fails at once with EOFError (stdin is at EOF)", async function () {
      const t0 = Date.now();
      const r = await sbx.runCode("input()", { timeoutS: 20 });
      assert.strictEqual(r.exitCode, 1);
      assert.match(r.stderr, /EOFError/);
      assert.strictEqual(r.fault, null);
      assert.ok(Date.now() - t0 < 10000, "it did not wait");
      const c = await sbx.run(["cat"]);
      assert.strictEqual(c.stdout, "");
      assert.strictEqual(c.exitCode, 0);
    });

    it("the one-shot runCode takes stdin", async function () {
      const r = await runCode("import sys; print(sys.stdin.read().upper())", { stdin: "abc" });
      assert.strictEqual(r.stdout, "ABC\n");
    });

    it("without the in-box init (0.1.1's argv) the pipe is kern's stdin", async function () {
      const r = await withSandbox({ prewarm: 0, [ENGINE]: "direct" }, (s) =>
        s.run(["cat"], { stdin: "direct\n" }));
      assert.strictEqual(r.stdout, "direct\n");
    });
  });

  describe("prewarmed and cold exec boxes", function () {
    it("a prewarmed exec box takes the pipe on its SPEC; one without stdin still reads EOF", async function () {
      await withSandbox({ prewarm: 1 }, async (s) => {
        await s.run(["true"]); // the pool's kind becomes exec
        await new Promise((r) => setImmediate(r)); // its refill (setImmediate) drops the Python box
        await h.poolReady(s);
        const before = s[POOL_STATS]().prewarmedRuns;
        const text = "prewarmed\n".repeat(50000);
        const r = await s.run(["cat"], { stdin: text });
        assert.ok(r.stdout === text, "the bytes differ");
        assert.strictEqual(s[POOL_STATS]().prewarmedRuns - before, 1, "it ran in the prewarmed box");
        await h.poolReady(s);
        const e = await s.run(["cat"]);
        assert.strictEqual(e.stdout, "");
        assert.strictEqual(s[POOL_STATS]().prewarmedRuns - before, 2);
        await h.poolReady(s);
        const bin = crypto.randomBytes(MIB);
        const m = await s.run(["sh", "-c", "md5sum | cut -d' ' -f1"], { stdin: Readable.from([bin]) });
        assert.strictEqual(m.stdout.trim(), md5(bin));
        assert.strictEqual(s[POOL_STATS]().prewarmedRuns - before, 3);
      });
    });

    it("a claim whose box ended before it took the call: the cold retry gets every byte " +
      "(none was written before TAKEN)", async function () {
      const binding = require("../lib/binding");
      const ws = h.tmpDir("stdin-claim-");
      const orig = binding.claimBox;
      let claims = 0;
      let first = null;
      try {
        await withSandbox({ prewarm: 1, workspace: ws }, async (s) => {
          await s.run(["true"]);
          await new Promise((r) => setImmediate(r));
          await h.poolReady(s);
          // The parked init's waiting child is stopped: the SPEC (and the
          // pipe on it) reaches the box but is never taken; then the box is
          // killed, and the call runs again cold with the same feed.
          const waiting = h.processes().filter((p) => p.state !== "Z" && p.argv.includes("ks-init") &&
            p.argv.includes("--wait"));
          assert.ok(waiting.length >= 1, "positive control: the parked init waits");
          for (const p of waiting) process.kill(p.pid, "SIGSTOP");
          binding.claimBox = function (...args) {
            claims++;
            const settled = orig.apply(this, args);
            setTimeout(() => {
              for (const p of h.processes().filter((q) => q.argv.includes(ws) && q.state !== "Z"))
                process.kill(p.pid, "SIGKILL");
            }, 200);
            return settled.then((raw) => {
              first = raw;
              return raw;
            });
          };
          const text = crypto.randomBytes(3 * MIB).toString("hex");
          const r = await s.run(["cat"], { stdin: Readable.from([Buffer.from(text)]), timeoutS: 20 });
          assert.strictEqual(claims, 1, "the call claimed the parked box");
          assert.ok(first !== null && first.prewarmed === true && first.taken === false,
            `the claimed box ended without taking the call: ${JSON.stringify(first && { p: first.prewarmed, t: first.taken })}`);
          assert.strictEqual(r.exitCode, 0, r.stderr);
          assert.ok(r.stdout === text, `the retry's bytes differ (${r.stdout.length} of ${text.length})`);
          assert.strictEqual(s[POOL_STATS]().prewarmedRuns, 0, "the call ran cold");
        });
      } finally {
        binding.claimBox = orig;
      }
    });

    it("a cold exec box (prewarm 0) gets `ks-init --exec --stdin`", async function () {
      await withSandbox({ prewarm: 0 }, async (s) => {
        const r = await s.run(["cat"], { stdin: "cold\n" });
        assert.strictEqual(r.stdout, "cold\n");
        const argv = h.recordedArgv();
        assert.ok(argv.includes("--stdin"), `argv: ${argv.join(" ")}`);
      });
    });

    it("a Python call with stdin runs cold while a Python box is prewarmed (v1)", async function () {
      await withSandbox({ prewarm: 1 }, async (s) => {
        await h.poolReady(s);
        const before = s[POOL_STATS]().prewarmedRuns;
        const r = await s.runCode("print(input())", { stdin: "cold python\n" });
        assert.strictEqual(r.stdout, "cold python\n");
        assert.strictEqual(s[POOL_STATS]().prewarmedRuns, before, "it did not take the prewarmed box");
        const p = await s.runCode("print(1)");
        assert.strictEqual(p.stdout, "1\n");
      });
    });
  });

  describe("F1: floods, stalls and failing sources (SECURITY-CASES F1)", function () {
    let sbx;
    before(async function () {
      sbx = await new Sandbox({ prewarm: 0 }).open();
    });
    after(async function () {
      await sbx.close();
    });

    it("F1: an endless Readable into a box that never reads: the deadline fires, the source is " +
      "pulled only as far as the pipe takes", async function () {
      const src = endless();
      const t0 = Date.now();
      const r = await sbx.run(["sleep", "30"], { stdin: src, timeoutS: 1 });
      assert.strictEqual(r.fault?.type, "timeout");
      assert.ok(Date.now() - t0 < 10000, `took ${Date.now() - t0} ms`);
      // The pipe (1 MiB), two chunks in the engine, the stream's own buffer.
      assert.ok(src.given <= 8 * MIB, `the source gave ${src.given} bytes`);
      assert.ok(src.isPaused() || !src.readableFlowing, "the source was left paused");
      assert.ok(!src.destroyed, "the caller's Readable is not destroyed");
    });

    it("F1: an endless Readable into a box that reads everything: the deadline still fires", async function () {
      const src = endless();
      const r = await sbx.run(["sh", "-c", "cat > /dev/null"], { stdin: src, timeoutS: 1 });
      assert.strictEqual(r.fault?.type, "timeout");
      assert.ok(src.given > MIB, `the box read ${src.given} bytes`);
    });

    it("F1: an endless web ReadableStream with a deadline: timeout, and the stream is cancelled", async function () {
      let cancelled = false;
      let given = 0;
      const web = new ReadableStream({
        pull(c) {
          given += 65536;
          c.enqueue(new Uint8Array(65536));
        },
        cancel() {
          cancelled = true;
        },
      }, { highWaterMark: 1 });
      const r = await sbx.run(["sleep", "30"], { stdin: web, timeoutS: 1 });
      assert.strictEqual(r.fault?.type, "timeout");
      assert.ok(given <= 8 * MIB, `the source gave ${given} bytes`);
      assert.ok(await h.waitFor(() => cancelled, 2000), "cancelled once the call settled");
    });

    it("F1: a box that reads 1 byte every 200 ms takes what it reads, the rest is dropped", async function () {
      const src = endless();
      const t0 = Date.now();
      const r = await sbx.run(["sh", "-c",
        "for i in 1 2 3; do dd bs=1 count=1 2>/dev/null; sleep 0.2; done"], { stdin: src, timeoutS: 20 });
      assert.strictEqual(r.stdout, "aaa");
      assert.strictEqual(r.exitCode, 0);
      assert.strictEqual(r.fault, null);
      assert.ok(Date.now() - t0 < 10000);
      assert.ok(src.given <= 8 * MIB, `the source gave ${src.given} bytes`);
    });

    it("F1: a source that errors mid-stream ends stdin there (EOF), without crashing the host", async function () {
      const src = new Readable({ read() {} });
      src.push("before the error\n");
      setTimeout(() => src.destroy(new Error("source broke")), 100);
      const r = await sbx.run(["cat"], { stdin: src, timeoutS: 20 });
      assert.strictEqual(r.stdout, "before the error\n");
      assert.strictEqual(r.exitCode, 0);
      assert.strictEqual(r.fault, null);
      const web = new ReadableStream({
        start(c) {
          c.enqueue(new TextEncoder().encode("web part\n"));
          setTimeout(() => c.error(new Error("web source broke")), 100);
        },
      });
      const w = await sbx.run(["cat"], { stdin: web, timeoutS: 20 });
      assert.strictEqual(w.stdout, "web part\n");
      assert.strictEqual(w.exitCode, 0);
    });

    it("F1: a workload that exits before reading: the rest is dropped, no EPIPE crash, no hang", async function () {
      const big = Buffer.alloc(20 * MIB, 0x62);
      const t0 = Date.now();
      let r = await sbx.run(["true"], { stdin: big, timeoutS: 20 });
      assert.strictEqual(r.exitCode, 0);
      assert.strictEqual(r.fault, null);
      r = await sbx.run(["head", "-c", "5"], { stdin: endless(), timeoutS: 20 });
      assert.strictEqual(r.stdout, "aaaaa");
      assert.strictEqual(r.fault, null);
      assert.ok(Date.now() - t0 < 15000, `took ${Date.now() - t0} ms`);
    });

    it("an aborted call with an endless source rejects with AbortError and stops reading", async function () {
      const src = endless();
      const ac = new AbortController();
      setTimeout(() => ac.abort(), 300);
      await assert.rejects(sbx.run(["sleep", "30"], { stdin: src, signal: ac.signal }),
        (e) => e.name === "AbortError");
      await h.sleep(100); // a read-ahead the stream had started may still land
      const given = src.given;
      await h.sleep(300);
      assert.strictEqual(src.given, given, "nothing more pulled after the call settled");
    });

    it("many calls with stdin at once, each gets its own bytes", async function () {
      const inputs = Array.from({ length: 12 }, (_, i) => `call ${i} `.repeat(20000 + i));
      const rs = await Promise.all(inputs.map((stdin) => sbx.run(["cat"], { stdin })));
      rs.forEach((r, i) => assert.ok(r.stdout === inputs[i], `call ${i}: its bytes differ`));
    });
  });

  describe("bad stdin", function () {
    let sbx;
    before(async function () {
      sbx = await new Sandbox({ prewarm: 0 }).open();
    });
    after(async function () {
      await sbx.close();
    });

    it("a wrong type is a SandboxError ERR_SANDBOX_INVALID_OPTION saying what to pass", async function () {
      for (const bad of [42, true, {}, [1, 2], () => "x", new ArrayBuffer(4), Symbol("s")]) {
        await assert.rejects(sbx.run(["cat"], { stdin: bad }), (e) => {
          assert.ok(e instanceof SandboxError);
          assert.strictEqual(e.code, "ERR_SANDBOX_INVALID_OPTION");
          assert.match(e.message, /options\.stdin must be a string, a Buffer or Uint8Array, a Node Readable or a web ReadableStream/);
          return true;
        });
      }
      await assert.rejects(sbx.runCode("print(1)", { stdin: 1 }), /runCode\(\) options\.stdin/);
      await assert.rejects(runCode("print(1)", { stdin: 1 }), (e) => e.code === "ERR_SANDBOX_INVALID_OPTION");
    });

    it("a locked web stream is refused; null is no stdin", async function () {
      const web = new ReadableStream();
      web.getReader();
      await assert.rejects(sbx.run(["cat"], { stdin: web }), (e) =>
        e.code === "ERR_SANDBOX_INVALID_OPTION" && /locked/.test(e.message));
      const r = await sbx.run(["cat"], { stdin: null });
      assert.strictEqual(r.stdout, "");
    });

    it("a kernel's cell refuses stdin", async function () {
      const k = await sbx.kernel();
      try {
        await assert.rejects(k.runCode("print(1)", { stdin: "x" }), (e) =>
          e.code === "ERR_SANDBOX_INVALID_OPTION" && /stdin/.test(e.message));
      } finally {
        await k.close();
      }
    });
  });
});
