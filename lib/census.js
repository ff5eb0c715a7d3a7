"use strict";

// For the project's tests and bench only (no production module requires
// this file): waits until the work the package leaves running after a
// promise settled is done, so that a census of descriptors, children and
// boxes counts leaks and not work still ending.
const binding = require("./binding");
const bootcache = require("./bootcache");
const { lingering } = require("./session");

// The counts below are natives of the Test, Debug and Tsan builds only
// (csrc/napi/testing.c): the release build has none.
if (typeof binding.tailBoxes !== "function")
  throw new Error(`lib/census.js needs a build with the test natives (KERN_SANDBOX_BUILD=Test), ` +
    `not the ${binding.flavour} build`);

/** Settles once every session's inotify instance and removed workspace's
 * descriptor is closed, no compile of the boot's bytecode runs, and no kern
 * still tears down a box whose call settled (close() waits for none). */
async function watchClosesSettled() {
  const { watchCloses, dyingParked } = lingering();
  while (watchCloses.size > 0) await Promise.allSettled([...watchCloses]);
  // The closer threads of removed workspaces (binding.wsCloseLater).
  while (binding.pendingCloses() > 0) await new Promise((r) => setTimeout(r, 2));
  // A compile of the boot's bytecode under way (its own session), first:
  // its box leaves a tail of its own.
  await bootcache.compilesSettled();
  // And kerns still tearing down boxes whose calls settled at the init's
  // report (they hold descriptors and are children until they exit).
  // Polled on a timer: these ends hold no reference on the loop.
  while (binding.tailBoxes() > 0 || dyingParked.size > 0) await new Promise((r) => setTimeout(r, 2));
}

module.exports = { watchClosesSettled };
