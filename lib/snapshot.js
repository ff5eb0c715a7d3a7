"use strict";

// snapshot()/restore(): synchronous, as the 0.1.1 API documents, and opt-in
// through KERN_SANDBOX_SNAPSHOT=1 exactly as there. The archive work is C.
const binding = require("./binding");
const { SandboxError, sandboxErrorFromSystem } = require("./errors");

function requireOptIn() {
  if (process.env.KERN_SANDBOX_SNAPSHOT !== "1")
    throw new SandboxError(
      "snapshot/restore is opt-in while its archive code is new: set KERN_SANDBOX_SNAPSHOT=1 " +
        "in the environment to enable it");
}

function checkHostPath(p, what) {
  if (typeof p !== "string" || p === "" || p.includes("\0"))
    throw new SandboxError(`${what} must be a host path string, got ${JSON.stringify(p)}`);
}

function snapshot(rootfd, ws, dest) {
  checkHostPath(dest, "snapshot dest");
  if (typeof binding.wsSnapshot !== "function")
    throw new SandboxError("snapshot is not available in this build");
  try {
    binding.wsSnapshot(rootfd, dest);
  } catch (e) {
    if (e instanceof SandboxError) throw e;
    throw sandboxErrorFromSystem(`snapshot to ${JSON.stringify(dest)} failed`, e);
  }
}

function restore(rootfd, src) {
  checkHostPath(src, "restore src");
  if (typeof binding.wsRestore !== "function")
    throw new SandboxError("restore is not available in this build");
  try {
    binding.wsRestore(rootfd, src);
  } catch (e) {
    if (e instanceof SandboxError) throw e;
    throw sandboxErrorFromSystem(`restore from ${JSON.stringify(src)} failed`, e);
  }
}

module.exports = { requireOptIn, snapshot, restore };
