"use strict";

// Errors the package throws. Runtime sandbox events (timeout, a blocked
// syscall, an OOM kill) are never thrown: they are data on result.fault.
//
// Every SandboxError the package throws carries a stable `code`: one of
// CODES below (Node's ERR_* style), or, for a host system call that failed
// (workspace I/O, snapshot, restore, opening kern or a workspace), the
// system error's own code ("ENOENT", "EACCES", "EFBIG", ...) together with
// its errno, syscall and path, as 0.1.1 threw a SandboxError for these.
// types/index.d.ts (SandboxErrorCode) and the README list the same codes;
// test/15.error-codes.test.js checks that they agree and that each throw
// site names one.

/** The package's own codes, each with what it means. */
const CODES = Object.freeze({
  ERR_SANDBOX_INVALID_OPTION: "an option (of a Sandbox, a call, a kernel, readFile) has a bad type or value",
  ERR_SANDBOX_INVALID_ARG: "an argument is not what the method takes (code not a string, an argv " +
    "that is no array of strings, a NUL byte, a bad count)",
  ERR_SANDBOX_INVALID_PATH: "a workspace path is refused: absolute, leaving the workspace, too long, a directory",
  ERR_SANDBOX_INVALID_WORKSPACE: "the workspace directory cannot be used as one",
  ERR_SANDBOX_MOUNT_REFUSED: "a mount (or a workspace) was judged unsafe (MountRefused)",
  ERR_SANDBOX_KERN_NOT_FOUND: "no usable kern binary: not on PATH, or KERN_BIN is not an executable file",
  ERR_SANDBOX_NOT_OPEN: "the Sandbox was never opened",
  ERR_SANDBOX_CLOSED: "the Sandbox is closed (or was closed while the call waited)",
  ERR_SANDBOX_SETUP_FAILED: "the Sandbox's setup command failed",
  ERR_SANDBOX_KERNEL_CLOSED: "the kernel is closed",
  ERR_SANDBOX_KERNEL_DEAD: "the kernel could not start, or died (restart() gives a fresh one)",
  ERR_SANDBOX_NO_CHECKPOINT: "rollback(n) asks for more states than the kernel holds",
  ERR_SANDBOX_NOT_SUPPORTED: "not available here: snapshot without its opt-in, rollback on a shared " +
    "kernel, kernel() without the in-box init",
  ERR_SANDBOX_SNAPSHOT_REFUSED: "a snapshot or an archive to restore was refused (when no system code says why)",
  ERR_SANDBOX_PORT_UNAVAILABLE: "a published port could not be had: its host port was taken three times over (spawn with ports)",
  ERR_SANDBOX_PORT_NOT_READY: "no listener answered through a published port in time, or the process exited first (waitForPort)",
  ERR_SANDBOX_MISSING_PEER: "an integration's framework (an optional peer dependency) is not installed: the " +
    "message names the npm install command",
  ERR_SANDBOX_POLICY_REFUSED: "a cluster call asks for what the workers' policy forbids (refused, never clamped)",
  ERR_SANDBOX_HOST_LOST: "the cluster worker running the call (or the session's worker) died or shut down, " +
    "or Redis stayed unreachable",
  ERR_SANDBOX_JOB_LOST: "the call's job vanished from Redis (a restart without persistence)",
  ERR_SANDBOX_QUEUE_FULL: "the cluster's queue already holds maxQueued calls",
  ERR_SANDBOX_QUEUE_TIMEOUT: "the call waited in the cluster's queue longer than its queueTimeoutS",
});

/** A programmer or configuration error: a bad argument, a refused mount, no kern. */
class SandboxError extends Error {
  constructor(message, options) {
    super(message, options);
    this.name = "SandboxError";
  }
}

/** A host mount that was refused as unsafe. */
class MountRefused extends SandboxError {
  constructor(message, options) {
    super(message, options);
    this.name = "MountRefused";
    this.code = "ERR_SANDBOX_MOUNT_REFUSED";
  }
}

/** A SandboxError with one of CODES. */
function sandboxError(code, message, options) {
  if (!Object.prototype.hasOwnProperty.call(CODES, code))
    throw new TypeError(`kern-sandbox: internal: unknown error code ${code}`);
  const err = new SandboxError(message, options);
  err.code = code;
  return err;
}

// Control characters and ESC from kern's or the box's output must not reach a
// terminal that prints our error messages (A43).
function escapeControl(text) {
  return String(text).replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, (c) =>
    `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`);
}

/** Copies a system error's fields (code, errno, syscall, path and the
 * extra names given) onto err; a cause without a code gives `fallback`. */
function withSystemFields(err, cause, fallback, extra = []) {
  for (const key of ["code", "errno", "syscall", "path", ...extra]) {
    if (cause[key] !== undefined) err[key] = cause[key];
  }
  if (typeof err.code !== "string") err.code = fallback;
  return err;
}

// A SandboxError that also carries the Node system-error fields of its cause,
// so callers can branch on `code` as they would for an fs error.
function sandboxErrorFromSystem(message, cause, fallback = "ERR_SANDBOX_INVALID_WORKSPACE") {
  return withSystemFields(new SandboxError(`${message}: ${cause.message}`, { cause }), cause, fallback);
}

module.exports = { SandboxError, MountRefused, CODES, sandboxError, escapeControl,
  sandboxErrorFromSystem, withSystemFields };
