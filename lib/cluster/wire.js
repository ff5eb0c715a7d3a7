"use strict";

// What crosses Redis: job arguments and call outcomes as JSON, with the
// values JSON cannot hold marked so they come back as they were: Buffers
// (readFile, writeFile, stdin), ExecutionResults with their rich Results,
// and errors with their class, code and system fields (a SandboxError with
// code ENOENT comes back a SandboxError with code ENOENT).
const { ExecutionResult, Result } = require("../result");
const { SandboxError, MountRefused } = require("../errors");
const { AbortError } = require("../abort");

const RESULT_FIELDS = ["stdout", "stderr", "exitCode", "durationMs", "fault", "files", "truncated",
  "usage", "limits", "missedOutput"];

/** v with Buffers, ExecutionResults and Results marked (plain data otherwise). */
function toWire(v) {
  if (v === null || typeof v !== "object") return v === undefined ? null : v;
  if (Buffer.isBuffer(v)) return { $b: v.toString("base64") };
  if (ArrayBuffer.isView(v)) return { $b: Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString("base64") };
  if (v instanceof ExecutionResult) {
    const out = {};
    for (const k of RESULT_FIELDS) out[k] = toWire(v[k]);
    out.results = v.results.map((r) => ({ $r: r.data }));
    return { $x: out };
  }
  if (v instanceof Result) return { $r: v.data };
  if (Array.isArray(v)) return v.map(toWire);
  const out = {};
  for (const [k, x] of Object.entries(v)) if (x !== undefined) out[k] = toWire(x);
  return out;
}

function fromWire(v) {
  if (v === null || typeof v !== "object") return v;
  if (Array.isArray(v)) return v.map(fromWire);
  if (typeof v.$b === "string") return Buffer.from(v.$b, "base64");
  if (v.$r !== undefined) return new Result(v.$r);
  if (v.$x !== undefined) {
    const f = {};
    for (const [k, x] of Object.entries(v.$x)) f[k] = k === "results" ? x.map((r) => new Result(r.$r)) : fromWire(x);
    return new ExecutionResult(f);
  }
  const out = {};
  for (const [k, x] of Object.entries(v)) out[k] = fromWire(x);
  return out;
}

const ERROR_FIELDS = ["code", "errno", "syscall", "path", "stdout", "stderr"];

/** An error as data: its class name, message and the fields callers branch on. */
function errorToWire(e) {
  const out = { name: e && e.name ? String(e.name) : "Error", message: e && e.message ? String(e.message) : String(e) };
  for (const k of ERROR_FIELDS) if (e && e[k] !== undefined) out[k] = e[k];
  return out;
}

/** The error errorToWire described, of the same class. An AbortError's
 * cause is the caller's own signal reason (the worker's is meaningless here). */
function errorFromWire(w, { signal = null } = {}) {
  let err;
  if (w.name === "AbortError") {
    err = new AbortError(undefined, signal ? { cause: signal.reason } : undefined);
  } else if (w.name === "MountRefused") {
    err = new MountRefused(w.message);
  } else if (w.name === "SandboxError") {
    err = new SandboxError(w.message);
  } else {
    err = new Error(w.message);
    err.name = w.name;
  }
  for (const k of ERROR_FIELDS) if (w[k] !== undefined) err[k] = w[k];
  return err;
}

/** A job's outcome: { ok: true, value } or { ok: false, error }. */
const outcome = {
  value: (v) => ({ ok: true, value: toWire(v) }),
  error: (e) => ({ ok: false, error: errorToWire(e) }),
};

function outcomeValue(o, opts) {
  if (o.ok) return fromWire(o.value);
  throw errorFromWire(o.error, opts);
}

module.exports = { toWire, fromWire, errorToWire, errorFromWire, outcome, outcomeValue };
