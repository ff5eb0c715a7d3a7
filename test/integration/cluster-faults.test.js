"use strict";

// Issue 35, SECURITY-CASES G4, the long cases: Redis paused (SIGSTOP) for
// 10 s under calls, and a client SIGKILLed in the middle of its calls. Real
// redis-server and worker processes, the kern double.
const assert = require("assert");
const fs = require("fs");
const path = require("path");
const { spawn } = require("child_process");
const h = require("../lib/harness");
const { RedisServer, requireRedis } = require("../lib/redis");
const { WorkerProc, kernProcesses, censusZero, CLIENT_TIMING } = require("../lib/cluster");
const { connect } = require("../../lib/cluster");

const shq = (s) => `'${s.replace(/'/g, "'\\''")}'`;
const lines = (f) => (fs.existsSync(f) ? fs.readFileSync(f, "utf8").split("\n").filter(Boolean).length : 0);

describe("kern-sandbox/cluster: long faults (issue 35, G4)", function () {
  this.timeout(h.startWait(120000));
  let redis = null;
  let cl = null;
  const workers = [];
  let stateDir;

  before(async function () {
    requireRedis(this);
    redis = await new RedisServer().start();
    stateDir = h.tmpDir("cl-state-");
    for (let i = 0; i < 2; i++) workers.push(await new WorkerProc(redis, { stateDir, args: ["--capacity", "4"] }).start());
    cl = await connect({ connection: redis.connection, timing: CLIENT_TIMING });
  });

  after(async function () {
    if (cl) await cl.close();
    for (const w of workers) assert.deepStrictEqual(await w.stop(), { code: 0, signal: null }, w.stderr);
    if (redis) await redis.dispose();
    if (workers.length) assert.deepStrictEqual(await censusZero(stateDir), { kern: 0, runDirs: [] });
  });

  it("Redis paused 10 s: every call settles within 40 s, once; no session call runs twice", async function () {
    const marks = h.tmpDir("cl-mark-");
    const s = new cl.Sandbox();
    await s.open();
    const calls = [];
    for (let i = 0; i < 6; i++) {
      const f = path.join(marks, `o${i}`);
      calls.push(cl.run(["sh", "-c", `echo x >> ${shq(f)}; sleep 2; echo ok`]).then((r) => r.stdout, (e) => e.code));
    }
    const sf = path.join(marks, "session");
    calls.push(s.run(["sh", "-c", `echo x >> ${shq(sf)}; sleep 2; echo ok`]).then((r) => r.stdout, (e) => e.code));
    await h.sleep(500);
    const t0 = Date.now();
    redis.proc.kill("SIGSTOP");
    await h.sleep(10000);
    redis.proc.kill("SIGCONT");
    const outcomes = await Promise.all(calls);
    h.note(`outcomes ${JSON.stringify(outcomes)} ${Date.now() - t0} ms after the pause began (<= 40 s)`);
    assert.ok(Date.now() - t0 < 40000);
    for (const o of outcomes) assert.ok(["ok\n", "ERR_SANDBOX_HOST_LOST", "ERR_SANDBOX_JOB_LOST"].includes(o), o);
    await h.sleep(3000); // a stalled-job check would have put a session call back by now
    assert.strictEqual(lines(sf), 1, "the session call ran once");
    const runs = Array.from({ length: 6 }, (_, i) => lines(path.join(marks, `o${i}`)));
    h.note(`one-shot runs: ${runs.join(",")} (a lock that expired in the pause lets BullMQ start a call again)`);
    assert.ok(runs.every((n) => n >= 1 && n <= 2));
    await s.close();
    assert.ok(await h.waitFor(() => kernProcesses().length === 0, 10000));
    assert.strictEqual((await cl.run(["echo", "after"])).stdout, "after\n");
  });

  it("a client SIGKILLed mid-call: its calls finish on the workers and leave nothing", async function () {
    const marks = h.tmpDir("cl-mark-");
    const script = `
      const { connect } = require(${JSON.stringify(path.join(h.repo, "lib/cluster"))});
      connect({ connection: { path: ${JSON.stringify(redis.socket)} } }).then(async (cl) => {
        const s = new cl.Sandbox(); await s.open();
        s.run(["sh", "-c", "echo x >> ${path.join(marks, "s")}; sleep 1"]);
        for (let i = 0; i < 3; i++) cl.run(["sh", "-c", "echo x >> ${path.join(marks, "o")}; sleep 1"]);
        console.log("sent");
      });`;
    const child = spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (c) => { out += c; });
    const exit = new Promise((r) => child.once("exit", r));
    assert.ok(await h.waitFor(() => out.includes("sent") && lines(path.join(marks, "o")) === 3, 15000));
    child.kill("SIGKILL");
    await exit;
    assert.ok(await h.waitFor(() => kernProcesses().length <= 1, 5000), "the one-shot calls ended"); // the session's prewarmed box stays
    assert.strictEqual(lines(path.join(marks, "o")), 3);
    // The dead client's session stays open on its worker until it idles out
    // (sessionIdleS); the workers close it when they stop (after()).
  });
});

describe("kern-sandbox/cluster: Redis unreachable past redisLostS (issue 35)", function () {
  this.timeout(h.startWait(60000));
  let redis = null;
  let worker = null;
  let stateDir;

  before(async function () {
    requireRedis(this);
    redis = await new RedisServer().start();
    stateDir = h.tmpDir("cl-state-");
    worker = await new WorkerProc(redis, { stateDir, args: ["--capacity", "2"] }).start();
  });

  after(async function () {
    if (redis && redis.proc) redis.proc.kill("SIGCONT"); // whatever the test did
    if (worker) assert.deepStrictEqual(await worker.stop(), { code: 0, signal: null }, worker.stderr);
    if (redis) await redis.dispose();
    if (worker) assert.deepStrictEqual(await censusZero(stateDir), { kern: 0, runDirs: [] });
  });

  it("every call in flight, and one made meanwhile, rejects with ERR_SANDBOX_HOST_LOST after redisLostS", async function () {
    const cl = await connect({ connection: redis.connection, timing: { ...CLIENT_TIMING, redisLostS: 3 } });
    try {
      const p1 = cl.run(["sleep", "1"]).catch((e) => e);
      await h.sleep(300);
      redis.proc.kill("SIGSTOP");
      const t0 = Date.now();
      const p2 = cl.run(["true"]).catch((e) => e); // made while Redis does not answer
      let e1;
      let e2;
      try {
        [e1, e2] = await Promise.all([p1, p2]);
      } finally {
        redis.proc.kill("SIGCONT");
      }
      const took = Date.now() - t0;
      h.note(`${e1.code} / ${e2.code} ${took} ms after Redis stopped answering (redisLostS 3 s)`);
      // The call in flight may have its result if the reply came before the stop.
      assert.ok(e1.code === "ERR_SANDBOX_HOST_LOST" || e1.stdout === "", String(e1 && e1.stack));
      assert.strictEqual(e2.code, "ERR_SANDBOX_HOST_LOST", String(e2 && e2.stack));
      assert.ok(took < 10000, `${took} ms`);
      assert.ok(await h.waitFor(() => kernProcesses().length === 0, 5000));
    } finally {
      await cl.close();
    }
  });
});

describe("kern-sandbox/cluster: a drain while Redis goes away (issue 35)", function () {
  this.timeout(h.startWait(60000));

  it("redis-server gone, then SIGTERM: the worker still exits 0 and leaves nothing", async function () {
    requireRedis(this);
    const redis = await new RedisServer().start();
    const stateDir = h.tmpDir("cl-state-");
    const w = await new WorkerProc(redis, { stateDir, args: ["--grace-s", "2", "--warm", "1"] }).start();
    try {
      await redis.stop("SIGKILL");
      await h.sleep(300); // its clients see the socket close and start reconnecting
      const t0 = Date.now();
      const exit = w.stop();
      assert.deepStrictEqual(await exit, { code: 0, signal: null }, w.stderr);
      h.note(`exited ${Date.now() - t0} ms after SIGTERM`);
      assert.ok(Date.now() - t0 < 20000);
      assert.deepStrictEqual(await censusZero(stateDir), { kern: 0, runDirs: [] });
    } finally {
      await w.kill();
      await redis.dispose();
    }
  });
});
