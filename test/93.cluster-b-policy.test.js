"use strict";

// Issue 35, SECURITY-CASES G3: cluster jobs are untrusted. A worker refuses
// (never clamps) what its policy forbids, whatever the job says; a client
// refuses it first, from the policy the workers publish, so nothing of a
// refused call reaches Redis (an env secret least of all: Redis MONITOR
// sees every command). A session id of another client is refused too.
const assert = require("assert");
const h = require("./lib/harness");
const { RedisServer, requireRedis } = require("./lib/redis");
const { WorkerProc, censusZero, CLIENT_TIMING } = require("./lib/cluster");
const { toWire } = require("../lib/cluster/wire");

/** The return value of a job once it has finished (polled: a QueueEvents
 * stream read from "$" can miss an event that comes before its first read). */
async function finished(bullmq, q, job) {
  let done = null;
  for (const end = Date.now() + 15000; Date.now() < end;) {
    const j = await bullmq.Job.fromId(q, job.id);
    if (j && j.finishedOn) {
      done = j.returnvalue;
      break;
    }
    await h.sleep(20);
  }
  if (done === null) throw new Error(`job ${job.id} did not finish within 15 s`);
  return done;
}

describe("kern-sandbox/cluster: the worker policy (issue 35, G3)", function () {
  this.timeout(h.startWait(60000));
  let redis = null;
  let worker = null;
  let cl = null;
  let stateDir;
  let bullmq;
  let IORedis;

  before(async function () {
    requireRedis(this);
    ({ bullmq, IORedis } = require("../lib/cluster/peer").peers());
    redis = await new RedisServer().start();
    stateDir = h.tmpDir("cl-state-");
    // The default policy but a memory cap of 1024 MiB and a 60 s deadline.
    worker = await new WorkerProc(redis, { stateDir, args: ["--capacity", "2", "--max-memory-mb", "1024",
      "--max-timeout-s", "60"] }).start();
    cl = await require("../lib/cluster").connect({ connection: redis.connection, timing: CLIENT_TIMING });
  });

  after(async function () {
    if (cl) await cl.close();
    if (worker) assert.deepStrictEqual(await worker.stop(), { code: 0, signal: null }, worker.stderr);
    if (redis) await redis.dispose();
    if (worker) assert.deepStrictEqual(await censusZero(stateDir), { kern: 0, runDirs: [] });
  });

  it("publishes its policy with its heartbeat", function () {
    const [w] = cl.workers();
    assert.deepStrictEqual(w.policy, { images: ["python:3.12-slim"], maxMemoryMb: 1024, maxCpus: null,
      maxTimeoutS: 60, maxOutputBytes: 64 * 1024 * 1024, env: false, network: false, mounts: false });
  });

  const REFUSED = {
    "another image": { image: "evil:latest" },
    "memoryMb: 1e9": { memoryMb: 1e9 },
    "memoryMb: null (uncapped)": { memoryMb: null },
    "network: true": { network: true },
    egressAllow: { egressAllow: ["example.com"] },
    setup: { setup: "pip install x" },
    mounts: { mounts: { "/": "/x" } },
    env: { env: { TOKEN: "s3cret" } },
    "a timeoutS of a year": { timeoutS: 365 * 86400 },
    "maxOutputBytes over": { maxOutputBytes: 1024 * 1024 * 1024 },
    "a host workspace": { workspace: "/etc" },
    "capDrop: []": { capDrop: [] },
    "enforceLimits: false": { enforceLimits: false },
    profiles: { profiles: ["vcpu:x"] },
    apparmor: { apparmor: "unconfined" },
  };

  it("the client refuses each with ERR_SANDBOX_POLICY_REFUSED, and writes nothing of it to Redis", async function () {
    const monitor = new IORedis({ path: redis.socket });
    const seen = [];
    const m = await monitor.monitor();
    m.on("monitor", (_t, args) => seen.push(args.join(" ")));
    try {
      for (const [what, opts] of Object.entries(REFUSED)) {
        const e = await cl.runCode("print(1)", opts).catch((x) => x);
        assert.strictEqual(e.code, "ERR_SANDBOX_POLICY_REFUSED", `${what}: ${e && e.stack}`);
        const s = new cl.Sandbox(opts);
        assert.strictEqual((await s.open().catch((x) => x)).code, "ERR_SANDBOX_POLICY_REFUSED", what);
      }
      // A session call's env is refused too.
      await cl.withSandbox({}, async (s) => {
        const e = await s.runCode("print(1)", { env: { TOKEN: "s3cret" } }).catch((x) => x);
        assert.strictEqual(e.code, "ERR_SANDBOX_POLICY_REFUSED");
      });
      // Positive control: an allowed call goes through Redis and MONITOR sees it.
      assert.strictEqual((await cl.runCode("print('visible-marker')")).stdout, "visible-marker\n");
      await h.sleep(200);
    } finally {
      m.disconnect();
      monitor.disconnect();
    }
    assert.ok(seen.some((c) => c.includes("visible-marker")), "MONITOR saw the allowed call");
    assert.deepStrictEqual(seen.filter((c) => c.includes("s3cret") || c.includes("evil:latest")), []);
  });

  it("the worker refuses the same jobs written straight to Redis (a forged client), and runs an allowed one", async function () {
    const q = new bullmq.Queue("oneshot", { connection: { path: redis.socket }, prefix: "kern-sandbox-bull" });
    const job = async (opts) => {
      const j = await q.add("runCode", { v: 1, kind: "runCode", code: "print('ran')", opts: toWire(opts), call: {},
        replyTo: "nobody", rerun: true, deadline: null });
      return finished(bullmq, q, j);
    };
    try {
      for (const [what, opts] of Object.entries(REFUSED)) {
        const out = await job(opts);
        assert.strictEqual(out.ok, false, what);
        assert.strictEqual(out.error.code, "ERR_SANDBOX_POLICY_REFUSED", `${what}: ${JSON.stringify(out)}`);
      }
      const ok = await job({});
      assert.strictEqual(ok.ok, true, JSON.stringify(ok));
      assert.strictEqual(ok.value.$x.stdout, "ran\n");
      // A job body that is no job of ours.
      const junk = await q.add("x", { hello: 1 });
      assert.strictEqual((await finished(bullmq, q, junk)).error.code, "ERR_SANDBOX_INVALID_ARG");
    } finally {
      await q.obliterate({ force: true });
      await q.close();
    }
  });

  it("a session id used by another client is refused (ERR_SANDBOX_CLOSED), its files untouched", async function () {
    await cl.withSandbox({}, async (s) => {
      await s.writeFile("mine.txt", "private");
      // The other client is even given the worker's queue and the session
      // id (both are in Redis), and still is not the session's owner.
      const q = new bullmq.Queue(`host-${s.workerId}`, { connection: { path: redis.socket }, prefix: "kern-sandbox-bull" });
      try {
        assert.match(s.sessionId, /^[0-9a-f-]{36}$/);
        const j = await q.add("readFile", { v: 1, op: "readFile", session: s.sessionId, args: toWire(["mine.txt"]), call: {},
          replyTo: "another-client" });
        const out = await finished(bullmq, q, j);
        assert.strictEqual(out.error.code, "ERR_SANDBOX_CLOSED", JSON.stringify(out));
      } finally {
        await q.close();
      }
      assert.strictEqual(String(await s.readFile("mine.txt")), "private");
    });
  });
});
