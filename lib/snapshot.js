"use strict";

// snapshot()/restore(): synchronous, as the 0.1.1 API documents, and opt-in
// through KERN_SANDBOX_SNAPSHOT=1 exactly as there. The archive work is C.
const fs = require("fs");
const path = require("path");
const binding = require("./binding");
const { SandboxError, sandboxError, sandboxErrorFromSystem, withSystemFields } = require("./errors");
const { within } = require("./mounts");

function requireOptIn() {
  if (process.env.KERN_SANDBOX_SNAPSHOT !== "1")
    throw sandboxError("ERR_SANDBOX_NOT_SUPPORTED", 
      "snapshot/restore is opt-in while its archive code is new: set KERN_SANDBOX_SNAPSHOT=1 " +
        "in the environment to enable it");
}

function checkHostPath(p, what) {
  if (typeof p !== "string" || p === "" || p.includes("\0"))
    throw sandboxError("ERR_SANDBOX_INVALID_ARG", `${what} must be a host path string, got ${JSON.stringify(p)}`);
}

function snapshot(root, ws, dest) {
  checkHostPath(dest, "snapshot dest");
  const abs = path.resolve(dest);
  let dir;
  try {
    dir = fs.realpathSync(path.dirname(abs));
  } catch (e) {
    throw sandboxErrorFromSystem(`snapshot dest directory ${JSON.stringify(path.dirname(abs))}`, e,
      "ERR_SANDBOX_SNAPSHOT_REFUSED");
  }
  // An archive inside the workspace would be readable and replaceable by
  // boxes, and would archive itself (A14).
  if (within(dir, ws))
    throw sandboxError("ERR_SANDBOX_INVALID_ARG", `snapshot dest ${JSON.stringify(dest)} lies inside the workspace; ` +
      "write it outside");
  try {
    binding.wsSnapshot(root, dir, path.basename(abs));
  } catch (e) {
    if (e.syscall === "snapshot" && ["ENAMETOOLONG", "EINVAL", "EFBIG"].includes(e.code)) {
      const why = e.code === "ENAMETOOLONG"
        ? "its path is longer than a USTAR archive can hold (255 bytes)"
        : e.code === "EFBIG"
          ? "with it the archive would hold more than restore accepts (1 GiB of uncompressed tar, " +
            "or 200,000 files)"
          : "its name contains '\\' or starts with a drive prefix like 'C:', which restore refuses";
      const fix = e.code === "EFBIG" ? "remove it or other files" : "rename or remove it";
      throw withSystemFields(new SandboxError(
        `snapshot refused, nothing written: workspace file ${JSON.stringify(e.path)}: ${why}; ${fix}`,
        { cause: e }), e, "ERR_SANDBOX_SNAPSHOT_REFUSED");
    }
    if (e instanceof SandboxError) throw e;
    throw sandboxErrorFromSystem(`snapshot to ${JSON.stringify(dest)} failed`, e, "ERR_SANDBOX_SNAPSHOT_REFUSED");
  }
}

function restore(root, src) {
  checkHostPath(src, "restore src");
  if (typeof binding.wsRestore !== "function")
    throw sandboxError("ERR_SANDBOX_NOT_SUPPORTED", "restore is not available in this build");
  try {
    binding.wsRestore(root, src);
  } catch (e) {
    if (e.reason) {
      const member = e.member ? ` (member ${JSON.stringify(e.member)})` : "";
      // A sound archive that could not be moved into place (a full disk, a
      // box racing the restore) says so; the reason says what was undone.
      const what = e.committing
        ? `restore from ${JSON.stringify(src)} failed (${e.code}): ${e.reason}${member}`
        : `unsafe or malformed snapshot, nothing restored: ${e.reason}${member}`;
      throw withSystemFields(new SandboxError(what, { cause: e }), e, "ERR_SANDBOX_SNAPSHOT_REFUSED",
        ["member"]);
    }
    throw sandboxErrorFromSystem(`restore from ${JSON.stringify(src)} failed`, e, "ERR_SANDBOX_SNAPSHOT_REFUSED");
  }
}

module.exports = { requireOptIn, snapshot, restore };
