"use strict";

// Issue 33, items 2-3: sbx.spawn() / spawnCode() / processes(), a workload
// in a fresh box of its own that runs while the caller talks to it: live
// stdin and output, kill() through the init (no fault), deadlines (none
// with timeoutS null), aborts, close(), and output that never holds the box
// back (keepBytes, droppedBytes exact). SECURITY-CASES F2 and F5. Against
// the kern test double, which runs the real ks-init.
const assert = require("assert");
const { once } = require("events");
const { Readable } = require("stream");
const { Sandbox, SandboxError } = require("..");
const h = require("./lib/harness");
const { until, httpGet } = require("./lib/procs");


describe("processes: spawn() (issue 33)", function () {
  this.timeout(60000);
  let sbx;
  before(async function () {
    sbx = await new Sandbox({ prewarm: 0 }).open();
  });
  after(async function () {
    if (sbx) await sbx.close();
  });

  it("a spawned cat echoes each line while it runs; end() gives it EOF", async function () {
    const p = await sbx.spawn(["cat"]);
    assert.strictEqual(p.exited, false);
    for (const line of ["one\n", "two\n", "three\n"]) {
      const seen = until(p.stdout, (t) => t.endsWith(line));
      p.stdin.write(line);
      await seen; // echoed before the next line is written
    }
    p.stdin.end();
    const r = await p.wait();
    assert.strictEqual(r.exitCode, 0);
    assert.strictEqual(r.fault, null);
    assert.strictEqual(r.stdout, "one\ntwo\nthree\n");
    assert.strictEqual(r.truncated, false);
    assert.strictEqual(p.exited, true);
  });

  it("stdout across the handover to this thread (handStdout): every byte once, in order", async function () {
    // seq starts writing at once: some lines are read by the engine before
    // STARTED, the rest by this thread from the pipe, and the end's drain.
    const p = await sbx.spawn(["seq", "1", "300000"], { stdin: false, keepBytes: 8 << 20 });
    const chunks = [];
    p.stdout.on("data", (c) => chunks.push(c));
    const r = await p.wait();
    await new Promise((resolve) => p.stdout.once("end", resolve));
    let want = "";
    for (let i = 1; i <= 300000; i++) want += `${i}\n`;
    assert.strictEqual(r.exitCode, 0);
    assert.strictEqual(Buffer.concat(chunks).toString(), want);
    assert.deepStrictEqual(p.droppedBytes, { stdout: 0, stderr: 0 });
  });

  it("python3 -u answers each line before the next is sent (spawnCode)", async function () {
    if (!h.have("python3")) return h.skipHost(this, "no python3 on this host for the double to run");
    const p = await sbx.spawnCode("import sys\nfor l in sys.stdin:\n    print(int(l) * 2, flush=True)\n");
    let all = "";
    for (const n of [1, 21, 50]) {
      const want = `${n * 2}\n`;
      const seen = until(p.stdout, (t) => t.endsWith(want));
      p.stdin.write(`${n}\n`);
      all = await seen;
    }
    assert.strictEqual(all.split("\n").pop(), "");
    p.stdin.end();
    assert.strictEqual((await p.wait()).stdout, "2\n42\n100\n");
  });

  it("spawnCode runs bash and node too; a bad language or code is a SandboxError", async function () {
    const b = await sbx.spawnCode("echo $((6 * 7))", { language: "bash", stdin: false });
    assert.strictEqual((await b.wait()).stdout, "42\n");
    await assert.rejects(sbx.spawnCode("x", { language: "ruby" }), { code: "ERR_SANDBOX_INVALID_ARG" });
    await assert.rejects(sbx.spawnCode(42), { code: "ERR_SANDBOX_INVALID_ARG" });
  });

  it("stdin: false gives the workload EOF at once and no Writable", async function () {
    const p = await sbx.spawn(["cat"], { stdin: false });
    assert.strictEqual(p.stdin, null);
    const r = await p.wait();
    assert.strictEqual(r.exitCode, 0);
    assert.strictEqual(r.stdout, "");
  });

  it("kill() sends SIGTERM to the workload's process group; the end is no fault", async function () {
    const p = await sbx.spawn(["sh", "-c", "trap 'echo got-term; exit 7' TERM; echo ready; " +
      "while :; do sleep 0.05; done"], { timeoutS: 30 });
    await until(p.stdout, (t) => t.includes("ready"));
    const t0 = Date.now();
    p.kill();
    const r = await p.wait();
    assert.strictEqual(r.exitCode, 7);
    assert.strictEqual(r.fault, null);
    assert.strictEqual(r.stdout, "ready\ngot-term\n");
    assert.ok(Date.now() - t0 < 1900, "it ended at the signal, before the grace's kill");
  });

  it("a workload that ignores the signal is killed after graceS; still no fault", async function () {
    const p = await sbx.spawn(["sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.05; done"]);
    await until(p.stdout, (t) => t.includes("ready"));
    const t0 = Date.now();
    p.kill("SIGTERM", { graceS: 0.3 });
    const r = await p.wait();
    const ms = Date.now() - t0;
    assert.ok(ms >= 280 && ms < 5000, `ended after ${ms} ms`);
    assert.strictEqual(r.fault, null);
    assert.notStrictEqual(r.exitCode, 0);
    // Positive control: the same workload is a timeout when its deadline kills it.
    const q = await sbx.spawn(["sh", "-c", "trap '' TERM; while :; do sleep 0.05; done"], { timeoutS: 0.3 });
    assert.strictEqual((await q.wait()).fault?.type, "timeout");
  });

  it("kill() checks its arguments and does nothing once the process exited", async function () {
    const p = await sbx.spawn(["true"]);
    assert.throws(() => p.kill("SIGNOPE"), { code: "ERR_SANDBOX_INVALID_ARG" });
    assert.throws(() => p.kill("SIGTERM", { graceS: -1 }), { code: "ERR_SANDBOX_INVALID_OPTION" });
    await p.wait();
    p.kill("SIGKILL");
    assert.strictEqual((await p.wait()).exitCode, 0);
  });

  it("timeoutS: null runs past the session's deadline until kill()", async function () {
    const s = await new Sandbox({ prewarm: 0, timeoutS: 0.3 }).open();
    try {
      const p = await s.spawn(["sleep", "100"], { timeoutS: null });
      await h.sleep(800);
      assert.strictEqual(p.exited, false, "past the session's 0.3 s, still running");
      assert.ok(!h.recordedArgv().includes("--timeout"), "no kern backstop: " + h.recordedArgv().join(" "));
      p.kill("SIGKILL");
      const r = await p.wait();
      assert.strictEqual(r.fault, null);
      // Positive control: the session's deadline applies without timeoutS.
      const q = await s.spawn(["sleep", "100"]);
      assert.strictEqual((await q.wait()).fault?.type, "timeout");
    } finally {
      await s.close();
    }
  });

  it("an unread stream drops its oldest bytes past keepBytes, exactly, and never stalls the box (F2)", async function () {
    const total = 8 * 1024 * 1024;
    const keep = 64 * 1024;
    const p = await sbx.spawn(["head", "-c", String(total), "/dev/zero"], { keepBytes: keep, stdin: false });
    const r = await p.wait(); // nobody reads stdout: the box still finishes
    assert.strictEqual(r.exitCode, 0);
    assert.strictEqual(r.stdout.length, keep, "the result keeps the last keepBytes");
    assert.strictEqual(r.truncated, true);
    let read = 0;
    for await (const chunk of p.stdout) read += chunk.length;
    assert.ok(read <= keep + 64 * 1024, `at most keepBytes (plus the Readable's own buffer) left: ${read}`);
    assert.strictEqual(read + p.droppedBytes.stdout, total, "read + dropped == written");
    assert.strictEqual(p.droppedBytes.stderr, 0);
  });

  it("Readable.toWeb works; with keepBytes over the stream's size nothing is dropped", async function () {
    // (A reader slower than the box loses the oldest bytes past keepBytes:
    // the box is never held back by a reader. Here keepBytes holds it all.)
    const total = 4 * 1024 * 1024;
    const p = await sbx.spawn(["head", "-c", String(total), "/dev/zero"], { keepBytes: total, stdin: false });
    let read = 0;
    for await (const chunk of Readable.toWeb(p.stdout)) read += chunk.length;
    await p.wait();
    assert.strictEqual(read, total);
    assert.strictEqual(p.droppedBytes.stdout, 0);
  });

  it("'exit' comes once, with the result wait() gives; processes() lists the live ones", async function () {
    const p = await sbx.spawn(["sleep", "100"], { timeoutS: null });
    const q = await sbx.spawn(["sleep", "100"], { timeoutS: null });
    assert.deepStrictEqual(new Set(sbx.processes()), new Set([p, q]));
    let exits = 0;
    let seen = null;
    p.on("exit", (r) => {
      exits++;
      seen = r;
    });
    p.kill("SIGKILL");
    const r = await p.wait();
    await h.sleep(50);
    assert.strictEqual(exits, 1);
    assert.strictEqual(seen, r);
    assert.deepStrictEqual(sbx.processes(), [q]);
    q.kill("SIGKILL");
    await q.wait();
    assert.deepStrictEqual(sbx.processes(), []);
  });

  it("close() ends every process; they outlive nothing (F5)", async function () {
    const s = await new Sandbox({ prewarm: 0 }).open();
    const ps = await Promise.all([1, 2, 3].map(() => s.spawn(["sleep", "100"], { timeoutS: null })));
    const exits = ps.map((p) => once(p, "exit"));
    await s.close();
    const results = await Promise.all(ps.map((p) => p.wait()));
    await Promise.all(exits);
    for (const r of results) assert.notStrictEqual(r.exitCode, 0);
    assert.deepStrictEqual(s.processes(), []);
    await assert.rejects(s.spawn(["true"]), { code: "ERR_SANDBOX_CLOSED" });
  });

  it("an abort rejects wait() with an AbortError; an aborted signal refuses to start", async function () {
    const ac = new AbortController();
    const p = await sbx.spawn(["sleep", "100"], { signal: ac.signal, timeoutS: null });
    const exit = once(p, "exit");
    ac.abort();
    await assert.rejects(p.wait(), { name: "AbortError" });
    const exitArgs = await exit;
    assert.strictEqual(exitArgs[0], null);
    assert.strictEqual(exitArgs[1].name, "AbortError");
    await assert.rejects(sbx.spawn(["true"], { signal: AbortSignal.abort() }), { name: "AbortError" });
  });

  it("cwd runs the workload in a workspace directory; one that leaves it is refused", async function () {
    await sbx.writeFile("sub/dir/f.txt", "x");
    const p = await sbx.spawn(["cat", "f.txt"], { cwd: "sub/dir", stdin: false });
    assert.strictEqual((await p.wait()).stdout, "x");
    await assert.rejects(sbx.spawn(["true"], { cwd: "../.." }), { code: "ERR_SANDBOX_INVALID_PATH" });
    await assert.rejects(sbx.spawn(["true"], { cwd: "/etc" }), { code: "ERR_SANDBOX_INVALID_PATH" });
  });

  it("env per process; bad arguments and options are SandboxErrors that say what to fix", async function () {
    const p = await sbx.spawn(["sh", "-c", "echo $GREETING"], { env: { GREETING: "hi" }, stdin: false });
    assert.strictEqual((await p.wait()).stdout, "hi\n");
    for (const [argv, opts, code] of [
      ["ls", {}, "ERR_SANDBOX_INVALID_ARG"],
      [[], {}, "ERR_SANDBOX_INVALID_ARG"],
      [["true"], { keepBytes: 0 }, "ERR_SANDBOX_INVALID_OPTION"],
      [["true"], { stdin: "text" }, "ERR_SANDBOX_INVALID_OPTION"],
      [["true"], { timeoutS: -1 }, "ERR_SANDBOX_INVALID_OPTION"],
      [["true"], { nope: 1 }, "ERR_SANDBOX_INVALID_OPTION"],
    ]) {
      await assert.rejects(sbx.spawn(argv, opts), (e) => e instanceof SandboxError && e.code === code,
        JSON.stringify([argv, opts]));
    }
  });

  it("a prewarmed box serves a spawn and starts it at once", async function () {
    const s = await new Sandbox({ prewarm: 1 }).open();
    try {
      await s.run(["true"]); // the pool learns the exec kind
      await h.poolReady(s);
      const p = await s.spawn(["cat"]);
      const seen = until(p.stdout, (t) => t === "hi\n");
      p.stdin.end("hi\n");
      await seen;
      const r = await p.wait();
      assert.strictEqual(r.stdout, "hi\n");
      assert.ok(require("../lib/internal").POOL_STATS in s, "positive control: the pool is visible");
      assert.ok(s[require("../lib/internal").POOL_STATS]().prewarmedRuns >= 1, "the spawn ran in a prewarmed box");
    } finally {
      await s.close();
    }
  });
});

describe("processes: the security cases (SECURITY-CASES F1, F2, F5)", function () {
  this.timeout(120000);
  let sbx;
  before(async function () {
    sbx = await new Sandbox({ prewarm: 0 }).open();
  });
  after(async function () {
    if (sbx) await sbx.close();
  });

  it("F1: a write after exit fails with EPIPE in its callback, never a crash", async function () {
    const p = await sbx.spawn(["true"]);
    await p.wait();
    const err = await new Promise((resolve) => p.stdin.write("late\n", resolve));
    assert.strictEqual(err.code, "EPIPE");
    assert.strictEqual(err.syscall, "write");
    assert.strictEqual(typeof err.errno, "number");
    // Positive control: while it runs the same write succeeds.
    const q = await sbx.spawn(["cat"]);
    assert.ok(!(await new Promise((resolve) => q.stdin.write("x", resolve))));
    q.stdin.end();
    assert.strictEqual((await q.wait()).stdout, "x");
  });

  it("F1: stdin written faster than the box reads is back-pressured; the deadline still fires", async function () {
    const p = await sbx.spawn(["sleep", "100"], { timeoutS: 0.5 });
    const chunk = Buffer.alloc(64 * 1024);
    let accepted = 0;
    while (p.stdin.write(chunk)) {
      accepted += chunk.length;
      if (accepted > 64 * 1024 * 1024) break;
    }
    assert.ok(accepted < 16 * 1024 * 1024, `write() said wait after ${accepted} bytes`);
    const r = await p.wait();
    assert.strictEqual(r.fault?.type, "timeout");
  });

  it("F2: the retained tail is the latest bytes; a late reader gets the newest keepBytes", async function () {
    const keep = 4096;
    const p = await sbx.spawn(["seq", "1", "200000"], { keepBytes: keep, stdin: false });
    const r = await p.wait();
    assert.ok(r.stdout.endsWith("199999\n200000\n"), r.stdout.slice(-40));
    assert.strictEqual(r.stdout.length, keep);
    let late = "";
    for await (const c of p.stdout) late += c;
    assert.ok(late.endsWith("200000\n"));
    const written = Buffer.byteLength(Array.from({ length: 200000 }, (_, i) => `${i + 1}\n`).join(""));
    assert.strictEqual(Buffer.byteLength(late) + p.droppedBytes.stdout, written);
  });

  it("F5: 100 spawns with random kills, aborts, deadlines and a close: one exit and one settlement each", async function () {
    const s = await new Sandbox({ prewarm: 0 }).open();
    const procs = [];
    const counts = new Map();
    const rand = (n) => Math.floor(Math.random() * n);
    const starts = [];
    for (let i = 0; i < 100; i++) {
      const ac = new AbortController();
      const kind = rand(4);
      const opts = kind === 2 ? { timeoutS: 0.05 + Math.random() * 0.2 } : { timeoutS: null, signal: ac.signal };
      const start = s.spawn(["sh", "-c", `sleep ${(Math.random() * 0.3).toFixed(3)}; echo ${i}`], opts).then((p) => {
        const c = { exit: 0, settled: 0 };
        counts.set(p, c);
        p.on("exit", () => c.exit++);
        p.wait().then(() => c.settled++, () => c.settled++);
        procs.push(p);
        if (kind === 0) setTimeout(() => p.kill(rand(2) ? "SIGTERM" : "SIGKILL", { graceS: 0.1 }), rand(200));
        if (kind === 1) setTimeout(() => ac.abort(), rand(200));
      }, (e) => {
        if (e.name !== "AbortError" && e.code !== "ERR_SANDBOX_CLOSED") throw e;
      });
      if (kind === 1 && rand(4) === 0) ac.abort(); // sometimes before it starts
      starts.push(start);
      if (i === 80) setTimeout(() => s.close(), rand(100));
    }
    await Promise.all(starts);
    await s.close();
    await Promise.all(procs.map((p) => p.wait().catch(() => {})));
    await h.sleep(100);
    for (const [p, c] of counts) assert.deepStrictEqual(c, { exit: 1, settled: 1 }, p.id);
    assert.deepStrictEqual(s.processes(), []);
  });
});

describe("processes: a box that cannot start", function () {
  this.timeout(60000);
  it("kern's startup failure is the result's fault, its line in stderr", async function () {
    const s = await new Sandbox({ prewarm: 0, image: "nonexistent:latest" }).open();
    try {
      const p = await s.spawn(["true"]);
      const r = await p.wait();
      assert.strictEqual(r.fault?.type, "startup_failed", JSON.stringify(r));
      assert.strictEqual(r.fault.message, "error: pull: nonexistent:latest: manifest unknown");
      assert.match(r.stderr, /manifest unknown/);
      // Positive control: the same through run().
      assert.strictEqual((await s.run(["true"])).fault?.type, "startup_failed");
    } finally {
      await s.close();
    }
  });
});

describe("processes: published ports (issue 33 item 4; SECURITY-CASES F4, double)", function () {
  this.timeout(60000);
  const net = require("net");
  const portsLib = require("../lib/ports");
  let sbx;
  before(async function () {
    if (!h.have("python3")) return h.skipHost(this, "no python3 on this host for the double to run");
    sbx = await new Sandbox({ prewarm: 0 }).open();
  });
  after(async function () {
    if (sbx) await sbx.close();
  });

  /** A TCP port free on the host now (the double has no network namespace:
   * its box ports are host ports). */
  async function freePort() {
    const [m] = await portsLib.pickPorts([1], "127.0.0.1");
    return m.host;
  }


  it("a service answers a host HTTP GET through proc.ports; kern's line is not in its stderr", async function () {
    const P = await freePort();
    await sbx.writeFile("index.html", "hello from the box\n");
    const p = await sbx.spawn(["python3", "-m", "http.server", String(P), "--bind", "127.0.0.1"],
      { ports: [P], timeoutS: null, stdin: false });
    const pub = p.ports[P];
    assert.strictEqual(pub.host, "127.0.0.1");
    assert.notStrictEqual(pub.port, P, "a host port of the package's choosing");
    assert.strictEqual(pub.url, `http://127.0.0.1:${pub.port}`);
    await p.waitForPort(P, { timeoutS: 20 });
    const res = await httpGet(`${pub.url}/index.html`);
    assert.strictEqual(res.status, 200);
    assert.strictEqual(res.body, "hello from the box\n");
    p.kill();
    const r = await p.wait();
    assert.strictEqual(r.fault, null);
    assert.ok(!r.stderr.includes("publishing"), r.stderr);
    assert.ok(h.recordedArgv().includes(`127.0.0.1:${pub.port}:${P}`), "positive control: kern was asked to publish");
  });

  it("waitForPort waits for a listener: the forwarder's accept alone is not one", async function () {
    const P = await freePort();
    const p = await sbx.spawn(["sh", "-c", `sleep 0.6; exec python3 -m http.server ${P} --bind 127.0.0.1`],
      { ports: [P], timeoutS: null, stdin: false });
    // The forwarder accepts at once, with nothing behind it yet.
    const raw = net.connect(p.ports[P].port, "127.0.0.1");
    await once(raw, "connect");
    await once(raw, "close");
    const t0 = Date.now();
    await p.waitForPort(P, { timeoutS: 20 });
    assert.ok(Date.now() - t0 >= 300, "resolved only once the server listened");
    await assert.rejects(p.waitForPort(P + 1), { code: "ERR_SANDBOX_INVALID_ARG" });
    p.kill("SIGKILL");
    await p.wait();
    await assert.rejects(p.waitForPort(P), { code: "ERR_SANDBOX_PORT_NOT_READY" });
  });

  it("a host port taken between the choice and kern's bind is retried at another", async function () {
    const blocker = net.createServer().listen(0, "127.0.0.1");
    await once(blocker, "listening");
    const taken = blocker.address().port;
    const orig = portsLib.pickPorts;
    let calls = 0;
    portsLib.pickPorts = async (boxPorts, ip) => (++calls === 1
      ? boxPorts.map((box) => ({ ip, host: taken, box })) : orig(boxPorts, ip));
    try {
      const P = await freePort();
      const p = await sbx.spawn(["true"], { ports: [P], stdin: false });
      assert.strictEqual(calls, 2);
      assert.notStrictEqual(p.ports[P].port, taken);
      assert.strictEqual((await p.wait()).exitCode, 0);
      // Three taken in a row: a SandboxError that says so.
      portsLib.pickPorts = async (boxPorts, ip) => boxPorts.map((box) => ({ ip, host: taken, box }));
      await assert.rejects(sbx.spawn(["true"], { ports: [P] }), { code: "ERR_SANDBOX_PORT_UNAVAILABLE" });
    } finally {
      portsLib.pickPorts = orig;
      blocker.close();
    }
  });

  it("ports are checked, refused with network: true, and publishHost needs ports", async function () {
    await assert.rejects(sbx.spawn(["true"], { ports: [0] }), { code: "ERR_SANDBOX_INVALID_OPTION" });
    await assert.rejects(sbx.spawn(["true"], { ports: [80, 80] }), { code: "ERR_SANDBOX_INVALID_OPTION" });
    await assert.rejects(sbx.spawn(["true"], { publishHost: "0.0.0.0" }), { code: "ERR_SANDBOX_INVALID_OPTION" });
    await assert.rejects(sbx.spawn(["true"], { ports: [80], publishHost: "::" }), { code: "ERR_SANDBOX_INVALID_OPTION" });
    const s = await new Sandbox({ prewarm: 0, network: true }).open();
    try {
      await assert.rejects(s.spawn(["true"], { ports: [8000] }), { code: "ERR_SANDBOX_INVALID_OPTION" });
    } finally {
      await s.close();
    }
  });

  it("close() ends every service and frees every host port within 1 s", async function () {
    const s = await new Sandbox({ prewarm: 0 }).open();
    const procs = [];
    for (let i = 0; i < 5; i++) {
      const P = await freePort();
      const p = await s.spawn(["python3", "-m", "http.server", String(P), "--bind", "127.0.0.1"],
        { ports: [P], timeoutS: null, stdin: false });
      procs.push([p, P]);
    }
    for (const [p, P] of procs) {
      await p.waitForPort(P, { timeoutS: 20 });
      assert.strictEqual((await httpGet(p.ports[P].url)).status, 200);
    }
    const hostPorts = procs.map(([p, P]) => p.ports[P].port);
    await s.close();
    const t0 = Date.now();
    for (const port of hostPorts) {
      // Free again: a listener of ours can take it.
      for (;;) {
        const srv = net.createServer();
        const ok = await new Promise((resolve) => {
          srv.once("error", () => resolve(false));
          srv.listen({ port, host: "127.0.0.1", exclusive: true }, () => resolve(true));
        });
        if (ok) {
          await new Promise((r) => srv.close(r));
          break;
        }
        assert.ok(Date.now() - t0 < 1000, `host port ${port} still taken 1 s after close()`);
        await h.sleep(20);
      }
    }
  });
});

describe("processes: Node's death, process.exit() and a terminated Worker (F5, terminals included; double)", function () {
  this.timeout(60000);
  const path = require("path");
  const { spawn } = require("child_process");
  const portsLib = require("../lib/ports");
  before(function () {
    if (!h.have("python3")) return h.skipHost(this, "no python3 on this host for the double to run");
  });

  /** Runs the fixture in MODE with three services; once it said so (and, for
   * kill, is SIGKILLed), waits 2 s for its boxes, kern, forwarders and
   * their workers (all carry the workspace in their argv or cwd) to go. */
  async function leaves(mode) {
    const ws = h.tmpDir(`pdeath-${mode}-`);
    const ports = (await portsLib.pickPorts([1, 2, 3], "127.0.0.1")).map((m) => String(m.host));
    const child = spawn(process.execPath, [path.join(h.repo, "test/fixtures/scripts/process-death.js"),
      mode, h.repo, ws, ...ports], { stdio: ["ignore", "pipe", "inherit"] });
    const exited = h.exitOf(child);
    const said = await h.firstOutput(child, exited);
    const mine = () => h.processes().filter((p) => p.state !== "Z" && p.pid !== child.pid &&
      p.argv.includes(ws)).map((p) => p.pid).concat(h.processesIn(ws).filter((pid) => pid !== child.pid));
    if (mode === "kill") {
      assert.ok(mine().length >= 6, `positive control: the services run (${said})`);
      child.kill("SIGKILL");
    }
    if (mode === "worker") assert.match(String(said), /terminated/);
    const gone = await h.waitFor(() => mine().length === 0, 2000);
    child.kill("SIGKILL");
    await exited;
    assert.ok(gone, `left behind 2 s later: ${mine()}`);
  }

  it("a SIGKILLed Node with services and kept-alive connections leaves nothing 2 s later", async function () {
    await leaves("kill");
  });
  it("process.exit() with services running leaves nothing", async function () {
    await leaves("exit");
  });
  it("a terminated Worker's services end with it", async function () {
    await leaves("worker");
  });
});
