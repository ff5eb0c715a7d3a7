"use strict";

// A worker's policy: what a job may ask of it. A job that asks for more is
// refused with ERR_SANDBOX_POLICY_REFUSED, never clamped (a clamped call
// would run with other limits than its author wrote). The worker checks
// every job (jobs are untrusted: anyone who can write to Redis can write
// one); a client checks the same rules first, against the policies the
// workers publish, so a refused call writes nothing to Redis (an `env`
// secret never reaches it unless the workers allow `env`).
const { sandboxError } = require("../errors");

const MiB = 1024 * 1024;
const DEFAULT_IMAGE = "python:3.12-slim";
// The local API's defaults, which a job that leaves a field out gets.
const SESSION_DEFAULTS = { image: DEFAULT_IMAGE, memoryMb: 512, cpus: null, timeoutS: 30, maxOutputBytes: 64 * MiB };

const DEFAULT_POLICY = Object.freeze({
  images: Object.freeze([DEFAULT_IMAGE]),
  maxMemoryMb: 2048,
  maxCpus: null, // null: no cap asked of a job (cpus: null allowed)
  maxTimeoutS: 300,
  maxOutputBytes: 64 * MiB,
  env: false,
  network: false,
  mounts: false,
});

function invalid(msg) {
  return sandboxError("ERR_SANDBOX_INVALID_OPTION", `policy: ${msg}`);
}

function positiveOrNull(p, key) {
  const v = p[key];
  if (v === null) return null;
  if (typeof v !== "number" || !Number.isFinite(v) || v <= 0) throw invalid(`${key} must be a finite number > 0 or null`);
  return v;
}

/** The policy with its defaults; a wrong type or an unknown key throws. */
function normalizePolicy(policy = {}) {
  if (policy === null || typeof policy !== "object") throw invalid("must be an object");
  for (const k of Object.keys(policy)) if (!(k in DEFAULT_POLICY)) throw invalid(`unknown key ${JSON.stringify(k)}`);
  const p = { ...DEFAULT_POLICY, ...policy };
  if (p.images !== null && (!Array.isArray(p.images) || p.images.length === 0 ||
    !p.images.every((i) => typeof i === "string" && i.length > 0)))
    throw invalid("images must be a non-empty array of image references, or null for any image");
  for (const k of ["env", "network", "mounts"]) if (typeof p[k] !== "boolean") throw invalid(`${k} must be a boolean`);
  return {
    images: p.images === null ? null : [...p.images],
    maxMemoryMb: positiveOrNull(p, "maxMemoryMb"),
    maxCpus: positiveOrNull(p, "maxCpus"),
    maxTimeoutS: positiveOrNull(p, "maxTimeoutS"),
    maxOutputBytes: positiveOrNull(p, "maxOutputBytes"),
    env: p.env,
    network: p.network,
    mounts: p.mounts,
  };
}

function refuse(msg) {
  return sandboxError("ERR_SANDBOX_POLICY_REFUSED", `refused by the worker policy: ${msg}`);
}

const has = (o, k) => o[k] !== undefined && o[k] !== null;
const nonEmpty = (v) => v !== undefined && v !== null && (typeof v !== "object" || Object.keys(v).length > 0);

function checkCap(value, max, what, unit) {
  if (max === null) return;
  if (value === null) throw refuse(`${what} is uncapped (null), the policy's cap is ${max}${unit}`);
  if (typeof value === "number" && value > max) throw refuse(`${what} ${value}${unit} is over the policy's ${max}${unit}`);
}

/** Throws ERR_SANDBOX_POLICY_REFUSED if a session's (or a one-shot call's)
 * options ask for what the policy forbids or for what would widen a box. */
function checkSessionOptions(policy, opts = {}) {
  const o = { ...SESSION_DEFAULTS, ...Object.fromEntries(Object.entries(opts || {}).filter(([, v]) => v !== undefined)) };
  // Never allowed: each widens the box or reaches the worker's host.
  if (has(o, "workspace")) throw refuse("a host workspace path is the worker's, not a job's");
  if (Array.isArray(o.capDrop) && !o.capDrop.some((c) => String(c).toUpperCase() === "ALL"))
    throw refuse("capDrop must keep \"ALL\" (a box with capabilities is wider)");
  if (o.enforceLimits === false) throw refuse("enforceLimits: false makes the caps best-effort");
  if (nonEmpty(o.profiles)) throw refuse("profiles are the worker's to choose");
  if (has(o, "apparmor")) throw refuse("apparmor profiles are the worker's to choose");
  if (policy.images !== null && !policy.images.includes(o.image))
    throw refuse(`image ${JSON.stringify(o.image)} is not among ${JSON.stringify(policy.images)}`);
  checkCap(o.memoryMb, policy.maxMemoryMb, "memoryMb", " MiB");
  checkCap(o.cpus, policy.maxCpus, "cpus", "");
  checkCap(o.timeoutS, policy.maxTimeoutS, "timeoutS", " s");
  checkCap(o.maxOutputBytes, policy.maxOutputBytes, "maxOutputBytes", " bytes");
  if (!policy.network) {
    if (o.network === true) throw refuse("network is not allowed");
    if (nonEmpty(o.egressAllow)) throw refuse("egressAllow is not allowed (network: false)");
    if (has(o, "setup")) throw refuse("setup runs with the network, which is not allowed");
  }
  if (!policy.mounts && nonEmpty(o.mounts)) throw refuse("mounts are not allowed");
  if (!policy.env && nonEmpty(o.env)) throw refuse("env is not allowed (its values would sit in Redis)");
}

/** The same for one call's options on a session. */
function checkCallOptions(policy, call = {}) {
  if (!call) return;
  checkCap(call.timeoutS ?? undefined, policy.maxTimeoutS, "timeoutS", " s");
  if (!policy.env && nonEmpty(call.env)) throw refuse("env is not allowed (its values would sit in Redis)");
}

/** Whether a call that ran partly may be run again elsewhere: a one-shot
 * call without network and without host mounts (no effect outside its own box). */
function mayRunTwice(opts = {}) {
  return !(opts.network === true || nonEmpty(opts.egressAllow) || has(opts, "setup") || nonEmpty(opts.mounts));
}

module.exports = { normalizePolicy, checkSessionOptions, checkCallOptions, mayRunTwice, DEFAULT_POLICY };
