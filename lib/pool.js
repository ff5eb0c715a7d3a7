"use strict";

// A session's prewarmed boxes: started ahead with the session's options and
// parked in the engine (their init waiting for its argv, or a Python already
// booted and waiting for its code). Each serves one call and is never used
// again; the pool refills after each call, with the kind of box the session
// used last (Python before any call). The pool is only bookkeeping: the
// engine owns the boxes, kills them with the session, and a claim whose box
// has gone starts cold.
const binding = require("./binding");

const IDLE_MS = 120 * 1000; // past this without a call, the pool holds nothing

class Pool {
  /** start(kind): submits one prewarm box with the options the public
   * fields say now, returning { parkKey, parked, key, kind, backstopAt }
   * (parked: the engine's handle on the box, binding.parkBox) or null. */
  constructor(start, idleMs = IDLE_MS) {
    this.start = start;
    this.idleMs = idleMs;
    this.ready = []; // boxes started and not yet claimed
    this.kind = "python";
    this.timer = null;
    this.closed = false;
    this.claimed = 0; // calls that ran in a prewarmed box (for tests and the bench)
  }

  /** The ready box for a call with these effective options, taken out of
   * the pool, or null (the call starts cold). A box is only ever taken once. */
  take(kind, key, minRemainingMs) {
    const now = Date.now();
    const i = this.ready.findIndex((b) => b.kind === kind && b.key === key &&
      b.backstopAt - now >= minRemainingMs);
    if (i < 0) return null;
    const [box] = this.ready.splice(i, 1);
    this.claimed++;
    return box;
  }

  /** After a call (of kind) has settled: top the pool up to size boxes of
   * the kind used last, dropping ready boxes that no call can take any more
   * (options changed since they started), and restart the idle clock. */
  refill(size, kind, currentKey) {
    if (this.closed) return;
    this.kind = kind;
    if (size === 0 && this.ready.length === 0) return; // nothing to hold, nothing to idle out
    const stale = this.ready.filter((b) => b.key !== currentKey || b.kind !== kind);
    for (const b of stale) this.#drop(b);
    while (this.ready.length < size) {
      const box = this.start(kind);
      if (box === null) break;
      this.ready.push(box);
    }
    this.#armIdle();
  }

  #armIdle() {
    // Refreshed, not remade: a new timer costs this thread far more.
    if (this.timer !== null) {
      this.timer.refresh();
      return;
    }
    this.timer = setTimeout(() => {
      this.timer = null;
      for (const b of [...this.ready]) this.#drop(b);
    }, this.idleMs);
    // An idle pool never keeps the process alive. No promise waits on this
    // timer (the rule: lib/hold.js): a drop is fire-and-forget.
    this.timer.unref();
  }

  #drop(box) {
    const i = this.ready.indexOf(box);
    if (i >= 0) this.ready.splice(i, 1);
    binding.dropParked(box.parked);
  }

  /** The session is closing: its group's cancel kills the boxes. */
  close() {
    this.closed = true;
    this.ready = [];
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }
}

module.exports = { Pool, IDLE_MS };
