"use strict";

// Optional peer dependencies of the framework adapters (kern-sandbox/ai,
// /openai-agents, /mastra, ...). `require("kern-sandbox")` never loads them:
// an adapter asks for its framework only when a function that needs it is
// called, and a framework that is not installed becomes a SandboxError whose
// message is the command that fixes it.
const { sandboxError } = require("./errors");

/** require(id), or ERR_SANDBOX_MISSING_PEER naming `npm install <install>`
 * when the module id itself (not something it requires) is missing. `what`
 * says which adapter call needed it. */
function requirePeer(id, { install = packageOf(id), what = "this adapter" } = {}) {
  try {
    return require(id);
  } catch (e) {
    if (!isMissing(e, id)) throw e;
    throw sandboxError("ERR_SANDBOX_MISSING_PEER", `${what} needs ${JSON.stringify(packageOf(id))}, ` +
      `an optional peer dependency of kern-sandbox that is not installed: run \`npm install ${install}\``,
    { cause: e });
  }
}

/** The npm package a module id belongs to: "@scope/name" or "name". */
function packageOf(id) {
  const parts = id.split("/");
  return id.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0];
}

/** Whether e says that `id` itself cannot be found ("Cannot find module
 * 'id'"), rather than a module that the found package requires in turn. */
function isMissing(e, id) {
  return Boolean(e) && e.code === "MODULE_NOT_FOUND" &&
    String(e.message).split("\n")[0] === `Cannot find module '${id}'`;
}

module.exports = { requirePeer, packageOf };
