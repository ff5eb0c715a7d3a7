"use strict";

// One box of a session, by name: the native engine's run() (csrc/napi/run.c)
// takes its fifteen values by position; Sandbox and Kernel start every box
// through startBox, which names them. The promise settles with the box's raw
// result (types/binding.d.ts, RawRunResult) when it ends; a parked or kernel
// box's run holds nothing on the event loop (lib/hold.js).
const binding = require("./binding");

const NO_ENV = Object.freeze([]);

/**
 * Starts a box of session st (lib/session.js) and returns the engine's
 * promise. spec: kern (its path), argv ([] for a claim that brings no box
 * of its own), enforceLimits (kern's environment; unused with argv []),
 * envFile (the workload's env file, or null), stopArgv (`kern stop NAME`,
 * or null), timeoutMs, maxOutputBytes, onStdout/onStderr (or null), watch
 * (the session's change tracking, or null), cancelKey (0: none), terms (the
 * in-box init's terms, or null: 0.1.1's argv).
 */
function startBox(st, { kern, argv, enforceLimits, envFile, stopArgv, timeoutMs, maxOutputBytes,
  onStdout = null, onStderr = null, watch = null, cancelKey = 0, terms = null }) {
  const env = argv.length > 0 ? st.kernEnvFor(enforceLimits) : NO_ENV;
  return binding.run(kern, argv, env, argv.length > 0 ? envFile : null, st.tmpdir, stopArgv,
    timeoutMs, maxOutputBytes, onStdout, onStderr, watch, st.group, st.kernFd, cancelKey, terms);
}

module.exports = { startBox };
