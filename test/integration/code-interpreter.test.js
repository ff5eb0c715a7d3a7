"use strict";

// Issue 14 against a real kern: rich results of one-shot calls, the kernel in
// both isolations, the fork-mode rounds of the issue (a spinner past a 1 s
// deadline, os.abort(), os._exit(3), 100 rounds, state kept, census 0), 20
// kernels of 100 cells each, and the kernel box's lifetimes. Figures (the
// round trip, kernel() start) are bench/'s. SKIPs without a real kern.
const assert = require("assert");
const crypto = require("crypto");
const { spawn } = require("child_process");
const h = require("../lib/harness");
const { useRealKern } = require("../lib/realkern");
const { manyKernels } = require("../lib/kernels");
const { POOL_STATS } = require("../../lib/internal");

describe("integration: the code interpreter with a real kern (issue 14)", function () {
  this.timeout(900000);
  const pkg = useRealKern();
  let kern;
  let binding;
  before(function () {
    kern = pkg();
    binding = require("../../lib/binding");
  });

  /** What a test leaves: boxes the engine holds, our children, descriptors. */
  async function census(fds0) {
    const { watchClosesSettled } = require("../../lib/census");
    await watchClosesSettled();
    await h.waitFor(() => h.children().length === 0 && h.openFds() <= fds0, 5000);
    return { liveBoxes: binding.liveBoxes(), tails: binding.tailBoxes(), children: h.children().length,
      fds: h.openFds() - fds0 };
  }

  it("one-shot rich results: the trailing expression, display() with HTML and PNG, None left " +
    "out, python3 -c semantics kept, results: false", async function () {
    const code = [
      "import sys",
      "class Pic:",
      "    def _repr_html_(self): return '<b>hi</b>'",
      "    def _repr_png_(self): return b'\\x89PNG\\r\\n\\x1a\\nfake'",
      "display(Pic())",
      "print(sys.argv, __name__)",
      "None",
      "6 * 7",
    ].join("\n");
    const r = await kern.runCode(code);
    assert.strictEqual(r.stdout, "['-c'] __main__\n");
    assert.strictEqual(r.exitCode, 0);
    assert.strictEqual(r.results.length, 2);
    assert.deepStrictEqual(r.results[0].formats(), ["text/plain", "text/html", "image/png"]);
    assert.strictEqual(r.results[0].html, "<b>hi</b>");
    assert.ok(r.results[0].png.subarray(0, 4).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47])));
    assert.strictEqual(r.results[1].text, "42");
    const off = await kern.runCode(code.replace("display(Pic())", "pass"), { results: false });
    assert.deepStrictEqual(off.results, []);
    const traceback = await kern.runCode("def f():\n    1/0\nf()");
    assert.strictEqual(traceback.stderr, 'Traceback (most recent call last):\n  File "<string>", ' +
      'line 3, in <module>\n  File "<string>", line 2, in f\nZeroDivisionError: division by zero\n');
  });

  it("code over 128 KiB runs with no file in the workspace, and its results come back",
    async function () {
      await kern.withSandbox(async (s) => {
        const r = await s.runCode(`${"x = 1\n".repeat(30000)}x + 1`);
        assert.strictEqual(r.results[0].text, "2");
        assert.deepStrictEqual(r.files, []);
        assert.deepStrictEqual(await s.listFiles(), []);
      });
    });

  it("a shared kernel: state, a cell's own output, a deadline's KeyboardInterrupt with the state " +
    "kept, an ignored interrupt that ends the kernel, restart()", async function () {
    await kern.withSandbox(async (s) => {
      const k = await s.kernel();
      try {
        await k.runCode("import os\nx = 41");
        const r = await k.runCode("os.write(1, b'raw\\n')\nimport subprocess\n" +
          "subprocess.run(['echo', 'child'])\nx + 1");
        assert.strictEqual(r.stdout, "raw\nchild\n");
        assert.strictEqual(r.results[0].text, "42");
        const t = await k.runCode("import time\ntime.sleep(30)", { timeoutS: 0.5 });
        assert.strictEqual(t.fault.type, "timeout");
        assert.strictEqual((await k.runCode("x")).results[0].text, "41");
        const ig = await k.runCode("import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n" +
          "while True: pass", { timeoutS: 0.3 });
        assert.match(ig.fault.message, /ignored the interrupt/);
        await assert.rejects(k.runCode("x"), /the kernel died/);
        await k.restart();
        assert.strictEqual((await k.runCode("'x' in globals()")).results[0].text, "False");
      } finally {
        await k.close();
      }
    });
  });

  it("kernel({ timeoutS: 1 }) ends a spinning cell with a timeout fault within 2.5 s and keeps " +
    "its state, in both isolations; a cell's own timeoutS wins (issue 31)", async function () {
    for (const isolation of ["shared", "fork"]) {
      await kern.withSandbox({ timeoutS: 30 }, async (s) => {
        const k = await s.kernel({ timeoutS: 1, isolation });
        try {
          await k.runCode("x = 41");
          const t0 = Date.now();
          const r = await k.runCode("while True: pass");
          const took = Date.now() - t0;
          assert.strictEqual(r.fault?.type, "timeout", `${isolation}: ${JSON.stringify(r.fault)}`);
          assert.ok(took < 2500 && took >= 950, `${isolation}: took ${took} ms`);
          h.note(`${isolation}: the spinning cell ended after ${took} ms`);
          assert.strictEqual((await k.runCode("x + 1")).results[0].text, "42");
          const own = await k.runCode("import time\ntime.sleep(1.5)", { timeoutS: 5 });
          assert.strictEqual(own.fault, null);
        } finally {
          await k.close();
        }
      });
    }
  });

  it("fork mode, 100 alternating rounds: a spinner past a 1 s deadline, os.abort(), os._exit(3): " +
    "each leaves the state from before it; leak census 0", async function () {
    const fds0 = h.openFds();
    await kern.withSandbox(async (s) => {
      const k = await s.kernel({ isolation: "fork" });
      try {
        await k.runCode("kept = 'state'\ncount = 0");
        const cells = [
          ["while True: pass", { timeoutS: 1 }, (r) => r.fault?.type === "timeout"],
          ["import os\nos.abort()", {}, (r) => r.exitCode === 134 && r.fault === null],
          ["import os\nos._exit(3)", {}, (r) => r.exitCode === 3 && r.fault === null],
        ];
        let wrong = [];
        for (let round = 0; round < 100; round++) {
          const [code, opts, ok] = cells[round % 3];
          const r = await k.runCode(`kept = 'lost'\n${code}`, opts);
          if (!ok(r)) wrong.push(`${round}: ${JSON.stringify({ e: r.exitCode, f: r.fault })}`);
          const back = await k.runCode("count += 1\nkept");
          if (back.results[0]?.text !== "'state'") wrong.push(`${round}: state ${back.results[0]?.text}`);
        }
        assert.deepStrictEqual(wrong, []);
        assert.strictEqual((await k.runCode("count")).results[0].text, "100");
      } finally {
        await k.close();
      }
    });
    assert.deepStrictEqual(await census(fds0), { liveBoxes: 0, tails: 0, children: 0, fds: 0 });
  });

  it("20 kernels at once in one process, 100 cells each: every result right; census 0",
    async function () {
      const fds0 = h.openFds();
      const t0 = Date.now();
      await kern.withSandbox({ prewarm: 0 }, async (s) => {
        assert.strictEqual(await manyKernels(s), 0);
      });
      h.note(`20 x 100 cells in ${Date.now() - t0} ms`);
      assert.deepStrictEqual(await census(fds0), { liveBoxes: 0, tails: 0, children: 0, fds: 0 });
    });

  it("kernel() takes a prewarmed box", async function () {
    await kern.withSandbox({ prewarm: 1 }, async (s) => {
      await h.poolReady(s); // positive control: the pool holds a box, up and idle
      const k = await s.kernel();
      assert.strictEqual(s[POOL_STATS]().ready, 0, "the ready box was taken");
      assert.strictEqual((await k.runCode("2 ** 10")).results[0].text, "1024");
      await k.close();
    });
  });

  for (const ending of ["close", "process.exit(0)", "process.kill(process.pid, 'SIGKILL')"]) {
    it(`the kernel box dies with ${ending} within 2 s`, async function () {
      const marker = `kend-${crypto.randomBytes(4).toString("hex")}`;
      let child = null;
      // The Node child's own argv holds the marker too (its -e code).
      const kernsWith = () => h.processes().filter((p) => p.argv.includes(marker) && p.state !== "Z" &&
        p.pid !== child.pid);
      // kern's argv carries the marker as a read-only mount of a directory
      // named after it (the image must stay a real one).
      const dir = h.tmpDir(`${marker}-`);
      const act = ending === "close" ? "await s.close(); process.stdout.write('closed\\n')" : ending;
      const code = `
        const { Sandbox } = require(${JSON.stringify(h.repo)});
        (async () => {
          const s = await new Sandbox({ prewarm: 0, mounts: { ${JSON.stringify(dir)}: ["/mnt/tag", "ro"] } }).open();
          const k = await s.kernel({ isolation: "fork" });
          await k.runCode("x = 1");
          process.stdout.write("ready\\n");
          process.stdin.once("data", async () => { ${act}; });
        })();`;
      child = spawn(process.execPath, ["-e", code], { stdio: ["pipe", "pipe", "inherit"],
        env: { ...process.env, TMPDIR: h.tmpDir("kend-tmp-") } });
      const exited = h.exitOf(child);
      await h.firstOutput(child, exited);
      assert.ok(kernsWith().length > 0, "positive control: the kernel's kern runs");
      child.stdin.write("go\n");
      const t0 = Date.now();
      assert.ok(await h.waitFor(() => kernsWith().length === 0, 2000), `left: ${kernsWith().map((p) => p.pid)}`);
      h.note(`gone ${Date.now() - t0} ms after ${ending}`);
      child.stdin.end();
      if (ending === "close") child.kill();
      await exited;
    });
  }
});
