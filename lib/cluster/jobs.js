"use strict";

// What a worker does with one job: checks it against the policy (jobs are
// untrusted), runs it with this package's local API, and returns its
// outcome as data (wire.js) -- never throws, so BullMQ records every
// outcome the same way and an error keeps its class and code.
const local = require("../sandbox");
const { sandboxError } = require("../errors");
const { abortError } = require("../abort");
const { fromWire, outcome } = require("./wire");
const { checkSessionOptions, checkCallOptions } = require("./policy");
const { runWarm } = require("./warm");

function hostLost(msg) {
  return sandboxError("ERR_SANDBOX_HOST_LOST", msg);
}

/** Checks common to every job; an error outcome, or null to go on. */
function precheck(ctx, job, key) {
  const d = job.data;
  if (!d || d.v !== 1) return outcome.error(sandboxError("ERR_SANDBOX_INVALID_ARG", "not a kern-sandbox/cluster job"));
  if (ctx.aborted.has(key)) return outcome.error(abortError({ reason: undefined }));
  if (d.deadline && Date.now() > d.deadline)
    return outcome.error(sandboxError("ERR_SANDBOX_QUEUE_TIMEOUT", "the call waited in the queue past its queueTimeoutS"));
  return null;
}

/** Runs fn(signal) with an AbortController the abort channel can reach. */
async function abortable(ctx, key, fn) {
  const ac = new AbortController();
  ctx.running.set(key, ac);
  try {
    return outcome.value(await fn(ac.signal));
  } catch (e) {
    // Aborted by the worker's own shutdown (past its grace), not by the
    // caller: the caller learns the host went away.
    if (ac.signal.aborted && ac.byShutdown) return outcome.error(hostLost("the worker shut down before the call finished"));
    return outcome.error(e);
  } finally {
    ctx.running.delete(key);
  }
}

/** A one-shot call (shared queue): runCode or run in a throwaway session. */
async function oneShot(ctx, job) {
  const key = `${job.queueName}/${job.id}`;
  const early = precheck(ctx, job, key);
  if (early) return early;
  const d = job.data;
  // BullMQ moved this job back to the queue after its worker died
  // (stalled): a second start is allowed only for a call that may run twice
  // (no network), and never a third (maxStalledCount 1 fails it first).
  if (job.attemptsStarted > 1 && (!d.rerun || job.attemptsStarted > 2))
    return outcome.error(hostLost("the worker running this call died; a call with network is not run again"));
  try {
    checkSessionOptions(ctx.policy, d.opts);
    checkCallOptions(ctx.policy, d.call);
  } catch (e) {
    return outcome.error(e);
  }
  const opts = fromWire(d.opts);
  const call = fromWire(d.call || {});
  return abortable(ctx, key, async (signal) => {
    const warm = await runWarm(ctx.warm, d, opts, call, signal);
    if (warm !== null) return warm.value;
    if (d.kind === "runCode") return local.runCode(d.code, { ...opts, ...call, signal });
    return local.withSandbox({ prewarm: 0, ...opts }, (s) => s.run(d.argv, { ...call, signal }));
  });
}

/** One operation of a session pinned to this worker (its own queue). */
async function sessionOp(ctx, job) {
  const key = `${job.queueName}/${job.id}`;
  const early = precheck(ctx, job, key);
  if (early) return early;
  const d = job.data;
  // A session call is never run twice: a second start means this worker's
  // predecessor in the same process lost the job's lock.
  if (job.attemptsStarted > 1) return outcome.error(hostLost("a session call is not run again"));
  if (d.op === "open") return openSession(ctx, key, d);
  const s = ctx.sessions.get(d.session);
  if (s === undefined || s.owner !== d.replyTo)
    return outcome.error(sandboxError("ERR_SANDBOX_CLOSED", "no open session with this id on this worker"));
  s.lastUsed = Date.now();
  const sbx = s.sbx;
  if (d.op === "close") {
    ctx.sessions.delete(d.session);
    return abortable(ctx, key, () => sbx.close().then(() => null));
  }
  if (d.op === "runCode" || d.op === "run") {
    try {
      checkCallOptions(ctx.policy, d.call);
    } catch (e) {
      return outcome.error(e);
    }
  }
  const call = fromWire(d.call || {});
  const args = fromWire(d.args || []);
  return abortable(ctx, key, (signal) => {
    switch (d.op) {
      case "runCode": return sbx.runCode(args[0], { ...call, signal });
      case "run": return sbx.run(args[0], { ...call, signal });
      case "writeFile": return sbx.writeFile(args[0], args[1]).then(() => null);
      case "readFile": return sbx.readFile(args[0], args[1] ?? undefined);
      case "listFiles": return sbx.listFiles(args[0] ?? undefined);
      default: throw sandboxError("ERR_SANDBOX_INVALID_ARG", `unknown session operation ${JSON.stringify(d.op)}`);
    }
  });
}

async function openSession(ctx, key, d) {
  try {
    checkSessionOptions(ctx.policy, d.opts);
  } catch (e) {
    return outcome.error(e);
  }
  return abortable(ctx, key, async (signal) => {
    const sbx = new local.Sandbox(fromWire(d.opts));
    await sbx.open({ signal });
    if (ctx.closing) {
      await sbx.close();
      throw hostLost("the worker is shutting down");
    }
    ctx.sessions.set(d.session, { sbx, owner: d.replyTo, lastUsed: Date.now() });
    return null;
  });
}

module.exports = { oneShot, sessionOp, hostLost };
