"use strict";

// Errors the package throws. Runtime sandbox events (timeout, a blocked
// syscall, an OOM kill) are never thrown: they are data on result.fault.

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
  }
}

// Control characters and ESC from kern's or the box's output must not reach a
// terminal that prints our error messages (A43).
function escapeControl(text) {
  return String(text).replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, (c) =>
    `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`);
}

// A SandboxError that also carries the Node system-error fields of its cause,
// so callers can branch on `code` as they would for an fs error.
function sandboxErrorFromSystem(message, cause) {
  const err = new SandboxError(`${message}: ${cause.message}`, { cause });
  for (const key of ["code", "errno", "syscall", "path"]) {
    if (cause[key] !== undefined) err[key] = cause[key];
  }
  return err;
}

module.exports = { SandboxError, MountRefused, escapeControl, sandboxErrorFromSystem };
