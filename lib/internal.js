"use strict";

// Switches for the project's own tests and bench, never documented for
// users: symbols, so no options object from JSON can carry one.

// The engine a Sandbox uses: "init" (every box runs the in-box init,
// lib/init.js; the default) or "direct" (the workload is the
// box's command, exactly 0.1.1's argv): the
// equality table (test/41) compares the two.
const ENGINE = Symbol("kern-sandbox.engine");

// sbx[POOL_STATS]() -> { prewarmedRuns, ready, workspace } for the open
// session, or null: how many calls ran in a prewarmed box, how many wait,
// and the workspace's host path (its boxes name it in kern's argv).
const POOL_STATS = Symbol("kern-sandbox.poolStats");

// new Sandbox({ [POOL_IDLE_MS]: ms }): the pool's idle limit (lib/pool.js),
// shortened by the tests that watch it empty.
const POOL_IDLE_MS = Symbol("kern-sandbox.poolIdleMs");

// new Sandbox({ [KERNEL_START_MIN_MS]: ms }): the least time a kernel's start
// is given (lib/kernel.js; 30 s), shortened by the tests of a start that
// never comes.
const KERNEL_START_MIN_MS = Symbol("kern-sandbox.kernelStartMinMs");

module.exports = { ENGINE, POOL_STATS, POOL_IDLE_MS, KERNEL_START_MIN_MS };
