"use strict";

// A terminal's input (lib/process.js, `pty`): what the caller writes goes
// to the pty's master, which only the engine writes (a Node stream cannot
// own a pty master without blocking the thread on a full terminal). It is
// the call stdin's feed (binding.stdinOpen, csrc/core/box/feed.h) driven
// by a Writable: one chunk in the engine's slot at a time, the next once
// the engine took it (onStdin), so a terminal that reads nothing
// back-pressures the writer and host memory stays bounded.
const { Writable } = require("stream");
const binding = require("./binding");
const { epipe } = require("./procstdin");
const { feedPut } = require("./stdin");

class TtyStdin extends Writable {
  #wake = null; // resolves the wait for the engine's slot
  #gone = false; // the process exited, or its terminal closed

  constructor() {
    super();
    this.on("error", () => {});
    /** The call's feed as lib/sandbox.js takes one: BoxOptions.stdin and onStdin. */
    this.feed = {
      handle: binding.stdinOpen(),
      onStdin: (gone) => {
        if (gone) this.#gone = true;
        this.#signal();
      },
      start() {}, // the caller's writes start it
    };
  }

  /** The workload started: nothing to do (what was written before is in
   * the terminal's input already, as typed-ahead keys are). */
  started() {}

  /** The process ended: no more writes. */
  exited() {
    this.#gone = true;
    this.#signal();
  }

  _write(chunk, encoding, callback) {
    this.#put(chunk).then(() => callback(this.#gone ? epipe() : null));
  }

  // Ending the writes sends nothing to the terminal (type "\x04" for a
  // shell's end of input): only the engine's writer is closed.
  _final(callback) {
    if (!this.#gone) {
      try {
        binding.stdinEnd(this.feed.handle);
      } catch {
        // The engine is shutting down (process.exit): nothing reads it any more.
      }
    }
    callback();
  }

  #signal() {
    const wake = this.#wake;
    this.#wake = null;
    if (wake !== null) wake();
  }

  #put(buf) {
    return feedPut(this.feed.handle, buf, () => this.#gone, () => new Promise((resolve) => (this.#wake = resolve)));
  }
}

module.exports = { TtyStdin };
