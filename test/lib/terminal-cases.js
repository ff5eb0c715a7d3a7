"use strict";

// Issue 33, item 3: the terminal cases, the same against the test double
// (test/55) and a real kern (test/integration/terminals). Each runs in the
// Sandbox that sandbox() gives (prewarm 0: a terminal's box is cold
// anyway). SECURITY-CASES F3 as cases with their positive controls.
const assert = require("assert");
const fs = require("fs");
const { SandboxError } = require("../..");
const h = require("./harness");
const { until } = require("./procs");

// A shell with no rc files and a prompt the cases can wait for.
const SHELL = ["bash", "--norc", "--noprofile", "-i"];
const SHELL_ENV = { PS1: "$\\040" }; // "$ " (a value may not end in a space)
const PROMPT = /\$ $/;

/** The descriptors of this process that are a pty (its master or a slave). */
function ptyFds() {
  const out = [];
  for (const fd of fs.readdirSync("/proc/self/fd")) {
    let target = "";
    try {
      target = fs.readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      continue; // closed meanwhile (the readdir's own)
    }
    if (target === "/dev/ptmx" || target.startsWith("/dev/pts/")) out.push(`${fd} -> ${target}`);
  }
  return out;
}

/** A process's terminal output collected on p.out as it comes. */
function collect(p) {
  p.out = "";
  p.stdout.on("data", (d) => (p.out += d));
  return p;
}

/** Types line into a shell at its prompt and waits for the next prompt:
 * the output between the two. */
async function typeLine(p, line, ms = 20000) {
  const from = p.out.length;
  const seen = until(p.stdout, () => PROMPT.test(p.out.slice(from + line.length)), ms);
  p.stdin.write(`${line}\n`);
  await seen;
  return p.out.slice(from);
}

function terminalCases(sandbox, { real = false } = {}) {
  const python = () => real || h.have("python3");

  it("stty size reports the size given and the new one after resize(); fds 0-2 are the terminal; TERM", async function () {
    const p = collect(await sandbox().spawn(["sh", "-c",
      "stty size; for fd in 0 1 2; do test -t $fd && echo tty$fd; done; echo TERM=$TERM; read go; stty size"],
    { pty: { cols: 100, rows: 30 }, timeoutS: 30 }));
    await until(p.stdout, (t) => t.includes("TERM="), 20000);
    p.resize(132, 43);
    p.stdin.write("go\n");
    const r = await p.wait();
    assert.strictEqual(r.exitCode, 0, r.stdout);
    assert.strictEqual(r.fault, null);
    assert.strictEqual(r.stdout, "30 100\r\ntty0\r\ntty1\r\ntty2\r\nTERM=xterm-256color\r\ngo\r\n43 132\r\n");
    assert.strictEqual(r.stderr, "");
    // The default size, and the caller's TERM over the default.
    const d = await (await sandbox().spawn(["sh", "-c", "stty size; echo $TERM"],
      { pty: true, env: { TERM: "vt100" }, stdin: false })).wait();
    assert.strictEqual(d.stdout, "24 80\r\nvt100\r\n");
    // The session's TERM wins over the default too.
    const other = await new (sandbox().constructor)({ prewarm: 0, env: { TERM: "dumb" } }).open();
    try {
      const e = await (await other.spawn(["sh", "-c", "echo $TERM"], { pty: true, stdin: false })).wait();
      assert.strictEqual(e.stdout, "dumb\r\n");
    } finally {
      await other.close();
    }
  });

  it("resize() delivers SIGWINCH to the foreground process", async function () {
    const p = collect(await sandbox().spawn(["bash", "-c",
      "trap 'echo winch $(stty size)' WINCH; echo ready; while :; do sleep 0.05; done"],
    { pty: true, timeoutS: 30 }));
    await until(p.stdout, (t) => t.includes("ready"), 20000);
    const seen = until(p.stdout, (t) => t.includes("winch 50 200"), 10000);
    p.resize(200, 50);
    await seen;
    p.kill("SIGKILL");
    await p.wait();
  });

  it("python3 -i answers 1+1 with 2", async function () {
    if (!python()) return h.skipHost(this, "no python3 on this host for the double to run");
    const p = collect(await sandbox().spawn(["python3", "-i", "-q"], { pty: true, timeoutS: 30 }));
    await until(p.stdout, () => />>> $/.test(p.out), 20000);
    const answered = until(p.stdout, () => /1\+1\r\n2\r\n>>> $/.test(p.out), 10000);
    p.stdin.write("1+1\n");
    await answered;
    p.stdin.write("\x04"); // ^D at the prompt: the end of its input
    const r = await p.wait();
    assert.strictEqual(r.exitCode, 0);
    assert.strictEqual(r.fault, null);
  });

  it("\\x03 interrupts sleep 100 in a shell, which keeps running; job control works", async function () {
    const p = collect(await sandbox().spawn(SHELL, { pty: true, env: SHELL_ENV, timeoutS: 60 }));
    await until(p.stdout, () => PROMPT.test(p.out), 20000);
    assert.doesNotMatch(p.out, /no job control/);
    const from = p.out.length;
    p.stdin.write("sleep 100\n");
    await h.sleep(300);
    const t0 = Date.now();
    const back = until(p.stdout, () => PROMPT.test(p.out.slice(from + 12)), 10000);
    p.stdin.write("\x03");
    await back;
    assert.ok(Date.now() - t0 < 5000, "the interrupt took the sleep down at once");
    assert.match(await typeLine(p, "echo rc=$?"), /rc=130/);
    // A background job, listed and ended by the shell's own job control.
    assert.match(await typeLine(p, "sleep 50 &"), /\[1\] \d+/);
    assert.match(await typeLine(p, "jobs"), /\[1\]\+ +Running +sleep 50 &/);
    assert.match(await typeLine(p, "kill %1; wait; echo done"), /done/);
    p.stdin.write("exit\n");
    const r = await p.wait();
    assert.strictEqual(r.exitCode, 0);
    assert.strictEqual(r.fault, null);
  });

  it("stdin: false: a terminal nobody types into; kill() ends it with no fault", async function () {
    const p = await sandbox().spawn(["sh", "-c", "echo up; read x; echo never"], { pty: true, stdin: false,
      timeoutS: 30 });
    assert.strictEqual(p.stdin, null);
    await until(p.stdout, (t) => t.includes("up"), 20000);
    p.kill("SIGTERM", { graceS: 1 });
    const r = await p.wait();
    assert.strictEqual(r.fault, null);
    assert.doesNotMatch(r.stdout, /never/);
  });

  it("bad pty options and resize() calls are SandboxErrors that say what to fix", async function () {
    const s = sandbox();
    for (const pty of [{ cols: 0 }, { rows: 1.5 }, { cols: 70000 }, "yes", 1]) {
      await assert.rejects(s.spawn(["true"], { pty }), (e) => e instanceof SandboxError &&
        e.code === "ERR_SANDBOX_INVALID_OPTION" && /pty/.test(e.message));
    }
    const plain = await s.spawn(["sleep", "30"], { stdin: false });
    assert.throws(() => plain.resize(80, 24), (e) => e.code === "ERR_SANDBOX_INVALID_ARG" && /pty: true/.test(e.message));
    plain.kill("SIGKILL");
    await plain.wait();
    const t = await s.spawn(["sleep", "30"], { pty: true });
    assert.throws(() => t.resize(0, 24), (e) => e.code === "ERR_SANDBOX_INVALID_OPTION" && /cols/.test(e.message));
    t.kill("SIGKILL");
    await t.wait();
    t.resize(100, 40); // once it exited: nothing to do, no error
  });

  it("F3: writes after the exit fail with EPIPE; no descriptor of the pty is left on the host", async function () {
    const before = ptyFds();
    const p = await sandbox().spawn(["sh", "-c", "exit 3"], { pty: true });
    const r = await p.wait();
    assert.strictEqual(r.exitCode, 3);
    const err = await new Promise((resolve) => p.stdin.write("late\n", resolve));
    assert.strictEqual(err?.code, "EPIPE");
    // A terminal ended by close(), and one by its deadline.
    const s = sandbox();
    const a = await s.spawn(["sleep", "60"], { pty: true, timeoutS: 1 });
    const b = await s.spawn(SHELL, { pty: true, env: SHELL_ENV });
    assert.ok(ptyFds().length > before.length, "positive control: a live terminal's descriptors are seen");
    assert.strictEqual((await a.wait()).fault?.type, "timeout");
    b.kill("SIGKILL");
    await b.wait();
    // An abort, and a session's close() under a live terminal.
    const ac = new AbortController();
    const c = await s.spawn(SHELL, { pty: true, env: SHELL_ENV, signal: ac.signal });
    ac.abort();
    await assert.rejects(c.wait(), { name: "AbortError" });
    const other = await new (s.constructor)({ prewarm: 0 }).open();
    const d = await other.spawn(SHELL, { pty: true, env: SHELL_ENV });
    await other.close();
    assert.strictEqual(d.exited, true);
    await h.settledFds();
    assert.deepStrictEqual(ptyFds(), before);
  });

  it("F3: 10,000 resizes; the last one is what the box sees", async function () {
    const p = collect(await sandbox().spawn(["sh", "-c", "read go; stty size"], { pty: true, timeoutS: 60 }));
    for (let i = 0; i < 10000; i++) p.resize(10 + (i % 200), 5 + (i % 100));
    p.resize(77, 33);
    p.stdin.write("go\n");
    const r = await p.wait();
    assert.strictEqual(r.exitCode, 0);
    assert.match(r.stdout, /33 77\r\n$/);
  });

  it("F3: a 1 MiB line without a newline comes through whole", async function () {
    const n = 1 << 20;
    const p = await sandbox().spawn(["sh", "-c", `head -c ${n} /dev/zero | tr '\\0' x`],
      { pty: true, stdin: false, timeoutS: 60, keepBytes: 2 * n });
    const r = await p.wait();
    assert.strictEqual(r.exitCode, 0);
    assert.strictEqual(r.stdout.length, n);
    assert.match(r.stdout, /^x+$/);
    assert.deepStrictEqual(p.droppedBytes, { stdout: 0, stderr: 0 });
  });

  it("F3: a terminal query (DSR, DA) gets no answer from the host: the box's read times out", async function () {
    const query = ["bash", "-c",
      "stty -echo; printf '\\033[6n\\033[c'; if read -rs -t 1 -d R answer; then echo answered; else echo none; fi"];
    const p = await sandbox().spawn(query, { pty: true, timeoutS: 30 });
    const r = await p.wait();
    assert.strictEqual(r.exitCode, 0);
    assert.match(r.stdout, /\x1b\[6n\x1b\[cnone\r\n$/);
    // Positive control: an answer typed into the terminal is read.
    const q = collect(await sandbox().spawn(query, { pty: true, timeoutS: 30 }));
    await until(q.stdout, () => q.out.includes("\x1b[c"), 20000);
    q.stdin.write("\x1b[1;1R");
    const a = await q.wait();
    assert.match(a.stdout, /answered\r\n$/);
  });

  it("F3: TIOCSTI injects only into the box's own session; another session cannot take the terminal", async function () {
    if (!python()) return h.skipHost(this, "no python3 on this host for the double to run");
    let legacy = "1";
    try {
      legacy = fs.readFileSync("/proc/sys/dev/tty/legacy_tiocsti", "utf8").trim();
    } catch {
      // Before Linux 6.2 there is no switch: TIOCSTI works on one's own terminal.
    }
    if (legacy === "0") return h.skipHost(this, "TIOCSTI is off on this kernel (dev.tty.legacy_tiocsti=0)");
    const code = [
      "import fcntl, os, sys, termios",
      // Positive control: the workload's own terminal takes injected keys,
      // and the workload itself reads them back.
      "for c in b'hi\\n': fcntl.ioctl(0, termios.TIOCSTI, bytes([c]))",
      "print('read:', input(), flush=True)",
      "pid = os.fork()",
      "if pid == 0:",
      "    os.setsid()",
      "    fd = os.open('/proc/self/fd/0', os.O_RDWR | os.O_NOCTTY)",
      "    for what, call in (('steal', lambda: fcntl.ioctl(fd, termios.TIOCSCTTY, 1)),",
      "                       ('inject', lambda: fcntl.ioctl(fd, termios.TIOCSTI, b'x'))):",
      "        try: call(); print(what, 'ok', flush=True)",
      "        except OSError as e: print(what, 'refused', e.errno, flush=True)",
      "    try: os.open('/dev/tty', os.O_RDWR); print('devtty ok', flush=True)",
      "    except OSError as e: print('devtty refused', e.errno, flush=True)",
      "    os._exit(0)",
      "os.waitpid(pid, 0)",
    ].join("\n");
    const p = await sandbox().spawn(["python3", "-c", code], { pty: true, timeoutS: 30 });
    const r = await p.wait();
    assert.strictEqual(r.exitCode, 0, r.stdout);
    assert.match(r.stdout, /read: hi\r\n/);
    assert.match(r.stdout, /steal refused 1\r\n/); // EPERM: not without CAP_SYS_ADMIN on the host
    assert.match(r.stdout, /inject refused 1\r\n/); // EPERM: not its controlling terminal
    // ENXIO: a new session has no terminal (ENOENT in a real box, whose
    // /dev has no tty at all).
    assert.match(r.stdout, /devtty refused (6|2)\r\n/);
  });
}

module.exports = { terminalCases, ptyFds, collect, typeLine, SHELL, SHELL_ENV, PROMPT };
