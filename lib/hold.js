"use strict";

// Waiting for a box whose run holds nothing on the event loop.
//
// The rule (csrc/napi/call.c, ks_napi_loop_hold): the package may leave the
// event loop free only while no promise it returned waits on something that
// holds nothing. A prewarmed box and a kernel's box hold nothing while they
// idle, so that a program that forgets a Sandbox still exits; once JS kills
// one and waits for its end (Kernel.close(), restart(), a session's
// teardown), the loop must be held until that end arrives, or Node may exit
// with the caller's promise pending.
const binding = require("./binding");

/** Awaits p with the event loop held; returns what p does. */
async function awaitHeld(p) {
  binding.holdLoop();
  try {
    return await p;
  } finally {
    binding.releaseLoop();
  }
}

module.exports = { awaitHeld };
