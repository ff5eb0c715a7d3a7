"use strict";

// A call's stdin, fed to its box (issue 33): the source the caller gave
// (lib/options.js, stdinSource) copied into the engine one chunk of at most
// binding.STDIN_CHUNK_MAX bytes at a time (csrc/core/box/feed.h). A chunk
// is handed over only once the engine took the one before from its slot
// (the call's onStdin), so a source faster than the box waits: a Node
// Readable is resumed for one chunk at a time and paused meanwhile, a web
// stream is read only on demand. Host memory holds at most two chunks in the engine
// plus what the source buffers itself (its highWaterMark).
//
// The end of the source closes the box's stdin (EOF). So does a source
// that fails: the error is not the call's (its workload sees EOF; the
// caller's own stream reports it as usual). A workload that exits before
// reading everything: the rest is dropped and the source is read no
// further. When the call settles, feeding stops: a web stream still open
// is cancelled, a Node Readable is left paused as it is (not destroyed).
const binding = require("./binding");

const CHUNK = binding.STDIN_CHUNK_MAX;

class StdinFeed {
  #source;
  #wake = null; // resolves the wait for the engine's slot
  #stopped = false;
  #gone = false; // the workload's end of the pipe is closed
  #started = false;
  #reader = null; // a web stream's reader
  #nodeWake = null; // ends a Node Readable's wait for its next chunk

  constructor(source) {
    this.#source = source;
    /** The engine's feed (binding.stdinOpen): BoxOptions.stdin of every box of the call. */
    this.handle = binding.stdinOpen();
    /** BoxOptions.onStdin: the engine took the chunk in its slot, or the workload's stdin is gone. */
    this.onStdin = (gone) => {
      if (gone) this.#gone = true;
      this.#signal();
    };
  }

  /** Starts feeding (once the call's box is submitted; idempotent). */
  start() {
    if (this.#started) return;
    this.#started = true;
    this.#run();
  }

  /** The call settled: feed no more. */
  stop() {
    this.#stopped = true;
    this.#signal();
    if (this.#nodeWake !== null) this.#nodeWake();
    if (this.#reader !== null) this.#reader.cancel().catch(() => {});
  }

  #signal() {
    const wake = this.#wake;
    this.#wake = null;
    if (wake !== null) wake();
  }

  #over() {
    return this.#stopped || this.#gone;
  }

  async #run() {
    try {
      for await (const chunk of this.#chunks()) {
        if (this.#over()) break;
        await this.#put(chunk);
        if (this.#over()) break;
      }
    } catch {
      // A source that fails ends the box's stdin there (the module's top).
    }
    try {
      if (!this.#stopped) binding.stdinEnd(this.handle);
    } catch {
      // The engine is shutting down (process.exit): no box reads it any more.
    }
  }

  /** The source's bytes as Buffers. */
  async *#chunks() {
    const s = this.#source;
    if (s.bytes !== undefined) {
      yield s.bytes;
    } else if (s.web !== undefined) {
      this.#reader = s.web.getReader();
      for (;;) {
        const { done, value } = await this.#reader.read();
        if (done || this.#stopped) return;
        yield asBuffer(value);
      }
    } else {
      yield* this.#nodeChunks(s.node);
    }
  }

  /**
   * A Node Readable's chunks as it pushed them: resumed for one chunk,
   * paused again at once ('data' hands over each chunk as it is, where
   * read() would concatenate what is buffered into a new Buffer per call),
   * and left paused, not destroyed, when we stop.
   */
  async *#nodeChunks(r) {
    const queue = [];
    let done = r.readableEnded === true || r.destroyed === true;
    let error = r.errored ?? null;
    let wake = null;
    const signal = () => {
      const w = wake;
      wake = null;
      if (w !== null) w();
    };
    const onData = (c) => {
      queue.push(c);
      r.pause();
      signal();
    };
    const onEnd = () => {
      done = true;
      signal();
    };
    const onError = (e) => {
      error = e;
      signal();
    };
    this.#nodeWake = signal;
    r.on("data", onData);
    r.on("end", onEnd);
    r.on("close", onEnd);
    r.on("error", onError);
    try {
      for (;;) {
        if (queue.length > 0) {
          yield asBuffer(queue.shift());
          continue;
        }
        if (error !== null) throw error;
        if (done || this.#stopped) return;
        await new Promise((resolve) => {
          wake = resolve;
          r.resume();
        });
      }
    } finally {
      r.pause();
      r.off("data", onData);
      r.off("end", onEnd);
      r.off("close", onEnd);
      r.off("error", onError);
      this.#nodeWake = null;
    }
  }

  #put(buf) {
    return feedPut(this.handle, buf, () => this.#over(), () => new Promise((resolve) => {
      this.#wake = resolve;
    }));
  }
}

/**
 * buf into the feed handle, a slice of at most STDIN_CHUNK_MAX at a time,
 * each once the engine's slot is free: slotFree() resolves at the feed's
 * next onStdin. Stops as soon as over() is true.
 */
async function feedPut(handle, buf, over, slotFree) {
  for (let at = 0; at < buf.length && !over(); at += CHUNK) {
    const piece = at === 0 && buf.length <= CHUNK ? buf : buf.subarray(at, at + CHUNK);
    while (!over() && !binding.stdinWrite(handle, piece)) await slotFree();
  }
}

/** A chunk of a source as a Buffer: strings as UTF-8; anything else that
 * is no bytes is the source's error. */
function asBuffer(value) {
  if (Buffer.isBuffer(value)) return value;
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  if (typeof value === "string") return Buffer.from(value, "utf8");
  throw new TypeError("kern-sandbox: a stdin source gave a chunk that is neither bytes nor a string");
}

module.exports = { StdinFeed, feedPut };
