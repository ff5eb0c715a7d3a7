"use strict";

// Optional peer dependencies of the integrations (kern-sandbox/ai,
// /openai-agents, /mastra, /mcp, /langchain): each loads its framework here
// and nowhere else, only when a function that needs it is called, so
// `require("kern-sandbox")` loads no third-party module. A framework that is
// not installed becomes a SandboxError whose message is the command that
// fixes it.
const { sandboxError } = require("./errors");

/**
 * require(id), or ERR_SANDBOX_MISSING_PEER naming `npm install <install>`
 * when the module id itself (not something it requires) is missing. pkg:
 * the npm package that provides id (default: from id); what: the adapter
 * or subpath that needs it; install: the package(s) to name (default pkg).
 */
function requirePeer(id, { pkg = packageOf(id), what = "this adapter", install = pkg } = {}) {
  try {
    return require(id);
  } catch (e) {
    if (!isMissing(e, id)) throw e;
    const cmd = Array.isArray(install) ? install.join(" ") : install;
    throw sandboxError("ERR_SANDBOX_MISSING_PEER", `${what} needs ${pkg}, an optional peer ` +
      `dependency of kern-sandbox that is not installed: run \`npm install ${cmd}\``, { cause: e });
  }
}

/** The npm package a module id belongs to: "@scope/name" or "name". */
function packageOf(id) {
  const parts = id.split("/");
  return id.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0];
}

/** Whether e says that `id` itself could not be found, rather than a module
 * that the found package loads in turn: a framework installed but broken
 * must not read as "not installed". */
function isMissing(e, id) {
  if (!e || (e.code !== "MODULE_NOT_FOUND" && e.code !== "ERR_MODULE_NOT_FOUND")) return false;
  const firstLine = String(e.message).split("\n")[0];
  return firstLine.includes(`'${id}'`) || firstLine.includes(`"${id}"`);
}

module.exports = { requirePeer, packageOf };
