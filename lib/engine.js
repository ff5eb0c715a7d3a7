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
 * { earlyCap, resultMax, run }, or null: 0.1.1's argv), stdin and onStdin
 * (the call's stdin feed, lib/stdin.js, or null), onStarted, flow and
 * handStdout, stdinFd and ttyFd (a process's, lib/process.js, or null,
 * false, false, null and null). One
 * object literal
 * of one shape for every box: a claim's path has no time to spare.
 */
function boxOptions(st, s) {
  const boxed = s.argv.length > 0;
  return { kern: s.kern, kernHandle: st.kernHandle, argv: s.argv,
    env: boxed ? st.kernEnvFor(s.enforceLimits) : NO_ENV, envData: boxed ? s.envFile : null,
    tmpdir: st.tmpdir, stopArgv: s.stopArgv, timeoutMs: s.timeoutMs, maxOutputBytes: s.maxOutputBytes,
    onStdout: s.onStdout ?? null, onStderr: s.onStderr ?? null, watch: s.watch ?? null,
    group: st.group, cancelKey: s.cancelKey ?? 0, init: s.init ?? null,
    stdin: s.stdin ?? null, onStdin: s.onStdin ?? null, onStarted: s.onStarted ?? null, flow: s.flow ?? false, handStdout: s.handStdout ?? false, stdinFd: s.stdinFd ?? null, ttyFd: s.ttyFd ?? null, parkKey: 0, shareChannel: false, claimOnly: false, spec: null,
    begun: null, kernelKey: 0, claim: null };
}

/** A cold box: the promise of its raw result. */
function startBox(st, spec) {
  return binding.startBox(boxOptions(st, spec));
}

/** A prewarm box, parked under parkKey (shareChannel: this thread keeps a
 * copy of its channel, for claimSend): { parked, channel, done }
 * (binding.parkBox). */
function parkBox(st, spec, { parkKey, shareChannel }) {
  const o = boxOptions(st, spec);
  o.parkKey = parkKey;
  o.shareChannel = shareChannel;
  return binding.parkBox(o);
}

/** A call in the parked box of handle parked (or cold if it is gone), with
 * the claim's own terms: claimOnly, spec (what of the SPEC frame the caller
 * could not send), begun (the watch call it began; lib/sandbox.js sendSpec). */
function claimBox(st, parked, spec, { claimOnly, spec: frame, begun }) {
  const o = boxOptions(st, spec);
  o.claimOnly = claimOnly;
  o.spec = frame;
  o.begun = begun;
  return binding.claimBox(parked, o);
}

/** A kernel's box under kernelKey, in the parked box claim if given (and
 * still there), else cold. */
function startKernel(st, spec, { kernelKey, claim }) {
  const o = boxOptions(st, spec);
  o.kernelKey = kernelKey;
  o.claim = claim;
  return binding.startKernel(o);
}

module.exports = { startBox, parkBox, claimBox, startKernel };
