"use strict";

// startWorker(): one host's share of the cluster. Two BullMQ Workers pull
// jobs: one from the shared one-shot queue, one from this worker's own
// queue (the sessions pinned here). A heartbeat publishes the worker's
// liveness and policy; a pub/sub subscription carries aborts of running
// calls; outcomes go back on each client's reply channel once BullMQ has
// recorded them (the job's return value stays the source of truth a client
// polls when a message was missed).
const os = require("os");
const { randomUUID } = require("crypto");
const { peers, connectionOf } = require("./peer");
const { names: namesOf } = require("./names");
const { normalizePolicy } = require("./policy");
const { createRunDir } = require("./rundir");
const { oneShot, sessionOp } = require("./jobs");
const { WarmPool } = require("./warm");
const { sandboxError } = require("../errors");
const { withTimeout } = require("./calls");

const DEFAULT_TIMING = { heartbeatMs: 2000, lockDurationMs: 10000, stalledIntervalMs: 5000, sessionIdleS: 3600 };

/** Concurrent calls by default: the cores, and what memory holds at the
 * default memoryMb (512 MiB) with half the memory left to the host. */
function defaultCapacity() {
  const byMemory = Math.floor(os.totalmem() / 2 / (512 * 1024 * 1024));
  return Math.max(1, Math.min(os.availableParallelism ? os.availableParallelism() : os.cpus().length, byMemory));
}

/** The two BullMQ Workers of a worker: the shared one-shot queue and its own. */
function startQueues({ bullmq, ctx, cmd, n, id, capacity, timing, bullConn }) {
  const workerOpts = { connection: bullConn, prefix: n.bullPrefix, concurrency: capacity, name: id,
    lockDuration: timing.lockDurationMs, stalledInterval: timing.stalledIntervalMs };
  // The outcome goes to its caller as soon as it is known, before BullMQ
  // records it (moveToFinished is one more round trip on the call's path);
  // the recorded return value is what a caller that missed the message polls.
  // One capacity for both queues: each BullMQ Worker may take what the
  // other leaves (at least one, so the sessions pinned here are never
  // starved: the boxes may pass capacity by one).
  const active = { shared: 0, own: 0 };
  let shared = null;
  let own = null;
  const rebalance = () => {
    if (shared) shared.concurrency = Math.max(1, capacity - active.own);
    if (own) own.concurrency = Math.max(1, capacity - active.shared);
  };
  const replying = (side, fn) => async (job) => {
    active[side]++;
    rebalance();
    let out;
    try {
      out = await fn(ctx, job);
    } finally {
      active[side]--;
      rebalance();
    }
    if (job.data && typeof job.data.replyTo === "string")
      cmd.publish(n.reply(job.data.replyTo), JSON.stringify({ queue: job.queueName, id: job.id, outcome: out })).catch(() => {});
    return out;
  };
  shared = new bullmq.Worker(n.oneshot, replying("shared", oneShot), { ...workerOpts, maxStalledCount: 1 });
  // A session's calls are never run twice: a stalled one fails at once.
  own = new bullmq.Worker(n.host(id), replying("own", sessionOp), { ...workerOpts, maxStalledCount: 0 });
  return { shared, own };
}

/** A worker's close(): stops taking jobs, lets running calls finish up to
 * graceS (then kills them: their callers get ERR_SANDBOX_HOST_LOST), closes
 * its sessions, and removes what is left of it in Redis and on disk. Every
 * step that talks to Redis is bounded, and skipped when Redis is not there
 * (its keys then expire by themselves): a drain always ends. */
async function drain({ ctx, graceS, shared, own, beat, cmd, sub, conn, bullmq, bullConn, n, id, runDir }) {
  ctx.closing = true;
  const redisUp = () => cmd.status === "ready";
  const grace = setTimeout(() => {
    for (const ac of ctx.running.values()) {
      ac.byShutdown = true;
      ac.abort();
    }
  }, graceS * 1000);
  // BullMQ's close() stops fetching, waits for the running jobs and records
  // them; it would wait forever for a Redis that does not answer.
  let gentle = false;
  if (redisUp()) {
    gentle = await withTimeout(Promise.all([shared.close(), own.close()]), (graceS + 10) * 1000).then(() => true, () => false);
  } else {
    await shared.pause(true).catch(() => {}); // no new job (there is none to get anyway)
    await own.pause(true).catch(() => {});
    const end = Date.now() + (graceS + 5) * 1000;
    while (ctx.running.size > 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
  }
  if (!gentle) {
    await withTimeout(Promise.all([shared.close(true), own.close(true)]), 3000).catch(() => {});
    // (disconnect() waits for a first connection that may never come.)
    await withTimeout(Promise.all([shared.disconnect(), own.disconnect()]), 2000).catch(() => {});
  }
  clearTimeout(grace);
  clearInterval(beat);
  if (ctx.warm) await ctx.warm.close();
  await Promise.all([...ctx.sessions.values()].map((s) => s.sbx.close().catch(() => {})));
  ctx.sessions.clear();
  if (redisUp()) {
    await withTimeout(cmd.multi().del(n.worker(id)).srem(n.workers, id).exec(), 3000).catch(() => {});
    // This worker's own queue dies with it: nothing else will serve it.
    const q = new bullmq.Queue(n.host(id), { connection: bullConn, prefix: n.bullPrefix });
    q.on("error", () => {});
    await withTimeout(q.obliterate({ force: true }), 3000).catch(() => {});
    await withTimeout(q.close(), 2000).catch(() => withTimeout(q.disconnect(), 1000).catch(() => {}));
  }
  sub.disconnect();
  if (redisUp()) await withTimeout(cmd.quit(), 2000).catch(() => {});
  cmd.disconnect();
  conn.dispose();
  require("fs").rmSync(runDir, { recursive: true, force: true });
}

async function startWorker(opts = {}) {
  const { bullmq } = peers();
  const { connection, prefix, stateDir } = opts;
  if (!connection) throw sandboxError("ERR_SANDBOX_INVALID_OPTION", "startWorker needs a connection (ioredis options or a client)");
  const capacity = opts.capacity ?? defaultCapacity();
  if (!Number.isInteger(capacity) || capacity < 1 || capacity > 4096)
    throw sandboxError("ERR_SANDBOX_INVALID_OPTION", "capacity must be an integer 1-4096");
  const timing = { ...DEFAULT_TIMING, ...(opts.timing || {}) };
  const n = namesOf(prefix);
  const id = opts.id ?? randomUUID();
  const run = createRunDir(stateDir);
  // Every temp workspace and private file of this worker's boxes goes under
  // its run dir (lib/sandbox.js reads os.tmpdir() at each open()).
  process.env.TMPDIR = run.tmp;

  // Sessions opened ahead for one-shot calls (warm.js): default one per two
  // slots, at least one.
  const warmSize = opts.warm ?? Math.max(1, Math.floor(capacity / 2));
  if (!Number.isInteger(warmSize) || warmSize < 0 || warmSize > 64)
    throw sandboxError("ERR_SANDBOX_INVALID_OPTION", "warm must be an integer 0-64");
  const ctx = { policy: normalizePolicy(opts.policy), sessions: new Map(), running: new Map(),
    aborted: new Set(), closing: false, warm: warmSize > 0 ? new WarmPool(warmSize) : null };
  const conn = connectionOf(connection);
  const cmd = conn.make();
  const sub = conn.make();
  cmd.on("error", () => {}); // reconnects by itself; a job's own call reports what failed
  sub.on("error", () => {});
  const bullConn = conn.bull;
  const { shared, own } = startQueues({ bullmq, ctx, cmd, n, id, capacity, timing, bullConn });
  for (const w of [shared, own]) {
    w.on("error", () => {}); // Redis gone: BullMQ retries by itself
  }

  // Aborts: "queue/jobId" of a running call; one that is not running yet is
  // remembered so the job never starts here.
  sub.on("message", (_channel, key) => {
    const ac = ctx.running.get(key);
    if (ac) ac.abort();
    else {
      ctx.aborted.add(key);
      setTimeout(() => ctx.aborted.delete(key), 10 * 60 * 1000).unref();
    }
  });
  await sub.subscribe(n.abort);

  const heartbeat = async () => {
    const body = JSON.stringify({ id, pid: process.pid, host: os.hostname(), capacity, running: ctx.running.size,
      sessions: ctx.sessions.size, policy: ctx.policy, queue: n.host(id), heartbeatMs: timing.heartbeatMs, ts: Date.now() });
    await cmd.multi().set(n.worker(id), body, "PX", timing.heartbeatMs * 3).sadd(n.workers, id).exec();
  };
  const sweepIdle = () => {
    const limit = Date.now() - timing.sessionIdleS * 1000;
    for (const [sid, s] of ctx.sessions) {
      if (s.lastUsed < limit) {
        ctx.sessions.delete(sid);
        s.sbx.close().catch(() => {});
      }
    }
  };
  if (ctx.warm) ctx.warm.fill();
  await heartbeat();
  const beat = setInterval(() => {
    heartbeat().catch(() => {});
    sweepIdle();
  }, timing.heartbeatMs);
  await Promise.all([shared.waitUntilReady(), own.waitUntilReady()]);

  let closed = null;
  /** Stops taking jobs, lets running ones finish up to graceS, then kills
   * the rest (their callers get ERR_SANDBOX_HOST_LOST), closes every
   * session and leaves nothing of this worker in Redis or on disk. */
  const close = ({ graceS = 30 } = {}) => {
    if (closed) return closed;
    closed = drain({ ctx, graceS, shared, own, beat, cmd, sub, conn, bullmq, bullConn, n, id, runDir: run.dir });
    return closed;
  };
  return { id, capacity, policy: ctx.policy, runDir: run.dir, removedRunDirs: run.removed,
    get running() { return ctx.running.size; }, get sessions() { return ctx.sessions.size; }, close };
}

module.exports = { startWorker, defaultCapacity };
