"use strict";

// Prewarmed one-shot calls: a worker keeps `size` sessions opened ahead
// (each with its own fresh workspace and one box started ahead, prewarm 1)
// and gives each to exactly one one-shot call, then closes it: a call never
// sees another call's files. Only for calls with the default session
// options and Python code (see warmable); others take a cold box as the
// local one-shot runCode does.
const local = require("../sandbox");

const CALL_LEVEL = new Set(["timeoutS", "env"]);

/** Whether a one-shot call can be served by a warm session: Python code
 * (a new session starts a Python box ahead; run() or bash would leave it
 * unused and start a cold box anyway), without stdin (a Python call with
 * stdin takes a cold box), with the default session options. */
function warmable(d, opts, call) {
  if (d.kind !== "runCode" || (call.language ?? "python") !== "python" || call.stdin !== undefined) return false;
  return Object.entries(opts || {}).every(([k, v]) => CALL_LEVEL.has(k) || v === undefined);
}

class WarmPool {
  constructor(size) {
    this.size = size;
    this.ready = [];
    this.opening = 0;
    this.closing = new Set();
    this.closed = false;
  }

  fill() {
    while (!this.closed && this.ready.length + this.opening < this.size) {
      this.opening++;
      const sbx = new local.Sandbox({ prewarm: 1 });
      sbx.open().then(() => {
        this.opening--;
        if (this.closed) this.retire(sbx);
        else this.ready.push(sbx);
      }, () => {
        this.opening--; // the next take() runs cold; the next fill() tries again
      });
    }
  }

  /** An opened session for one call, or null (then the call runs cold). */
  take() {
    const sbx = this.ready.shift() ?? null;
    this.fill();
    return sbx;
  }

  /** Closes a used session, off the call's path. */
  retire(sbx) {
    const p = sbx.close().catch(() => {}).finally(() => this.closing.delete(p));
    this.closing.add(p);
  }

  async close() {
    this.closed = true;
    for (const sbx of this.ready.splice(0)) this.retire(sbx);
    while (this.opening > 0) await new Promise((r) => setTimeout(r, 10));
    await Promise.all([...this.closing]);
  }
}

/** Runs a one-shot call in a warm session; null when none is ready. */
async function runWarm(pool, d, opts, call, signal) {
  if (pool === null || !warmable(d, opts, call)) return null;
  const sbx = pool.take();
  if (sbx === null) return null;
  const callOpts = { ...call, signal };
  if (opts.timeoutS !== undefined) callOpts.timeoutS = opts.timeoutS;
  if (opts.env !== undefined) callOpts.env = opts.env;
  try {
    return { value: await sbx.runCode(d.code, callOpts) };
  } finally {
    pool.retire(sbx);
  }
}

module.exports = { WarmPool, runWarm, warmable };
