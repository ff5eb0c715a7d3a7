"use strict";

// The cluster's figures (issue 35), each against a baseline of the same run:
// - per-call overhead of the client over a local call on a prewarmed
//   session, against a bare BullMQ round trip (a no-op job on the same Redis,
//   a worker in another process, QueueEvents' waitUntilFinished), and
//   against BullMQ carrying the same session call to a local Sandbox in its
//   processor (no kern-sandbox/cluster code): the floor with a box on the
//   other side, where the host's cores are shared by the box, Redis and
//   both processes (on a real kern the box's work slows every Redis hop);
// - Redis commands per call (INFO's total_commands_processed);
// - throughput of short one-shot calls with 1 and 2 workers;
// - time from a worker's death to its one-shot call running elsewhere, with
//   the default timings (heartbeat 2 s, lock 10 s, stalled check 5 s).
// A private redis-server on a unix socket (test/lib/redis.js), worker
// processes of `kern-sandbox worker`.
const { spawn, execFileSync } = require("child_process");
const h = require("../test/lib/harness");

const BARE_WORKER = `
const { Worker } = require("bullmq");
const conn = { path: process.argv[1], maxRetriesPerRequest: null };
const w = new Worker("bare", async () => null, { connection: conn, prefix: "bare" });
// The floor with a box on the other side: BullMQ and this package's local
// session call in the processor, nothing of kern-sandbox/cluster.
const sbx = new (require(process.cwd()).Sandbox)();
const wb = new Worker("barebox", async () => (await sbx.run(["true"])).durationMs, { connection: conn, prefix: "bare" });
process.on("SIGTERM", () => Promise.all([w.close(), wb.close()]).then(() => sbx.close()).finally(() => process.exit(0)));
Promise.all([w.waitUntilReady(), wb.waitUntilReady(), sbx.open()]).then(() => console.log("ready"));
`;

function redisCommands(socket) {
  const info = execFileSync("redis-cli", ["-s", socket, "info", "stats"], { encoding: "utf8" });
  return Number(/total_commands_processed:(\d+)/.exec(info)[1]);
}

/** n bare BullMQ round trips (a no-op job), and n of a job whose worker runs
 * run(["true"]) on a local prewarmed session (wall - its durationMs). */
async function bareRoundTrips(redis, n, muted, { withBox = true, gapMs = GAP_MS } = {}) {
  const { bullmq } = require("../lib/cluster/peer").peers();
  let out = "";
  const child = await muted(async () => {
    const c = spawn(process.execPath, ["-e", BARE_WORKER, redis.socket], { cwd: h.repo, stdio: ["ignore", "pipe", "ignore"] });
    c.stdout.on("data", (d) => { out += d; });
    await h.waitFor(() => out.includes("ready"), 15000);
    return c;
  });
  const conn = { path: redis.socket, maxRetriesPerRequest: null };
  const q = new bullmq.Queue("bare", { connection: conn, prefix: "bare" });
  const qb = new bullmq.Queue("barebox", { connection: conn, prefix: "bare" });
  const events = new bullmq.QueueEvents("bare", { connection: conn, prefix: "bare" });
  const eventsb = new bullmq.QueueEvents("barebox", { connection: conn, prefix: "bare" });
  await Promise.all([events.waitUntilReady(), eventsb.waitUntilReady()]);
  const lat = [];
  const box = [];
  try {
    for (let i = 0; i < n; i++) {
      if (gapMs > 0) await h.sleep(gapMs);
      const t0 = process.hrtime.bigint();
      const job = await q.add("noop", { i }, { removeOnComplete: { count: 1000 } });
      await job.waitUntilFinished(events, 10000);
      lat.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    for (let i = 0; i < (withBox ? n : 0); i++) {
      if (gapMs > 0) await h.sleep(gapMs);
      const t0 = process.hrtime.bigint();
      const job = await qb.add("box", { i }, { removeOnComplete: { count: 1000 } });
      const durationMs = await job.waitUntilFinished(eventsb, 10000);
      box.push(Number(process.hrtime.bigint() - t0) / 1e6 - durationMs);
    }
  } finally {
    await Promise.all([events.close(), eventsb.close(), q.close(), qb.close()]);
    const gone = new Promise((r) => child.once("exit", r));
    child.kill("SIGTERM"); // closes its session (and box), then exits
    const t = setTimeout(() => child.kill("SIGKILL"), 10000);
    await gone;
    clearTimeout(t);
  }
  lat.box = box;
  return lat;
}

// The pace of the overhead rows' calls: one at a time, this far apart, so
// that each call is on a prewarmed box (the session's pool refilled) and no
// refill of the call before shares the 2 cores with it; the bare baselines
// are paced the same. (Back to back, every Redis hop of a cluster call ran
// beside the worker's refill: bench/README.md.)
const GAP_MS = 30;

/** wall - durationMs of n run(["true"]) on an open session, GAP_MS apart
 * (gapMs 0: back to back). */
async function overheads(sbx, n, gapMs = GAP_MS) {
  const out = [];
  for (let i = 0; i < n; i++) {
    if (gapMs > 0) await h.sleep(gapMs);
    const t0 = process.hrtime.bigint();
    const r = await sbx.run(["true"]);
    out.push(Number(process.hrtime.bigint() - t0) / 1e6 - r.durationMs);
  }
  return out;
}

async function throughput(cl, calls, parallel) {
  const t0 = Date.now();
  let next = 0;
  await Promise.all(Array.from({ length: parallel }, async () => {
    while (next++ < calls) await cl.run(["true"]);
  }));
  return calls / ((Date.now() - t0) / 1000);
}

async function clusterFigures({ row, median, pct, QUICK, loop }) {
  // Starting a redis-server or a worker forks this process, and redis-cli
  // runs synchronously: the bench's own work, left out of the loop figure
  // (see loopMonitor in run.js). The calls measured run unmuted.
  const muted = async (fn) => {
    loop.mute();
    try {
      return await fn();
    } finally {
      loop.unmute();
    }
  };
  const { redisServerPath, RedisServer } = require("../test/lib/redis");
  let bullmqThere = true;
  try {
    require.resolve("bullmq");
  } catch {
    bullmqThere = false;
  }
  if (redisServerPath() === null || !bullmqThere) {
    row("cluster figures", "-", `not measured: ${bullmqThere ? "no redis-server" : "bullmq is not installed"}`, "-", null);
    return;
  }
  const { WorkerProc } = require("../test/lib/cluster");
  const { connect } = require("../lib/cluster");
  const kern = require("..");
  // Loading bullmq and ioredis (once, synchronously) is the process's start-up, not a call's.
  await muted(() => require("../lib/cluster/peer").peers());
  const redis = await muted(() => new RedisServer().start());
  const stateDir = h.tmpDir("bench-cl-");
  const workers = [];
  const n = QUICK ? 100 : 300;
  try {
    workers.push(await muted(() => new WorkerProc(redis, { stateDir, fast: false, args: ["--warm", "1"] }).start()));
    const cl = await connect({ connection: redis.connection });
    try {
      // Per-call overhead: local and cluster sessions interleaved in rounds.
      const local = new kern.Sandbox();
      await local.open();
      const there = new cl.Sandbox();
      await there.open();
      const mine = [];
      const theirs = [];
      const bare = [];
      const bareBox = [];
      // Warm-up (JIT, the pools, ioredis), not counted.
      await overheads(there, 100, 0);
      await overheads(local, 100, 0);
      for (let round = 0; round < 3; round++) {
        mine.push(...await overheads(there, n / 3));
        theirs.push(...await overheads(local, n / 3));
        const b = await bareRoundTrips(redis, n / 3, muted);
        bare.push(...b);
        bareBox.push(...b.box);
      }
      // The same, back to back (informational): the refill of each call's
      // box runs beside the next call.
      const b2bMine = await overheads(there, n / 3, 0);
      const b2bTheirs = await overheads(local, n / 3, 0);
      const b2bBare = await bareRoundTrips(redis, n / 3, muted, { withBox: false, gapMs: 0 });
      await local.close();
      const commands = () => muted(() => redisCommands(redis.socket));
      const c0 = await commands();
      await overheads(there, 50, 0);
      const perSession = (await commands() - c0) / 50;
      const c1 = await commands();
      for (let i = 0; i < 50; i++) await cl.run(["true"]);
      const perOneShot = (await commands() - c1) / 50;
      const c2 = await commands();
      await bareRoundTrips(redis, 50, muted, { withBox: false });
      const perBare = (await commands() - c2) / 50;
      await there.close();
      const client = median(mine) - median(theirs);
      row(`cluster: client overhead over a local prewarmed session call, p50 (wall - durationMs; calls ${GAP_MS} ms apart)`,
        `bare BullMQ no-op round trip: p50 ${median(bare).toFixed(2)} ms, p99 ${pct(bare, 99).toFixed(2)} ms; ` +
        `BullMQ + a local session run(["true"]) in its processor (no kern-sandbox/cluster), over the local call: ` +
        `p50 ${(median(bareBox) - median(theirs)).toFixed(2)} ms, p99 ${pct(bareBox, 99).toFixed(2)} ms`,
        `p50 ${client.toFixed(2)} ms (cluster ${median(mine).toFixed(2)} ms - local ${median(theirs).toFixed(2)} ms)`,
        "<= bare p50 + 1 ms", client <= median(bare) + 1);
      row("cluster: the same overhead, calls back to back (informational)",
        `bare BullMQ no-op round trip back to back: p50 ${median(b2bBare).toFixed(2)} ms; local p50 ${median(b2bTheirs).toFixed(2)} ms`,
        `p50 ${(median(b2bMine) - median(b2bTheirs)).toFixed(2)} ms (cluster ${median(b2bMine).toFixed(2)} ms)`, "-", null);
      // The same call carried by BullMQ to a local Sandbox with none of our
      // code: what the client adds over it (informational, no target).
      row("cluster: client overhead over BullMQ carrying the same session call (no kern-sandbox/cluster), p50",
        `BullMQ + a local session run(["true"]): p50 ${median(bareBox).toFixed(2)} ms`,
        `cluster p50 ${median(mine).toFixed(2)} ms: ${(median(mine) - median(bareBox) >= 0 ? "+" : "")}${(median(mine) - median(bareBox)).toFixed(2)} ms`, "-", null);
      row("cluster: session call overhead, p99 (wall - durationMs)", `BullMQ + a local session call: p99 ${pct(bareBox, 99).toFixed(2)} ms`, `p99 ${pct(mine, 99).toFixed(2)} ms`,
        "<= 10 ms", pct(mine, 99) <= 10);
      row("cluster: Redis commands per call (commands inside BullMQ's Lua scripts count; heartbeats included)",
        `bare BullMQ no-op: ${perBare.toFixed(1)} per call (its worker's start included)`,
        `${perSession.toFixed(1)} per session call, ${perOneShot.toFixed(1)} per one-shot call`, "-", null);
      // Throughput with 1 and 2 workers (this machine's cores are shared by both).
      const one = await throughput(cl, n, 8);
      workers.push(await muted(() => new WorkerProc(redis, { stateDir, fast: false, args: ["--warm", "1"] }).start()));
      await h.waitFor(() => cl.workers().length === 2, 5000);
      const two = await throughput(cl, n, 8);
      row(`cluster: one-shot run(["true"]) throughput, 8 in flight (${require("os").cpus().length} cores shared by the workers and this client)`,
        `1 worker: ${one.toFixed(0)} calls/s`, `2 workers: ${two.toFixed(0)} calls/s`, "-", null);
      // A worker's death to its one-shot call running elsewhere (default
      // timings): seen as its workload (a sleep of a duration of its own)
      // under the other worker.
      const TAG = "3.217";
      const runnerOf = () => muted(() => {
        const all = h.processes();
        const parent = new Map(all.map((x) => [x.pid, x.ppid]));
        for (const x of all.filter((q) => q.argv === `sleep\0${TAG}\0`)) {
          for (let q = x.pid, i = 0; q > 1 && i < 32; q = parent.get(q), i++) {
            const w = workers.find((y) => y.pid === q);
            if (w) return w;
          }
        }
        return null;
      });
      const p = cl.run(["sleep", TAG]);
      let victim = null;
      for (let i = 0; i < 200 && victim === null; i++) {
        await h.sleep(50);
        victim = await runnerOf();
      }
      const t0 = Date.now();
      await muted(() => victim.kill());
      let moved = null;
      while (moved === null && Date.now() - t0 < 60000) {
        await h.sleep(100);
        const w = await runnerOf();
        if (w !== null && w !== victim) moved = Date.now() - t0;
      }
      await p;
      row("cluster: a worker's death to its one-shot call running elsewhere (default timings)", "-",
        moved === null ? "not within 60 s" : `${(moved / 1000).toFixed(1)} s`, "<= 45 s", moved !== null && moved <= 45000);
      workers.splice(workers.indexOf(victim), 1);
    } finally {
      await cl.close();
    }
  } finally {
    await muted(async () => {
      for (const w of workers) await w.stop();
      await redis.dispose();
    });
  }
}

module.exports = { clusterFigures };
