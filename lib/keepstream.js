"use strict";

// One output stream of a process (stdout or stderr) as a Node Readable that
// never holds the box back: the engine drains the box's pipe whatever the
// reader does, and this side keeps at most `keepBytes` that no reader has
// taken. Past it the oldest bytes are dropped and counted, so
//   taken + dropped === written, exactly,
// where `taken` is what went into the Readable (its own buffer is bounded
// by a small highWaterMark) and `written` what reached the host. The last
// keepBytes written are kept apart as the tail the process's result shows.
const { Readable } = require("stream");

// What the Readable itself buffers ahead of its reader: small, so that what
// nobody reads stays in the droppable queue.
const READABLE_HWM = 64 * 1024;

class KeepStream extends Readable {
  #keep;
  #queue = []; // chunks not yet given to the Readable, oldest first
  #queued = 0;
  #tail = []; // the last #keep bytes written, for the result
  #tailBytes = 0;
  #wanted = false; // the Readable asked for more (_read) and got nothing yet
  #ended = false;
  written = 0;
  dropped = 0;

  constructor(keepBytes) {
    super({ highWaterMark: READABLE_HWM });
    this.#keep = keepBytes;
  }

  /** A chunk the box wrote (the engine's onStdout/onStderr). */
  add(chunk) {
    if (this.#ended || chunk.length === 0) return;
    this.written += chunk.length;
    this.#keepTail(chunk);
    this.#queue.push(chunk);
    this.#queued += chunk.length;
    this.#evict();
    if (this.#wanted) this.#flush();
  }

  /** Bytes written that never reached the host (the engine's own drops,
   * result.missedOutput): written and dropped at once. */
  lost(bytes) {
    this.written += bytes;
    this.dropped += bytes;
  }

  /** The stream is over: what is queued stays readable, then EOF. */
  end() {
    if (this.#ended) return;
    this.#ended = true;
    if (this.#wanted) this.#flush();
  }

  /** The tail for the result: { text, truncated }. */
  tail() {
    return { text: Buffer.concat(this.#tail, this.#tailBytes).toString("utf8"),
      truncated: this.written > this.#tailBytes };
  }

  _read() {
    this.#wanted = true;
    this.#flush();
  }

  #flush() {
    while (this.#queue.length > 0) {
      const chunk = this.#queue.shift();
      this.#queued -= chunk.length;
      if (!this.push(chunk)) {
        this.#wanted = false;
        return;
      }
    }
    if (this.#ended) {
      this.#wanted = false;
      this.push(null);
    }
  }

  /** Drops the oldest queued bytes past keepBytes (a chunk cut in two
   * keeps its newer part). */
  #evict() {
    while (this.#queued > this.#keep) {
      const over = this.#queued - this.#keep;
      const first = this.#queue[0];
      if (first.length <= over) {
        this.#queue.shift();
        this.#queued -= first.length;
        this.dropped += first.length;
      } else {
        this.#queue[0] = first.subarray(over);
        this.#queued -= over;
        this.dropped += over;
      }
    }
  }

  #keepTail(chunk) {
    this.#tail.push(chunk);
    this.#tailBytes += chunk.length;
    while (this.#tailBytes > this.#keep) {
      const over = this.#tailBytes - this.#keep;
      const first = this.#tail[0];
      if (first.length <= over) {
        this.#tail.shift();
        this.#tailBytes -= first.length;
      } else {
        this.#tail[0] = first.subarray(over);
        this.#tailBytes -= over;
      }
    }
  }
}

module.exports = { KeepStream };
