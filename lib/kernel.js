"use strict";

// A code interpreter's kernel (an addition to 0.1.1): one Python interpreter
// in one long-lived box with the session's options, whose state persists
// across cells. The box is the in-box init's interpreter box; the engine
// sends it the kernel driver (lib/inbox/python-kernel.py) and then each
// cell, with stdout and stderr pipes of the cell's own, and enforces each
// cell's deadline (csrc/core/box/interpreter-cells.c). Two isolations:
//   "shared": cells run in the interpreter itself; a cell past its deadline
//             (or aborted) gets a KeyboardInterrupt, and one that ignores it
//             for 1 s more gets the kernel killed.
//   "fork":   each cell runs in a fork() of the current state, which becomes
//             the new state when the cell ends; its parent is kept as a
//             checkpoint. A cell that times out, crashes or is OOM-killed
//             loses only itself; rollback(n) goes back n states.
const binding = require("./binding");
const benchoff = require("./benchoff");
const init = require("./init");
const { SandboxError, sandboxError, escapeControl } = require("./errors");
const { AbortError, abortError, onAbort } = require("./abort");
const { ExecutionResult, resultsOf, missedOutputOf } = require("./result");
const { normalizeCallOptions, describe } = require("./options");
const { newCancelKey } = require("./session");
const { awaitHeld } = require("./hold");
const { ASYNC_DISPOSE } = require("./dispose");

// (Bench switch direct-cells off: every cell goes through the engine's thread.)
const DIRECT_CELLS_OFF = benchoff.isOff("direct-cells");

// kern's backstop for a kernel's box, and so a kernel's longest life.
const KERNEL_BACKSTOP_S = 24 * 3600;
// A kernel's start (its box, then the interpreter's boot) is given at least
// this, however short the session's timeoutS.
const KERNEL_START_MIN_DEFAULT_MS = 30 * 1000;
const MAX_CHECKPOINTS = 64;
const DEFAULT_CHECKPOINTS = 8;
const ROLLBACK_TIMEOUT_MS = 10_000;
const MODES = { shared: binding.PROTOCOL.IP_MODE.SHARED, fork: binding.PROTOCOL.IP_MODE.FORK };
const END = binding.PROTOCOL.IP_END; // how a cell ended (interp.h, enum ks_ip_end)
const SIGINT = 2;
const SIGKILL = 9;

/** KernelOptions, validated. */
function kernelOptions(opts) {
  if (opts === undefined || opts === null) opts = {};
  if (typeof opts !== "object" || Array.isArray(opts))
    throw sandboxError("ERR_SANDBOX_INVALID_OPTION", `kernel() options must be an object, got ${describe(opts)}`);
  const isolation = opts.isolation ?? "shared";
  if (!Object.prototype.hasOwnProperty.call(MODES, isolation))
    throw sandboxError("ERR_SANDBOX_INVALID_OPTION", `kernel() options.isolation must be "shared" or "fork", got ` +
      `${describe(isolation)}`);
  const checkpoints = opts.checkpoints ?? DEFAULT_CHECKPOINTS;
  if (!Number.isInteger(checkpoints) || checkpoints < 0 || checkpoints > MAX_CHECKPOINTS)
    throw sandboxError("ERR_SANDBOX_INVALID_OPTION", `kernel() options.checkpoints must be an integer from 0 to ` +
      `${MAX_CHECKPOINTS}, got ${describe(checkpoints)}`);
  if (opts.checkpoints !== undefined && opts.checkpoints !== null && isolation !== "fork")
    throw sandboxError("ERR_SANDBOX_INVALID_OPTION", 'kernel() options.checkpoints needs isolation: "fork"');
  // timeoutS: the default deadline of each cell (0.1.23's kernel({ timeoutS }));
  // a cell's own timeoutS wins. Unset: the Sandbox's timeoutS, as it is at the call.
  const { signal, timeoutS } = normalizeCallOptions({ signal: opts.signal, timeoutS: opts.timeoutS },
    "kernel()");
  return { isolation, checkpoints, signal, timeoutS };
}

/** What a wait status says: the exit code as kern reports one (the code, or
 * 128+N for signal N) and the signal, if any. */
function waitOutcome(status) {
  const sig = status & 0x7f;
  if (sig === 0) return { exitCode: (status >> 8) & 0xff, signal: null };
  return { exitCode: 128 + sig, signal: sig };
}

class Kernel {
  #host; // the Sandbox's side: startBox(key, claim), startMinMs, options(call), limits()
  #key = 0; // the engine's key of the current box (also its cancel key)
  #box = null; // the engine's promise for that box: settles when it ends
  #starting = null; // the start in progress (or done): resolves when cells may go
  #dead = null; // why the kernel is dead, or null
  #closed = false;
  #nextId = 1;
  #depth = 0; // fork mode: checkpoints held after the cells settled so far
  #tail = Promise.resolve(); // every message submitted so far, settled
  #inFlight = 0; // messages submitted and not settled: with none, this thread sends the next
  #up = false; // started: no start to wait for
  #barrier = null; // a rollback() or restart() under way: later cells wait for it
  #timeoutS; // kernel({ timeoutS }): each cell's deadline unless the cell sets its own

  /** Made by Sandbox.kernel(); not constructed directly. */
  constructor(host, { isolation, checkpoints, timeoutS }) {
    this.#host = host;
    this.#timeoutS = timeoutS;
    /** "shared" or "fork". */
    this.isolation = isolation;
    /** Fork mode: the most states kept besides the current one. */
    this.checkpoints = isolation === "fork" ? checkpoints : 0;
  }

  /** Fork mode: how many states rollback() can go back now (after the calls
   * that have settled). 0 in shared mode. */
  get checkpointsHeld() {
    return this.#depth;
  }

  /** Starts the kernel's box and interpreter; the first time and at restart(). */
  async start(signal = null) {
    this.#starting = this.#boot(signal);
    try {
      await this.#starting;
    } catch (e) {
      this.#dead = this.#dead ?? `it did not start: ${e.message}`;
      throw e;
    }
  }

  async #boot(signal) {
    this.#up = false;
    // A prewarmed box first; one that died while it waited is no start.
    for (const claim of [true, false]) {
      this.#key = newCancelKey();
      const { box, claimed, refill, started } = this.#host.startBox(this.#key, claim);
      this.#box = box.catch(() => null);
      this.#depth = 0;
      const dispose = onAbort(signal, () => binding.cancelGroup(this.#key));
      let raw;
      try {
        const o = this.#host.options({});
        // From the call: a start that waits for its box's interpreter waits
        // on this clock too.
        raw = await this.#engine(0, "kernel", MODES[this.isolation], this.checkpoints, null,
          Math.max(o.timeoutS * 1000, this.#host.startMinMs), o.maxOutputBytes, null, null, 0);
      } finally {
        dispose();
        if (claimed) setImmediate(refill); // the pool's box is gone, however this went
        setImmediate(started); // work that waited for the kernel's start (lib/bootcache.js)
      }
      if (raw.how === "ready") {
        this.#dead = null;
        this.#up = true;
        return;
      }
      await this.#stopBox();
      if (signal !== null && signal.aborted) throw abortError(signal);
      if (!claimed) throw sandboxError("ERR_SANDBOX_KERNEL_DEAD", `the kernel could not start: ${await this.#deathWords(raw)}`);
    }
  }

  /** Kills the current box and waits for it to end. */
  async #stopBox() {
    if (this.#key === 0) return;
    binding.cancelGroup(this.#key);
    await awaitHeld(this.#box); // the box's run holds nothing on the loop (lib/hold.js)
    binding.forgetGroup(this.#key);
    this.#key = 0;
  }

  /** One message to the engine (binding.kernelCell). With none of this
   * kernel's under way, the engine may send it from this thread. */
  #engine(id, type, a, b, body, timeoutMs, cap, onStdout, onStderr, cancelKey) {
    const direct = this.#inFlight === 0 && !DIRECT_CELLS_OFF;
    this.#inFlight++;
    const p = binding.kernelCell({ kernelKey: this.#key, id, type, a, b, body, timeoutMs,
      maxOutputBytes: cap, onStdout, onStderr, cancelKey, direct });
    p.then(() => this.#inFlight--, () => this.#inFlight--);
    return p;
  }

  /** Why a dead cell's kernel died, with the end of what its box printed. */
  async #deathWords(raw) {
    let why = raw.how === "none" ? "its box is gone" : (raw.why ?? "its box ended");
    // The box's own end settles just after its cells: its stderr says more.
    const box = await awaitHeld(Promise.race([this.#box,
      new Promise((r) => setTimeout(r, 1000, null))]));
    if (box !== null && box !== undefined) {
      const tail = escapeControl(String(box.stderr).trim().split("\n").slice(-3).join(" | "))
        .slice(-300);
      const status = typeof box.exitCode === "number" ? `exit ${box.exitCode}`
        : typeof box.signal === "number" ? `signal ${box.signal}` : null;
      if (status !== null) why += ` (${status}${tail ? `: ${tail}` : ""})`;
    }
    return why;
  }

  #closedError() {
    return sandboxError("ERR_SANDBOX_KERNEL_CLOSED", "the kernel is closed: open a new one with sbx.kernel()");
  }

  /** Throws a SandboxError unless the kernel can take a message now;
   * checkSandbox: its Sandbox's being open too (the caller has not). */
  #usable(checkSandbox = true) {
    if (this.#closed) throw this.#closedError();
    if (checkSandbox) this.#host.options({}); // throws if the Sandbox is closed
    if (this.#dead !== null)
      throw sandboxError("ERR_SANDBOX_KERNEL_DEAD", `the kernel died: ${this.#dead}; kernel.restart() gives a fresh ` +
        "interpreter (its state is lost)");
  }

  /**
   * Runs one cell; cells run in the order they are called. opts: timeoutS,
   * signal, onStdout, onStderr (live chunks of this cell), results.
   */
  async runCode(code, opts) {
    if (this.#closed) throw this.#closedError();
    const call = normalizeCallOptions(opts, "kernel.runCode()");
    if (call.env !== undefined)
      throw sandboxError("ERR_SANDBOX_INVALID_OPTION", "kernel.runCode() options.env cannot be set per cell: the kernel " +
        "keeps the environment it started with (set os.environ in a cell)");
    if (call.stdin !== undefined)
      throw sandboxError("ERR_SANDBOX_INVALID_OPTION", "kernel.runCode() options.stdin is not supported: a " +
        "kernel's cells share one interpreter; pass data in the code, a file, or use sandbox.runCode()");
    if (typeof code !== "string")
      throw sandboxError("ERR_SANDBOX_INVALID_ARG", `code must be a string, got ${describe(code)}`);
    const { signal } = call;
    if (signal !== null && signal.aborted) throw abortError(signal);
    // A rollback or restart called before this cell goes first.
    while (this.#barrier !== null) await this.#barrier;
    if (!this.#up) await this.#starting?.catch(() => {});
    // The options as the Sandbox's fields say now (this throws once it is
    // closed), then whether the kernel can take a cell.
    const o = this.#host.options(call.timeoutS === undefined && this.#timeoutS !== undefined
      ? { ...call, timeoutS: this.#timeoutS } : call);
    this.#usable(false);
    const cancelKey = signal !== null ? newCancelKey() : 0;
    const dispose = onAbort(signal, () => binding.cancelGroup(cancelKey));
    const engine = this.#engine(this.#nextId++, "cell",
      Math.min(o.maxOutputBytes, 2 ** 32 - 1), o.results ? 1 : 0, Buffer.from(code, "utf8"),
      o.timeoutS * 1000, o.maxOutputBytes, o.onStdout, o.onStderr, cancelKey);
    this.#tail = this.#tail.then(() => engine).catch(() => {});
    let raw;
    try {
      raw = await engine;
    } finally {
      dispose();
      if (cancelKey !== 0) binding.forgetGroup(cancelKey);
    }
    return this.#cellResult(raw, o, signal);
  }

  async #cellResult(raw, o, signal) {
    if (raw.how === "skipped") throw abortError(signal); // aborted while queued: never ran
    if (raw.how === "dead" || raw.how === "none") {
      const words = await this.#deathWords(raw);
      this.#dead = this.#dead ?? words;
      if (raw.cancelled && signal !== null) throw abortError(signal, raw);
      if (!raw.timedOut) throw sandboxError("ERR_SANDBOX_KERNEL_DEAD", `the kernel died: ${words}`);
      // It ran past its deadline and ignored the interrupt: its result says
      // so; the calls after it are refused.
      return this.#result(raw, { exitCode: 128 + SIGKILL, fault: timeoutFault(o,
        `and ignored the interrupt for 1 s: the kernel was killed (${words}); ` +
        "kernel.restart() gives a fresh one") });
    }
    if (raw.cancelled && signal !== null) throw abortError(signal, raw);
    if (this.isolation === "fork") this.#depth = raw.depth;
    if (raw.how === "ended") {
      // Fork mode: the cell's process died; the state from before it stands.
      const { exitCode, signal: sig } = waitOutcome(raw.waitStatus);
      let fault = null;
      if (raw.timedOut) fault = timeoutFault(o, "and was killed; the state from before it stands");
      else if (sig === SIGKILL) fault = this.#host.killedFault();
      return this.#result(raw, { exitCode, fault });
    }
    const exitCode = raw.end === END.EXIT ? raw.value : raw.end === END.OK ? 0
      : raw.end === END.INTERRUPTED ? 128 + SIGINT : 1; // 130: as python3 -c after a KeyboardInterrupt
    // Past its deadline, however it then ended (it may have caught the
    // KeyboardInterrupt and finished).
    const fault = raw.timedOut ? timeoutFault(o, "and was interrupted (KeyboardInterrupt); " +
      "the kernel's state stands") : null;
    return this.#result(raw, { exitCode, fault });
  }

  #result(raw, { exitCode, fault }) {
    const ms = (v) => Math.round(v * 1000) / 1000;
    return new ExecutionResult({
      stdout: raw.stdout,
      stderr: raw.stderr,
      exitCode,
      durationMs: ms(raw.durationMs),
      fault,
      files: [],
      truncated: raw.stdoutDiscarded > 0 || raw.stderrDiscarded > 0 || raw.resultsDropped,
      usage: { cpuUserMs: ms(raw.userCpuMs), cpuSystemMs: ms(raw.systemCpuMs), maxRssKb: raw.maxRssKb },
      limits: this.#host.limits(),
      results: resultsOf(raw.results),
      missedOutput: missedOutputOf(raw),
    });
  }

  /**
   * Fork mode: goes back to the state from before the last n cells that made
   * a state (a cell that crashed or timed out made none). Memory only: files
   * the cells wrote and processes they started stay as they are. More than
   * the checkpoints held is refused.
   */
  async rollback(n = 1) {
    if (this.isolation !== "fork")
      throw sandboxError("ERR_SANDBOX_NOT_SUPPORTED", 'rollback() needs a kernel with isolation: "fork"');
    if (!Number.isInteger(n) || n < 1)
      throw sandboxError("ERR_SANDBOX_INVALID_ARG", `rollback(n): n must be an integer of 1 or more, got ${describe(n)}`);
    if (this.#starting !== null) await this.#starting.catch(() => {});
    this.#usable();
    // Judged at its turn: the cells before it decide how many states exist.
    return this.#exclusive(async () => {
      this.#usable();
      if (n > this.#depth)
        throw sandboxError("ERR_SANDBOX_NO_CHECKPOINT", `rollback(${n}): only ${this.#depth} checkpoint(s) are held ` +
          `(the kernel keeps at most ${this.checkpoints}; a cell that crashed or timed out made none)`);
      const o = this.#host.options({});
      const raw = await this.#engine(this.#nextId++, "rollback", n, 0, null,
        ROLLBACK_TIMEOUT_MS, o.maxOutputBytes, null, null, 0);
      if (raw.how !== "ended") {
        this.#dead = this.#dead ?? await this.#deathWords(raw);
        throw sandboxError("ERR_SANDBOX_KERNEL_DEAD", `the kernel died: ${this.#dead}`);
      }
      this.#depth = raw.depth;
    });
  }

  /** Runs fn once every message submitted before has settled; the cells
   * called meanwhile wait for it. */
  async #exclusive(fn) {
    const turn = this.#tail;
    let release;
    const mine = new Promise((r) => (release = r));
    this.#tail = mine;
    this.#barrier = mine;
    try {
      await turn;
      return await fn();
    } finally {
      release();
      if (this.#barrier === mine) this.#barrier = null;
    }
  }

  /** A fresh interpreter with the same options; the old state is gone. */
  async restart() {
    if (this.#closed) throw this.#closedError();
    this.#host.options({});
    // The box goes at once: the cells under way end with it. The barrier is
    // up from here, so a cell called meanwhile waits for the new one.
    const stopping = this.#stopBox();
    await this.#exclusive(async () => {
      await stopping;
      this.#dead = null;
      await this.start();
    });
  }

  /** `await using kernel = ...` closes the kernel. */
  async [ASYNC_DISPOSE]() {
    await this.close();
  }

  /** Ends the kernel and its box. Idempotent. */
  async close() {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#starting !== null) await this.#starting.catch(() => {});
    await this.#stopBox();
  }
}

function timeoutFault(o, what) {
  return { type: "timeout", message: `the cell ran past its ${o.timeoutS}s limit ${what}` };
}

module.exports = { Kernel, kernelOptions, KERNEL_BACKSTOP_S, KERNEL_START_MIN_DEFAULT_MS, AbortError };
