"use strict";

// Shell commands for the adapters: the frameworks hand over a command line
// (`command`, `cmd`), which runs as `sh -c` in a box, from the workspace or
// from the working directory asked for. A ShellProcess is one such command
// that the caller can watch, feed and kill while it runs: on sbx.spawn (the
// process API, issue 33) when the Sandbox has it, and otherwise on sbx.run
// with a web stream as its stdin and its output callbacks, which gives the
// same streams, stdin and kill, but no terminal, no published ports and no
// box without a deadline (the session's timeoutS applies).
const { EventEmitter } = require("events");
const { sandboxError } = require("../errors");
const { describe } = require("../options");
const { commandDir } = require("./paths");

/** The argv of `sh -c command` from dir (commandDir's form; null: the
 * workspace). The directory and the command travel as arguments, never
 * spliced into the shell text. */
function shellArgv(command, dir = null) {
  if (typeof command !== "string" || command.trim() === "")
    throw sandboxError("ERR_SANDBOX_INVALID_ARG", `the command must be a non-empty string, got ${describe(command)}`);
  if (command.includes("\0")) throw sandboxError("ERR_SANDBOX_INVALID_ARG", "the command must not contain a NUL byte");
  if (dir === null) return ["sh", "-c", command];
  return ["sh", "-c", 'cd -- "$1" || exit 1; exec sh -c "$2"', "sh", dir, command];
}

/** Whether this Sandbox has the process API (sbx.spawn). */
function hasSpawn(sbx) {
  return typeof sbx.spawn === "function";
}

const featureCache = new WeakMap();

/** What this Sandbox's process API takes: { spawn, pty, ports }. The
 * process API grows by options (issue 33: terminals and ports come after
 * spawn), so each is asked of sbx.spawn itself, with a signal already
 * aborted: an option it does not know is ERR_SANDBOX_INVALID_OPTION, one
 * it knows rejects with the abort, and no box starts either way. */
function features(sbx) {
  let f = featureCache.get(sbx);
  if (f === undefined) {
    f = (async () => {
      if (!hasSpawn(sbx)) return { spawn: false, pty: false, ports: false };
      const [pty, ports] = await Promise.all([takes(sbx, { pty: true }), takes(sbx, { ports: [1] })]);
      return { spawn: true, pty, ports };
    })();
    featureCache.set(sbx, f);
  }
  return f;
}

async function takes(sbx, extra) {
  const ac = new AbortController();
  ac.abort(new Error("kern-sandbox: a probe of spawn()'s options"));
  try {
    const p = await sbx.spawn(["true"], { ...extra, signal: ac.signal });
    if (p && typeof p.kill === "function") p.kill("SIGKILL");
    return true;
  } catch (e) {
    return !(e && e.code === "ERR_SANDBOX_INVALID_OPTION");
  }
}

/** Runs one command to its end: sbx.run's result. */
function runShell(sbx, command, { workingDirectory, env, signal, stdin, timeoutS, onStdout, onStderr } = {}) {
  const call = {};
  if (onStdout) call.onStdout = onStdout;
  if (onStderr) call.onStderr = onStderr;
  if (env) call.env = env;
  if (signal) call.signal = signal;
  if (stdin !== undefined) call.stdin = stdin;
  if (timeoutS !== undefined) call.timeoutS = timeoutS;
  return sbx.run(shellArgv(command, commandDir(workingDirectory)), call);
}

/** A running command. Events: 'stdout' and 'stderr' (Buffer), 'exit'
 * ({ exitCode, killed, result }) once. */
class ShellProcess extends EventEmitter {
  #done = null; // the settled outcome: { value } or { error }
  #settled;
  #writeIn = null; // (Buffer) => Promise<void>
  #endIn = null;
  #kill = () => {};
  id = null;
  ports = {};
  exited = false;

  /** Starts `command` in sbx. opts: workingDirectory, env, signal, stdin
   * (boolean), pty (boolean or { cols, rows }), ports (number[]),
   * timeoutS (null: no deadline, where the process API allows it),
   * onStart(p) (called before the box starts: attach listeners there). */
  static async start(sbx, command, opts = {}) {
    const p = new ShellProcess();
    const argv = shellArgv(command, commandDir(opts.workingDirectory));
    // A terminal or ports this Sandbox cannot give are left out: the
    // adapters say so where they are asked for (supportsPty, port lookups).
    const f = await features(sbx);
    const o = { ...opts, pty: f.pty ? opts.pty : undefined, ports: f.ports ? opts.ports : undefined };
    // Listeners first: output may come as soon as the box starts.
    if (opts.onStart) opts.onStart(p);
    if (f.spawn) await p.#startSpawned(sbx, argv, o);
    else p.#startRun(sbx, argv, o);
    return p;
  }

  async #startSpawned(sbx, argv, opts) {
    const so = { stdin: opts.stdin === true };
    if (opts.env) so.env = opts.env;
    if (opts.signal) so.signal = opts.signal;
    if (opts.pty) so.pty = opts.pty;
    if (opts.ports && opts.ports.length > 0) so.ports = [...opts.ports];
    if (opts.timeoutS !== undefined) so.timeoutS = opts.timeoutS;
    const proc = await sbx.spawn(argv, so);
    this.id = proc.id;
    this.ports = proc.ports || {};
    this.proc = proc;
    proc.stdout.on("data", (b) => this.emit("stdout", b));
    proc.stderr.on("data", (b) => this.emit("stderr", b));
    if (proc.stdin) {
      proc.stdin.on("error", () => {}); // a write after the process ended: its exit says why
      this.#writeIn = (b) => new Promise((resolve) => {
        if (proc.stdin.write(b)) resolve();
        else proc.stdin.once("drain", resolve);
      });
      this.#endIn = () => proc.stdin.end();
    }
    let killed = false;
    this.#kill = () => {
      killed = true;
      proc.kill("SIGKILL");
    };
    this.#settled = proc.wait().then(
      (r) => this.#finish({ value: { exitCode: r.exitCode, killed, result: r } }),
      (e) => this.#finish(killed ? { value: { exitCode: 137, killed, result: null } } : { error: e }));
  }

  #startRun(sbx, argv, opts) {
    const ac = new AbortController();
    let killed = false;
    const outer = opts.signal;
    const onOuter = () => ac.abort(outer.reason);
    if (outer) {
      if (outer.aborted) throw outer.reason;
      outer.addEventListener("abort", onOuter, { once: true });
    }
    const call = {
      signal: ac.signal,
      onStdout: (b) => this.emit("stdout", b),
      onStderr: (b) => this.emit("stderr", b),
    };
    if (opts.env) call.env = opts.env;
    if (opts.timeoutS !== undefined && opts.timeoutS !== null) call.timeoutS = opts.timeoutS;
    if (opts.stdin === true) call.stdin = this.#stdinStream();
    this.#kill = () => {
      killed = true;
      ac.abort(new Error("killed"));
    };
    this.#settled = sbx.run(argv, call).then(
      (r) => this.#finish({ value: { exitCode: r.exitCode, killed: false, result: r } }),
      (e) => this.#finish(killed ? { value: { exitCode: 137, killed, result: null } } : { error: e }))
      .finally(() => outer && outer.removeEventListener("abort", onOuter));
  }

  /** A web stream for sbx.run's stdin that this process's write() fills:
   * a write waits until the engine took what came before it. */
  #stdinStream() {
    let controller;
    let wanted = null; // resolves when the engine pulls again
    const stream = new ReadableStream({
      start(c) {
        controller = c;
      },
      pull() {
        if (wanted !== null) wanted();
        wanted = null;
      },
      cancel() {
        if (wanted !== null) wanted();
        wanted = null;
      },
    }, { highWaterMark: 1 });
    let ended = false;
    this.#writeIn = async (b) => {
      if (ended || this.exited) return;
      try {
        controller.enqueue(new Uint8Array(b.buffer, b.byteOffset, b.byteLength));
      } catch {
        return; // cancelled: the call has settled
      }
      if (controller.desiredSize <= 0) await new Promise((resolve) => (wanted = resolve));
    };
    this.#endIn = () => {
      if (ended) return;
      ended = true;
      try {
        controller.close();
      } catch {
        // cancelled already
      }
    };
    return stream;
  }

  #finish(done) {
    this.#done = done;
    this.exited = true;
    if (done.value) this.emit("exit", done.value);
  }

  get hasStdin() {
    return this.#writeIn !== null;
  }

  /** Writes bytes to the command's stdin; resolves once they are taken. */
  write(bytes) {
    if (this.#writeIn === null) throw sandboxError("ERR_SANDBOX_INVALID_ARG", "this process was started without stdin");
    return this.#writeIn(Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes));
  }

  /** Ends stdin: the command reads EOF after what was written. */
  end() {
    if (this.#endIn !== null) this.#endIn();
  }

  /** SIGKILLs the command's box (idempotent). */
  kill() {
    if (!this.exited) this.#kill();
  }

  /** { exitCode, killed, result }; rejects as the call did (an abort by
   * the caller's signal, a closed Sandbox). */
  async wait() {
    await this.#settled;
    if (this.#done.error) throw this.#done.error;
    return this.#done.value;
  }
}

/** The error for a port lookup where this Sandbox cannot publish ports. */
function noPorts() {
  return sandboxError("ERR_SANDBOX_NOT_SUPPORTED", "published ports need the process API's `ports` option " +
    "(issue 33), which this kern-sandbox does not have yet");
}

module.exports = { shellArgv, runShell, hasSpawn, features, noPorts, ShellProcess };
