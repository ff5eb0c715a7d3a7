"use strict";

// A client's calls in flight: each is a BullMQ job with an id of ours, and
// settles exactly once, from whichever comes first:
//  - the worker's message on the client's reply channel (the fast path);
//  - a poll of the job (every pollMs) that finds it finished (a missed message);
//  - the janitor rules of that poll, for what BullMQ does not settle itself:
//    the job vanished (Redis restarted without persistence) -> JOB_LOST; the
//    worker holding it (or the session's worker) stopped heartbeating -> HOST_LOST
//    for a call that may not run twice (BullMQ's stalled-job check, run by the
//    other workers, puts back one that may, once); Redis unreachable for
//    redisLostS -> HOST_LOST;
//  - the caller's abort (a queued job is removed and never starts; a running
//    one is killed through the abort channel) or its queueTimeoutS.
const { sandboxError } = require("../errors");
const { abortError, onAbort } = require("../abort");
const { outcomeValue } = require("./wire");

function withTimeout(p, ms) {
  let t;
  return Promise.race([p, new Promise((_, rej) => {
    t = setTimeout(() => rej(new Error("Redis did not answer")), ms);
  })]).finally(() => clearTimeout(t));
}

class Calls {
  constructor({ bullmq, queues, workers, publishAbort, timing }) {
    this.bullmq = bullmq;
    this.queues = queues; // name -> BullMQ Queue
    this.workers = workers; // the live-worker view
    this.publishAbort = publishAbort;
    this.timing = timing;
    this.pending = new Map(); // "queue/id" -> call
    this.redisFailSince = null;
    this.poller = setInterval(() => this.#pollAll(), timing.pollMs);
    this.poller.unref();
  }

  /** Adds a job and resolves/rejects with its outcome. */
  submit(queueName, name, data, { jobId, signal = null, queueTimeoutS = null, rerun = false, workerId = null }) {
    const key = `${queueName}/${jobId}`;
    const queue = this.queues(queueName);
    return new Promise((resolve, reject) => {
      const call = { key, queueName, jobId, queue, signal, rerun, workerId, added: false, addedAt: Date.now(),
        settled: false, aborting: false, timers: [], dispose: () => {} };
      call.settle = (fn, v) => {
        if (call.settled) return;
        call.settled = true;
        this.pending.delete(key);
        call.dispose();
        for (const t of call.timers) clearTimeout(t);
        fn(v);
        // Off the call's path, once the worker has recorded the outcome: a
        // settled call's job is no longer needed (BullMQ drops any left after 60 s).
        if (call.added) setTimeout(() => Promise.resolve().then(() => queue.remove(jobId)).catch(() => {}), 1000).unref();
      };
      call.resolve = (v) => call.settle(resolve, v);
      call.reject = (e) => call.settle(reject, e);
      this.pending.set(key, call);
      call.dispose = onAbort(signal, () => this.#abort(call));
      if (queueTimeoutS !== null) {
        call.timers.push(setTimeout(() => this.#queueTimeout(call, queueTimeoutS), queueTimeoutS * 1000));
      }
      // Redis down when the call is made: the add waits for it, up to redisLostS.
      call.timers.push(setTimeout(() => {
        if (!call.added) call.reject(sandboxError("ERR_SANDBOX_HOST_LOST", "Redis unreachable: the call could not be queued"));
      }, this.timing.redisLostS * 1000));
      queue.add(name, data, { jobId, removeOnComplete: { age: 60 }, removeOnFail: { age: 60 } }).then(() => {
        call.added = true;
        if (call.settled) queue.remove(jobId).catch(() => {}); // settled while the add was on its way
        else if (call.aborting) this.#abort(call);
      }, (e) => call.reject(sandboxError("ERR_SANDBOX_HOST_LOST", `the call could not be queued: ${e.message}`, { cause: e })));
    });
  }

  /** A message on the reply channel. */
  onReply(msg) {
    let m;
    try {
      m = JSON.parse(msg);
    } catch {
      return;
    }
    const call = this.pending.get(`${m.queue}/${m.id}`);
    if (call) this.#finish(call, m.outcome);
  }

  #finish(call, outcome) {
    try {
      call.resolve(outcomeValue(outcome, { signal: call.signal }));
    } catch (e) {
      call.reject(e);
    }
  }

  async #abort(call) {
    if (call.settled) return;
    call.aborting = true;
    if (!call.added) return; // again once the add is done
    const removed = await call.queue.remove(call.jobId).catch(() => 0);
    if (removed === 1) {
      call.added = false;
      call.reject(abortError(call.signal)); // it never started
      return;
    }
    // Running (locked): the worker kills its box and answers with an AbortError.
    this.publishAbort(call.key);
    call.timers.push(setTimeout(() => call.reject(abortError(call.signal)), 10000));
  }

  async #queueTimeout(call, s) {
    if (call.settled || !call.added) return;
    const removed = await call.queue.remove(call.jobId).catch(() => 0);
    if (removed === 1) {
      call.added = false;
      call.reject(sandboxError("ERR_SANDBOX_QUEUE_TIMEOUT", `the call waited in the queue over its queueTimeoutS (${s} s)`));
    }
  }

  /** Session calls pinned to a worker that has stopped heartbeating. */
  failWorker(workerId, why) {
    for (const call of this.pending.values()) {
      if (call.workerId === workerId) call.reject(sandboxError("ERR_SANDBOX_HOST_LOST", why));
    }
  }

  async #pollAll() {
    const due = [...this.pending.values()].filter((c) => c.added && Date.now() - c.addedAt >= this.timing.pollMs);
    for (const call of due) {
      if (call.settled) continue;
      try {
        await this.#poll(call);
        this.redisFailSince = null;
      } catch {
        this.redisFailSince ??= Date.now();
        if (Date.now() - this.redisFailSince > this.timing.redisLostS * 1000) {
          for (const c of this.pending.values())
            c.reject(sandboxError("ERR_SANDBOX_HOST_LOST", `Redis unreachable for over ${this.timing.redisLostS} s`));
        }
        return;
      }
    }
  }

  async #poll(call) {
    const job = await withTimeout(this.bullmq.Job.fromId(call.queue, call.jobId), 3000);
    if (call.settled) return;
    if (!job) {
      call.added = false;
      call.reject(sandboxError("ERR_SANDBOX_JOB_LOST", "the call's job vanished from Redis (restarted without persistence?)"));
      return;
    }
    if (job.finishedOn) {
      if (job.returnvalue && typeof job.returnvalue === "object" && "ok" in job.returnvalue) this.#finish(call, job.returnvalue);
      else call.reject(sandboxError("ERR_SANDBOX_HOST_LOST", `the worker running the call died: ${job.failedReason || "no outcome"}`));
      return;
    }
    if (call.workerId !== null) {
      if (!this.workers.alive(call.workerId)) call.reject(sandboxError("ERR_SANDBOX_HOST_LOST", "the session's worker died"));
      return;
    }
    if (!job.processedBy || this.workers.alive(job.processedBy)) return;
    // A one-shot call whose worker died: BullMQ's stalled check (run by the
    // live workers) puts it back once if it may run twice.
    if (!call.rerun || job.attemptsStarted >= 2 || this.workers.count() === 0) {
      const state = await withTimeout(job.getState(), 3000);
      if (state === "active" || !call.rerun || this.workers.count() === 0)
        call.reject(sandboxError("ERR_SANDBOX_HOST_LOST", "the worker running the call died" +
          (call.rerun ? (this.workers.count() === 0 ? " and no other worker is alive" : " twice") : "; a call with network is not run again")));
    }
  }

  /** Rejects every call (the client closes). */
  closeAll(err) {
    clearInterval(this.poller);
    for (const call of this.pending.values()) call.reject(err);
  }
}

module.exports = { Calls, withTimeout };
