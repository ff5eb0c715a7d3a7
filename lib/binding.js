"use strict";

// Loads the native engine. KERN_SANDBOX_BUILD selects a build of the
// project's own tests: Test (the release build plus the natives the tests'
// census reads, csrc/napi/testing.c; what npm test loads), Debug (ASan +
// UBSan, npm run test:asan) or Tsan (ThreadSanitizer, npm run test:tsan);
// otherwise the release build, which has no test natives.
const fs = require("fs");
const path = require("path");
const benchoff = require("./benchoff");

/** Whether the ThreadSanitizer runtime is in this process (preloaded). */
function haveTsanRuntime() {
  try {
    return /\/(libtsan|libclang_rt\.tsan[^/]*)\.so/.test(fs.readFileSync("/proc/self/maps", "utf8"));
  } catch {
    return false;
  }
}

function pickFlavour(wanted) {
  if (wanted === "Debug" || wanted === "Test") return wanted;
  // The Tsan build only works where the runtime was preloaded (the test
  // run's own process and its Workers); a Node child of that run has it not
  // (test/00.setup.js) and takes the Test build (scripts/test-tsan.sh builds
  // it too).
  if (wanted === "Tsan") return haveTsanRuntime() ? "Tsan" : "Test";
  return "Release";
}

const flavour = pickFlavour(process.env.KERN_SANDBOX_BUILD);
const file = path.join(__dirname, "..", "build", flavour, "kern_sandbox.node");

let binding;
try {
  binding = require(file);
} catch (e) {
  const err = new Error(
    `kern-sandbox: the native addon could not be loaded from ${file} (${e.message}). ` +
      (flavour === "Release"
        ? "Run `npm install` (or `npm run build`) in the package directory to build it."
        : `Build it with \`node scripts/build-addon.js --${flavour.toLowerCase()}\` ` +
          "(npm test builds the Test build first)."));
  err.cause = e;
  throw err;
}
// Which build this is, for the sanitizer runs to check (test/00.setup.js).
Object.defineProperty(binding, "flavour", { value: flavour });

/** A run's raw outcome (types/binding.d.ts, RawRunResult) from its fields
 * in the order of the addon's table (csrc/napi/raw-result.h, exported as
 * RAW_RESULT_FIELDS): one call from C into an object literal of a fixed
 * shape, made once from the names. */
// eslint-disable-next-line no-new-func
const makeRawResult = new Function(...binding.RAW_RESULT_FIELDS,
  `return { ${binding.RAW_RESULT_FIELDS.join(", ")} };`);
// The same for a kernel message's outcome (RawCellResult, csrc/napi/cell-result.h).
// eslint-disable-next-line no-new-func
const makeCellResult = new Function(...binding.CELL_RESULT_FIELDS,
  `return { ${binding.CELL_RESULT_FIELDS.join(", ")} };`);

// Test switches, read here under Node's environment lock (the addon never
// calls getenv): KERN_SANDBOX_FORCE_FALLBACK takes the fallback paths a
// modern kernel does not need, KERN_SANDBOX_TRACKER=0 turns off the inotify
// change tracker (README, "How this differs"). The bench switches the
// engine checks (lib/benchoff.js) go with them.
binding.configure(process.env.KERN_SANDBOX_FORCE_FALLBACK ?? "",
  process.env.KERN_SANDBOX_TRACKER ?? "", makeRawResult, benchoff.engineOff(), makeCellResult);

// process.exit() and an uncaught exception end the process without the
// environment teardown that kills boxes and removes the workspaces sessions
// created (C9): do it here, synchronously, as the process goes.
process.once("exit", () => binding.shutdown());

module.exports = binding;
