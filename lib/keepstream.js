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
  #tailText = null; // tail()'s text, until the next chunk
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

  /** The tail for the result: { text, truncated }. Decoded once for as
   * long as nothing is added (the result's fault and its fields read it). */
  tail() {
    this.#tailText ??= Buffer.concat(this.#tail, this.#tailBytes).toString("utf8");
    return { text: this.#tailText, truncated: this.written > this.#tailBytes };
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

  /** Drops the oldest queued bytes past keepBytes. */
  #evict() {
    const cut = trimFront(this.#queue, this.#queued, this.#keep);
    this.#queued -= cut;
    this.dropped += cut;
  }

  #keepTail(chunk) {
    this.#tail.push(chunk);
    this.#tailBytes += chunk.length;
    this.#tailBytes -= trimFront(this.#tail, this.#tailBytes, this.#keep);
    this.#tailText = null;
  }
}

/** Cuts the oldest bytes of chunks (holding total bytes) down to limit, a
 * chunk cut in two keeping its newer part: the bytes cut. */
function trimFront(chunks, total, limit) {
  let cut = 0;
  while (total - cut > limit) {
    const over = total - cut - limit;
    const first = chunks[0];
    if (first.length <= over) {
      chunks.shift();
      cut += first.length;
    } else {
      chunks[0] = first.subarray(over);
      cut += over;
    }
  }
  return cut;
}

module.exports = { KeepStream };
