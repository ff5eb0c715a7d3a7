"use strict";

// connect(): the cluster from a client, with the local API's shape.
// One-shot calls go to the shared queue (any free worker); a Sandbox is
// pinned to the worker that opened it (that worker's own queue).
const { randomUUID } = require("crypto");
const { peers } = require("./peer");
const { names: namesOf } = require("./names");
const { checkSessionOptions, checkCallOptions, mayRunTwice } = require("./policy");
const { toWire } = require("./wire");
const { WorkerView } = require("./view");
const { Calls } = require("./calls");
const { makeSandboxClass } = require("./session");
const { sandboxError } = require("../errors");
const { abortError } = require("../abort");

const DEFAULT_TIMING = { pollMs: 1000, viewMs: 1000, redisLostS: 30 };

function notSupported(what) {
  return sandboxError("ERR_SANDBOX_NOT_SUPPORTED", `kern-sandbox/cluster: ${what} cannot cross Redis`);
}

/** Options that can go in a job; live callbacks and streams cannot. */
function wireable(opts, where) {
  for (const k of ["onStdout", "onStderr"])
    if (typeof opts[k] === "function") throw notSupported(`${where} ${k} (a live callback)`);
  const s = opts.stdin;
  if (s !== undefined && s !== null && typeof s !== "string" && !ArrayBuffer.isView(s))
    throw notSupported(`${where} stdin as a stream (pass a string or a Buffer)`);
  const out = { ...opts };
  delete out.signal;
  delete out.queueTimeoutS;
  return out;
}

function checkQueueTimeout(v) {
  if (v === null || v === undefined) return null;
  if (typeof v !== "number" || !Number.isFinite(v) || v <= 0)
    throw sandboxError("ERR_SANDBOX_INVALID_OPTION", "queueTimeoutS must be a finite number > 0 or null");
  return v;
}

async function connect(opts = {}) {
  const { bullmq, IORedis } = peers();
  const { connection, prefix } = opts;
  if (!connection) throw sandboxError("ERR_SANDBOX_INVALID_OPTION", "connect needs a connection (ioredis options or a client)");
  const maxQueued = opts.maxQueued ?? 1000;
  if (!Number.isInteger(maxQueued) || maxQueued < 1) throw sandboxError("ERR_SANDBOX_INVALID_OPTION", "maxQueued must be an integer >= 1");
  const defaultQueueTimeoutS = checkQueueTimeout(opts.queueTimeoutS);
  const timing = { ...DEFAULT_TIMING, ...(opts.timing || {}) };
  const n = namesOf(prefix);
  const clientId = randomUUID();
  const extra = { maxRetriesPerRequest: null };
  const make = () => (typeof connection.duplicate === "function" ? connection.duplicate(extra) : new IORedis({ ...connection, ...extra }));
  const cmd = make();
  const sub = make();
  cmd.on("error", () => {});
  sub.on("error", () => {});
  const bullConn = typeof connection.duplicate === "function" ? connection : { ...connection, ...extra };
  const queueMap = new Map();
  const queues = (name) => {
    let q = queueMap.get(name);
    if (!q) {
      q = new bullmq.Queue(name, { connection: bullConn, prefix: n.bullPrefix });
      q.on("error", () => {});
      queueMap.set(name, q);
    }
    return q;
  };
  const view = new WorkerView(cmd, n);
  const calls = new Calls({ bullmq, queues, workers: view, timing,
    publishAbort: (key) => cmd.publish(n.abort, key).catch(() => {}) });
  view.onDead = (id) => calls.failWorker(id, "the session's worker died (its heartbeat stopped)");
  sub.on("message", (_ch, msg) => calls.onReply(msg));
  await sub.subscribe(n.reply(clientId));
  await view.refresh();
  const refresher = setInterval(() => view.refresh().catch(() => {}), timing.viewMs);
  refresher.unref();
  let closed = false;

  const cluster = {};
  const ensureOpen = () => {
    if (closed) throw sandboxError("ERR_SANDBOX_CLOSED", "the cluster client is closed");
  };

  /** Live workers, waiting up to waitS for one to heartbeat. */
  async function liveWorkers(waitS, signal) {
    const end = Date.now() + (waitS ?? 30) * 1000;
    while (view.count() === 0) {
      if (signal && signal.aborted) throw abortError(signal);
      if (Date.now() > end) throw sandboxError("ERR_SANDBOX_QUEUE_TIMEOUT", "no cluster worker is alive");
      await new Promise((r) => setTimeout(r, Math.min(200, timing.viewMs)));
      await view.refresh().catch(() => {});
    }
    return view.list();
  }

  /** A one-shot call: checked against every live worker's policy (any of
   * them may take it) before anything is written to Redis. */
  async function oneShot(kind, payload, callOpts = {}) {
    ensureOpen();
    const o = callOpts ?? {};
    const signal = o.signal ?? null;
    if (signal && signal.aborted) throw abortError(signal);
    const queueTimeoutS = checkQueueTimeout(o.queueTimeoutS) ?? defaultQueueTimeoutS;
    const w = wireable(o, kind === "runCode" ? "runCode()" : "run()");
    const call = {};
    for (const k of ["stdin", "language"]) if (w[k] !== undefined) { call[k] = w[k]; delete w[k]; }
    for (const p of await liveWorkers(queueTimeoutS, signal)) checkSessionOptions(p.policy, w);
    const q = queues(n.oneshot);
    if (await q.getWaitingCount() >= maxQueued)
      throw sandboxError("ERR_SANDBOX_QUEUE_FULL", `the cluster's queue already holds maxQueued (${maxQueued}) calls`);
    const jobId = randomUUID();
    const data = { v: 1, kind, ...payload, opts: toWire(w), call: toWire(call), replyTo: clientId, rerun: mayRunTwice(w),
      deadline: queueTimeoutS === null ? null : Date.now() + queueTimeoutS * 1000 };
    return calls.submit(n.oneshot, kind, data, { jobId, signal, queueTimeoutS, rerun: data.rerun });
  }

  cluster.runCode = (code, opts) => {
    if (typeof code !== "string") return Promise.reject(sandboxError("ERR_SANDBOX_INVALID_ARG", "code must be a string"));
    return oneShot("runCode", { code }, opts);
  };
  cluster.run = (argv, opts) => {
    if (!Array.isArray(argv) || !argv.every((a) => typeof a === "string"))
      return Promise.reject(sandboxError("ERR_SANDBOX_INVALID_ARG", "argv must be an array of strings"));
    return oneShot("run", { argv }, opts);
  };

  /** A session operation on worker w's own queue. */
  function sessionCall(workerId, sessionId, op, { args = [], call = {}, signal = null, checkCall = false, opts }) {
    ensureOpen();
    if (signal && signal.aborted) return Promise.reject(abortError(signal));
    const worker = view.live.get(workerId);
    if (!worker) return Promise.reject(sandboxError("ERR_SANDBOX_HOST_LOST", "the session's worker is gone"));
    if (checkCall) checkCallOptions(worker.policy, call);
    const data = { v: 1, op, session: sessionId, args: toWire(args), call: toWire(call), replyTo: clientId };
    if (opts !== undefined) data.opts = toWire(opts);
    return calls.submit(n.host(workerId), op, data, { jobId: randomUUID(), signal, workerId });
  }

  /** Picks the least loaded live worker whose policy allows opts. */
  async function pickWorker(opts, signal) {
    let refusal = null;
    let best = null;
    for (const w of await liveWorkers(defaultQueueTimeoutS, signal)) {
      try {
        checkSessionOptions(w.policy, opts);
      } catch (e) {
        refusal = e;
        continue;
      }
      const load = (w.running + w.sessions) / w.capacity;
      if (best === null || load < best.load) best = { id: w.id, load };
    }
    if (best === null) throw refusal;
    return best.id;
  }

  const openSessions = new Set();
  cluster.Sandbox = makeSandboxClass({ pickWorker, sessionCall, wireable, ensureOpen, openSessions });
  cluster.withSandbox = async (opts, fn) => {
    if (typeof opts === "function") [opts, fn] = [{}, opts];
    if (typeof fn !== "function") throw sandboxError("ERR_SANDBOX_INVALID_ARG", "withSandbox needs a function");
    const sbx = new cluster.Sandbox(opts);
    await sbx.open();
    try {
      return await fn(sbx);
    } finally {
      await sbx.close();
    }
  };
  /** The live workers as their heartbeats say (id, pid, host, capacity, running, sessions, policy). */
  cluster.workers = () => view.list();
  cluster.close = async () => {
    if (closed) return;
    // Sessions left open are closed on their workers first (briefly: a
    // worker that is gone took its sessions along).
    await Promise.all([...openSessions].map((s) => Promise.race([s.close().catch(() => {}),
      new Promise((r) => setTimeout(r, 5000).unref())])));
    closed = true;
    clearInterval(refresher);
    calls.closeAll(sandboxError("ERR_SANDBOX_CLOSED", "the cluster client was closed while the call waited"));
    await Promise.all([...queueMap.values()].map((q) => q.close().catch(() => {})));
    sub.disconnect();
    await cmd.quit().catch(() => cmd.disconnect());
  };
  return cluster;
}

module.exports = { connect };
