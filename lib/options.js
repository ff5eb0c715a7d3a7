"use strict";

// Validation and defaults for Sandbox options. Everything kern would reject
// (or, worse, misread) is refused here with a SandboxError naming the option,
// before any process starts.
const { SandboxError, sandboxError } = require("./errors");
const { validateMounts } = require("./mounts");
const { canonicalCap } = require("./caps");

const MIB = 1024 * 1024;
const DEFAULTS = Object.freeze({
  image: "python:3.12-slim",
  memoryMb: 512,
  pids: 256,
  timeoutS: 30,
  maxOutputBytes: 64 * MIB,
});

// The longest string V8 can hold: captured output is decoded to a string, so
// a larger cap could only end in ERR_STRING_TOO_LONG.
const MAX_OUTPUT_BYTES = require("buffer").constants.MAX_STRING_LENGTH;
const MAX_TIMEOUT_S = 2 ** 31 - 1;
const MAX_MEMORY_MB = 16 * MIB; // 16 TiB
const MAX_CPUS = 4096;
const MAX_PIDS = 4 * MIB; // the kernel's pid_max ceiling
const MAX_PREWARM = 16; // boxes started ahead: each idle one holds a kern and its mounts

// An OCI reference: registry/name:tag@digest. Never a leading '-' (it would
// become a kern flag) and nothing outside the reference alphabet.
const IMAGE_RE = /^[A-Za-z0-9][A-Za-z0-9._\/:@+-]*$/;
// vcpu:/vgpio:/vdisk: plus a profile name from kern.toml.
const PROFILE_RE = /^(?:vcpu|vgpio|vdisk):[A-Za-z0-9][A-Za-z0-9._-]*$/;
// An AppArmor profile name, as kern's --apparmor takes it.
const APPARMOR_RE = /^[A-Za-z0-9_.][A-Za-z0-9_.-]{0,127}$/;
const SECURITY_PROFILES = ["untrusted"];
// A bare DNS name with at least one dot and an alphabetic TLD.
const DOMAIN_RE =
  /^(?=.{1,253}$)(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}$/;

function describe(v) {
  if (typeof v === "string") return JSON.stringify(v.length > 60 ? `${v.slice(0, 60)}...` : v);
  if (typeof v === "bigint") return `${v}n`;
  if (typeof v === "function") return "a function";
  if (Array.isArray(v)) return "an array";
  if (v !== null && typeof v === "object") return "an object";
  return String(v);
}

function fail(name, expected, value) {
  throw sandboxError("ERR_SANDBOX_INVALID_OPTION", `options.${name} must be ${expected}, got ${describe(value)}`);
}

function isWellFormed(s) {
  // String.prototype.isWellFormed arrived in Node 20; lone surrogates would
  // otherwise be replaced by U+FFFD on their way to UTF-8, silently.
  if (typeof s.isWellFormed === "function") return s.isWellFormed();
  return !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(s);
}

function boolOption(opts, name, dflt) {
  const v = opts[name];
  if (v === undefined || v === null) return dflt;
  // Strict on purpose: `network: "false"` is truthy and would open the network.
  if (typeof v !== "boolean") fail(name, "a boolean", v);
  return v;
}

function numberOption(opts, name, { dflt, nullable, integer, min, max, minExclusive }) {
  const v = opts[name];
  if (v === undefined) return dflt;
  if (v === null) {
    if (nullable) return null;
    return dflt;
  }
  const kind = integer ? "an integer" : "a finite number";
  const lower = minExclusive ? `above ${min}` : `at least ${min}`;
  if (typeof v !== "number" || !Number.isFinite(v) || (integer && !Number.isInteger(v)) ||
      (minExclusive ? !(v > min) : !(v >= min)) || v > max)
    fail(name, `${kind} ${lower} and at most ${max}${nullable ? " (or null)" : ""}`, v);
  return v;
}

function stringListOption(opts, name, re, what) {
  const v = opts[name];
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) fail(name, `an array of ${what}`, v);
  return v.map((item, i) => {
    // A RegExp '$' in JS matches only at the very end, and the explicit
    // control-character check keeps "\n" or "\0" tricks out regardless.
    if (typeof item !== "string" || /[\u0000-\u001f\u007f]/.test(item) || !re.test(item))
      throw sandboxError("ERR_SANDBOX_INVALID_OPTION", `options.${name}[${i}] is not a valid ${what}: ${describe(item)}`);
    return item;
  });
}

const VALUE_TRIMMED_BY_KERN = /[\s\u0085]$/;

// The env reaches the box through kern's --env-file: one KEY=VALUE per line,
// lines trimmed, '#' lines skipped. Anything that format cannot carry exactly
// is refused rather than altered.
function envOption(opts, where = "options") {
  const v = opts.env;
  if (v === undefined || v === null) return {};
  if (typeof v !== "object" || Array.isArray(v))
    throw sandboxError("ERR_SANDBOX_INVALID_OPTION", `${where}.env must be an object of strings, got ${describe(v)}`);
  const out = {};
  for (const [key, raw] of Object.entries(v)) {
    let value = raw;
    if (typeof value === "number" || typeof value === "boolean" || typeof value === "bigint")
      value = String(value);
    if (typeof value !== "string")
      throw sandboxError("ERR_SANDBOX_INVALID_OPTION", `${where}.env.${key} must be a string, got ${describe(raw)}`);
    if (key === "" || key.includes("=") || /[\s\u0000\u0085]/.test(key) || key.startsWith("#") ||
        !isWellFormed(key))
      throw sandboxError("ERR_SANDBOX_INVALID_OPTION", 
        `${where}.env has an invalid key ${describe(key)}: a key must be non-empty, and have no ` +
          "'=', whitespace, NUL or leading '#'");
    if (/[\n\r\u0000]/.test(value))
      throw sandboxError("ERR_SANDBOX_INVALID_OPTION", `${where}.env.${key} must not contain a newline or NUL`);
    if (VALUE_TRIMMED_BY_KERN.test(value))
      throw sandboxError("ERR_SANDBOX_INVALID_OPTION", 
        `${where}.env.${key} ends with whitespace, which kern's env-file format would strip; ` +
          "remove it or encode the value");
    if (!isWellFormed(value))
      throw sandboxError("ERR_SANDBOX_INVALID_OPTION", `${where}.env.${key} contains a lone UTF-16 surrogate`);
    out[key] = value;
  }
  return out;
}

function callbackOption(opts, name) {
  const v = opts[name];
  if (v === undefined || v === null) return null;
  if (typeof v !== "function") fail(name, "a function", v);
  return v;
}

// capDrop: kern's --cap-drop names. An array, as in 0.1.23: a bare "ALL"
// would otherwise be iterated letter by letter by a careless caller.
function capDropOption(opts) {
  const v = opts.capDrop;
  if (v === undefined || v === null) return ["ALL"];
  if (!Array.isArray(v))
    fail("capDrop", 'an array of capability names, like ["ALL"] or ["NET_RAW", "SYS_PTRACE"]', v);
  const out = [];
  v.forEach((item, i) => {
    const cap = canonicalCap(item);
    if (cap === null)
      throw sandboxError("ERR_SANDBOX_INVALID_OPTION", `options.capDrop[${i}] is not a Linux capability name: ` +
        `${describe(item)} (use names like "NET_RAW" or "CAP_NET_RAW", or "ALL")`);
    if (!out.includes(cap)) out.push(cap);
  });
  return out;
}

function securityProfileOption(opts) {
  const v = opts.securityProfile;
  if (v === undefined || v === null) return null;
  if (!SECURITY_PROFILES.includes(v))
    fail("securityProfile", `${SECURITY_PROFILES.map((p) => JSON.stringify(p)).join(" or ")} ` +
      "(the only profile kern has) or null", v);
  return v;
}

function apparmorOption(opts) {
  const v = opts.apparmor;
  if (v === undefined || v === null) return null;
  if (typeof v !== "string" || !APPARMOR_RE.test(v))
    fail("apparmor", "an AppArmor profile name (1-128 of letters, digits, '_', '.', '-', not " +
      "starting with '-') or null", v);
  return v;
}

function stringOption(opts, name) {
  const v = opts[name];
  if (v === undefined || v === null) return null;
  if (typeof v !== "string" || v.includes("\0")) fail(name, "a string without NUL", v);
  return v;
}

/** An AbortSignal (by shape, as Node's own validateAbortSignal checks), or null. */
function signalOption(opts, where) {
  const v = opts.signal;
  if (v === undefined || v === null) return null;
  if (typeof v !== "object" || typeof v.aborted !== "boolean" ||
      typeof v.addEventListener !== "function" || typeof v.removeEventListener !== "function")
    throw sandboxError("ERR_SANDBOX_INVALID_OPTION", `${where}.signal must be an AbortSignal, got ${describe(v)}`);
  return v;
}

/**
 * The per-call options of runCode()/run() (additions to 0.1.1). A field left
 * out, undefined or null inherits the session's value, except that
 * onStdout/onStderr null turn streaming off for the call. Returns only the
 * fields the call overrides, plus `signal` (or null).
 */
function normalizeCallOptions(opts, where) {
  if (opts === undefined || opts === null) opts = {};
  if (typeof opts !== "object" || Array.isArray(opts))
    throw sandboxError("ERR_SANDBOX_INVALID_OPTION", `${where} options must be an object, got ${describe(opts)}`);
  const call = { signal: signalOption(opts, where) };
  if (opts.timeoutS !== undefined && opts.timeoutS !== null) {
    const v = opts.timeoutS;
    if (typeof v !== "number" || !Number.isFinite(v) || !(v > 0) || v > MAX_TIMEOUT_S)
      throw sandboxError("ERR_SANDBOX_INVALID_OPTION", `${where} options.timeoutS must be a finite number above 0 and at ` +
        `most ${MAX_TIMEOUT_S} (seconds; fractions work), got ${describe(v)}`);
    call.timeoutS = v;
  }
  if (opts.env !== undefined && opts.env !== null) call.env = envOption(opts, `${where} options`);
  for (const name of ["onStdout", "onStderr"]) {
    const v = opts[name];
    if (v === undefined) continue;
    if (v !== null && typeof v !== "function")
      throw sandboxError("ERR_SANDBOX_INVALID_OPTION", `${where} options.${name} must be a function or null (no ` +
        `streaming for this call), got ${describe(v)}`);
    call[name] = v;
  }
  if (opts.stdin !== undefined && opts.stdin !== null) call.stdin = stdinSource(opts.stdin, where);
  if (opts.results !== undefined && opts.results !== null) {
    if (typeof opts.results !== "boolean")
      throw sandboxError("ERR_SANDBOX_INVALID_OPTION", `${where} options.results must be a boolean (false: no rich ` +
        `results, python3 -c exactly), got ${describe(opts.results)}`);
    call.results = opts.results;
  }
  return call;
}

/**
 * A call's stdin (lib/stdin.js feeds it): { bytes } for a string (UTF-8)
 * or a Buffer/Uint8Array (a view, not a copy), { node } for a Node
 * Readable, { web } for a web ReadableStream. Anything else, or a web
 * stream another reader holds, is a SandboxError that says what to pass.
 */
function stdinSource(v, where) {
  if (typeof v === "string") return { bytes: Buffer.from(v, "utf8") };
  if (v instanceof Uint8Array) return { bytes: Buffer.from(v.buffer, v.byteOffset, v.byteLength) };
  if (v !== null && typeof v === "object") {
    if (typeof v.getReader === "function" && typeof v.pipeTo === "function") {
      if (v.locked)
        throw sandboxError("ERR_SANDBOX_INVALID_OPTION", `${where} options.stdin is a ReadableStream that ` +
          "is locked (another reader holds it): pass an unlocked stream, or a tee() of it");
      return { web: v };
    }
    if (typeof v.read === "function" && typeof v.on === "function" && typeof v.pipe === "function")
      return { node: v };
  }
  throw sandboxError("ERR_SANDBOX_INVALID_OPTION", `${where} options.stdin must be a string, a Buffer or ` +
    `Uint8Array, a Node Readable or a web ReadableStream (or absent: stdin at EOF), got ${describe(v)}`);
}

/** Returns the complete, validated option set, or throws a SandboxError. */
function normalizeOptions(opts) {
  if (opts === undefined || opts === null) opts = {};
  if (typeof opts !== "object" || Array.isArray(opts))
    throw sandboxError("ERR_SANDBOX_INVALID_OPTION", `Sandbox options must be an object, got ${describe(opts)}`);

  let image = opts.image ?? DEFAULTS.image;
  if (typeof image !== "string" || image.length > 512 || !IMAGE_RE.test(image))
    fail("image", "an image reference like \"python:3.12-slim\"", image);

  const workspace = stringOption(opts, "workspace");
  if (workspace === "") fail("workspace", "a non-empty path", workspace);

  const o = {
    image,
    setup: stringOption(opts, "setup"),
    workspace,
    memoryMb: numberOption(opts, "memoryMb",
      { dflt: DEFAULTS.memoryMb, nullable: true, integer: true, min: 1, max: MAX_MEMORY_MB }),
    cpus: numberOption(opts, "cpus",
      { dflt: null, nullable: true, min: 0, minExclusive: true, max: MAX_CPUS }),
    pids: numberOption(opts, "pids",
      { dflt: DEFAULTS.pids, nullable: true, integer: true, min: 2, max: MAX_PIDS }),
    timeoutS: numberOption(opts, "timeoutS",
      { dflt: DEFAULTS.timeoutS, min: 0, minExclusive: true, max: MAX_TIMEOUT_S }),
    network: boolOption(opts, "network", false),
    egressAllow: stringListOption(opts, "egressAllow", DOMAIN_RE, "domain like \"pypi.org\""),
    mounts: validateMounts(opts.mounts),
    profiles: stringListOption(opts, "profiles", PROFILE_RE,
      "profile token ('vcpu:NAME', 'vgpio:NAME' or 'vdisk:NAME', NAME defined in kern.toml)"),
    env: envOption(opts),
    maxOutputBytes: numberOption(opts, "maxOutputBytes",
      { dflt: DEFAULTS.maxOutputBytes, integer: true, min: 1, max: MAX_OUTPUT_BYTES }),
    enforceLimits: boolOption(opts, "enforceLimits", true),
    depsReadonly: boolOption(opts, "depsReadonly", false),
    onStdout: callbackOption(opts, "onStdout"),
    onStderr: callbackOption(opts, "onStderr"),
    // Additions to 0.1.1: kern's hardening flags, and the change scan.
    capDrop: capDropOption(opts),
    securityProfile: securityProfileOption(opts),
    apparmor: apparmorOption(opts),
    requireLimits: boolOption(opts, "requireLimits", false),
    trackFiles: boolOption(opts, "trackFiles", true),
    // Boxes kept started ahead of the calls (lib/pool.js).
    prewarm: numberOption(opts, "prewarm",
      { dflt: 1, integer: true, min: 0, max: MAX_PREWARM }),
    // Rich results of Python calls (ExecutionResult.results).
    results: boolOption(opts, "results", true),
  };
  if (o.egressAllow.length > 0 && o.network)
    throw sandboxError("ERR_SANDBOX_INVALID_OPTION", 
      "options.egressAllow and options.network: true cannot be combined: egressAllow keeps the " +
        "box on its own network with a domain allowlist, network: true gives it the host network");
  return o;
}

// What Node's own fs.readFile accepts.
const READ_MAX = 2 ** 31 - 1;

/** readFile()'s maxBytes: a whole number of bytes, at most what Node reads. */
function readMaxOption(opts) {
  if (opts === undefined || opts === null) return READ_MAX;
  if (typeof opts !== "object" || Array.isArray(opts))
    throw sandboxError("ERR_SANDBOX_INVALID_OPTION", `readFile() options must be an object, got ${describe(opts)}`);
  const v = opts.maxBytes;
  if (v === undefined || v === null) return READ_MAX;
  if (typeof v !== "number" || !Number.isInteger(v) || v < 0 || v > READ_MAX)
    throw sandboxError("ERR_SANDBOX_INVALID_OPTION", `readFile() options.maxBytes must be an integer from 0 to ${READ_MAX}, ` +
      `got ${describe(v)}`);
  return v;
}

module.exports = { readMaxOption, READ_MAX, normalizeOptions, normalizeCallOptions, signalOption, isWellFormed, describe,
  DEFAULTS };
