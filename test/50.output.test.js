"use strict";

// Output capture: the cap (C6), binary data (C7), stdin (C8), live
// streaming and its best-effort contract (C15).
const assert = require("assert");
const { runCode, withSandbox } = require("..");

const sh = (code, opts = {}) => runCode(code, { language: "bash", ...opts });

describe("output", function () {
  it("C6: truncated is set only past the cap: C-1, C and C+1 bytes", async function () {
    const C = 4096;
    for (const [n, truncated] of [[C - 1, false], [C, false], [C + 1, true]]) {
      const r = await sh(`head -c ${n} /dev/zero | tr '\\0' x`, { maxOutputBytes: C });
      assert.strictEqual(r.stdout.length, Math.min(n, C), `n=${n}`);
      assert.strictEqual(r.truncated, truncated, `n=${n}`);
    }
  });

  it("C6: each stream has its own cap; both drain without deadlock", async function () {
    const r = await sh("head -c 300000 /dev/zero | tr '\\0' o & head -c 300000 /dev/zero | tr '\\0' e >&2; wait",
      { maxOutputBytes: 100000 });
    assert.strictEqual(r.stdout, "o".repeat(100000));
    assert.strictEqual(r.stderr, "e".repeat(100000));
    assert.strictEqual(r.truncated, true);
    assert.strictEqual(r.exitCode, 0);
  });

  it("C6: a flood past the cap still ends, with the first bytes kept", async function () {
    const r = await sh("seq 1 2000000", { maxOutputBytes: 1000 });
    assert.strictEqual(r.stdout, Array.from({ length: 1000 }, (_, i) => i + 1).join("\n").slice(0, 1000));
    assert.strictEqual(r.truncated, true);
    assert.strictEqual(r.exitCode, 0);
  });

  it("C7: binary and invalid UTF-8 decode lossily, never throw", async function () {
    const r = await sh("printf '\\377\\376\\300\\257\\355\\240\\200\\000ok'");
    assert.ok(r.stdout.endsWith("\u0000ok"));
    assert.ok(r.stdout.includes("\uFFFD"));
  });

  it("C7: one non-ASCII character anywhere in the output is decoded as UTF-8", async function () {
    // The drain notes ASCII-ness per read; a late or unaligned multi-byte
    // character must still turn off the ASCII (latin1) fast path.
    await withSandbox(async (sbx) => {
      const N = 300000;
      for (const at of [0, 7, 63, 64, 65, 4095, 131071, N - 2]) {
        const buf = Buffer.alloc(N, "a");
        buf.write("\u00e9", at); // two bytes: C3 A9
        await sbx.writeFile("o.bin", buf);
        const r = await sbx.run(["cat", "o.bin"]);
        assert.strictEqual(r.stdout, buf.toString("utf8"), `at ${at}`);
        assert.strictEqual(r.stdout.indexOf("\u00e9"), at);
      }
      // Positive control: pure ASCII stays byte for byte.
      await sbx.writeFile("o.bin", Buffer.alloc(N, "b"));
      assert.strictEqual((await sbx.run(["cat", "o.bin"])).stdout, "b".repeat(N));
    });
  });

  it("C7: any bytes decode exactly as Buffer#toString does (differential, random bytes)", async function () {
    // Non-ASCII output is decoded off the JS thread (csrc/core/box/text.c); V8's
    // own decoder is the reference. Bytes are drawn from the classes the
    // decoder tells apart: ASCII, continuations, every kind of lead byte.
    const classes = [[0x00, 0x7f], [0x80, 0xbf], [0xc0, 0xc1], [0xc2, 0xdf], [0xe0, 0xe0],
      [0xe1, 0xec], [0xed, 0xed], [0xee, 0xef], [0xf0, 0xf0], [0xf1, 0xf3], [0xf4, 0xf4],
      [0xf5, 0xff]];
    let seed = 12345;
    const rnd = (n) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    await withSandbox(async (sbx) => {
      for (let round = 0; round < 6; round++) {
        const buf = Buffer.alloc(200000);
        for (let i = 0; i < buf.length; i++) {
          // Rounds 0-2 mostly ASCII (the common case), 3-5 dense with the rest.
          const [lo, hi] = rnd(round < 3 ? 8 : 2) === 0 ? classes[rnd(classes.length)] : classes[0];
          buf[i] = lo + rnd(hi - lo + 1);
        }
        if (round === 5) buf.write("\u00e9\u00ff", 0); // and a Latin-1-only text
        await sbx.writeFile("o.bin", round === 5 ? Buffer.from("caf\u00e9 \u00ff") : buf);
        const want = (round === 5 ? Buffer.from("caf\u00e9 \u00ff") : buf).toString("utf8");
        const r = await sbx.run(["cat", "o.bin"]);
        assert.strictEqual(r.stdout.length, want.length, `round ${round}`);
        if (r.stdout !== want) {
          let i = 0;
          while (r.stdout[i] === want[i]) i++;
          assert.fail(`round ${round}: first difference at UTF-16 unit ${i}`);
        }
      }
    });
  });

  it("C8: stdin is at EOF immediately", async function () {
    const r = await sh("cat; echo done", { timeoutS: 5 });
    assert.strictEqual(r.stdout, "done\n");
    assert.ok(r.durationMs < 4000);
  });

  it("A41: the box inherits no ignored or blocked signal (yes | head -1 ends)", async function () {
    const r = await sh("yes | head -1; grep -E '^Sig(Ign|Blk)' /proc/self/status", { timeoutS: 5 });
    assert.strictEqual(r.fault, null);
    assert.match(r.stdout, /^y\nSigBlk:\s+0+\nSigIgn:\s+0+\n$/);
  });

  describe("live streaming", function () {
    it("onStdout/onStderr get every chunk while result.stdout is complete", async function () {
      const out = [];
      const err = [];
      // Gaps of 0.2 s: a stalled machine must not merge the three writes.
      const r = await sh("for i in 1 2 3; do echo out$i; echo err$i >&2; sleep 0.2; done", {
        onStdout: (c) => out.push(c),
        onStderr: (c) => err.push(c),
      });
      assert.ok(out.every(Buffer.isBuffer));
      assert.strictEqual(Buffer.concat(out).toString(), "out1\nout2\nout3\n");
      assert.strictEqual(Buffer.concat(err).toString(), "err1\nerr2\nerr3\n");
      assert.strictEqual(r.stdout, "out1\nout2\nout3\n");
      assert.ok(out.length >= 2, "chunks arrive as they are written, not at the end");
    });

    it("chunks arrive before the run resolves", async function () {
      let firstChunkAt = 0;
      const start = Date.now();
      const r = await sh("echo early; sleep 0.5; echo late", {
        onStdout: () => {
          if (!firstChunkAt) firstChunkAt = Date.now() - start;
        },
      });
      assert.ok(firstChunkAt > 0 && firstChunkAt < r.durationMs, `${firstChunkAt} vs ${r.durationMs}`);
    });

    it("C15: a callback that throws changes nothing", async function () {
      let calls = 0;
      const r = await sh("echo a; sleep 0.05; echo b", {
        onStdout: () => {
          calls++;
          throw new Error("callback bug");
        },
      });
      assert.ok(calls >= 1);
      assert.strictEqual(r.stdout, "a\nb\n");
      assert.strictEqual(r.success, true);
    });

    it("C15: a slow callback loses chunks, never the captured result", async function () {
      this.timeout(60000);
      let seen = 0;
      const r = await sh("head -c 50000000 /dev/zero", {
        maxOutputBytes: 50000000,
        onStdout: (c) => {
          // A slow consumer: the first call alone holds the JS thread for
          // 2 s, while the box writes far more than the in-flight budget
          // (however big the engine's chunks are, however slow the machine).
          const until = Date.now() + (seen === 0 ? 2000 : 20);
          seen += c.length;
          while (Date.now() < until) { /* busy */ }
        },
      });
      assert.strictEqual(r.stdout.length, 50000000);
      assert.ok(seen > 0 && seen < 50000000, `seen ${seen}`);
      // Issue 32: the result counts what the callback missed, exactly: what
      // it saw and what it missed make the whole output.
      const m = r.missedOutput;
      assert.ok(m.stdout.chunks > 0, JSON.stringify(m));
      assert.strictEqual(seen + m.stdout.bytes, 50000000, JSON.stringify(m));
      assert.deepStrictEqual(m.stderr, { chunks: 0, bytes: 0 });
    });

    it("missedOutput is all zeros when the callback keeps up, and without callbacks (issue 32)",
      async function () {
        let seen = 0;
        const r = await sh("head -c 100000 /dev/zero", { onStdout: (c) => (seen += c.length) });
        assert.strictEqual(seen, 100000);
        const zero = { stdout: { chunks: 0, bytes: 0 }, stderr: { chunks: 0, bytes: 0 } };
        assert.deepStrictEqual(r.missedOutput, zero);
        assert.deepStrictEqual((await sh("echo x")).missedOutput, zero);
      });

    it("C15: a callback may start another run on the same session", async function () {
      let sbxRef = null;
      let inner = null;
      await withSandbox({
        onStdout: () => {
          if (inner === null) inner = sbxRef.run(["echo", "inner"]);
        },
      }, async (sbx) => {
        sbxRef = sbx;
        const r = await sbx.run(["echo", "outer"]);
        assert.strictEqual(r.stdout, "outer\n");
        assert.ok(inner !== null, "the callback ran");
        assert.strictEqual((await inner).stdout, "inner\n");
      });
    });
  });
});
