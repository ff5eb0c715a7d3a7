"use strict";

// A session's boxes, by name: the native engine's four box entry points
// (csrc/napi/run.c), each taking one options object (csrc/napi/request.c):
// startBox (a cold box), parkBox (a prewarm box), claimBox (a call in a
// parked box) and startKernel (a kernel's box). Sandbox and Kernel start
// every box through these. Each promise settles with the box's raw result
// (types/binding.d.ts, RawRunResult) when it ends; a parked or kernel box's
// holds nothing on the event loop (lib/hold.js).
const binding = require("./binding");

const NO_ENV = Object.freeze([]);

/**
 * The options of a box of session st (lib/session.js) from spec: kern (its
 * path), argv ([] for a claim that brings no box of its own), enforceLimits
 * (kern's environment; unused with argv []), envFile (the workload's env
 * file, or null), stopArgv (`kern stop NAME`, or null), timeoutMs,
 * maxOutputBytes, onStdout/onStderr (or null), watch (the session's change
 * tracking, or null), cancelKey (0: none), init (the in-box init's terms,
 * { earlyCap, resultMax, run }, or null: 0.1.1's argv); and what the entry
 * point adds (parkKey, shareChannel; claimOnly, spec, begun; kernelKey,
 * claim), passed as they are.
 */
function boxOptions(st, { argv, enforceLimits, envFile, ...rest }) {
  const boxed = argv.length > 0;
  return { ...rest, argv, kernHandle: st.kernHandle, env: boxed ? st.kernEnvFor(enforceLimits) : NO_ENV,
    envData: boxed ? envFile : null, tmpdir: st.tmpdir, group: st.group };
}

/** A cold box: the promise of its raw result. */
function startBox(st, spec) {
  return binding.startBox(boxOptions(st, spec));
}

/** A prewarm box, parked under spec.parkKey: { parked, channel, done }
 * (binding.parkBox). */
function parkBox(st, spec) {
  return binding.parkBox(boxOptions(st, spec));
}

/** A call in the parked box of handle parked (or cold if it is gone). */
function claimBox(st, parked, spec) {
  return binding.claimBox(parked, boxOptions(st, spec));
}

/** A kernel's box (spec.kernelKey), in the parked box spec.claim if given. */
function startKernel(st, spec) {
  return binding.startKernel(boxOptions(st, spec));
}

module.exports = { startBox, parkBox, claimBox, startKernel };
