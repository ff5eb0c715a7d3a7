"use strict";

// A process: a workload in a fresh box of its own that runs while the
// caller talks to it (issue 33). The box is a call's box (the engine's same
// state machine, deadline, kill and census), started with three things a
// call does not have: the init says when the workload's exec succeeded
// (onStarted, which resolves spawn()), the caller's kill() reaches the
// workload through the init (binding.signalCall), and its output is
// streamed to two KeepStreams that never hold the box back.
const { EventEmitter } = require("events");
const fs = require("fs");
const net = require("net");
const os = require("os");
const binding = require("./binding");
const { KeepStream } = require("./keepstream");
const { ProcessStdin } = require("./procstdin");
const { TtyStdin } = require("./ttystdin");
const ports = require("./ports"); // by module: a test stands in for pickPorts
const { portsOption, publishArgs, portTaken, PublishFilter, probe } = ports;
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
const SPAWN_KEYS = new Set(["stdin", "timeoutS", "signal", "cwd", "env", "keepBytes", "ports",
  "publishHost", "pty"]);
// A terminal's size when `pty: true` gives none, and the largest of each.
const PTY_DEFAULT = { cols: 80, rows: 24 };
const PTY_DIM_MAX = 65535;
// Tries at a set of free host ports: kern fails closed when one was taken
// between our choice and its bind.
const PUBLISH_ATTEMPTS = 3;
const WAIT_PORT_DEFAULT_S = 30;
// The most the end's drain of a handed stdout reads (a pipe holds 1 MiB at
// most as the engine grows it).
const DRAIN_MAX = 16 * 1024 * 1024;

let nextId = 1;

class BoxProcess extends EventEmitter {
  #key = 0; // the engine's key of its box (signalCall)
  #exited = false;
  #result; // the promise of wait()
  #started; // resolves spawn()
  #onStart = null;
  #flush = null; // what a stream filter still holds, out before the streams end
  #tty; // { cols, rows } for a terminal, or null
  #ttyControl = null; // this attempt's handle on its pty's master (resize)
  #pipe = null; // { sock, fd }: the stdout pipe this thread reads from the start on (sock null until made)

  constructor(keepBytes, withStdin, maps = [], tty = null) {
    super();
    /** Each published box port: { host, port, url } on the host. */
    this.ports = {};
    for (const m of maps) {
      const host = m.ip === "0.0.0.0" ? "127.0.0.1" : m.ip;
      this.ports[m.box] = { host, port: m.host, url: `http://${host}:${m.host}` };
    }
    /** A name for this process, unique in this Node process. */
    this.id = `p${nextId++}`;
    this.#tty = tty;
    /** With a terminal (`pty`): its output, stderr included, as a terminal shows it. */
    this.stdout = new KeepStream(keepBytes);
    /** With a terminal: kern's own lines only (the workload's stderr is the terminal). */
    this.stderr = new KeepStream(keepBytes);
    /** A Writable to the workload's stdin (with a terminal: its keyboard), or null
     * (`stdin: false`). */
    this.stdin = !withStdin ? null : tty !== null ? new TtyStdin() : new ProcessStdin();
    this.#started = new Promise((resolve) => (this.#onStart = resolve));
  }

  /** Bytes of each stream dropped unread (past keepBytes, oldest first). */
  get droppedBytes() {
    return { stdout: this.stdout.dropped, stderr: this.stderr.dropped };
  }

  /** True once the workload has ended (wait() has settled; 'exit' follows
   * on a later turn). */
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

  /**
   * A terminal's new size (`pty`): its foreground process group gets
   * SIGWINCH. Does nothing once the process has exited.
   */
  resize(cols, rows) {
    if (this.#tty === null)
      throw sandboxError("ERR_SANDBOX_INVALID_ARG", "resize() is for a process spawned with a terminal (pty: true)");
    const size = ptySize({ cols, rows }, "resize()");
    if (this.#exited || this.#ttyControl === null) return;
    binding.ttyResize(this.#ttyControl, size.cols, size.rows);
  }

  /**
   * Resolves once a listener in the box answers through the published
   * port (a connection kern's forwarder keeps open: with no listener it
   * closes it at once). Rejects (ERR_SANDBOX_PORT_NOT_READY) after
   * timeoutS, or when the process exits first.
   */
  async waitForPort(port, opts = {}) {
    const m = Object.prototype.hasOwnProperty.call(this.ports, port) ? this.ports[port] : null;
    if (m === null)
      throw sandboxError("ERR_SANDBOX_INVALID_ARG", `box port ${describe(port)} is not published: spawn with ` +
        `ports: [${describe(port)}]`);
    const timeoutS = opts?.timeoutS ?? WAIT_PORT_DEFAULT_S;
    if (typeof timeoutS !== "number" || !(timeoutS >= 0) || !Number.isFinite(timeoutS))
      throw sandboxError("ERR_SANDBOX_INVALID_OPTION", `waitForPort() options.timeoutS must be a number of seconds, ` +
        `got ${describe(timeoutS)}`);
    const deadline = Date.now() + timeoutS * 1000;
    for (let delay = 10; ; delay = Math.min(delay * 2, 100)) {
      if (this.#exited)
        throw sandboxError("ERR_SANDBOX_PORT_NOT_READY", `the process exited before box port ${port} had a listener`);
      if (await probe(m.host, m.port)) return;
      if (Date.now() + delay > deadline)
        throw sandboxError("ERR_SANDBOX_PORT_NOT_READY", `no listener answered on box port ${port} within ${timeoutS} s`);
      await new Promise((r) => setTimeout(r, delay));
    }
  }

  // ---- the Sandbox's side (lib/sandbox.js) ----

  /** The call's control: what #spawn reads from call.proc. */
  control() {
    const tty = this.#tty;
    return {
      headBytes: HEAD_BYTES,
      // A terminal's slave goes to the box as a stdin pipe would.
      stdin: this.stdin !== null || tty !== null,
      tty: tty === null ? null : { cols: tty.cols, rows: tty.rows },
      // A terminal's input goes through the engine (lib/ttystdin.js).
      feed: tty !== null && this.stdin !== null ? this.stdin.feed : null,
      /** A new attempt (a box) under key: { stdinFd, ttyFd }, its stdin
       * pipe's read end or its terminal (slave and master), or nulls. */
      attach: (key) => {
        this.#key = key;
        if (tty === null) return { stdinFd: this.stdin === null ? null : this.stdin.pipe(), ttyFd: null };
        this.#closeTty();
        const [slave, master, control] = binding.ptyPair(tty.cols, tty.rows);
        this.#ttyControl = control;
        return { stdinFd: slave, ttyFd: master };
      },
      // (At the end: what the handed pipe still holds is read first, so an
      // AbortError's stdout has it too.)
      tails: () => {
        this.#drainStdout();
        return { stdout: this.stdout.tail().text, stderr: this.stderr.tail().text };
      },
      /** The workload started; with stdoutFd (handStdout) its stdout pipe,
       * this side's once this returns true (otherwise the addon closes it). */
      onStarted: (stdoutFd) => {
        if (stdoutFd !== null) this.#takeStdout(stdoutFd);
        this.stdin?.started();
        this.#onStart(true);
        return stdoutFd !== null;
      },
    };
  }

  /** Runs the process on run (the Sandbox's call) and resolves once the
   * workload started (or ended first, wait() then settled). */
  start(run, flush) {
    this.#flush = flush;
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
    this.#flush?.();
    this.#drainStdout();
    const lost = result?.missedOutput ?? null;
    if (lost !== null) {
      this.stdout.lost(lost.stdout.bytes);
      this.stderr.lost(lost.stderr.bytes);
    }
    this.stdout.end();
    this.stderr.end();
    if (this.stdin !== null) this.stdin.exited();
    this.#closeTty();
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

  // The stdout pipe from the workload's start on (BoxOptions.handStdout):
  // read here as a Node pipe to a child process is, with no engine thread
  // between the box and the reader. What the engine read before the start
  // came as chunks first. The socket is made in the loop's check phase,
  // after spawn() resolved: making one costs this thread more than the rest
  // of the start, and the pipe holds what comes meanwhile.
  #takeStdout(fd) {
    const pipe = { sock: null, fd };
    this.#pipe = pipe;
    setImmediate(() => {
      if (this.#pipe !== pipe) return; // drained and closed at the end already
      try {
        const sock = new net.Socket({ fd, readable: true, writable: false });
        sock.on("data", (c) => this.stdout.add(c));
        sock.on("error", () => {}); // the box's end is gone: the drain at the end reads what is left
        pipe.sock = sock;
      } catch {
        // No socket for it (no memory): closed, so the box's writes fail
        // (EPIPE) rather than wait on a pipe nobody reads; the result's
        // tail lacks what it held.
        this.#pipe = null;
        fs.closeSync(fd);
      }
    });
  }

  // At the end every box process has exited: what they wrote is in the
  // pipe. Read to its end (EAGAIN: kern still holds the write end), then
  // closed. A socket already destroyed read its EOF (kern exited) and
  // closed the descriptor, whose number may be another's by now: nothing
  // is left to read there.
  #drainStdout() {
    if (this.#pipe === null) return;
    const { sock, fd } = this.#pipe;
    this.#pipe = null;
    const buf = Buffer.allocUnsafe(64 * 1024);
    // Bounded: every writer is gone by now in a box, but a writer that is
    // not (a kern given up on) must not hold this thread.
    for (let left = DRAIN_MAX; left > 0 && !sock?.destroyed; left -= buf.length) {
      let n = 0;
      try {
        n = fs.readSync(fd, buf, 0, buf.length, null);
      } catch {
        break; // EAGAIN: nothing left (or the socket read it all already)
      }
      if (n === 0) break;
      this.stdout.add(Buffer.from(buf.subarray(0, n)));
    }
    if (sock !== null) sock.destroy();
    else fs.closeSync(fd); // no socket was made for it yet
  }

  #closeTty() {
    if (this.#ttyControl === null) return;
    binding.wsClose(this.#ttyControl);
    this.#ttyControl = null;
  }
}

/**
 * Starts argv in a process (Sandbox.spawn). live: the session's set of
 * live processes; run(command, call): the Sandbox's own call.
 */
async function spawnProcess(live, command, opts, run) {
  checkArgv(command, "spawn()");
  const o = spawnOptions(opts, "spawn()");
  const argv = o.cwd === "" ? command : ["env", "-C", o.cwd, "--", ...command];
  for (let attempt = 1; ; attempt++) {
    const maps = o.ports.length > 0 ? await ports.pickPorts(o.ports, o.publishHost) : [];
    const proc = new BoxProcess(o.keepBytes, o.stdin, maps, o.tty);
    const filter = new PublishFilter(maps);
    const toStderr = (b) => proc.stderr.add(b);
    const control = proc.control();
    const call = { ...o.call, proc: control, onStdout: (c) => proc.stdout.add(c),
      onStderr: (c) => filter.push(c, toStderr) };
    if (control.feed !== null) call.feed = control.feed;
    if (maps.length > 0) call.publish = publishArgs(maps);
    live.add(proc);
    const started = proc.start(() => run(argv, call), () => filter.end(toStderr));
    // Out of the list before anyone awaiting wait() runs (first reaction).
    const gone = () => live.delete(proc);
    proc.wait().then(gone, gone);
    if (await started) return proc;
    // Ended before it started: an abort, a closed session or no kern is
    // wait()'s rejection, thrown here; a host port taken between our choice
    // and kern's bind is retried at new ones.
    const result = await proc.wait();
    if (!portTaken(result)) return proc;
    if (attempt === PUBLISH_ATTEMPTS)
      throw sandboxError("ERR_SANDBOX_PORT_UNAVAILABLE", `could not publish ports ${o.ports.join(", ")}: ` +
        `${result.fault.message} (${PUBLISH_ATTEMPTS} attempts at free host ports)`);
  }
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
  const cwd = opts.cwd === undefined || opts.cwd === null ? ""
    : checkRelPath(opts.cwd, { allowRoot: true, what: `${where} options.cwd` });
  const { ports, host } = portsOption(opts, where);
  let tty = null;
  if (opts.pty !== undefined && opts.pty !== null && opts.pty !== false) {
    tty = ptySize(opts.pty === true ? PTY_DEFAULT : opts.pty, `${where} options.pty`);
  }
  return { call, keepBytes, stdin, cwd, ports, publishHost: host, tty };
}

/** A terminal's size: { cols, rows } (each 1-65535; one left out keeps the
 * default's). */
function ptySize(v, where) {
  if (typeof v !== "object" || v === null || Array.isArray(v))
    throw sandboxError("ERR_SANDBOX_INVALID_OPTION", `${where} must be true or { cols, rows }, got ${describe(v)}`);
  const size = {};
  for (const k of ["cols", "rows"]) {
    const n = v[k] ?? PTY_DEFAULT[k];
    if (!Number.isInteger(n) || n < 1 || n > PTY_DIM_MAX)
      throw sandboxError("ERR_SANDBOX_INVALID_OPTION", `${where} ${k} must be an integer from 1 to ${PTY_DIM_MAX}, ` +
        `got ${describe(n)}`);
    size[k] = n;
  }
  return size;
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
