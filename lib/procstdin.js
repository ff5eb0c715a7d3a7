"use strict";

// A process's stdin (lib/process.js): a pipe the JS thread writes itself,
// with no engine thread between the caller's write() and the workload.
const fs = require("fs");
const net = require("net");
const os = require("os");
const { Writable } = require("stream");
const binding = require("./binding");

/**
 * A process's stdin: a pipe this thread writes itself (pipePair), as a
 * Node pipe socket once the workload holds the other end (its STARTED):
 * what is written before that waits here, so a claim retried cold (a new
 * box, a new pipe) loses nothing. Writes are back-pressured by the pipe.
 * Once the process has exited a write fails as a write to a closed pipe
 * does in Node (EPIPE, in its callback and as an 'error' event), never as
 * a crash: an 'error' listener of its own is always there.
 */
class ProcessStdin extends Writable {
  #sock = null;
  #fd = -1; // this attempt's write end, until a socket owns it
  #waiting = null; // a write or the end, until the socket is there
  #exited = false;

  constructor() {
    super();
    this.on("error", () => {});
  }

  /** A new attempt's pipe: its read end, for the box (BoxOptions.stdinFd). */
  pipe() {
    this.#closeFd();
    const [rd, wr] = binding.pipePair();
    this.#fd = wr;
    return rd;
  }

  /** The workload holds the read end: writes go to the pipe from now on. */
  started() {
    if (this.#exited || this.#fd < 0) return;
    this.#sock = new net.Socket({ fd: this.#fd, readable: false, writable: true });
    this.#fd = -1;
    this.#sock.on("error", () => {});
    this.#release();
  }

  /** The process ended: no more writes. */
  exited() {
    this.#exited = true;
    this.#sock?.destroy();
    this.#sock = null;
    this.#closeFd();
    this.#release();
  }

  _write(chunk, encoding, callback) {
    if (this.#exited) return callback(epipe());
    if (this.#sock === null) {
      this.#waiting = () => this._write(chunk, encoding, callback);
      return undefined;
    }
    return this.#sock.write(chunk, (err) => callback(err ? epipe() : null));
  }

  _final(callback) {
    if (this.#exited) return callback();
    if (this.#sock === null) {
      this.#waiting = () => this._final(callback);
      return undefined;
    }
    return this.#sock.end(() => callback());
  }

  #release() {
    const w = this.#waiting;
    this.#waiting = null;
    w?.();
  }

  #closeFd() {
    if (this.#fd < 0) return;
    try {
      fs.closeSync(this.#fd);
    } catch {
      // Linux closes the descriptor even when close(2) reports an error.
    }
    this.#fd = -1;
  }
}

function epipe() {
  const err = new Error("write EPIPE: the process has exited");
  err.code = "EPIPE";
  err.errno = -os.constants.errno.EPIPE;
  err.syscall = "write";
  return err;
}

module.exports = { ProcessStdin, epipe };
