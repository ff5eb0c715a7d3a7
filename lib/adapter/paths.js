"use strict";

// Paths as the frameworks give them, mapped onto the workspace. A relative
// path resolves against the workspace (the directory every box starts in),
// `/workspace` and `/workspace/...` are the workspace as boxes see it, and
// any other absolute path is refused: the host side of the adapters reaches
// only the workspace, through the same contained calls as sbx.readFile and
// sbx.writeFile (README, "Framework adapters", "Paths").
const { checkRelPath } = require("../paths");
const { sandboxError } = require("../errors");
const { describe } = require("../options");

const BOX_WORKSPACE = "/workspace";

/** The workspace-relative form of p ("" for the workspace itself), folded
 * as checkRelPath folds it. `file` refuses a path that names a directory
 * by its spelling ("x/", "/workspace"). */
function workspacePath(p, { file = false, what = "path" } = {}) {
  if (typeof p !== "string")
    throw sandboxError("ERR_SANDBOX_INVALID_PATH", `${what} must be a string, got ${describe(p)}`);
  let rel = p;
  if (p === BOX_WORKSPACE || p === `${BOX_WORKSPACE}/`) rel = "";
  else if (p.startsWith(`${BOX_WORKSPACE}/`)) rel = p.slice(BOX_WORKSPACE.length + 1);
  else if (p.startsWith("/"))
    throw sandboxError("ERR_SANDBOX_INVALID_PATH", `${what} ${describe(p)} is outside the workspace: kern-sandbox ` +
      `serves files only under ${BOX_WORKSPACE} (give a relative path, or one under ${BOX_WORKSPACE}/)`);
  return checkRelPath(rel, { allowRoot: !file, what });
}

/** The path a box sees for a workspace-relative one. */
function boxPath(rel) {
  return rel === "" ? BOX_WORKSPACE : `${BOX_WORKSPACE}/${rel}`;
}

/** How a command in a box names a workspace path: relative to the box's
 * working directory, which is the workspace ("./x", "." for the top). A
 * box path spelled /workspace/... would do as well in a real box; relative
 * is what also holds in the test double, whose prewarmed boxes see the
 * workspace at its host path. */
function inBoxPath(rel) {
  return rel === "" ? "." : `./${rel}`;
}

/** A command's working directory: null for the workspace itself, a
 * relative path (as inBoxPath) inside it, or an absolute path of the box's
 * own (a command runs inside its box, which sees nothing of the host but
 * the workspace). */
function commandDir(dir) {
  if (dir === undefined || dir === null || dir === "") return null;
  if (typeof dir !== "string" || dir.includes("\0"))
    throw sandboxError("ERR_SANDBOX_INVALID_PATH", `workingDirectory must be a string without NUL, got ${describe(dir)}`);
  if (dir.startsWith("/") && dir !== BOX_WORKSPACE && !dir.startsWith(`${BOX_WORKSPACE}/`)) return dir;
  const rel = workspacePath(dir, { what: "workingDirectory" });
  return rel === "" ? null : inBoxPath(rel);
}

module.exports = { BOX_WORKSPACE, workspacePath, boxPath, inBoxPath, commandDir };
