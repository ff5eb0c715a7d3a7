"use strict";

// Issue 35: kern-sandbox/cluster's client gives what the local API gives:
// the same ExecutionResults (rich Results, Buffers, faults), the same
// errors with their class and code, sessions with files pinned to one
// worker; and the 50+ programs of the equality table (test/lib/equality.js)
// give the same fields through a worker as locally. A real redis-server on
// a unix socket and a real worker process, with the kern double.
const assert = require("assert");
const { execFileSync } = require("child_process");
const h = require("./lib/harness");
const { RedisServer, requireRedis } = require("./lib/redis");
const { WorkerProc, censusZero, CLIENT_TIMING } = require("./lib/cluster");
const { PROGRAMS, comparable } = require("./lib/equality");
const kern = require("..");

/** A file holding a preload script (for `node --require`). */
function writeHide(text) {
  const f = require("path").join(h.tmpDir("hide-"), "hide-bullmq.js");
  require("fs").writeFileSync(f, text);
  return f;
}

// A .pyc holds its source's path, here the host path of the workspace (the
// double runs boxes on the host), which is longer under a worker's run dir:
// its size is the one field that may differ.
function sameWorkspacePath(c) {
  return { ...c, files: c.files.map((f) => (f.path.startsWith("__pycache__/") ? { ...f, size: "-" } : f)) };
}

describe("kern-sandbox/cluster: the local API over Redis (issue 35)", function () {
  this.timeout(h.startWait(60000));
  let redis = null;
  let worker = null;
  let cl = null;
  let stateDir;

  before(async function () {
    requireRedis(this);
    redis = await new RedisServer().start();
    stateDir = h.tmpDir("cl-state-");
    worker = await new WorkerProc(redis, { stateDir, args: ["--capacity", "4", "--allow-env", "--any-image"] }).start();
    cl = await require("../lib/cluster").connect({ connection: redis.connection, timing: CLIENT_TIMING });
  });

  after(async function () {
    if (cl) await cl.close();
    if (worker) assert.deepStrictEqual(await worker.stop(), { code: 0, signal: null }, worker.stderr);
    if (redis) await redis.dispose();
    if (worker) assert.deepStrictEqual(await censusZero(stateDir), { kern: 0, runDirs: [] });
  });

  it("require(\"kern-sandbox\") loads no bullmq; kern-sandbox/cluster loads it only when used", function () {
    const probe = (expr) => execFileSync(process.execPath, ["-e", `${expr}; console.log(Object.keys(require.cache)` +
      ".filter((k) => k.includes('/node_modules/')).length)"], { cwd: h.repo, encoding: "utf8" }).trim();
    assert.strictEqual(probe("require('kern-sandbox')"), "0");
    assert.strictEqual(probe("require('kern-sandbox/cluster')"), "0");
    assert.notStrictEqual(probe("require('kern-sandbox/cluster').startWorker({}).catch(() => {})"), "0");
  });

  it("without bullmq: ERR_SANDBOX_MISSING_PEER naming the npm command (positive control: with it, no such error)", function () {
    // A preload that makes bullmq unresolvable, as on a machine without it.
    const hide = "const M = require('module'); const r = M._resolveFilename; M._resolveFilename = function (req, ...a) { " +
      "if (req === 'bullmq') { const e = new Error(\"Cannot find module 'bullmq'\"); e.code = 'MODULE_NOT_FOUND'; throw e; } " +
      "return r.call(this, req, ...a); };";
    const probe = (preload) => execFileSync(process.execPath, [...preload, "-e",
      `require('kern-sandbox/cluster').connect({ connection: { path: ${JSON.stringify(redis.socket)} } })` +
      ".then((c) => c.close().then(() => console.log('connected')), (e) => console.log(e.name, e.code, e.message))"],
    { cwd: h.repo, encoding: "utf8", timeout: 20000 }).trim();
    const without = probe(["--require", writeHide(hide)]);
    assert.match(without, /^SandboxError ERR_SANDBOX_MISSING_PEER .*npm install bullmq@\^5/);
    assert.strictEqual(probe([]), "connected");
  });

  it("a one-shot runCode and run give the local ExecutionResult, field by field", async function () {
    const code = "import sys\nprint('out')\nprint('err', file=sys.stderr)\nsys.exit(3)";
    const [here, there] = [await kern.runCode(code), await cl.runCode(code)];
    assert.ok(there instanceof kern.ExecutionResult);
    assert.deepStrictEqual(comparable(there), comparable(here));
    assert.strictEqual(there.success, false);
    const r = await cl.run(["sh", "-c", "printf 'a\\nb'; exit 0"]);
    assert.deepStrictEqual([r.stdout, r.exitCode, r.success], ["a\nb", 0, true]);
    const t = await cl.runCode("while True: pass", { timeoutS: 0.5 });
    assert.strictEqual(t.fault.type, "timeout");
    // stdin as a Buffer or a string crosses Redis exactly.
    const bytes = Buffer.from(Array.from({ length: 3000 }, (_, i) => i % 256));
    assert.strictEqual((await cl.run(["wc", "-c"], { stdin: bytes })).stdout.trim(), "3000");
    assert.strictEqual((await cl.runCode("import sys; print(sys.stdin.read()[::-1])", { stdin: "abc" })).stdout, "cba\n");
    const stream = await cl.run(["cat"], { stdin: require("stream").Readable.from(["x"]) }).catch((e) => e);
    assert.strictEqual(stream.code, "ERR_SANDBOX_NOT_SUPPORTED");
  });

  it("rich results come back as Result objects with their formats", async function () {
    const r = await cl.runCode("display(1, 'two')\n[3] * 2");
    assert.ok(r.results.length >= 2, JSON.stringify(r));
    assert.ok(r.results.every((x) => x instanceof kern.Result));
    assert.deepStrictEqual(r.results.map((x) => x.text), (await kern.runCode("display(1, 'two')\n[3] * 2")).results.map((x) => x.text));
  });

  it("a session: files round-trip byte for byte, calls see them, errors keep class, code and system fields", async function () {
    const bytes = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    await cl.withSandbox({}, async (s) => {
      assert.strictEqual(typeof s.workerId, "string");
      await s.writeFile("b.bin", bytes);
      const back = await s.readFile("b.bin");
      assert.ok(Buffer.isBuffer(back) && back.equals(bytes));
      const r = await s.run(["sh", "-c", "wc -c < b.bin; echo x > made.txt"]);
      assert.strictEqual(r.stdout.trim(), "256");
      assert.deepStrictEqual(r.files.map((f) => [f.path, f.change]), [["made.txt", "created"]]);
      assert.deepStrictEqual((await s.listFiles()).map((f) => f.path).sort(), ["b.bin", "made.txt"]);
      const enoent = await s.readFile("missing").catch((e) => e);
      assert.ok(enoent instanceof kern.SandboxError, String(enoent));
      assert.deepStrictEqual([enoent.code, enoent.syscall], ["ENOENT", "openat2"]);
      const bad = await s.readFile("../x").catch((e) => e);
      assert.ok(bad instanceof kern.SandboxError);
      assert.strictEqual(bad.code, "ERR_SANDBOX_INVALID_PATH");
      const big = await s.readFile("b.bin", { maxBytes: 10 }).catch((e) => e);
      assert.strictEqual(big.code, "EFBIG");
    });
  });

  it("one capacity for one-shot and session calls: a worker of capacity 4 runs at most 5 calls at once", async function () {
    const { kernProcesses } = require("./lib/cluster");
    await cl.withSandbox({}, async (s) => {
      const calls = [];
      for (let i = 0; i < 4; i++) calls.push(s.run(["sleep", "1"]));
      await h.waitFor(() => kernProcesses().length >= 4, 5000);
      for (let i = 0; i < 4; i++) calls.push(cl.run(["sleep", "1"]));
      let peak = 0;
      const watch = setInterval(() => { peak = Math.max(peak, kernProcesses().length); }, 20);
      try {
        for (const r of await Promise.all(calls)) assert.strictEqual(r.exitCode, 0);
      } finally {
        clearInterval(watch);
      }
      // Four session calls hold the capacity; a one-shot call still gets one
      // slot (the floor that keeps either queue from starving), no more; the
      // session's prewarmed box is the sixth kern. Without one capacity for
      // both queues: 4 + 4 + 1.
      h.note(`peak kern processes: ${peak}`);
      assert.ok(peak >= 5 && peak <= 6, `peak ${peak}`);
    });
  });

  it("prewarmed one-shot calls (--warm 1): a box started ahead, a fresh workspace per call", async function () {
    const { kernProcesses } = require("./lib/cluster");
    const w = await new WorkerProc(redis, { stateDir, args: ["--prefix", "warm", "--capacity", "2", "--warm", "1"] }).start();
    const c2 = await require("../lib/cluster").connect({ connection: redis.connection, prefix: "warm", timing: CLIENT_TIMING });
    try {
      // The warm session's idle box: processes under the worker before the call.
      const under = () => {
        const all = h.processes();
        const out = new Set([w.pid]);
        for (let grew = true; grew;) {
          grew = false;
          for (const p of all) if (out.has(p.ppid) && !out.has(p.pid)) { out.add(p.pid); grew = true; }
        }
        out.delete(w.pid);
        return out;
      };
      assert.ok(await h.waitFor(() => kernProcesses().length >= 1 && under().size >= 3, 10000), "a box waits");
      const before = under();
      const r = await c2.runCode("import os\nopen('leak.txt', 'w').write('x')\nprint(os.getppid())");
      assert.ok(before.has(Number(r.stdout.trim())), `the call ran in a box started ahead (its init ${r.stdout.trim()})`);
      assert.deepStrictEqual(r.files.map((f) => f.path), ["leak.txt"]);
      // The next call has a workspace of its own, warm or not.
      await h.waitFor(() => under().size >= 3, 5000);
      const r2 = await c2.runCode("import os; print(sorted(os.listdir('.')))", { timeoutS: 5 });
      assert.strictEqual(r2.stdout, "[]\n");
      // Options a warm session cannot take run cold, and still right.
      const r3 = await c2.runCode("print(7)", { maxOutputBytes: 1024 });
      assert.strictEqual(r3.stdout, "7\n");
    } finally {
      await c2.close();
      assert.deepStrictEqual(await w.stop(), { code: 0, signal: null }, w.stderr);
    }
    assert.ok(await h.waitFor(() => kernProcesses().length === 0, 5000), "the warm boxes went with the worker");
  });

  it("a closed or never-opened cluster Sandbox rejects with the local codes", async function () {
    const s = new cl.Sandbox();
    assert.strictEqual((await s.runCode("1").catch((e) => e)).code, "ERR_SANDBOX_NOT_OPEN");
    await s.open();
    await s.close();
    assert.strictEqual((await s.runCode("1").catch((e) => e)).code, "ERR_SANDBOX_CLOSED");
    const cb = await cl.runCode("1", { onStdout: () => {} }).catch((e) => e);
    assert.strictEqual(cb.code, "ERR_SANDBOX_NOT_SUPPORTED");
  });

  it("examples/cluster/same-program.js prints the same locally and on the cluster (a URL connection too)", function () {
    const { spawnSync } = require("child_process");
    const run = (env) => spawnSync(process.execPath, ["examples/cluster/same-program.js"],
      { cwd: h.repo, encoding: "utf8", timeout: 60000, env: { ...process.env, ...env } });
    const local = run({});
    const there = run({ REDIS_SOCKET: redis.socket });
    const url = run({ REDIS_URL: redis.socket }); // ioredis takes a socket path as its URL
    for (const r of [local, there, url]) assert.strictEqual(r.status, 0, r.stderr);
    assert.match(local.stdout, /^local: 3 rows, 12 visits; a busy loop ended with a timeout fault; files data\.csv$/m);
    assert.strictEqual(there.stdout.replace(/^cluster/, "local"), local.stdout);
    assert.strictEqual(url.stdout, there.stdout);
  });

  it(`the equality table: ${PROGRAMS.length} programs give the same results on the cluster as locally`, async function () {
    this.timeout(h.startWait(120000));
    const base = { maxOutputBytes: 256 * 1024, env: { KS_EQ: "session" } };
    const differ = [];
    for (const kind of [...new Set(PROGRAMS.map((p) => p.kind))]) {
      const here = new kern.Sandbox(base);
      const there = new cl.Sandbox(base);
      await here.open();
      await there.open();
      try {
        for (const p of PROGRAMS.filter((x) => x.kind === kind)) {
          if (p.before) await Promise.all([p.before(here), p.before(there)]);
          const [a, b] = await Promise.all([p.call(here, p.opts ?? {}), p.call(there, p.opts ?? {})]);
          try {
            assert.deepStrictEqual(sameWorkspacePath(comparable(b)), sameWorkspacePath(comparable(a)));
          } catch (e) {
            differ.push(`${p.name}: ${e.message}`);
          }
        }
      } finally {
        await here.close();
        await there.close();
      }
    }
    assert.deepStrictEqual(differ, []);
  });
});
