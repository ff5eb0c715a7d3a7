"use strict";

// The Python side of --interp boxes (lib/inbox/python-boot.py and
// python-kernel.py) against a fake host in Python
// (test/fixtures/inbox-host.py), without the engine: the boot's RUN is
// `python3 -c` byte for byte, rich results (issue 14, item 1), a shared-mode
// kernel (item 2) and a fork-mode kernel whose cells cannot lose its state
// (item 3), as csrc/core/box/interp.h has them.
const assert = require("assert");
const path = require("path");
const { execFile, execFileSync } = require("child_process");
const h = require("./lib/harness");
const { PROGRAMS } = require("./lib/equality");

const HOST = path.join(h.repo, "test", "fixtures", "inbox-host.py");

/** The fake host's environment: the test process's, less the sanitizer
 * runtimes a sanitized suite preloads. Python is not the code under test,
 * and the scenarios' deliberate segfaults (ctypes.string_at(0)) would be
 * reported by a preloaded ASan as errors of the run. */
const HOST_ENV = Object.fromEntries(Object.entries(process.env)
  .filter(([name]) => !/^(LD_PRELOAD|ASAN_OPTIONS|UBSAN_OPTIONS|TSAN_OPTIONS)$/.test(name)));

/** Runs a scenario of the fake host with input as JSON; resolves with its
 * JSON answer. */
function host(scenario, input, timeoutMs = 60000) {
  return new Promise((resolve, reject) => {
    const child = execFile("python3", [HOST, scenario], { maxBuffer: 256 << 20, timeout: timeoutMs, env: HOST_ENV },
      (err, stdout, stderr) => {
        if (err) reject(new Error(`inbox-host ${scenario}: ${err.message}\n${stderr}`));
        else resolve(JSON.parse(stdout));
      });
    child.stdin.end(JSON.stringify(input));
  });
}

/** A kernel driven through steps (see Script in the fake host). */
const script = (mode, steps, checkpoints = 8) => host("script", { mode, checkpoints, steps });
const cell = (code, more = {}) => ({ op: "cell", code, ...more });
const DROPPED = 1; // ks_ip_done.flags
const FINAL = 2;
const SHARED = 1;
const FORK = 2;

/** The code of each Python program of the equality table that needs no
 * file written before it, no timeout, and leaves nothing holding its
 * output open (the daemon's `sleep 30` would hold the pipes 30 s). */
function tablePrograms() {
  const session = { runCode: (code) => code, run: () => null };
  return PROGRAMS.filter((p) => p.kind === "python" && !p.before && !p.opts && !/daemon/.test(p.name))
    .map((p) => ({ name: p.name, code: p.call(session, {}) }));
}

const b64 = (s) => Buffer.from(s, "base64");

describe("the in-box Python side (lib/inbox/)", function () {
  before(function () {
    // pidfd_open: Linux 5.3 and Python 3.9.
    try {
      execFileSync("python3", ["-c", "import os, sys; assert sys.version_info >= (3, 9); " +
        "os.close(os.pidfd_open(os.getpid()))"], { stdio: "pipe" });
    } catch (e) {
      h.skip(this, `python3 >= 3.9 with pidfd_open is needed (${String(e.stderr || e.message).trim()})`);
    }
  });

  describe("RUN", function () {
    it("the equality table's Python programs: stdout, stderr and exit status byte for byte those of " +
      "`python3 -c`, with results off and on", async function () {
      this.timeout(h.startWait(60000));
      const programs = tablePrograms();
      assert.ok(programs.length >= 30, `${programs.length} programs`);
      const rows = await host("equality", programs.map((p) => p.code));
      programs.forEach((p, i) => {
        const { plain, off, on } = rows[i];
        for (const [mode, r] of [["results off", off], ["results on", on]]) {
          assert.deepStrictEqual(b64(r.stdout), b64(plain.stdout), `${p.name} (${mode}): stdout`);
          assert.deepStrictEqual(b64(r.stderr).toString(), b64(plain.stderr).toString(),
            `${p.name} (${mode}): stderr`);
          assert.deepStrictEqual(r.status, plain.status, `${p.name} (${mode}): exit status`);
        }
        // DONE comes last, unless the code ended the process itself (os._exit,
        // a crash): the init's report says how then.
        assert.strictEqual(off.order[0], "TAKEN", p.name);
        const ownEnd = /os\._exit|SIGSEGV/.test(p.name);
        assert.deepStrictEqual(off.order.slice(1), ownEnd ? [] : ["DONE"], p.name);
      });
    });

    it("more of -c's edges are kept: compiler errors, warnings once each, a trailing expression that " +
      "raises, rebound builtins, sys.exit('m'), docstrings, SIGPIPE restored", async function () {
      this.timeout(h.startWait(30000));
      const codes = [
        "x = 1\nyield 2", "print(1)\n(yield)", "x = 1\nx is 1\nyield 2", "print('\\d')\nx = 1\nx",
        "x = [1]\nx[5]", "*a", "'''doc'''\nprint(__doc__)\n1", "'''doc'''", "str = 'x'\nrepr = None\n" +
        "isinstance = 0\nimport sys\nsys.exit('m')", "import warnings\nwarnings.warn('w')",
        "import signal\nsignal.signal(signal.SIGPIPE, signal.SIG_DFL)\nprint('ok')\n7",
        "import traceback\ntry:\n    1/0\nexcept Exception:\n    traceback.print_exc()",
      ];
      const rows = await host("equality", codes);
      codes.forEach((code, i) => {
        const { plain, off, on } = rows[i];
        for (const r of [off, on]) {
          assert.strictEqual(b64(r.stdout).toString(), b64(plain.stdout).toString(), code);
          assert.strictEqual(b64(r.stderr).toString(), b64(plain.stderr).toString(), code);
          assert.deepStrictEqual(r.status, plain.status, code);
        }
      });
    });

    it("rich results: display() of an object with _repr_html_ and _repr_png_, the trailing " +
      "expression's value, never None, DONE's usage", async function () {
      const code = [
        "class A:",
        "    def __repr__(self): return 'A()'",
        "    def _repr_html_(self): return '<b>a</b>'",
        "    def _repr_png_(self): return b'\\x89PNG'",
        "    def _repr_markdown_(self): raise ValueError('skipped')",
        "    def _repr_json_(self): return ({'k': [1]}, {'meta': 1})",
        "display(A(), 'two')",
        "display({'text/plain': 'raw', 'image/png': b'\\x00'}, raw=True)",
        "print('out')",
        "None",
      ].join("\n");
      const r = await host("run", { code });
      assert.strictEqual(b64(r.stdout).toString(), "out\n");
      assert.strictEqual(b64(r.stderr).toString(), "");
      assert.deepStrictEqual(r.results, [
        { "text/plain": "A()", "text/html": "<b>a</b>", "application/json": '{"k": [1]}', "image/png": "iVBORw==" },
        { "text/plain": "'two'" },
        { "text/plain": "raw", "image/png": "AA==" },
      ]);
      assert.deepStrictEqual(r.order, ["TAKEN", "RESULT", "RESULT", "RESULT", "DONE"]);
      assert.strictEqual(r.done.end, "ok");
      // Final (KS_IP_DONE_FINAL): nothing follows but the exit, and its
      // usage is getrusage's (the host settles there).
      assert.strictEqual(r.done.flags, FINAL);
      assert.ok(r.done.utime_us + r.done.stime_us > 0);
      assert.ok(r.done.maxrss_kb > 1000, `peak RSS ${r.done.maxrss_kb} KiB`);

      const last = await host("run", { code: "x = 6\nx * 7" });
      assert.deepStrictEqual(last.results, [{ "text/plain": "42" }]);
      const off = await host("run", { code: "x = 6\nx * 7\n", results: false });
      assert.deepStrictEqual(off.results, []);
      assert.deepStrictEqual(off.order, ["TAKEN", "DONE"]);
    });

    it("a module that is only a docstring is not split (__doc__ set, nothing shown); an expression " +
      "that raises shows nothing and exits 1", async function () {
      const doc = await host("run", { code: "'''only a docstring'''" });
      assert.deepStrictEqual(doc.results, []);
      const raises = await host("run", { code: "x = {}\nx['missing']" });
      assert.deepStrictEqual(raises.results, []);
      assert.deepStrictEqual(raises.status, { exit: 1, signal: null });
      assert.match(b64(raises.stderr).toString(), /File "<string>", line 2, in <module>\n(.*\n)*KeyError: 'missing'\n$/);
      assert.strictEqual(raises.done.end, "exception");
    });

    it("results over the budget are dropped whole and DONE says so; one over 64 KiB spans records",
      async function () {
        const r = await host("run", {
          code: "display('a' * 100)\ndisplay('b' * 10)\ndisplay('c' * 1000)\n'd'",
          result_max: 80,
        });
        assert.deepStrictEqual(r.results.map((x) => x["text/plain"]), [`'${"b".repeat(10)}'`, "'d'"]);
        assert.strictEqual(r.done.flags, DROPPED | FINAL);
        const big = await host("run", { code: "'x' * 200000" });
        assert.strictEqual(big.results[0]["text/plain"].length, 200002);
        assert.strictEqual(big.done.flags, FINAL);
      });

    it("matplotlib figures open at the end are sent as PNG and closed, also after an exception; " +
      "not after a KeyboardInterrupt", async function () {
      // A stand-in for matplotlib.pyplot (not installed here): what the boot calls of it.
      const fakePyplot = [
        "import sys, types",
        "plt = types.ModuleType('matplotlib.pyplot')",
        "class Figure:",
        "    def __init__(self, n): self.n = n",
        "    def __repr__(self): return '<Figure %d>' % self.n",
        "    def savefig(self, buf, format): buf.write(b'PNG%d' % self.n)",
        "figures = {1: Figure(1), 2: Figure(2)}",
        "plt.get_fignums = lambda: sorted(figures)",
        "plt.figure = lambda n: figures[n]",
        "plt.close = lambda which: figures.clear()",
        "sys.modules['matplotlib.pyplot'] = plt",
      ].join("\n");
      const r = await host("run", { code: `${fakePyplot}\nraise ValueError('after the plot')` });
      assert.deepStrictEqual(r.results, [
        { "text/plain": "<Figure 1>", "image/png": Buffer.from("PNG1").toString("base64") },
        { "text/plain": "<Figure 2>", "image/png": Buffer.from("PNG2").toString("base64") },
      ]);
      assert.deepStrictEqual(r.status, { exit: 1, signal: null });
      const interrupted = await host("run", { code: `${fakePyplot}\nraise KeyboardInterrupt` });
      assert.deepStrictEqual(interrupted.results, []);
      assert.deepStrictEqual(interrupted.status, { exit: null, signal: 2 });
      assert.strictEqual(interrupted.done.end, "interrupted");
      // Not final: it dies of SIGINT next, which the init reports.
      assert.strictEqual(interrupted.done.flags & FINAL, 0);
    });
  });

  describe("a shared-mode kernel", function () {
    it("keeps state across cells; each cell's stdout and stderr hold its prints, raw fd writes and a " +
      "subprocess's output; exceptions, SystemExit and a SIGINT while sleeping end cells, not the kernel; " +
      "a SIGINT between cells is ignored", async function () {
      this.timeout(h.startWait(30000));
      const r = await script(SHARED, [
        cell("x = 41\nimport os, sys, subprocess\nprint('out1')\nos.write(1, b'raw1\\n')\n" +
          "print('err1', file=sys.stderr)\nos.write(2, b'raw2\\n')\nsubprocess.run(['echo', 'sub1'])\nx + 1"),
        cell("print(x)\nx += 1"),
        cell("def f():\n    raise ValueError('boom')\nf()"),
        cell("import sys\nsys.exit('bye')"),
        cell("raise SystemExit(300)"),
        cell("import time\nprint('sleeping', flush=True)\ntime.sleep(10)\nprint('not reached')",
          { sigint_on_output: true }),
        { op: "sigint" },
        cell("print(x, sorted(k for k in globals() if not k.startswith('__')))"),
        cell("print("),
        cell("1 + 1", { results: false }),
        cell("None"),
      ]);
      assert.deepStrictEqual(r.ready, { mode: 1, pid: r.ready.pid, fds: 1 });
      const [c1, c2, c3, c4, c5, c6, , c7, c8, c9, c10] = r.steps;
      assert.strictEqual(c1.stdout, "out1\nraw1\nsub1\n");
      assert.strictEqual(c1.stderr, "err1\nraw2\n");
      assert.deepStrictEqual(c1.results, [{ "text/plain": "42" }]);
      assert.deepStrictEqual(c1.order, ["RESULT", "DONE"]);
      assert.strictEqual(c2.stdout, "41\n");
      assert.strictEqual(c3.done.end, "exception");
      // (3.13's tracebacks add a line of carets under some source lines.)
      assert.match(c3.stderr, new RegExp('^Traceback \\(most recent call last\\):\n  File "<cell-3>", line 3, in <module>\n' +
        '    f\\(\\)\n( +[~^]+\n)?  File "<cell-3>", line 2, in f\n    raise ValueError\\(\'boom\'\\)\nValueError: boom\n$'));
      assert.deepStrictEqual([c4.done.end, c4.done.value, c4.stderr], ["exit", 1, "bye\n"]);
      assert.deepStrictEqual([c5.done.end, c5.done.value], ["exit", 300 & 0xff]);
      assert.deepStrictEqual([c6.done.end, c6.done.value], ["interrupted", 1]);
      // (An interrupt inside print() leaves its line without the newline.)
      assert.match(c6.stdout, /^sleeping\n?$/);
      // (SIGINT goes at the cell's first output: in its sleep, or just before.)
      assert.match(c6.stderr, new RegExp('^Traceback \\(most recent call last\\):\n  File "<cell-6>", line [23], in <module>\n' +
        '    (time\\.sleep\\(10\\)|print\\(\'sleeping\', flush=True\\))\n( +[~^]+\n)?KeyboardInterrupt\n$'));
      assert.ok(c6.ms < 5000, `${c6.ms} ms`);
      assert.strictEqual(c7.stdout, "42 ['f', 'os', 'subprocess', 'sys', 'time', 'x']\n");
      assert.strictEqual(c7.done.end, "ok");
      assert.match(c8.stderr, /^ {2}File "<cell-8>", line 1\n {4}print\(\n +\^\nSyntaxError: /);
      assert.deepStrictEqual([c9.results, c10.results], [[], []]);
      for (const c of r.steps.filter((s) => s.id)) {
        assert.ok(!/<ks-kernel>|File "<string>"/.test(c.stderr), `a frame of the kernel's own: ${c.stderr}`);
        assert.strictEqual(c.done.depth, 0);
      }
      assert.deepStrictEqual(r.close, { status: { exit: 0, signal: null }, stdout: "", stderr: "", leftover: [] });
    });
  });

  describe("a fork-mode kernel", function () {
    it("a cell that calls os._exit(3), os.abort() or is SIGKILLed by the host loses only itself: the " +
      "state from before it reads back; ENDED says how it died", async function () {
      const r = await script(FORK, [
        cell("import os\nx = 1"),
        cell("x = 2\nos._exit(3)"),
        cell("print(x)"),
        cell("x = 3\nos.abort()"),
        cell("print(x)"),
        cell("x = 4\nwhile True: pass", { kill_after: 100 }),
        cell("print(x)\nx"),
      ]);
      assert.deepStrictEqual(r.ready, { mode: 2, pid: r.ready.pid, fds: 0 });
      const [c1, c2, c3, c4, c5, c6, c7] = r.steps;
      assert.deepStrictEqual(c1.order, ["FORKED", "DONE"]);
      assert.strictEqual(c1.done.depth, 1);
      assert.deepStrictEqual(c2.order, ["FORKED", "ENDED"]);
      assert.deepStrictEqual([c2.ended.exit, c2.ended.signal, c2.ended.depth], [3, null, 1]);
      assert.strictEqual(c3.stdout, "1\n");
      assert.deepStrictEqual([c4.ended.exit, c4.ended.signal], [null, 6]);
      assert.strictEqual(c5.stdout, "1\n");
      assert.deepStrictEqual([c6.ended.exit, c6.ended.signal], [null, 9]);
      assert.strictEqual(c7.stdout, "1\n");
      assert.deepStrictEqual(c7.results, [{ "text/plain": "1" }]);
      assert.strictEqual(c7.done.depth, 4);
      assert.deepStrictEqual(r.close.leftover, []);
      assert.deepStrictEqual(r.close.status, { exit: 0, signal: null });
    });

    it("an exception or SystemExit still makes a state; rollback(1) and rollback(2) restore older ones",
      async function () {
        const r = await script(FORK, [
          cell("x = 1"),
          cell("x = 2\n1/0"),
          cell("x = 3\nraise SystemExit(5)"),
          cell("print(x)\nx = 4"),
          { op: "rollback", n: 1 },
          cell("print(x)"),
          { op: "rollback", n: 2 },
          cell("print(x)"),
        ]);
        const [, c2, c3, c4, back1, c5, back2, c6] = r.steps;
        assert.deepStrictEqual([c2.done.end, c2.done.depth], ["exception", 2]);
        assert.deepStrictEqual([c3.done.end, c3.done.value, c3.done.depth], ["exit", 5, 3]);
        assert.strictEqual(c4.stdout, "3\n");
        // Back before cell 4 (ENDED of the cell whose state went).
        assert.deepStrictEqual([back1.ended.id, back1.ended.depth], [4, 3]);
        assert.strictEqual(c5.stdout, "3\n");
        // Back before cells 5 and 3: x = 2 of cell 2.
        assert.deepStrictEqual([back2.ended.id, back2.ended.depth], [3, 2]);
        assert.strictEqual(c6.stdout, "2\n");
        assert.deepStrictEqual(r.close.leftover, []);
      });

    it("past its checkpoints the oldest states are dropped: their processes are gone, the depth stays " +
      "at the limit, rollbacks reach what is kept", async function () {
      const r = await script(FORK, [
        ...[1, 2, 3, 4, 5].map((i) => cell(`import os\nx = ${i}\nprint(os.getpid())`)),
        // The kernel's process, the 2 checkpoints, the current state and its copy waiting for the next cell.
        { op: "pids", expect: 5 },
        { op: "rollback", n: 2 },
        cell("print(x)"),
      ], 2);
      const pids = r.steps.slice(0, 5).map((c) => Number(c.stdout));
      assert.deepStrictEqual(r.steps.slice(0, 5).map((c) => c.done.depth), [1, 2, 2, 2, 2]);
      const live = r.steps[5].pids;
      assert.strictEqual(live.length, 5, `live: ${live}`);
      for (const pid of pids.slice(0, 2)) assert.ok(!live.includes(pid), `dropped state ${pid} is alive`);
      for (const pid of pids.slice(2)) assert.ok(live.includes(pid), `kept state ${pid} is gone`);
      assert.strictEqual(r.steps[6].ended.depth, 0);
      assert.strictEqual(r.steps[7].stdout, "3\n");
      assert.deepStrictEqual(r.close.leftover, []);
    });

    it("100 alternating rounds of os._exit(3), os.abort() and a SIGKILLed loop keep the state and " +
      "leave no process behind", async function () {
      this.timeout(h.startWait(60000));
      const steps = [cell("x = 'kept'")];
      for (let i = 0; i < 100; i++) {
        steps.push(cell("import os\nx = 'lost'\nos._exit(3)"), cell("import os\nx = 'lost'\nos.abort()"),
          cell("x = 'lost'\nwhile True: pass", { kill_after: 20 }), cell("print(x)", { results: false }));
      }
      steps.push({ op: "pids", expect: 1 + 8 + 2 });
      const r = await script(FORK, steps);
      const reads = r.steps.filter((s, i) => i > 0 && i % 4 === 0 && s.id);
      assert.strictEqual(reads.length, 100);
      for (const s of reads) assert.strictEqual(s.stdout, "kept\n", JSON.stringify(s));
      const ended = r.steps.filter((s) => s.ended).map((s) => s.ended.exit ?? -s.ended.signal);
      assert.strictEqual(ended.length, 300);
      assert.deepStrictEqual([...new Set(ended)].sort((a, b) => a - b), [-9, -6, 3]);
      // The kernel's process, 8 checkpoints, the current state and its waiting copy.
      assert.strictEqual(r.steps.at(-1).pids.length, 11, `live: ${r.steps.at(-1).pids}`);
      assert.deepStrictEqual(r.close, { status: { exit: 0, signal: null }, stdout: "", stderr: "", leftover: [] });
    });
  });
});
