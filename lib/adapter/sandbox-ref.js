"use strict";

// Every adapter takes nothing (the session defaults), Sandbox options, or a
// Sandbox the caller opened. A Sandbox made here is owned: opened on first
// use (so constructors and factories do no I/O) and closed by the adapter's
// stop/close. A caller's Sandbox is borrowed: opened if it was not, never
// closed by the adapter.
const { Sandbox } = require("../sandbox");
const { sandboxError } = require("../errors");
const { describe } = require("../options");

class SandboxRef {
  #sbx;
  #owned;
  #opening = null;
  #closed = false;

  /** arg: undefined, Sandbox options, or a Sandbox. `extraKeys`: option
   * names the adapter takes for itself, left out of the Sandbox's options. */
  constructor(arg, { extraKeys = [], what = "the adapter" } = {}) {
    if (arg instanceof Sandbox) {
      this.#sbx = arg;
      this.#owned = false;
      return;
    }
    if (arg !== undefined && arg !== null && (typeof arg !== "object" || Array.isArray(arg)))
      throw sandboxError("ERR_SANDBOX_INVALID_ARG", `${what} takes Sandbox options or a Sandbox, got ${describe(arg)}`);
    // Unknown option keys are ignored (as 0.1.1 did): an object with methods
    // (another framework's session, say) would silently become a default
    // Sandbox, so it is refused instead.
    if (arg && (typeof arg.run === "function" || typeof arg.exec === "function"))
      throw sandboxError("ERR_SANDBOX_INVALID_ARG", `${what} takes Sandbox options or a kern-sandbox Sandbox, ` +
        "not another object with methods");
    const opts = { ...(arg ?? {}) };
    for (const k of extraKeys) delete opts[k];
    this.#sbx = new Sandbox(opts);
    this.#owned = true;
  }

  /** The Sandbox, without opening it. */
  get sandbox() {
    return this.#sbx;
  }

  get owned() {
    return this.#owned;
  }

  get closed() {
    return this.#closed;
  }

  /** The Sandbox, opened (once; a caller's open Sandbox as it is). */
  async open(signal) {
    if (this.#closed) throw sandboxError("ERR_SANDBOX_CLOSED", "this sandbox session was stopped");
    if (this.#opening === null) {
      this.#opening = this.#sbx.open().catch((e) => {
        this.#opening = null;
        throw e;
      });
    }
    if (signal) signal.throwIfAborted();
    await this.#opening;
    return this.#sbx;
  }

  /** Closes an owned Sandbox (idempotent); a borrowed one stays open. */
  async close() {
    this.#closed = true;
    if (this.#owned) await this.#sbx.close();
  }
}

module.exports = { SandboxRef };
