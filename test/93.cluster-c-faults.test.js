"use strict";

// Issue 35's failure rules, each with a real redis-server and real worker
// processes that the test kills (SIGKILL), drains (SIGTERM) or whose Redis
// it restarts, and a census of kern processes (boxes of every worker) and
// of the workers' run directories after each: 0.
const assert = require("assert");
const fs = require("fs");
const path = require("path");
const h = require("./lib/harness");
const { RedisServer, requireRedis } = require("./lib/redis");
const { WorkerProc, kernProcesses, censusZero, CLIENT_TIMING } = require("./lib/cluster");
const { connect } = require("../lib/cluster");

/** The worker whose process started the box that runs now: an ancestor of
 * a kern process or of a box's workload (it runs in its workspace, under its
 * worker's run dir). Waits up to 2 s for one. */
async function workerOfBox(workers, stateDir) {
  let found;
  await h.waitFor(() => {
    const all = h.processes();
    const parent = new Map(all.map((p) => [p.pid, p.ppid]));
    const pids = new Set(workers.map((w) => w.pid));
    for (const start of [...kernProcesses(), ...h.processesIn(stateDir)]) {
      for (let p = start, i = 0; p > 1 && i < 32; p = parent.get(p), i++) {
        if (pids.has(p)) {
          found = workers.find((w) => w.pid === p);
          return true;
        }
      }
    }
    return false;
  }, 2000);
  return found;
}

const lines = (f) => (fs.existsSync(f) ? fs.readFileSync(f, "utf8").split("\n").filter(Boolean).length : 0);
const shq = (s) => `'${s.replace(/'/g, "'\\''")}'`;

describe("kern-sandbox/cluster: failure rules (issue 35, G4)", function () {
  this.timeout(h.startWait(60000));
  let redis = null;
  let workers = [];
  let cl = null;
  let stateDir;
  let marks;

  const startWorker = async () => {
    const w = await new WorkerProc(redis, { stateDir, args: ["--capacity", "2", "--allow-network"] }).start();
    workers.push(w);
    return w;
  };

  before(async function () {
    requireRedis(this);
    redis = await new RedisServer().start();
    stateDir = h.tmpDir("cl-state-");
    await startWorker();
    await startWorker();
    cl = await connect({ connection: redis.connection, timing: CLIENT_TIMING });
  });

  beforeEach(function () {
    marks = h.tmpDir("cl-mark-");
  });

  afterEach(async function () {
    // Every test ends with two live workers and no box anywhere.
    workers = workers.filter((w) => w.proc.exitCode === null && w.proc.signalCode === null);
    while (workers.length < 2) await startWorker();
    assert.ok(await h.waitFor(() => kernProcesses().length === 0, 5000), `kern processes left: ${kernProcesses()}`);
    // A box's workload runs in its workspace, under its worker's run dir.
    assert.ok(await h.waitFor(() => h.processesIn(stateDir).length === 0, 5000),
      `box processes left: ${h.processesIn(stateDir)}`);
  });

  after(async function () {
    if (cl) await cl.close();
    for (const w of workers) assert.deepStrictEqual(await w.stop(), { code: 0, signal: null }, w.stderr);
    if (redis) await redis.dispose();
    if (workers.length) assert.deepStrictEqual(await censusZero(stateDir), { kern: 0, runDirs: [] });
  });

  it("a worker SIGKILLed mid one-shot call: it runs again on the other worker, once, with one outcome", async function () {
    const runs = path.join(marks, "runs");
    const t0 = Date.now();
    const p = cl.run(["sh", "-c", `echo x >> ${shq(runs)}; sleep 1.5; echo done`]);
    assert.ok(await h.waitFor(() => lines(runs) === 1, 10000), "the call started");
    const victim = await workerOfBox(workers, stateDir);
    assert.ok(victim, "a worker runs the box");
    await victim.kill();
    const r = await p;
    assert.deepStrictEqual([r.stdout, r.exitCode], ["done\n", 0]);
    assert.strictEqual(lines(runs), 2, "ran twice: once cut by the kill, once to the end");
    h.note(`death to the result elsewhere: ${Date.now() - t0} ms (<= 45 s)`);
    assert.ok(Date.now() - t0 < 45000);
    // The killed worker's run dir is removed by the next worker started on the state dir.
    const dead = fs.readdirSync(stateDir).filter((d) => d.startsWith(`run-${victim.pid}-`));
    assert.strictEqual(dead.length, 1, "the killed worker left its run dir");
    const next = await startWorker();
    assert.match(next.stderr, new RegExp(`removed run-${victim.pid}-`));
    assert.ok(!fs.existsSync(path.join(stateDir, dead[0])));
  });

  it("a one-shot call whose second worker dies too rejects with ERR_SANDBOX_HOST_LOST, after two runs", async function () {
    const runs = path.join(marks, "runs");
    // exec: the double's workload dies with its kern (PR_SET_PDEATHSIG), but
    // a grandchild would outlive it, where a real kern's PID namespace takes
    // everything in the box along.
    const p = cl.run(["sh", "-c", `echo x >> ${shq(runs)}; exec sleep 30`]).catch((e) => e);
    assert.ok(await h.waitFor(() => lines(runs) === 1, 10000));
    const first = await workerOfBox(workers, stateDir);
    await first.kill();
    // No other worker yet: the second run waits for the survivor to take it.
    assert.ok(await h.waitFor(() => lines(runs) === 2, 15000), "it ran again elsewhere");
    const second = await workerOfBox(workers, stateDir);
    assert.ok(second && second !== first);
    await startWorker(); // a third worker is alive: the call must still not run a third time
    const t0 = Date.now();
    await second.kill();
    const e = await p;
    assert.strictEqual(e.code, "ERR_SANDBOX_HOST_LOST", String(e && e.stack));
    h.note(`rejected ${Date.now() - t0} ms after the second death`);
    await h.sleep(3000);
    assert.strictEqual(lines(runs), 2, "never a third run");
  });

  it("a call with network is not run again: it rejects with ERR_SANDBOX_HOST_LOST within 30 s", async function () {
    const runs = path.join(marks, "runs");
    const t0 = Date.now();
    const p = cl.run(["sh", "-c", `echo x >> ${shq(runs)}; exec sleep 5`], { network: true }).catch((e) => e);
    assert.ok(await h.waitFor(() => lines(runs) === 1, 10000));
    await (await workerOfBox(workers, stateDir)).kill();
    const e = await p;
    assert.strictEqual(e.code, "ERR_SANDBOX_HOST_LOST", String(e && e.stack));
    h.note(`rejected ${Date.now() - t0} ms after the call (<= 30 s)`);
    assert.ok(Date.now() - t0 < 30000);
    await h.sleep(3000); // long enough for a stalled-job check to have put it back
    assert.strictEqual(lines(runs), 1, "never run again");
  });

  it("a session call on a killed worker rejects with ERR_SANDBOX_HOST_LOST within 30 s; so do later ones", async function () {
    const runs = path.join(marks, "runs");
    const s = new cl.Sandbox();
    await s.open();
    await s.writeFile("a.txt", "x");
    const victim = workers.find((w) => w.id === s.workerId);
    const t0 = Date.now();
    const p = s.run(["sh", "-c", `echo x >> ${shq(runs)}; exec sleep 5`]).catch((e) => e);
    assert.ok(await h.waitFor(() => lines(runs) === 1, 10000));
    await victim.kill();
    const e = await p;
    assert.strictEqual(e.code, "ERR_SANDBOX_HOST_LOST", String(e && e.stack));
    h.note(`rejected ${Date.now() - t0} ms after the call (<= 30 s)`);
    assert.ok(Date.now() - t0 < 30000);
    assert.strictEqual((await s.readFile("a.txt").catch((x) => x)).code, "ERR_SANDBOX_HOST_LOST");
    await s.close(); // a worker that is gone took the session along
    await h.sleep(2000);
    assert.strictEqual(lines(runs), 1, "a session call is never run twice");
  });

  it("SIGTERM drains: a running call finishes there, the worker exits 0 and leaves nothing", async function () {
    const runs = path.join(marks, "runs");
    const p = cl.run(["sh", "-c", `echo x >> ${shq(runs)}; sleep 1; echo done`]);
    assert.ok(await h.waitFor(() => lines(runs) === 1, 10000));
    const w = await workerOfBox(workers, stateDir);
    const exit = w.stop();
    const r = await p;
    assert.deepStrictEqual([r.stdout, lines(runs)], ["done\n", 1]);
    assert.deepStrictEqual(await exit, { code: 0, signal: null }, w.stderr);
    assert.ok(!fs.readdirSync(stateDir).some((d) => d.startsWith(`run-${w.pid}-`)), "its run dir is gone");
    assert.ok(await h.waitFor(() => !cl.workers().some((x) => x.id === w.id), 3000), "its heartbeat is gone");
  });

  it("SIGTERM past --grace-s: the running call's box is killed, its caller gets ERR_SANDBOX_HOST_LOST, exit 0", async function () {
    // A cluster of its own (another prefix): this worker is the only one.
    const w = await new WorkerProc(redis, { stateDir, args: ["--prefix", "grace", "--grace-s", "0.5"] }).start();
    const c2 = await connect({ connection: redis.connection, prefix: "grace", timing: CLIENT_TIMING });
    try {
      const p = c2.run(["sleep", "30"]).catch((e) => e);
      assert.ok(await h.waitFor(() => kernProcesses().length >= 1, 10000));
      const t0 = Date.now();
      const exit = w.stop();
      const e = await p;
      assert.strictEqual(e.code, "ERR_SANDBOX_HOST_LOST", String(e && e.stack));
      assert.match(e.message, /shut down before the call finished/);
      assert.deepStrictEqual(await exit, { code: 0, signal: null }, w.stderr);
      h.note(`rejected and exited ${Date.now() - t0} ms after SIGTERM (grace 0.5 s)`);
    } finally {
      await w.stop();
      await c2.close();
    }
  });

  it("backpressure: maxQueued rejects with ERR_SANDBOX_QUEUE_FULL, queueTimeoutS with ERR_SANDBOX_QUEUE_TIMEOUT", async function () {
    const c2 = await connect({ connection: redis.connection, timing: CLIENT_TIMING, maxQueued: 2 });
    const busy = new AbortController();
    const running = [];
    try {
      // Four slots (two workers of capacity 2), four long calls.
      for (let i = 0; i < 4; i++) running.push(c2.run(["sleep", "30"], { signal: busy.signal }).catch((e) => e));
      assert.ok(await h.waitFor(() => kernProcesses().length >= 4, 10000), "four boxes run");
      const t0 = Date.now();
      const late = await c2.run(["true"], { queueTimeoutS: 0.5 }).catch((e) => e);
      assert.strictEqual(late.code, "ERR_SANDBOX_QUEUE_TIMEOUT", String(late && late.stack));
      assert.ok(Date.now() - t0 >= 500 && Date.now() - t0 < 3000, `${Date.now() - t0} ms`);
      const q1 = c2.run(["sh", "-c", `echo q1 > ${shq(path.join(marks, "q1"))}`]);
      const q2 = c2.run(["sh", "-c", `echo q2 > ${shq(path.join(marks, "q2"))}`]);
      await h.sleep(100);
      const full = await c2.run(["true"]).catch((e) => e);
      assert.strictEqual(full.code, "ERR_SANDBOX_QUEUE_FULL");
      busy.abort();
      for (const e of await Promise.all(running)) assert.strictEqual(e.name, "AbortError");
      // The queued ones run once slots free (positive control of the queue).
      await Promise.all([q1, q2]);
      assert.ok(fs.existsSync(path.join(marks, "q1")) && fs.existsSync(path.join(marks, "q2")));
    } finally {
      busy.abort();
      await Promise.all(running);
      await c2.close();
    }
  });

  it("an aborted queued call never starts; an aborted running call kills its box", async function () {
    const busy = new AbortController();
    const running = [];
    const started = path.join(marks, "running");
    for (let i = 0; i < 4; i++) {
      running.push(cl.run(["sh", "-c", `echo x >> ${shq(started)}; sleep 30`], { signal: busy.signal }).catch((e) => e));
    }
    assert.ok(await h.waitFor(() => lines(started) === 4 && kernProcesses().length >= 4, 10000));
    const queued = new AbortController();
    const never = path.join(marks, "never");
    const q = cl.run(["sh", "-c", `echo x > ${shq(never)}`], { signal: queued.signal }).catch((e) => e);
    await h.sleep(300);
    const t0 = Date.now();
    queued.abort(new Error("stop the queued one"));
    const e = await q;
    assert.strictEqual(e.name, "AbortError");
    assert.strictEqual(e.cause.message, "stop the queued one");
    assert.ok(Date.now() - t0 < 1000, `${Date.now() - t0} ms`);
    const t1 = Date.now();
    busy.abort();
    for (const x of await Promise.all(running)) {
      assert.strictEqual(x.name, "AbortError", String(x && x.stack));
      assert.strictEqual(x.code, "ABORT_ERR");
    }
    h.note(`4 running calls aborted in ${Date.now() - t1} ms`);
    assert.ok(await h.waitFor(() => kernProcesses().length === 0, 2000), "the aborted boxes are gone within 2 s");
    await h.sleep(1000); // free slots: the removed job would have run by now
    assert.ok(!fs.existsSync(never), "the aborted queued call never ran");
  });

  it("Redis restarted without persistence: every call in flight settles within 40 s, and both sides reconnect", async function () {
    const calls = [];
    for (let i = 0; i < 3; i++) calls.push(cl.run(["sh", "-c", "sleep 1; echo done"]).then((r) => r.stdout, (e) => e.code));
    const s = new cl.Sandbox();
    await s.open();
    calls.push(s.run(["sh", "-c", "sleep 1; echo done"]).then((r) => r.stdout, (e) => e.code));
    await h.sleep(300);
    const t0 = Date.now();
    await redis.restart();
    const outcomes = await Promise.all(calls);
    h.note(`outcomes ${JSON.stringify(outcomes)} within ${Date.now() - t0} ms (<= 40 s)`);
    assert.ok(Date.now() - t0 < 40000);
    for (const o of outcomes) assert.ok(["done\n", "ERR_SANDBOX_JOB_LOST", "ERR_SANDBOX_HOST_LOST"].includes(o), o);
    // Both sides came back: the workers heartbeat again, a new call runs.
    assert.ok(await h.waitFor(() => cl.workers().length === 2, 10000), "the workers heartbeat again");
    assert.strictEqual((await cl.run(["echo", "again"])).stdout, "again\n");
    await s.close();
  });
});

describe("kern-sandbox/cluster: Redis restarted with persistence (issue 35, G4)", function () {
  this.timeout(h.startWait(60000));
  let redis = null;
  let worker = null;
  let cl = null;
  let stateDir;

  before(async function () {
    requireRedis(this);
    redis = await new RedisServer({ persist: true }).start();
    stateDir = h.tmpDir("cl-state-");
    worker = await new WorkerProc(redis, { stateDir, args: ["--capacity", "2"] }).start();
    cl = await connect({ connection: redis.connection, timing: CLIENT_TIMING });
  });

  after(async function () {
    if (cl) await cl.close();
    if (worker) assert.deepStrictEqual(await worker.stop(), { code: 0, signal: null }, worker.stderr);
    if (redis) await redis.dispose();
    if (worker) assert.deepStrictEqual(await censusZero(stateDir), { kern: 0, runDirs: [] });
  });

  it("every call in flight settles within 40 s; queued jobs survive the restart and run", async function () {
    const calls = [];
    for (let i = 0; i < 4; i++) calls.push(cl.run(["sh", "-c", "sleep 1; echo done"]).then((r) => r.stdout, (e) => e.code));
    await h.sleep(300);
    const t0 = Date.now();
    await redis.restart({ downMs: 500 });
    const outcomes = await Promise.all(calls);
    h.note(`outcomes ${JSON.stringify(outcomes)} within ${Date.now() - t0} ms (<= 40 s)`);
    assert.ok(Date.now() - t0 < 40000);
    for (const o of outcomes) assert.ok(["done\n", "ERR_SANDBOX_JOB_LOST", "ERR_SANDBOX_HOST_LOST"].includes(o), o);
    assert.ok(outcomes.includes("done\n"), "with persistence, calls come through the restart");
    assert.ok(await h.waitFor(() => kernProcesses().length === 0, 5000));
    assert.strictEqual((await cl.run(["echo", "again"])).stdout, "again\n");
  });
});
