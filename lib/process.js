"use strict";

// A process: a workload in a fresh box of its own that runs while the
// caller talks to it (issue 33). The box is a call's box (the engine's same
// state machine, deadline, kill and census), started with three things a
// call does not have: the init says when the workload's exec succeeded
// (onStarted, which resolves spawn()), the caller's kill() reaches the
// workload through the init (binding.signalCall), and its output is
// streamed to two KeepStreams that never hold the box back.
const { EventEmitter } = require("events");
const { PassThrough } = require("stream");
const os = require("os");
const binding = require("./binding");
const { KeepStream } = require("./keepstream");
const { normalizeCallOptions, describe } = require("./options");
const { checkRelPath } = require("./paths");
const { sandboxError } = require("./errors");
const { ExecutionResult } = require("./result");

const KEEP_DEFAULT = 1024 * 1024;
const KEEP_MAX = 1024 * 1024 * 1024;
const GRACE_DEFAULT_S = 2;
const GRACE_MAX_S = 3600;
// The head of each stream the engine keeps for a process's result: none is
// shown (the result has the streams' tails), so the least it takes.
const HEAD_BYTES = 1;
// How a process of each language runs its code: unbuffered, so that its
// output streams as it is written.
const CODE_RUNNERS = {
  python: (code) => ["python3", "-u", "-c", code],
  bash: (code) => ["bash", "-c", code],
  node: (code) => ["node", "-e", code],
};
const SPAWN_KEYS = new Set(["stdin", "timeoutS", "signal", "cwd", "env", "keepBytes"]);

let nextId = 1;

/**
 * A process's stdin: what is written goes to the engine's feed (its
 * readable side, lib/stdin.js), back-pressured by the feed. Once the
 * process has exited a write fails as a write to a closed pipe does in
 * Node (EPIPE, in its callback and as an 'error' event), never as a crash:
 * an 'error' listener of its own is always there.
 */
class ProcessStdin extends PassThrough {
  #exited = false;

  constructor() {
    super();
    this.on("error", () => {});
  }

  exited() {
    this.#exited = true;
    this.resume(); // what the feed left unread is dropped, as a closed pipe drops it
  }

  _write(chunk, encoding, callback) {
    if (this.#exited) return callback(epipe());
    return super._write(chunk, encoding, callback);
  }
}

function epipe() {
  const err = new Error("write EPIPE: the process has exited");
  err.code = "EPIPE";
  err.errno = -os.constants.errno.EPIPE;
  err.syscall = "write";
  return err;
}

class BoxProcess extends EventEmitter {
  #key = 0; // the engine's key of its box (signalCall)
  #exited = false;
  #result; // the promise of wait()
  #started; // resolves spawn()
  #onStart = null;

  constructor(keepBytes, withStdin) {
    super();
    /** A name for this process, unique in this Node process. */
    this.id = `p${nextId++}`;
    this.stdout = new KeepStream(keepBytes);
    this.stderr = new KeepStream(keepBytes);
    /** A Writable to the workload's stdin, or null (`stdin: false`). */
    this.stdin = withStdin ? new ProcessStdin() : null;
    this.#started = new Promise((resolve) => (this.#onStart = resolve));
  }

  /** Bytes of each stream dropped unread (past keepBytes, oldest first). */
  get droppedBytes() {
    return { stdout: this.stdout.dropped, stderr: this.stderr.dropped };
  }

  /** True once the workload has ended ('exit' was emitted). */
  get exited() {
    return this.#exited;
  }

  /** The result once the process ends (as run() gives one; stdout and
   * stderr: the last keepBytes of each stream). Rejects with an AbortError
   * when its signal aborted it. */
  wait() {
    return this.#result;
  }

  /**
   * Sends signal to the workload's processes (the box's process group),
   * then kills the whole box once graceS is over unless it ended first.
   * The end that follows is the caller's: no fault. Does nothing once the
   * process has exited.
   */
  kill(signal = "SIGTERM", opts = {}) {
    const signo = signalNumber(signal);
    const graceS = graceOption(opts);
    if (this.#exited || this.#key === 0) return;
    binding.signalCall(this.#key, signo, signo === os.constants.signals.SIGKILL ? 0 : graceS * 1000);
  }

  // ---- the Sandbox's side (lib/sandbox.js) ----

  /** The call's control: what #spawn reads from call.proc. */
  control() {
    return {
      headBytes: HEAD_BYTES,
      attach: (key) => {
        this.#key = key;
      },
      onStarted: () => this.#onStart(true),
    };
  }

  /** Runs the process on run (the Sandbox's call) and resolves once the
   * workload started (or ended first, wait() then settled). */
  start(run) {
    // Ended before it started: what went wrong is wait()'s (an abort, a
    // closed session, no kern), which spawn() then throws; an exec that
    // failed is an exit (127) like run()'s.
    this.#result = run().then((r) => this.#end(r, null), (e) => this.#end(null, e));
    this.#result.catch(() => {}); // wait() is optional: an abort is not an unhandled rejection
    return Promise.race([this.#started, this.#result.then(() => true, () => false)]);
  }

  #end(result, error) {
    this.#exited = true;
    this.#onStart(false);
    const lost = result?.missedOutput ?? null;
    if (lost !== null) {
      this.stdout.lost(lost.stdout.bytes);
      this.stderr.lost(lost.stderr.bytes);
    }
    this.stdout.end();
    this.stderr.end();
    if (this.stdin !== null) this.stdin.exited();
    let shaped = null;
    if (result !== null) {
      const out = this.stdout.tail();
      const err = this.stderr.tail();
      shaped = new ExecutionResult({ ...result, stdout: out.text, stderr: err.text,
        truncated: out.truncated || err.truncated });
    }
    // On a later turn: a process that ends as it starts has its 'exit'
    // after spawn() resolved, so the caller can still listen for it.
    setImmediate(() => this.emit("exit", shaped, error));
    if (error !== null) throw error;
    return shaped;
  }
}

/**
 * Starts argv in a process (Sandbox.spawn). live: the session's set of
 * live processes; run(command, call): the Sandbox's own call.
 */
async function spawnProcess(live, command, opts, run) {
  checkArgv(command, "spawn()");
  const o = spawnOptions(opts, "spawn()");
  const proc = new BoxProcess(o.keepBytes, o.stdin);
  const call = { ...o.call, proc: proc.control(),
    onStdout: (c) => proc.stdout.add(c), onStderr: (c) => proc.stderr.add(c) };
  if (proc.stdin !== null) call.stdin = { node: proc.stdin };
  const argv = o.cwd === "" ? command : ["env", "-C", o.cwd, "--", ...command];
  live.add(proc);
  const started = proc.start(() => run(argv, call));
  // Out of the list before anyone awaiting wait() runs (first reaction).
  const gone = () => live.delete(proc);
  proc.wait().then(gone, gone);
  if (!(await started)) await proc.wait();
  return proc;
}


/** Starts code of a language in a process (Sandbox.spawnCode). */
async function spawnCodeProcess(live, code, opts, run) {
  if (typeof code !== "string")
    throw sandboxError("ERR_SANDBOX_INVALID_ARG", `spawnCode() code must be a string, got ${describe(code)}`);
  const { language = "python", ...rest } = opts ?? {};
  const runner = Object.prototype.hasOwnProperty.call(CODE_RUNNERS, language) ? CODE_RUNNERS[language] : null;
  if (runner === null)
    throw sandboxError("ERR_SANDBOX_INVALID_ARG", `unsupported language ${describe(language)}: use "python", "bash" or "node"`);
  return spawnProcess(live, runner(code), rest, run);
}

function checkArgv(command, where) {
  if (typeof command === "string")
    throw sandboxError("ERR_SANDBOX_INVALID_ARG", `${where} takes an argv array, not a string: use ["sh", "-c", "..."]`);
  if (!Array.isArray(command) || command.length === 0)
    throw sandboxError("ERR_SANDBOX_INVALID_ARG", `${where} needs a non-empty array of strings`);
}

/** spawn()'s options: { call, keepBytes, stdin, cwd } ("" for the workspace's top). */
function spawnOptions(opts, where) {
  if (opts === undefined || opts === null) opts = {};
  if (typeof opts !== "object" || Array.isArray(opts))
    throw sandboxError("ERR_SANDBOX_INVALID_OPTION", `${where} options must be an object, got ${describe(opts)}`);
  for (const k of Object.keys(opts)) {
    if (!SPAWN_KEYS.has(k))
      throw sandboxError("ERR_SANDBOX_INVALID_OPTION", `${where} has no option ${describe(k)} (it takes ` +
        `${[...SPAWN_KEYS].join(", ")})`);
  }
  const call = normalizeCallOptions({ signal: opts.signal, timeoutS: opts.timeoutS, env: opts.env }, where);
  if (opts.timeoutS === null) call.timeoutS = null; // no deadline: until kill(), close() or the signal
  const keepBytes = opts.keepBytes ?? KEEP_DEFAULT;
  if (!Number.isInteger(keepBytes) || keepBytes < 1 || keepBytes > KEEP_MAX)
    throw sandboxError("ERR_SANDBOX_INVALID_OPTION", `${where} options.keepBytes must be an integer from 1 to ${KEEP_MAX}, ` +
      `got ${describe(keepBytes)}`);
  const stdin = opts.stdin ?? true;
  if (typeof stdin !== "boolean")
    throw sandboxError("ERR_SANDBOX_INVALID_OPTION", `${where} options.stdin must be a boolean (false: stdin at EOF), ` +
      `got ${describe(stdin)}`);
  let cwd = "";
  if (opts.cwd !== undefined && opts.cwd !== null)
    cwd = checkRelPath(opts.cwd, { allowRoot: true, what: `${where} options.cwd` }) || "";
  return { call, keepBytes, stdin, cwd: cwd === "" ? "" : cwd };
}

function signalNumber(signal) {
  const signo = typeof signal === "number" ? signal : os.constants.signals[signal];
  if (!Number.isInteger(signo) || signo < 1 || signo > 64)
    throw sandboxError("ERR_SANDBOX_INVALID_ARG", `kill() takes a signal name such as "SIGTERM" or a number 1-64, ` +
      `got ${describe(signal)}`);
  return signo;
}

function graceOption(opts) {
  const g = opts?.graceS ?? GRACE_DEFAULT_S;
  if (typeof g !== "number" || !Number.isFinite(g) || g < 0 || g > GRACE_MAX_S)
    throw sandboxError("ERR_SANDBOX_INVALID_OPTION", `kill() options.graceS must be a number from 0 to ${GRACE_MAX_S}, ` +
      `got ${describe(g)}`);
  return g;
}

module.exports = { BoxProcess, spawnProcess, spawnCodeProcess };
