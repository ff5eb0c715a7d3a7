"use strict";

// Workspace-relative paths from the caller. The C layer resolves them beneath
// the workspace descriptor and refuses symlinks anyway; this gives the clear
// SandboxError for what is wrong in the string itself.
const { SandboxError, sandboxError } = require("./errors");
const { isWellFormed, describe } = require("./options");

const PATH_MAX = 4095;
const NAME_MAX = 255;

/** Checks a workspace-relative path; returns it with '.', '' and '..'
 * parts folded. A '..' is folded lexically, as 0.1.1 did ("a/../b" is "b"
 * whatever "a" is: nothing is ever followed), and refused where it would
 * climb above the workspace. A leading '/' is refused rather than read as
 * workspace-relative: writeFile("/workspace/x") in 0.1.1 silently wrote
 * /workspace/workspace/x (A23 asks for a clear error). */
function checkRelPath(rel, { allowRoot = false, what = "path" } = {}) {
  if (typeof rel !== "string")
    throw sandboxError("ERR_SANDBOX_INVALID_PATH", `${what} must be a string, got ${describe(rel)}`);
  if (rel.includes("\0")) throw sandboxError("ERR_SANDBOX_INVALID_PATH", `${what} must not contain a NUL byte`);
  if (!isWellFormed(rel))
    throw sandboxError("ERR_SANDBOX_INVALID_PATH", `${what} ${describe(rel)} contains a lone UTF-16 surrogate`);
  if (rel.startsWith("/"))
    throw sandboxError("ERR_SANDBOX_INVALID_PATH", `${what} must be relative to the workspace, got ${describe(rel)}: drop ` +
      "the leading '/' (boxes see the workspace at /workspace)");
  const parts = rel.split("/");
  const kept = [];
  for (const p of parts) {
    if (p === "" || p === ".") continue;
    if (p !== "..") kept.push(p);
    else if (kept.pop() === undefined)
      throw sandboxError("ERR_SANDBOX_INVALID_PATH", `path escapes the workspace: ${describe(rel)} ('..' above its top)`);
  }
  if (kept.length === 0 && !allowRoot)
    throw sandboxError("ERR_SANDBOX_INVALID_PATH", `${what} must name a file in the workspace, got ${describe(rel)}`);
  const norm = kept.join("/");
  if (Buffer.byteLength(norm) > PATH_MAX)
    throw sandboxError("ERR_SANDBOX_INVALID_PATH", `${what} is longer than ${PATH_MAX} bytes`);
  for (const p of kept) {
    if (Buffer.byteLength(p) > NAME_MAX)
      throw sandboxError("ERR_SANDBOX_INVALID_PATH", `${what} has a component longer than ${NAME_MAX} bytes`);
  }
  // "x/", "x/." and "x/y/.." name the directory x, never a file x: folding
  // the last part away would write or read x itself.
  if (!allowRoot && (rel.endsWith("/") || [".", ".."].includes(parts[parts.length - 1])))
    throw sandboxError("ERR_SANDBOX_INVALID_PATH", `${what} names a directory (it ends in '/', '/.' or '/..'), not a file: ` +
      describe(rel));
  return norm;
}

module.exports = { checkRelPath };
