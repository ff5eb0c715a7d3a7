"use strict";

// The equality table of issue 16: programs whose results must be the same,
// field by field (durationMs and usage aside), on a prewarmed box, on a cold
// box with the in-box init, and with the workload as the box's command
// (0.1.1's argv). test/41 runs it against the double, test/integration
// against a real kern.
//
// Every program here behaves the same whether or not it is the box's first
// process: the documented differences of the init ($$ is not 1, a signal a
// workload sends itself takes effect, exit(137) is not a SIGKILL) have tests
// of their own.
const { Sandbox } = require("../../lib");
const { ENGINE } = require("../../lib/internal");

const py = (name, code, extra = {}) => ({ name, kind: "python", call: (s, o) => s.runCode(code, o), ...extra });
const sh = (name, argv, extra = {}) => ({ name, kind: "sh", call: (s, o) => s.run(argv, o), ...extra });
const bash = (name, code, extra = {}) => ({ name, kind: "sh",
  call: (s, o) => s.runCode(code, { language: "bash", ...o }), ...extra });
const node = (name, code, extra = {}) => ({ name, kind: "node",
  call: (s, o) => s.runCode(code, { language: "node", ...o }), ...extra });

const PROGRAMS = [
  py("print", "print('hello')"),
  py("exit code 3", "import sys; sys.exit(3)"),
  py("exit code 0", "import sys; sys.exit(0)"),
  py("exit 256 wraps to 0", "import sys; sys.exit(256)"),
  py("exit -1 is 255", "import sys; sys.exit(-1)"),
  py("sys.exit(True)", "import sys; sys.exit(True)"),
  py("SystemExit(None)", "raise SystemExit(None)"),
  py("sys.exit('msg') prints msg, exits 1", "import sys; print('out'); sys.exit('msg')"),
  py("traceback", "def f():\n    raise ValueError('x')\nf()"),
  py("ZeroDivisionError", "print(1/0)"),
  py("SyntaxError", "print("),
  py("NameError for __file__", "print(__file__)"),
  py("chained exception", "try:\n    1/0\nexcept Exception as e:\n    raise KeyError('k') from e"),
  py("KeyboardInterrupt", "raise KeyboardInterrupt"),
  py("argv, path[0], __name__", "import sys; print(sys.argv, repr(sys.path[0]), __name__)"),
  py("the globals of -c", "print(sorted(globals()))"),
  py("atexit after output", "import atexit; atexit.register(lambda: print('bye')); print('hi')"),
  py("atexit and sys.exit('m') in order", "import atexit, sys\natexit.register(lambda: print('bye', file=sys.stderr))\nsys.exit('m')"),
  py("an unclosed file is flushed", "f = open('unclosed.txt', 'w'); f.write('kept')\nimport atexit\natexit.register(lambda: None)"),
  py("__del__ at exit", "class A:\n    def __del__(self):\n        print('del')\na = A()"),
  py("a non-daemon thread is waited for", "import threading, time\nthreading.Thread(target=lambda: (time.sleep(0.05), print('t'))).start()"),
  py("output without a newline", "import sys; sys.stdout.write('no newline')"),
  py("stderr", "import sys; print('err', file=sys.stderr); print('out')"),
  py("unicode", "print('h\\u00e9llo \\u2713 \\U0001F600')"),
  py("raw bytes, invalid UTF-8", "import sys; sys.stdout.buffer.write(b'a\\xff\\xfeb')"),
  py("raw fd writes", "import os; os.write(1, b'one\\n'); os.write(2, b'two\\n')"),
  py("os._exit(7) loses buffered output", "import os, sys; sys.stdout.write('lost'); os._exit(7)"),
  py("SIGSEGV from a bad read", "import ctypes; ctypes.string_at(0)"),
  py("stdin is at EOF", "import sys; print(repr(sys.stdin.read()))"),
  py("env", "import os; print(os.environ.get('KS_EQ'), os.environ.get('PYTHONPATH'))"),
  py("cwd is the workspace", "import os; print(sorted(os.listdir('.')))"),
  py("creates a file", "open('made-by-py.txt', 'w').write('x' * 10)"),
  py("modifies a file written before the call", "open('pre.txt', 'a').write('+more')",
    { before: (s) => s.writeFile("pre.txt", "start") }),
  py("imports a module written before the call", "import eqmod; print(eqmod.V)",
    { before: (s) => s.writeFile("eqmod.py", "V = 42\n") }),
  py("a 100 KB flood", "import sys; sys.stdout.write('y' * 100000)"),
  py("a flood past maxOutputBytes", "import sys; sys.stdout.write('z' * 300000); sys.stderr.write('e' * 300000)"),
  py("a daemon left behind", "import subprocess; subprocess.Popen(['sleep', '30']); print('left one')"),
  py("a timeout", "while True: pass", { opts: { timeoutS: 1 } }),
  py("exits with output after a sleep", "import time; time.sleep(0.2); print('late')"),
  py("json", "import json; print(json.dumps({'a': [1, 2]}))"),
  py("a compile-time warning, printed once", "x = 1\nx is 1\nprint(x is 1)"),
  py("a trailing expression over lines", "print(len([1,\n  2]))\nlen(\n  'ab')"),
  py("large code", `${"x = 1\n".repeat(20000)}print(x)`),
  sh("sh: out, err, exit 5", ["sh", "-c", "echo out; echo err >&2; exit 5"]),
  sh("sh: exit 255", ["sh", "-c", "exit 255"]),
  sh("sh: a background job left behind", ["sh", "-c", "sleep 30 & echo bg"]),
  sh("sh: stdin is /dev/null", ["sh", "-c", "cat; echo rc=$?"]),
  sh("sh: env", ["sh", "-c", "echo \"$KS_EQ\""]),
  sh("sh: the workspace", ["sh", "-c", "ls -a"]),
  sh("sh: command not found", ["no-such-command-ks"]),
  sh("sh: files", ["sh", "-c", "echo a > made-by-sh.txt; echo b >> pre.txt"],
    { before: (s) => s.writeFile("pre.txt", "start") }),
  sh("sh: a flood", ["sh", "-c", "head -c 200000 /dev/zero | tr '\\0' a"]),
  sh("sh: timeout", ["sh", "-c", "sleep 5"], { opts: { timeoutS: 1 } }),
  sh("sh: argv with spaces and quotes", ["sh", "-c", "printf '[%s]' \"$@\"", "x", "a b", "'q'", ""]),
  // A prewarmed box's argv is encoded by the engine (claimSend), a cold
  // box's by kern's argv: UTF-8 alike, a lone surrogate as U+FFFD alike.
  sh("sh: argv in UTF-8, a lone surrogate", ["sh", "-c", "printf '[%s]' \"$@\"", "x", "\u00e9\u20ac\u{1F600}", "a\uD800b"]),
  bash("bash snippet", "echo hi; exit 4"),
  node("node: console.log", "console.log(1 + 1)"),
  node("node: process.exit(3)", "process.exit(3)"),
  node("node: stderr and stdout", "console.error('e'); process.stdout.write('x')"),
];

const MODES = ["direct", "cold", "prewarmed"];

/** A session for a mode: the workload as the box's command (0.1.1's argv),
 * the init on a cold box, or the init on a prewarmed one. */
function sessionFor(mode, opts) {
  const base = { maxOutputBytes: 256 * 1024, env: { KS_EQ: "session" }, ...opts };
  if (mode === "direct") return new Sandbox({ ...base, [ENGINE]: "direct", prewarm: 0 });
  if (mode === "cold") return new Sandbox({ ...base, [ENGINE]: "init", prewarm: 0 });
  return new Sandbox({ ...base, prewarm: 1 });
}

/** The fields the table compares: all of them but durationMs and usage. */
function comparable(r) {
  return { stdout: r.stdout, stderr: r.stderr, exitCode: r.exitCode, success: r.success,
    fault: r.fault, truncated: r.truncated, files: r.files, limits: r.limits };
}

/**
 * Runs every program (of the given kinds) in each mode and returns
 * { results: {mode: {name: comparable}}, prewarmed: {name: bool} }.
 * images: kind -> image for a real kern ({} for the double). In the
 * prewarmed mode each call waits until a box of its kind has had readyMs to
 * start, and says whether it ran in one.
 */
async function runTable({ kinds, images = {}, readyMs }) {
  const { POOL_STATS } = require("../../lib/internal");
  const results = {};
  const prewarmed = {};
  for (const mode of MODES) {
    results[mode] = {};
    for (const kind of kinds) {
      const s = sessionFor(mode, images[kind] ? { image: images[kind] } : {});
      await s.open();
      try {
        const programs = PROGRAMS.filter((p) => p.kind === kind);
        // The pool holds the kind used last (Python before any call).
        if (mode === "prewarmed" && kind !== "python") await programs[0].call(s, {});
        for (const p of programs) {
          if (p.before) await p.before(s);
          if (mode === "prewarmed") await new Promise((r) => setTimeout(r, readyMs));
          const stats = () => (mode === "prewarmed" ? s[POOL_STATS]().prewarmedRuns : 0);
          const before = stats();
          const r = await p.call(s, p.opts ?? {});
          results[mode][p.name] = comparable(r);
          if (mode === "prewarmed") prewarmed[p.name] = stats() === before + 1;
        }
      } finally {
        await s.close();
      }
    }
  }
  return { results, prewarmed };
}

module.exports = { PROGRAMS, MODES, sessionFor, comparable, runTable };
