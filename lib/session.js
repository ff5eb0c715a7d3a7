"use strict";

// The resources of one open session: the workspace and its held descriptor,
// the held kern binary, the engine's watch of the workspace and the
// session's group of boxes. Sandbox.open() makes one and close() tears it
// down; every call keeps the one it started on, so a close() still running
// and a later open() of the same Sandbox never act on each other's
// descriptors.
const fs = require("fs");
const binding = require("./binding");
const { kernEnv } = require("./kern");
const { sandboxError } = require("./errors");

// Each session is one group of boxes, killed together at close(); a call with
// an AbortSignal gets a key of its own from the same numbers, which the
// engine's cancelGroup kills alone.
let nextGroup = 1;

// inotify instances still closing on a worker thread (see #teardown).
const watchCloses = new Set();
// Prewarmed boxes of closed sessions, killed and not yet ended.
const dyingParked = new Set();

/** What sessions leave ending after their promises settled (lib/census.js). */
function lingering() {
  return { watchCloses, dyingParked };
}

/** A fresh cancellation key for one call's box. */
function newCancelKey() {
  return nextGroup++;
}

/** rmdir(2) of dir; whether it went. */
function rmdirQuiet(dir) {
  try {
    fs.rmdirSync(dir);
    return true;
  } catch {
    return false;
  }
}

class Session {
  /** ws: the workspace's real path; ownWs: created by open(), removed at
   * close(); root, kernHandle: the engine's handles on the workspace and on
   * kern (binding.wsOpen, kernOpen; null once closed); watch: the engine's
   * watch. */
  constructor({ ws, ownWs, root, kernHandle, watch, tmpdir, initDir = null }) {
    this.ws = ws;
    this.ownWs = ownWs;
    this.root = root;
    this.kernHandle = kernHandle;
    this.watch = watch;
    this.tmpdir = tmpdir; // for the env-file fallback, fixed when the session opens
    this.initDir = initDir; // the in-box init's private directory (lib/init.js), or null
    this.pool = null; // its prewarmed boxes (lib/pool.js), with an init
    this.prewarmedRuns = 0; // calls that ran in one
    this.parked = new Set(); // the engine's promises for them, settled when each ends
    this.kernelBoxes = new Set(); // those of parked that are kernels' boxes
    this.group = nextGroup++;
    this.live = true; // calls may still start (the setup box included)
    this.ready = false; // setup is done: open() has resolved
    this.busy = 0; // operations using root: it outlives them
    this.inflight = new Set(); // their promises, which teardown waits for
    this.kernEnvs = new Map(); // kern's environment by enforceLimits
    this.closing = false; // the tree is gone: root closes once idle
    this.tornDown = null;
  }

  /** kern's environment, fixed for the session when first needed. */
  kernEnvFor(enforceLimits) {
    let env = this.kernEnvs.get(enforceLimits);
    if (env === undefined) {
      env = kernEnv({ enforceLimits, startedFd: binding.STARTED_FD });
      this.kernEnvs.set(enforceLimits, env);
    }
    return env;
  }

  /** Runs fn(root) with the workspace's handle held open for it (a closed
   * handle fails with EBADF). A call that
   * starts once teardown has begun is refused: the workspace is going. */
  async withRoot(fn, { teardown = false } = {}) {
    if (!this.live && !teardown)
      throw sandboxError("ERR_SANDBOX_CLOSED", "the Sandbox was closed before this call could run");
    this.busy++;
    const p = (async () => fn(this.root))();
    this.inflight.add(p);
    try {
      return await p;
    } finally {
      this.inflight.delete(p);
      this.busy--;
      this.#releaseRootIfIdle();
    }
  }

  /** Holds a prewarm box's promise until the box ends (claimed, dropped,
   * or killed with the session): teardown waits for those too. runsCode: a
   * kernel's box, whose cells run code outside any call's box (teardown
   * waits for it before the workspace goes, as for a call). */
  trackParked(p, { runsCode = false } = {}) {
    const held = p.catch(() => {}).finally(() => {
      this.parked.delete(held);
      this.kernelBoxes.delete(held);
      dyingParked.delete(held);
    });
    this.parked.add(held);
    if (runsCode) this.kernelBoxes.add(held);
  }

  /** Kills the session's boxes, waits for its calls, then removes the
   * workspace it created and closes its descriptors. Once; later calls get
   * the same promise. */
  teardown() {
    if (this.tornDown === null) this.tornDown = this.#teardown();
    return this.tornDown;
  }

  async #teardown() {
    this.live = false; // no new call from here on
    this.ready = false;
    // Boxes first (A24): nothing may still be writing in the workspace, or
    // swapping its directories for symlinks, while it is deleted.
    binding.cancelGroup(this.group); // prewarmed boxes too
    if (this.pool !== null) this.pool.close();
    // Prewarmed boxes die with the group, and close() waits until their
    // processes are gone, as for any box. Their runs hold nothing on the
    // event loop (an idle box must not keep a process alive), so the loop
    // is held until they have ended (lib/hold.js).
    for (const p of this.parked) dyingParked.add(p);
    binding.holdLoop();
    try {
      // The boxes that ran code first: the calls' and the kernels'. A
      // prewarmed box that no call took ran none (its interpreter or init
      // only waited), so the workspace goes while it dies (a booted
      // interpreter takes a while to unmap); close() still waits for both.
      await Promise.allSettled([...this.inflight, ...this.kernelBoxes]);
      const parkedGone = Promise.allSettled([...this.parked]);
      // The inotify instance and its watches go on a worker thread, and
      // close() does not wait for them: closing an inotify instance waits
      // out an SRCU grace period in the kernel, far longer than the rest of
      // close(). Nothing reads the
      // watch any more, and events the tree's removal raises meanwhile are
      // dropped with it.
      if (this.watch !== null) {
        const closing = binding.wsWatchClose(this.watch).catch(() => {});
        watchCloses.add(closing);
        closing.then(() => watchCloses.delete(closing));
      }
      this.watch = null;
      // An empty workspace (what most one-shot calls leave) goes in one
      // system call: rmdir never follows a link, and no box is left to
      // write in it. Anything else goes beneath the held descriptor, never
      // following a link a box planted, on a worker thread (a box can leave
      // millions of entries), then the directory itself.
      if (this.ownWs && this.root !== null && !rmdirQuiet(this.ws)) {
        await this.withRoot((root) => binding.wsRemoveTree(root), { teardown: true }).catch(() => {});
        rmdirQuiet(this.ws); // one that fails leaves the workspace in place
      }
      await parkedGone;
    } finally {
      binding.releaseLoop();
    }
    // Every box of the group has ended, and no later one can be submitted
    // (the engine is only asked while `live`): the engine may stop checking
    // this group.
    binding.forgetGroup(this.group);
    this.closeKern(); // every box holds its own copy of it
    this.initDir = null; // the process's, kept for its other sessions (lib/init.js)
    this.closing = true;
    this.#releaseRootIfIdle();
  }

  closeKern() {
    if (this.kernHandle !== null) binding.wsClose(this.kernHandle);
    this.kernHandle = null;
  }

  #releaseRootIfIdle() {
    if (this.closing && this.busy === 0 && this.root !== null) {
      // A workspace the session removed goes with its last descriptor, on a
      // thread of its own: freeing its blocks can wait on the disk (a
      // discard, -o discard) behind kern's teardown writes, and the JS
      // thread must not. A caller's own workspace stays: closing its
      // descriptor frees nothing.
      if (this.ownWs) binding.wsCloseLater(this.root);
      else binding.wsClose(this.root);
      this.root = null;
    }
  }
}

module.exports = { Session, newCancelKey, lingering };
