"use strict";

// connect(): the cluster from a client, with the local API's shape.
// One-shot calls go to the shared queue (any free worker); a Sandbox is
// pinned to the worker that opened it (that worker's own queue).
const { randomUUID } = require("crypto");
const { peers, connectionOf } = require("./peer");
const { names: namesOf } = require("./names");
const { checkSessionOptions, checkCallOptions, mayRunTwice } = require("./policy");
const { toWire } = require("./wire");
const { WorkerView } = require("./view");
const { Calls, withTimeout } = require("./calls");
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

class Cluster {
  #bullmq;
  #n;
  #clientId = randomUUID();
  #cmd;
  #sub;
  #bullConn;
  #conn;
  #queueMap = new Map();
  #view;
  #calls;
  #refresher = null;
  #closed = false;
  #maxQueued;
  #queueTimeoutS;
  #timing;
  #openSessions = new Set();

  constructor(opts) {
    const { bullmq } = peers();
    const { connection } = opts;
    if (!connection) throw sandboxError("ERR_SANDBOX_INVALID_OPTION", "connect needs a connection (ioredis options or a client)");
    this.#maxQueued = opts.maxQueued ?? 1000;
    if (!Number.isInteger(this.#maxQueued) || this.#maxQueued < 1)
      throw sandboxError("ERR_SANDBOX_INVALID_OPTION", "maxQueued must be an integer >= 1");
    this.#queueTimeoutS = checkQueueTimeout(opts.queueTimeoutS);
    this.#timing = { ...DEFAULT_TIMING, ...(opts.timing || {}) };
    this.#bullmq = bullmq;
    this.#n = namesOf(opts.prefix);
    // maxRetriesPerRequest null: a command waits through a Redis restart;
    // Calls bounds every wait of its own (redisLostS).
    this.#conn = connectionOf(connection);
    this.#cmd = this.#conn.make();
    this.#sub = this.#conn.make();
    this.#cmd.on("error", () => {});
    this.#sub.on("error", () => {});
    this.#bullConn = this.#conn.bull;
    this.#view = new WorkerView(this.#cmd, this.#n, this.#timing.viewMs);
    this.#calls = new Calls({ bullmq, queues: (name) => this.#queue(name), workers: this.#view, timing: this.#timing,
      publishAbort: (key) => this.#cmd.publish(this.#n.abort, key).catch(() => {}) });
    this.#view.onDead = (id) => this.#calls.failWorker(id, "the session's worker died (its heartbeat stopped)");
    this.Sandbox = makeSandboxClass({ pickWorker: (o, s) => this.#pickWorker(o, s),
      sessionCall: (...a) => this.#sessionCall(...a), wireable, ensureOpen: () => this.#ensureOpen(),
      openSessions: this.#openSessions });
  }

  async start() {
    this.#sub.on("message", (_ch, msg) => this.#calls.onReply(msg));
    await this.#sub.subscribe(this.#n.reply(this.#clientId));
    await this.#view.refresh();
    this.#refresher = setInterval(() => this.#view.refresh().catch(() => {}), this.#timing.viewMs);
    this.#refresher.unref();
    return this;
  }

  #queue(name) {
    let q = this.#queueMap.get(name);
    if (!q) {
      q = new this.#bullmq.Queue(name, { connection: this.#bullConn, prefix: this.#n.bullPrefix });
      q.on("error", () => {});
      this.#queueMap.set(name, q);
    }
    return q;
  }

  #ensureOpen() {
    if (this.#closed) throw sandboxError("ERR_SANDBOX_CLOSED", "the cluster client is closed");
  }

  /** Live workers, waiting up to waitS for one to heartbeat. */
  async #liveWorkers(waitS, signal) {
    const end = Date.now() + (waitS ?? 30) * 1000;
    while (this.#view.count() === 0) {
      if (signal && signal.aborted) throw abortError(signal);
      if (Date.now() > end) throw sandboxError("ERR_SANDBOX_QUEUE_TIMEOUT", "no cluster worker is alive");
      await new Promise((r) => setTimeout(r, Math.min(200, this.#timing.viewMs)));
      await withTimeout(this.#view.refresh(), 3000).catch(() => {});
    }
    return this.#view.list();
  }

  /** A one-shot call: checked against every live worker's policy (any of
   * them may take it) before anything is written to Redis. */
  async #oneShot(kind, payload, callOpts) {
    this.#ensureOpen();
    const o = callOpts ?? {};
    const signal = o.signal ?? null;
    if (signal && signal.aborted) throw abortError(signal);
    const queueTimeoutS = checkQueueTimeout(o.queueTimeoutS) ?? this.#queueTimeoutS;
    const w = wireable(o, `${kind}()`);
    const call = {};
    for (const k of ["stdin", "language"]) {
      if (w[k] !== undefined) call[k] = w[k];
      delete w[k];
    }
    for (const p of await this.#liveWorkers(queueTimeoutS, signal)) checkSessionOptions(p.policy, w);
    const n = this.#n;
    // Bounded as every wait on Redis is: a Redis that does not answer makes
    // the call reject after redisLostS, never hang.
    const waiting = await withTimeout(this.#queue(n.oneshot).getWaitingCount(), this.#timing.redisLostS * 1000)
      .catch((e) => {
        throw sandboxError("ERR_SANDBOX_HOST_LOST", `Redis unreachable: ${e.message}`, { cause: e });
      });
    if (waiting >= this.#maxQueued)
      throw sandboxError("ERR_SANDBOX_QUEUE_FULL", `the cluster's queue already holds maxQueued (${this.#maxQueued}) calls`);
    const data = { v: 1, kind, ...payload, opts: toWire(w), call: toWire(call), replyTo: this.#clientId,
      rerun: mayRunTwice(w), deadline: queueTimeoutS === null ? null : Date.now() + queueTimeoutS * 1000 };
    return this.#calls.submit(n.oneshot, kind, data, { jobId: randomUUID(), signal, queueTimeoutS, rerun: data.rerun });
  }

  /** One call in a throwaway session on any free worker; opts as the local runCode's. */
  async runCode(code, opts) {
    if (typeof code !== "string") throw sandboxError("ERR_SANDBOX_INVALID_ARG", "code must be a string");
    return this.#oneShot("runCode", { code }, opts);
  }

  /** run(argv) in a throwaway session on any free worker. */
  async run(argv, opts) {
    if (!Array.isArray(argv) || !argv.every((a) => typeof a === "string"))
      throw sandboxError("ERR_SANDBOX_INVALID_ARG", "argv must be an array of strings");
    return this.#oneShot("run", { argv }, opts);
  }

  /** A session operation on its worker's own queue. */
  #sessionCall(workerId, sessionId, op, { args = [], call = {}, signal = null, checkCall = false, opts }) {
    this.#ensureOpen();
    if (signal && signal.aborted) return Promise.reject(abortError(signal));
    const worker = this.#view.live.get(workerId);
    if (!worker) return Promise.reject(sandboxError("ERR_SANDBOX_HOST_LOST", "the session's worker is gone"));
    if (checkCall) checkCallOptions(worker.policy, call);
    const data = { v: 1, op, session: sessionId, args: toWire(args), call: toWire(call), replyTo: this.#clientId };
    if (opts !== undefined) data.opts = toWire(opts);
    return this.#calls.submit(this.#n.host(workerId), op, data, { jobId: randomUUID(), signal, workerId });
  }

  /** The least loaded live worker whose policy allows opts. */
  async #pickWorker(opts, signal) {
    let refusal = null;
    let best = null;
    for (const w of await this.#liveWorkers(this.#queueTimeoutS, signal)) {
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

  /** Opens a Sandbox on the cluster, runs fn(sbx), always closes it. */
  async withSandbox(opts, fn) {
    if (typeof opts === "function") [opts, fn] = [{}, opts];
    if (typeof fn !== "function") throw sandboxError("ERR_SANDBOX_INVALID_ARG", "withSandbox needs a function");
    const sbx = new this.Sandbox(opts);
    await sbx.open();
    try {
      return await fn(sbx);
    } finally {
      await sbx.close();
    }
  }

  /** The live workers as their heartbeats say (id, pid, host, capacity, running, sessions, policy). */
  workers() {
    return this.#view.list();
  }

  /** Closes the sessions left open, rejects calls still waiting
   * (ERR_SANDBOX_CLOSED) and closes the connections. */
  async close() {
    if (this.#closed) return;
    // Briefly: a worker that is gone took its sessions along.
    await Promise.all([...this.#openSessions].map((s) => Promise.race([s.close().catch(() => {}),
      new Promise((r) => setTimeout(r, 5000).unref())])));
    this.#closed = true;
    clearInterval(this.#refresher);
    this.#calls.closeAll(sandboxError("ERR_SANDBOX_CLOSED", "the cluster client was closed while the call waited"));
    // Bounded: a Redis that does not answer must not hold close() up.
    await withTimeout(Promise.all([...this.#queueMap.values()].map((q) => q.close().catch(() => {}))), 3000)
      .catch(() => {});
    this.#sub.disconnect();
    await withTimeout(this.#cmd.quit(), 2000).catch(() => {});
    this.#cmd.disconnect();
    this.#conn.dispose();
  }
}

/** A client of the cluster on connection (ioredis options or a client). */
async function connect(opts = {}) {
  return new Cluster(opts ?? {}).start();
}

module.exports = { connect, Cluster };
