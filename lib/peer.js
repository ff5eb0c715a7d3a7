"use strict";

// The integrations (kern-sandbox/mcp, kern-sandbox/langchain, ...) load their
// framework here and nowhere else, only when the subpath is required:
// `require("kern-sandbox")` loads no third-party module, and the frameworks
// are optional peer dependencies the user installs beside the package.
const { sandboxError } = require("./errors");

/** True when err says that `request` itself (not a module it loads in turn)
 * could not be found: a framework installed but broken must not read as
 * "not installed". */
function isMissing(err, request) {
  if (!err || (err.code !== "MODULE_NOT_FOUND" && err.code !== "ERR_MODULE_NOT_FOUND")) return false;
  const firstLine = String(err.message).split("\n")[0];
  return firstLine.includes(`'${request}'`) || firstLine.includes(`"${request}"`);
}

/**
 * require(request) of an optional peer dependency, or a SandboxError with
 * code ERR_SANDBOX_MISSING_PEER whose message names the install command.
 * pkg: the npm package that provides request; what: the subpath that needs
 * it ("kern-sandbox/mcp"); install: the packages to name (default pkg).
 */
function requirePeer(request, { pkg, what, install = [pkg] }) {
  try {
    return require(request);
  } catch (e) {
    if (!isMissing(e, request)) throw e;
    throw sandboxError("ERR_SANDBOX_MISSING_PEER", `${what} needs ${pkg}, an optional peer dependency of ` +
      `kern-sandbox that is not installed: run \`npm install ${install.join(" ")}\``, { cause: e });
  }
}

module.exports = { requirePeer };
