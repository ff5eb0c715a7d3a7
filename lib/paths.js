"use strict";

// Workspace-relative paths from the caller. The C layer resolves them beneath
// the workspace descriptor and refuses symlinks anyway; this gives the clear
// SandboxError for what is wrong in the string itself.
const { SandboxError } = require("./errors");
const { isWellFormed, describe } = require("./options");

const PATH_MAX = 4095;
const NAME_MAX = 255;

/** Checks a workspace-relative path; returns it with '.' and '' parts folded. */
function checkRelPath(rel, { allowRoot = false, what = "path" } = {}) {
  if (typeof rel !== "string")
    throw new SandboxError(`${what} must be a string, got ${describe(rel)}`);
  if (rel.includes("\0")) throw new SandboxError(`${what} must not contain a NUL byte`);
  if (!isWellFormed(rel))
    throw new SandboxError(`${what} ${describe(rel)} contains a lone UTF-16 surrogate`);
  if (rel.startsWith("/"))
    throw new SandboxError(`${what} must be relative to the workspace, got ${describe(rel)}`);
  const parts = rel.split("/");
  if (parts.includes(".."))
    throw new SandboxError(`path escapes the workspace: ${describe(rel)} (no '..' allowed)`);
  const kept = parts.filter((p) => p !== "" && p !== ".");
  if (kept.length === 0 && !allowRoot)
    throw new SandboxError(`${what} must name a file in the workspace, got ${describe(rel)}`);
  const norm = kept.join("/");
  if (Buffer.byteLength(norm) > PATH_MAX)
    throw new SandboxError(`${what} is longer than ${PATH_MAX} bytes`);
  for (const p of kept) {
    if (Buffer.byteLength(p) > NAME_MAX)
      throw new SandboxError(`${what} has a component longer than ${NAME_MAX} bytes`);
  }
  // "x/" and "x/." name the directory x, never a file x: folding the "."
  // away would write or read x itself.
  if (!allowRoot && (rel.endsWith("/") || parts[parts.length - 1] === "."))
    throw new SandboxError(`${what} names a directory (trailing '/' or '/.'), not a file: ${describe(rel)}`);
  return norm;
}

module.exports = { checkRelPath };
