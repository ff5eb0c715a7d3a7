"use strict";

// Loads the native engine. KERN_SANDBOX_BUILD=Debug selects the debug build
// (used by the sanitizer runs); otherwise the release build.
const path = require("path");

const flavour = process.env.KERN_SANDBOX_BUILD === "Debug" ? "Debug" : "Release";
const file = path.join(__dirname, "..", "build", flavour, "kern_sandbox.node");

let binding;
try {
  binding = require(file);
} catch (e) {
  const err = new Error(
    `kern-sandbox: the native addon could not be loaded from ${file} (${e.message}). ` +
      "Run `npm install` (or `npm run build`) in the package directory to build it.");
  err.cause = e;
  throw err;
}

// Test switches, read here under Node's environment lock (the addon never
// calls getenv): KERN_SANDBOX_FORCE_FALLBACK takes the fallback paths a
// modern kernel does not need, KERN_SANDBOX_TRACKER=0 turns off the inotify
// change tracker (README, "How this differs").
binding.configure(process.env.KERN_SANDBOX_FORCE_FALLBACK ?? "",
  process.env.KERN_SANDBOX_TRACKER ?? "");

// process.exit() and an uncaught exception end the process without the
// environment teardown that kills boxes and removes the workspaces sessions
// created (C9): do it here, synchronously, as the process goes.
process.once("exit", () => binding.shutdown());

module.exports = binding;
