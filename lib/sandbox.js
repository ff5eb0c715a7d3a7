"use strict";

// The session object of the 0.1.1 API. It validates and shapes; the native
// engine spawns, supervises, kills, and does every workspace operation
// beneath the workspace descriptor opened once in open().
const fs = require("fs");
const os = require("os");
const path = require("path");
const crypto = require("crypto");
const { ASYNC_DISPOSE } = require("./dispose");
const binding = require("./binding");
const { startBox, parkBox, claimBox, startKernel } = require("./engine");
const { normalizeOptions, normalizeCallOptions, signalOption, describe, readMaxOption, READ_MAX } =
  require("./options");
const { checkHostSource, within } = require("./mounts");
const { findKern, openKern, boxName, boxArgv, envFileContent, DEPS_DIR } = require("./kern");
const { Session, newCancelKey } = require("./session");
const bootcache = require("./bootcache");
const benchoff = require("./benchoff");
const { abortError, onAbort, raceAbort } = require("./abort");
const { classify, exitCodeOf, limitsOf, startedByte } = require("./faults");
const { warnUnenforced, NO_CAP_WARNING } = require("./warnings");
const { ExecutionResult, resultsOf, missedOutputOf, usageOf } = require("./result");
const { unpackChanges } = require("./changes");
const { SandboxError, MountRefused, sandboxError, escapeControl, sandboxErrorFromSystem } = require("./errors");
const { checkRelPath } = require("./paths");
const { StdinFeed } = require("./stdin");
const { spawnProcess, spawnCodeProcess } = require("./process");
const { snapshotOf, sameAsSnapshot } = require("./fieldsnap");
const { sendSpec, closeChannel } = require("./claimsend");
const snapshots = require("./snapshot");
const init = require("./init");
const { Pool, IDLE_MS } = require("./pool");
const { Kernel, kernelOptions, KERNEL_BACKSTOP_S, KERNEL_START_MIN_DEFAULT_MS } = require("./kernel");
const { ENGINE, POOL_STATS, POOL_IDLE_MS, KERNEL_START_MIN_MS } = require("./internal");

const CLAIM_SEND_OFF = benchoff.isOff("claim-send"); // bench switch (lib/benchoff.js)
const HAND_STDOUT_OFF = benchoff.isOff("hand-stdout"); // bench switch (lib/benchoff.js)

const INLINE_CODE_MAX = 128 * 1024; // longer code goes through a workspace file (ARG_MAX)
const NO_DEADLINE_MS = 1e12; // a process with timeoutS null: the engine's clock never fires
const RUNNERS = {
  python: { argv0: "python3", evalFlag: "-c", ext: "py" },
  bash: { argv0: "sh", evalFlag: "-c", ext: "sh" },
  node: { argv0: "node", evalFlag: "-e", ext: "js" }, // -e evaluates; -c only checks syntax
};
const PIP_INSTALL = "pip install ";
// 0.1.1 read these public fields at each call, and these two at open(), so a
// program may change one between calls (`sbx.timeoutS = 120`): they are
// validated again, by the constructor's rules, each time they are used.
// mounts, profiles and egressAllow were fixed by its constructor, as here.
// The fields added after 0.1.1 follow the same rules.
const CALL_FIELDS = ["image", "memoryMb", "cpus", "pids", "timeoutS", "network", "env",
  "maxOutputBytes", "onStdout", "onStderr", "enforceLimits", "depsReadonly",
  "capDrop", "securityProfile", "apparmor", "requireLimits", "prewarm", "results"];
const OPEN_FIELDS = ["workspace", "setup", "trackFiles"];
const OPEN_TIME_FIELDS = [...OPEN_FIELDS, "enforceLimits"]; // what open() reads

/** A new temporary workspace under TMPDIR, by its real path. Synchronous:
 * two short system calls cost less than two trips through libuv's
 * threadpool and back, which the one-shot runCode would pay on every call. */
async function makeTempWorkspace() {
  let ws;
  try {
    ws = fs.realpathSync.native(fs.mkdtempSync(path.join(os.tmpdir(), "kern-ws-")));
  } catch (e) {
    throw sandboxErrorFromSystem(`cannot create a temporary workspace in ` +
      `${JSON.stringify(os.tmpdir())} (point TMPDIR at a writable directory, or pass ` +
      "options.workspace)", e);
  }
  if (/[:\n\r,]/.test(ws)) {
    await fs.promises.rmdir(ws);
    throw sandboxError("ERR_SANDBOX_INVALID_WORKSPACE", 
      `the temporary workspace ${JSON.stringify(ws)} contains ':' or ',', which kern's -v ` +
        "syntax cannot carry: point TMPDIR at a directory without them, or pass options.workspace");
  }
  return ws;
}

class Sandbox {
  #o;
  #kern;
  #s = null; // the open Session, or null
  #opening = null; // the open() in progress
  #closingP = null; // the close() in progress
  #closes = 0; // close() calls so far: an open() that sees this change was closed meanwhile
  #capWarnings; // false only for doctor()'s probe (lib/warnings.js)
  #engine; // "init" (the in-box init, lib/init.js) or "direct" (0.1.1's argv, for tests)
  #idleMs; // the pool's idle limit
  #kernelStartMinMs; // the least time a kernel's start is given
  #seen = new Map(); // field list -> { snap: the fields' values, o: them normalized }
  #flags = null; // the last call's box flags and keys, while the fields stay as they were
  #live = new Set(); // its processes still running (spawn)

  constructor(opts = {}) {
    const o = normalizeOptions(opts);
    this.#o = o;
    this.#capWarnings = !(opts && opts[NO_CAP_WARNING] === true);
    // The in-box init runs every box (README, "Fast boxes"); the project's
    // tests can ask for 0.1.1's argv, the workload as the box's command, to
    // compare the two (test/41).
    const asked = opts ? opts[ENGINE] : undefined;
    this.#engine = asked === "direct" ? "direct" : "init";
    this.#idleMs = opts && typeof opts[POOL_IDLE_MS] === "number" ? opts[POOL_IDLE_MS] : IDLE_MS;
    this.#kernelStartMinMs = opts && Number.isFinite(opts[KERNEL_START_MIN_MS]) &&
      opts[KERNEL_START_MIN_MS] >= 0 ? opts[KERNEL_START_MIN_MS] : KERNEL_START_MIN_DEFAULT_MS;
    // The public fields the reference exposes, with its defaults.
    this.image = o.image;
    this.setup = o.setup;
    this.workspace = o.workspace;
    this.memoryMb = o.memoryMb;
    this.cpus = o.cpus;
    this.pids = o.pids;
    this.timeoutS = o.timeoutS;
    this.network = o.network;
    this.egressAllow = opts.egressAllow ?? null;
    this.mounts = opts.mounts ?? null;
    this.profiles = opts.profiles ?? null;
    this.env = opts.env ?? null;
    this.maxOutputBytes = o.maxOutputBytes;
    this.onStdout = o.onStdout;
    this.onStderr = o.onStderr;
    this.enforceLimits = o.enforceLimits;
    this.depsReadonly = o.depsReadonly;
    // Additions to 0.1.1.
    this.capDrop = o.capDrop;
    this.securityProfile = o.securityProfile;
    this.apparmor = o.apparmor;
    this.requireLimits = o.requireLimits;
    this.trackFiles = o.trackFiles;
    this.prewarm = o.prewarm;
    this.results = o.results;
    this.#kern = findKern();
  }

  /** The options as the public fields now say, for the fields in `names`:
   * normalized again only when a field changed since the last time (a
   * shallow look at arrays and objects too, which 0.1.1 programs may change
   * in place): the calls of a session mostly see the same fields. */
  #current(names) {
    const c = this.#seen.get(names);
    if (c !== undefined && names.every((k) => sameAsSnapshot(this[k], c.snap[k]))) return { ...c.o };
    const o = this.#normalizeFields(names);
    this.#seen.set(names, { snap: Object.fromEntries(names.map((k) => [k, snapshotOf(this[k])])), o });
    return { ...o };
  }

  #normalizeFields(names) {
    let now;
    try {
      now = normalizeOptions(Object.fromEntries(names.map((k) => [k, this[k]])));
    } catch (e) {
      // The constructor accepted its options: a field set on the object since is at fault.
      if (!(e instanceof SandboxError)) throw e;
      throw sandboxError(e.code, e.message.replace(/^options\./, "sandbox."));
    }
    const o = { ...this.#o };
    for (const k of names) o[k] = now[k];
    if (o.egressAllow.length > 0 && o.network)
      throw sandboxError("ERR_SANDBOX_INVALID_OPTION", "sandbox.network cannot be true on a Sandbox with egressAllow: " +
        "egressAllow keeps the box on its own network with a domain allowlist");
    return o;
  }

  /** Creates or checks the workspace and runs `setup`. With `signal` (an
   * addition to 0.1.1), aborting kills the setup box and tears down what the
   * open() made; an open() that joined one already running stops waiting. */
  async open(opts) {
    if (opts !== undefined && opts !== null && (typeof opts !== "object" || Array.isArray(opts)))
      throw sandboxError("ERR_SANDBOX_INVALID_OPTION", `open() options must be an object, got ${describe(opts)}`);
    const signal = signalOption(opts ?? {}, "open()");
    if (signal !== null && signal.aborted) throw abortError(signal);
    if (this.#closingP !== null) await raceAbort(this.#closingP.catch(() => {}), signal);
    if (this.#s !== null && this.#s.ready) return this;
    if (this.#opening === null) {
      this.#opening = this.#open(signal).finally(() => {
        this.#opening = null;
      });
      await this.#opening;
    } else {
      await raceAbort(this.#opening, signal);
    }
    return this;
  }

  async #open(signal) {
    const closes = this.#closes;
    const o = this.#current(OPEN_TIME_FIELDS);
    const ws = o.workspace === null ? await makeTempWorkspace()
      // As in 0.1.1, the directory must already exist and be given by an
      // absolute path: it is checked before anything is made, so a refused
      // path (say one under ~/.ssh) never gets directories created in it.
      : checkHostSource(o.workspace, "workspace");
    const own = o.workspace === null;
    const held = { kernHandle: null, root: null };
    let st;
    try {
      for (const m of o.mounts) {
        // A source the box can write could be swapped for a symlink to /etc
        // between our check and kern's bind (A28).
        if (within(m.src, ws) || within(ws, m.src))
          throw new MountRefused(
            `mount source ${JSON.stringify(m.src)} overlaps the workspace, which boxes can ` +
              "write; mount a directory outside it");
      }
      if (within(this.#kern, ws))
        throw sandboxError("ERR_SANDBOX_INVALID_OPTION", `the kern binary ${JSON.stringify(this.#kern)} lies inside the ` +
          "workspace, where a box could replace it");
      held.kernHandle = openKern(this.#kern);
      held.initDir = this.#engine === "init" ? init.initDir(os.tmpdir()) : null;
      try {
        held.root = binding.wsOpen(ws, own);
        const watch = o.trackFiles ? binding.wsWatch(held.root) : null;
        st = new Session({ ws, ownWs: own, ...held, watch, tmpdir: os.tmpdir() });
      } catch (e) {
        throw sandboxErrorFromSystem(`cannot open the workspace ${JSON.stringify(ws)}`, e);
      }
    } catch (e) {
      if (held.root !== null) binding.wsClose(held.root);
      if (held.kernHandle !== null) binding.wsClose(held.kernHandle);
      if (own) await fs.promises.rmdir(ws).catch(() => {});
      throw e;
    }
    if (st.initDir !== null)
      st.pool = new Pool((kind) => this.#startPrewarmed(st, kind), this.#idleMs);
    st.kernEnvFor(o.enforceLimits);
    this.#s = st;
    const closedMeanwhile = () => this.#closes !== closes;
    // Made only when needed: capturing an Error's stack is not free, and open() is on a call's path.
    let closed = null;
    const closedError = () =>
      (closed ??= sandboxError("ERR_SANDBOX_CLOSED", "the Sandbox was closed while open() was still running"));
    try {
      if (closedMeanwhile()) throw closedError();
      if (signal !== null && signal.aborted) throw abortError(signal);
      if (o.setup) await this.#runSetup(st, o.setup, signal);
      if (closedMeanwhile()) throw closedError();
      if (signal !== null && signal.aborted) throw abortError(signal);
      this.#refillPool(st, "python"); // the kind before any call
    } catch (e) {
      // Leave nothing behind: open() failed, so no close() will follow.
      if (this.#s === st) this.#s = null;
      await st.teardown();
      // A setup box that close() killed failed because of it: say that.
      if (closedMeanwhile() && e !== closed) closedError().cause = e;
      throw closedMeanwhile() ? closedError() : e;
    }
    st.ready = true;
  }

  /** Kills the session's boxes and deletes the workspace if open() created
   * it. Idempotent; a close() during open() makes that open() fail. */
  /** `await using sbx = ...` closes the Sandbox (an addition to 0.1.1). */
  async [ASYNC_DISPOSE]() {
    await this.close();
  }

  async close() {
    if (this.#closingP === null) {
      this.#closingP = (async () => {
        this.#closes++;
        const opening = this.#opening;
        if (opening !== null) {
          // A setup box is killed now, not waited for.
          if (this.#s !== null) binding.cancelGroup(this.#s.group);
          await opening.catch(() => {});
        }
        const st = this.#s;
        this.#s = null;
        if (st !== null) await st.teardown();
      })().finally(() => {
        this.#closingP = null;
      });
    }
    await this.#closingP;
  }

  /** The open session a call runs on, or a SandboxError that says why not. */
  #session() {
    const st = this.#s;
    if (st !== null && st.ready) return st;
    if (this.#closes > 0 && this.#opening === null)
      throw sandboxError("ERR_SANDBOX_CLOSED", "the Sandbox is closed: open() it again, or use a new one");
    throw sandboxError("ERR_SANDBOX_NOT_OPEN", "open the Sandbox first: `await sandbox.open()` (or use withSandbox())");
  }

  async #runSetup(st, cmd, signal) {
    // The only network-on box: `pip install X` lands in the workspace's .deps.
    let shellCmd = cmd;
    const trimmed = cmd.trim();
    if (trimmed.startsWith(PIP_INSTALL)) {
      shellCmd = "pip install --target /workspace/.deps --no-cache-dir " +
        `--disable-pip-version-check ${trimmed.slice(PIP_INSTALL.length)}`;
    }
    const r = await this.#spawn(st, ["sh", "-c", shellCmd], { isSetup: true, call: { signal } });
    if (!r.success) {
      const detail = escapeControl((r.stderr || r.stdout).trim().slice(0, 400));
      const why = r.fault ? `${r.fault.type}: ${escapeControl(r.fault.message)}` : `exit ${r.exitCode}`;
      throw sandboxError("ERR_SANDBOX_SETUP_FAILED", `setup failed (${why}): ${detail}`);
    }
  }

  async #depsDirExists(st, o) {
    if (!o.depsReadonly) return false;
    try {
      const stat = await fs.promises.lstat(path.join(st.ws, DEPS_DIR));
      return stat.isDirectory();
    } catch {
      return false;
    }
  }

  /** The session's options as the public fields say now, with the call's
   * own overrides (CallOptions) on top. */
  #callOptions(call) {
    const o = this.#current(CALL_FIELDS);
    if (call.timeoutS !== undefined) o.timeoutS = call.timeoutS;
    if (call.env !== undefined) o.env = { ...o.env, ...call.env };
    if (call.onStdout !== undefined) o.onStdout = call.onStdout;
    if (call.onStderr !== undefined) o.onStderr = call.onStderr;
    if (call.results !== undefined) o.results = call.results;
    if (call.proc !== undefined) o.maxOutputBytes = call.proc.headBytes; // its output is streamed
    if (call.publish !== undefined) {
      if (o.network)
        throw sandboxError("ERR_SANDBOX_INVALID_OPTION", "ports are published from a box without network: " +
          "they cannot be used with network: true (kern refuses -p with --net)");
      o.publish = call.publish;
    }
    return o;
  }

  /** A call's `kern box` flags (its argv between the box's name and the
   * command), env file and keys. The same for every call while the public
   * fields stay as they were (the options cache's entry is the same object)
   * and the call overrides none of them: made once, then reused, off a
   * prewarmed call's path. */
  #boxFlags(st, o, call, isSetup, depsDirExists) {
    const entry = !isSetup && !depsDirExists && call.timeoutS === undefined &&
      call.env === undefined && call.publish === undefined ? this.#seen.get(CALL_FIELDS) : undefined;
    const f = this.#flags;
    if (entry !== undefined && f !== null && f.entry === entry && f.st === st) return f;
    const envFile = envFileContent(o.env);
    const { argv, timeoutS, flagsKey } = boxArgv(o, {
      kern: this.#kern, name: "", workspace: st.ws, isSetup, depsDirExists,
      envFd: binding.ENV_FD, command: [], initDir: st.initDir,
    });
    const made = { entry, st, flags: argv.slice(3), envFile, timeoutS, flagsKey,
      poolKey: this.#poolKey(o, flagsKey, envFile),
      capKey: `${this.#kern}\0${o.enforceLimits}\0${o.image}` };
    if (entry !== undefined) this.#flags = made;
    return made;
  }

  /** The pool's key for boxes started with these options (see Pool). */
  #poolKey(o, flagsKey, envFile) {
    return `${flagsKey}\0${o.enforceLimits}\0${envFile.toString("latin1")}`;
  }

  /** Starts one prewarmed box of kind with the options the public fields
   * say now: parked in the engine until a call claims it. */
  #startPrewarmed(st, kind) {
    if (!st.live || st.pool === null) return null;
    let o;
    try {
      o = this.#callOptions({});
    } catch {
      return null; // a field set to a bad value: the next call says so
    }
    // kern's backstop covers the idle limit and then a call of timeoutS; a
    // Python box's, a kernel's life too (sbx.kernel() may take it).
    const parked = { ...o, timeoutS: o.timeoutS + IDLE_MS / 1000 };
    if (kind === "python") parked.timeoutS = Math.max(parked.timeoutS, KERNEL_BACKSTOP_S - 5);
    const name = boxName();
    const envFile = envFileContent(o.env);
    const { argv, timeoutS, flagsKey } = boxArgv(parked, {
      kern: this.#kern, name, workspace: st.ws, isSetup: false,
      depsDirExists: depsDirExistsSync(st, o), envFd: binding.ENV_FD,
      command: init.waitingCommand(kind, o.apparmor, kind === "python"
        ? bootcache.bootBin(st.initDir, this.#kern, o, setImmediate, runPackageBox) : null),
      initDir: st.initDir,
    });
    const parkKey = newCancelKey();
    let started;
    try {
      // A box that waits for an argv shares its channel: the call that takes
      // it writes the argv there itself (#spawn). (Bench switch claim-send
      // off: none is shared, and the engine's thread sends every claim's argv.)
      started = parkBox(st, { kern: this.#kern, argv, enforceLimits: o.enforceLimits, envFile,
        stopArgv: [this.#kern, "stop", name], timeoutMs: timeoutS * 1000,
        maxOutputBytes: o.maxOutputBytes, init: { earlyCap: -1, resultMax: resultMax(o), run: null } },
      { parkKey, shareChannel: kind !== "python" && !CLAIM_SEND_OFF });
    } catch {
      return null; // the engine is shutting down (process.exit): no box ahead, calls start cold
    }
    const { channel, done } = started;
    st.trackParked(done);
    // channel: the handle still holds this thread's copy of the box's channel.
    const box = { parkKey, parked: started.parked, kind, key: this.#poolKey(o, flagsKey, envFile),
      backstopAt: Date.now() + (Math.ceil(timeoutS) + 5) * 1000, channel, done };
    // Ours until a call sends on it, or the box ends (claimed, dropped, died).
    done.then(() => closeChannel(box), () => closeChannel(box));
    return box;
  }

  /** After a call: the pool back to `prewarm` boxes of the kind used last. */
  #refillPool(st, kind) {
    if (st.pool === null || !st.live) return;
    let o;
    try {
      o = this.#callOptions({});
    } catch {
      return;
    }
    if (o.prewarm === 0) {
      st.pool.refill(0, kind, null);
      return;
    }
    // (The key masks kern's backstop, which a parked box has longer.)
    const { poolKey } = this.#boxFlags(st, o, {}, false, depsDirExistsSync(st, o));
    st.pool.refill(o.prewarm, kind, poolKey);
  }

  /**
   * One box for one call. command: the argv the workload runs. kind: the
   * pool's kind of box for the call ("python", "exec"), or null (setup).
   * code: for a Python call, the code, which runs in the interpreter the box
   * starts with (the interpreter protocol) when the call collects rich
   * results or is too long for argv, or when it claims a prewarmed Python;
   * otherwise command runs as it is (`python3 -c CODE`, 0.1.1's argv).
   * cold: never claim a prewarmed box (the retry of a claim that never ran).
   */
  async #spawn(st, command, { isSetup = false, call = { signal: null }, kind = null, code = null,
    cold = false } = {}) {
    for (const part of command) {
      if (typeof part !== "string" || part.includes("\0"))
        throw sandboxError("ERR_SANDBOX_INVALID_ARG", "the command and code must be strings with no NUL byte");
    }
    const o = this.#callOptions(call);
    const { signal } = call;
    const feed = call.feed ?? null; // its stdin (#withStdin), the same across a cold retry
    const proc = call.proc ?? null; // a process's control (lib/process.js), or null for a call
    if (signal !== null && signal.aborted) throw abortError(signal);
    const out = await st.withRoot(async () => {
      const withInit = st.initDir !== null;
      if (proc !== null && proc.tty !== null && !withInit)
        throw sandboxError("ERR_SANDBOX_NOT_SUPPORTED", "a terminal (pty) needs the in-box init (ks-init), " +
          "which this install has not: reinstall kern-sandbox so that its build makes it");
      // A Python call's code for the interpreter (RUN), whichever box runs it.
      const run = withInit && code !== null && kind === "python"
        ? { code: Buffer.from(code, "utf8"), results: o.results } : null;
      const viaInterp = run !== null && (o.results || run.code.length > INLINE_CODE_MAX);
      // (No await unless depsReadonly: a call's path has no turn to spare.)
      const depsDirExists = o.depsReadonly ? await this.#depsDirExists(st, o) : false;
      const { flags, envFile, timeoutS, poolKey, capKey } =
        this.#boxFlags(st, o, call, isSetup, depsDirExists);
      // The session may have been closed during the awaits above; its group
      // is then forgotten once its calls settle, so refuse here (before a
      // claim's argv can reach its box).
      if (!st.live)
        throw sandboxError("ERR_SANDBOX_CLOSED", "the Sandbox was closed before this call's box could start");
      if (signal !== null && signal.aborted) throw abortError(signal);
      // The in-box init's terms: settle at its report when kern's cap byte
      // is known, and run in a prewarmed box started with these very options.
      let initTerms = null;
      let ready = null; // the prewarmed box the call takes, if any
      let claim = null; // then the claim's own terms: { claimOnly, spec, begun }
      if (withInit) {
        // (By image too: the double answers by its image name; a real kern
        // answers the same for all, and one more box per image learns it.)
        initTerms = { earlyCap: o.memoryMb === null ? 0 : (capBytes.get(capKey) ?? -1),
          resultMax: resultMax(o), run: viaInterp ? run : null };
        // A Python call with stdin runs cold: a prewarmed interpreter's
        // stdin is /dev/null already, and its code comes on RUN, which
        // carries no descriptor (docs/plan-processes.md, section 2).
        // A terminal's box is cold: its stdout is the pty (the engine's
        // ttyFd), where a parked box's is kern's pipe.
        ready = kind === null || isSetup || cold || (feed !== null && kind === "python") ||
          (proc !== null && proc.tty !== null) ? null
          : st.pool.take(kind, poolKey, timeoutS === null ? Infinity : (Math.ceil(timeoutS) + 5) * 1000);
        if (ready !== null) {
          claim = { claimOnly: false, spec: null, begun: null };
          if (kind === "python") {
            // Its RUN goes out when the engine takes the box over; a box
            // gone by then never saw the code, and the call runs cold.
            initTerms.run = run;
            claim.claimOnly = true;
          } else {
            sendSpec(ready, command, claim, st.watch, feed !== null || proc !== null, proc !== null);
          }
        }
      }
      // A claimed exec box has its argv by now: the rest is off its path.
      // A claim only takes the parked box over (or finds it gone, and the
      // call is retried or settled below): it never starts a box of this
      // request, so none of kern's argv, env or stop argv is made for it.
      // The box may be waiting for this thread's CPU meanwhile (a socket's
      // wakeup is a sync one): the less JS and conversion here, the sooner
      // it runs.
      const adopting = claim !== null && claim.claimOnly;
      let compileBoot = null; // starts the boot's compile once this call settles
      let argv = NOTHING;
      let stopArgv = null;
      if (!adopting) {
        const name = boxName();
        const coldCommand = !withInit ? command
          : viaInterp ? init.interpCommand(o.apparmor,
            bootcache.bootBin(st.initDir, this.#kern, o, (go) => (compileBoot = go), runPackageBox),
            feed !== null)
            : init.coldCommand(command, o.apparmor, feed !== null || proc?.stdin === true, proc !== null,
              proc?.tty ? { keepTerm: Object.hasOwn(o.env, "TERM") } : null);
        argv = [this.#kern, "box", name, ...flags, ...coldCommand];
        stopArgv = [this.#kern, "stop", name];
      }
      // An abort kills this box alone, through the engine's timeout path; a
      // process's kill() signals it by the same key.
      const cancelKey = signal !== null || proc !== null ? newCancelKey() : 0;
      // A process's stdin pipe or terminal, this attempt's.
      const { stdinFd, ttyFd } = proc?.attach(cancelKey) ?? NO_PROC_FDS;
      let cancelled = false;
      const dispose = onAbort(signal, () => {
        cancelled = true;
        binding.cancelGroup(cancelKey);
      });
      let raw;
      try {
        // One native call: the engine scans the workspace before and after
        // the box on its own thread, spawns, supervises and kills.
        const spec = { kern: this.#kern, argv, enforceLimits: o.enforceLimits,
          envFile, stopArgv, timeoutMs: timeoutS === null ? NO_DEADLINE_MS : timeoutS * 1000,
          maxOutputBytes: o.maxOutputBytes, onStdout: o.onStdout, onStderr: o.onStderr,
          watch: st.watch, cancelKey, init: initTerms, stdin: feed?.handle ?? null,
          onStdin: feed?.onStdin ?? null, onStarted: withInit ? proc?.onStarted ?? null : null,
          flow: proc !== null, handStdout: proc !== null && proc.tty === null && !HAND_STDOUT_OFF, stdinFd, ttyFd };
        const settled = ready !== null ? claimBox(st, ready.parked, spec, claim) : startBox(st, spec);
        feed?.start();
        raw = await settled;
      } catch (e) {
        if (signal !== null && signal.aborted) throw abortError(signal);
        if (e.code === "ECANCELED")
          throw sandboxError("ERR_SANDBOX_CLOSED", "the Sandbox was closed before this call's box could start");
        throw sandboxErrorFromSystem(`could not run kern (${this.#kern})`, e, "ERR_SANDBOX_KERN_NOT_FOUND");
      } finally {
        dispose();
        // Settled: no box of this key is pending or live any more.
        if (cancelled) binding.forgetGroup(cancelKey);
        // Off the call's path: the caller has its result first.
        if (kind !== null && !isSetup) setImmediate(() => this.#refillPool(st, kind));
        if (compileBoot !== null) setImmediate(compileBoot);
      }
      // The claim's argv went to a box that ended before the engine could
      // take it over: the call ran there if that box's init took the argv.
      if (raw.missed) {
        const parked = await ready.done.catch(() => null);
        if (parked === null || !parked.taken) return null;
        raw = parked;
      }
      if (initTerms !== null && o.memoryMb !== null && raw.startedCount >= 2 && !raw.settledEarly)
        capBytes.set(capKey, startedByte(raw, 1)); // a fact of this host and kern
      // A prewarmed box that ended before it took the call (it died while
      // it waited) never ran it: the call runs cold instead.
      if (raw.prewarmed && !raw.taken && !(signal !== null && signal.aborted)) return null;
      return { raw, timeoutS };
    });
    if (out === null)
      return this.#spawn(st, command, { isSetup, call, kind, code, cold: true });
    return this.#shape(st, out.raw, out.timeoutS, o, call);
  }

  /** The ExecutionResult of a box's raw outcome. */
  #shape(st, raw, timeoutS, o, { signal, proc }) {
      // Decoded by the engine, without a copy for ASCII; a process's are its
      // streams' tails (lib/process.js), which kern's own lines are in too.
      const { stdout, stderr } = proc === undefined ? raw : proc.tails();
      if (raw.prewarmed) st.prewarmedRuns++;
      // Aborted before the call settled: it rejects, with what the box printed.
      if (signal !== null && signal.aborted) throw abortError(signal, { stdout, stderr });
      const exitCode = exitCodeOf(raw);
      const fault = classify(raw, { kern: this.#kern, timeoutS, stderr, exitCode });
      const limits = limitsOf(raw);
      if (limits !== null && limits.memory === "not_enforced" && this.#capWarnings)
        warnUnenforced("memory", o.memoryMb);
      return new ExecutionResult({
        stdout, stderr, exitCode,
        durationMs: Math.round(raw.durationMs * 1000) / 1000,
        fault,
        // No list when the workspace could not be scanned (a box can make it
        // too big or too deep to walk): the run's own result still stands.
        files: raw.files === null ? [] : unpackChanges(raw.files),
        truncated: raw.stdoutDiscarded > 0 || raw.stderrDiscarded > 0 || raw.resultsDropped === true,
        usage: usageOf(raw),
        limits,
        results: raw.results === undefined ? [] : resultsOf(raw.results),
        missedOutput: missedOutputOf(raw),
      });
  }

  /** fn() with the call's stdin feed (call.stdin, lib/stdin.js) on
   * call.feed, stopped once the call settles. */
  async #withStdin(call, fn) {
    if (call.stdin === undefined) return fn();
    call.feed = new StdinFeed(call.stdin);
    try {
      return await fn();
    } finally {
      call.feed.stop();
    }
  }

  /** Runs a snippet in a fresh, network-off box on the workspace. opts:
   * `language`, and the per-call options of CallOptions (additions to 0.1.1). */
  async runCode(code, opts) {
    const call = normalizeCallOptions(opts, "runCode()");
    return this.#withStdin(call, () => this.#runCode(code, opts, call));
  }

  async #runCode(code, opts, call) {
    const language = opts?.language ?? "python";
    const st = this.#session();
    if (typeof code !== "string")
      throw sandboxError("ERR_SANDBOX_INVALID_ARG", `code must be a string, got ${describe(code)}`);
    const runner = Object.prototype.hasOwnProperty.call(RUNNERS, language) ? RUNNERS[language] : null;
    if (runner === null)
      throw sandboxError("ERR_SANDBOX_INVALID_ARG", 
        `unsupported language ${describe(language)}: use "python", "bash" or "node"`);
    // Python under the init runs in the box's interpreter, whatever the
    // code's length: no file for it in the workspace.
    if (Buffer.byteLength(code, "utf8") <= INLINE_CODE_MAX ||
        (language === "python" && st.initDir !== null)) {
      return this.#spawn(st, [runner.argv0, runner.evalFlag, code],
        { call, kind: language === "python" ? "python" : "exec", code });
    }
    // Too long for argv: run it from a private file, removed afterwards.
    if (code.includes("\0")) throw sandboxError("ERR_SANDBOX_INVALID_ARG", "code must not contain a NUL byte");
    if (call.signal !== null && call.signal.aborted) throw abortError(call.signal);
    const cell = `.cell-${crypto.randomBytes(6).toString("hex")}.${runner.ext}`;
    await this.#writeFileIn(st, cell, code);
    try {
      return await this.#spawn(st, [runner.argv0, `/workspace/${cell}`], { call });
    } finally {
      await fs.promises.unlink(path.join(st.ws, cell)).catch(() => {});
    }
  }

  /** Runs an argv array (never a shell string) in a fresh box. opts: the
   * per-call options of CallOptions (additions to 0.1.1). */
  async run(command, opts) {
    const call = normalizeCallOptions(opts, "run()");
    const st = this.#session();
    if (typeof command === "string")
      throw sandboxError("ERR_SANDBOX_INVALID_ARG", 'run() takes an argv array, not a string: use run(["sh", "-c", "..."])');
    if (!Array.isArray(command) || command.length === 0)
      throw sandboxError("ERR_SANDBOX_INVALID_ARG", "run() needs a non-empty array of strings");
    return this.#withStdin(call, () => this.#spawn(st, command, { call, kind: "exec" }));
  }

  /** Addition to 0.1.1: starts argv in a fresh box of its own and resolves,
   * once its exec succeeded, to a BoxProcess (lib/process.js). */
  spawn(command, opts) {
    return spawnProcess(this.#live, command, opts, (argv, call) => this.#runProcess(argv, call));
  }

  /** Addition to 0.1.1: spawn() of code in a language (python, bash, node). */
  spawnCode(code, opts) {
    return spawnCodeProcess(this.#live, code, opts, (argv, call) => this.#runProcess(argv, call));
  }

  /** Addition to 0.1.1: the processes of this Sandbox still running. */
  processes() {
    return [...this.#live];
  }

  async #runProcess(command, call) {
    const st = this.#session();
    return this.#withStdin(call, () => this.#spawn(st, command, { call, kind: "exec" }));
  }

  /** Writes data to a workspace-relative path, atomically, never through a symlink. */
  async writeFile(rel, data) {
    return this.#writeFileIn(this.#session(), rel, data);
  }

  async #writeFileIn(st, rel, data) {
    const p = checkRelPath(rel);
    let buf;
    if (Buffer.isBuffer(data)) buf = data;
    else if (ArrayBuffer.isView(data)) buf = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    else buf = Buffer.from(String(data), "utf8");
    try {
      await st.withRoot((root) => binding.wsWriteFile(root, p, buf));
    } catch (e) {
      throw sandboxErrorFromSystem(`cannot write ${JSON.stringify(rel)}`, e);
    }
  }

  /** Reads a regular file at a workspace-relative path, never through a
   * symlink. opts.maxBytes (an addition to 0.1.1): a larger file is refused
   * (code EFBIG) before any of it is read. */
  async readFile(rel, opts) {
    const maxBytes = readMaxOption(opts);
    const st = this.#session();
    const p = checkRelPath(rel);
    try {
      return await st.withRoot((root) => binding.wsReadFile(root, p, maxBytes));
    } catch (e) {
      if (e.code === "EFBIG" && maxBytes < READ_MAX)
        throw sandboxErrorFromSystem(`cannot read ${JSON.stringify(rel)}: it is larger than ` +
          `maxBytes (${maxBytes} bytes); raise maxBytes or read a smaller file`, e);
      throw sandboxErrorFromSystem(`cannot read ${JSON.stringify(rel)}`, e);
    }
  }

  /** Lists regular files (not .deps) under the workspace or one of its directories. */
  async listFiles(subdir = "") {
    const st = this.#session();
    // 0.1.1 listed the whole workspace for any falsy subdir (null included).
    const p = checkRelPath(subdir || "", { allowRoot: true, what: "subdir" });
    let entries;
    try {
      entries = await st.withRoot((root) => binding.wsList(root, p));
    } catch (e) {
      // As in 0.1.1, a directory that is not there (yet) has no files: a
      // missing path, or one that runs into a file. A symlink is still an
      // error: 0.1.1 followed it out of the workspace.
      if (e.code === "ENOENT" || e.code === "ENOTDIR") return [];
      throw sandboxErrorFromSystem(`cannot list ${JSON.stringify(subdir)}`, e);
    }
    return entries.map(([file, size]) => ({ path: file, size, change: "created" }));
  }

  /**
   * A Python kernel in a box of its own with this session's options, whose
   * state persists across its cells (lib/kernel.js). opts: isolation
   * ("shared" or "fork"), checkpoints (fork mode, default 8), signal. It
   * takes a prewarmed Python box when one is ready.
   */
  async kernel(opts) {
    const ko = kernelOptions(opts);
    const st = this.#session();
    if (ko.signal !== null && ko.signal.aborted) throw abortError(ko.signal);
    if (st.initDir === null)
      throw sandboxError("ERR_SANDBOX_NOT_SUPPORTED", "kernel() needs the in-box init, which is not built here: " +
        "reinstall the package (npm rebuild kern-sandbox)");
    const capKey = () => `${this.#kern}\0${this.enforceLimits}\0${this.image}`;
    const host = {
      startBox: (key, claim) => this.#startKernelBox(st, key, claim),
      startMinMs: this.#kernelStartMinMs,
      options: (call) => {
        if (!st.live) throw sandboxError("ERR_SANDBOX_CLOSED", "the Sandbox is closed, and its kernels with it");
        return this.#callOptions(call);
      },
      limits: () => {
        const cap = capBytes.get(capKey());
        return cap === undefined ? null : limitsOf({ startedCount: 2, startedWord: 1 | (cap << 8) });
      },
      killedFault: () => (capBytes.get(capKey()) === 1
        ? { type: "killed", oom: true, message: "the cell was killed (SIGKILL) with the memory " +
          "cap enforced: out of memory (raise memoryMb, or use less); the state from before it stands" }
        : { type: "killed", oom: false, message: "the cell was killed (SIGKILL), not by this " +
          "package; the state from before it stands" }),
    };
    const k = new Kernel(host, ko);
    await k.start(ko.signal);
    return k;
  }

  /** A kernel's box: a prewarmed Python box if claim and one is ready,
   * else a cold one; either way an interpreter the kernel start turns into
   * a kernel. Tracked like a prewarmed box: it dies with the session. */
  #startKernelBox(st, key, claim) {
    const o = this.#callOptions({});
    const name = boxName();
    const envFile = envFileContent(o.env);
    let compileBoot = null; // once the kernel is up, as the pool's refill
    const { argv, flagsKey } = boxArgv({ ...o, timeoutS: KERNEL_BACKSTOP_S - 5 }, {
      kern: this.#kern, name, workspace: st.ws, isSetup: false,
      depsDirExists: depsDirExistsSync(st, o), envFd: binding.ENV_FD,
      command: init.interpCommand(o.apparmor,
        bootcache.bootBin(st.initDir, this.#kern, o, (go) => (compileBoot = go), runPackageBox)),
      initDir: st.initDir,
    });
    const ready = claim && st.pool !== null
      ? st.pool.take("python", this.#poolKey(o, flagsKey, envFile), 3600 * 1000) : null;
    const box = startKernel(st, { kern: this.#kern, argv, enforceLimits: o.enforceLimits, envFile,
      stopArgv: [this.#kern, "stop", name], timeoutMs: KERNEL_BACKSTOP_S * 1000,
      maxOutputBytes: o.maxOutputBytes, cancelKey: key,
      init: { earlyCap: -1, resultMax: resultMax(o), run: null } },
    { kernelKey: key, claim: ready !== null ? ready.parked : null });
    st.trackParked(box, { runsCode: true });
    // The pool refills once the kernel is up: a box started meanwhile would
    // take the CPU the kernel's start needs.
    return { box, claimed: ready !== null, refill: () => this.#refillPool(st, "python"),
      started: () => compileBoot?.() };
  }

  /** For the project's tests and bench (lib/internal.js). */
  [POOL_STATS]() {
    const st = this.#s;
    if (st === null || st.pool === null) return null;
    return { prewarmedRuns: st.prewarmedRuns, ready: st.pool.ready.length, workspace: st.ws };
  }

  /** Writes a .tar.gz checkpoint of the workspace to dest (opt-in, see README). */
  snapshot(dest) {
    const st = this.#session();
    snapshots.requireOptIn();
    snapshots.snapshot(st.root, st.ws, dest);
  }

  /** Extracts a checkpoint into the workspace, vetting every member first. */
  restore(src) {
    const st = this.#session();
    snapshots.requireOptIn();
    snapshots.restore(st.root, src);
  }
}

const NOTHING = Object.freeze([]);
const NO_PROC_FDS = Object.freeze({ stdinFd: null, ttyFd: null });


// kern's cap byte by kern and enforceLimits: whether a memory cap binds is a
// fact of the host, the same for every box; known once one box has ended.
const capBytes = new Map();

function depsDirExistsSync(st, o) {
  if (!o.depsReadonly) return false;
  try {
    return fs.lstatSync(path.join(st.ws, DEPS_DIR)).isDirectory();
  } catch {
    return false;
  }
}

/** The bytes of rich results a call keeps: its maxOutputBytes, within what
 * the interpreter protocol counts (32 bits). */
function resultMax(o) {
  return Math.min(o.maxOutputBytes, 2 ** 32 - 1);
}

/** Opens a Sandbox, runs fn with it, and closes it even if fn throws. */
/** One box the package runs for itself (the boot's compile, lib/bootcache.js):
 * a Sandbox of opts, argv run once, closed whatever happens. */
async function runPackageBox(opts, argv) {
  const sbx = new Sandbox(opts);
  try {
    await sbx.open();
    return await sbx.run(argv);
  } finally {
    await sbx.close().catch(() => {});
  }
}

async function withSandbox(opts, fn) {
  if (typeof opts === "function") {
    fn = opts;
    opts = {};
  }
  if (typeof fn !== "function")
    throw sandboxError("ERR_SANDBOX_INVALID_ARG", "withSandbox needs a function: withSandbox([opts,] async (sbx) => ...)");
  const sbx = new Sandbox(opts);
  await sbx.open();
  try {
    return await fn(sbx);
  } finally {
    await sbx.close();
  }
}

/** One call in a throwaway session. opts: the Sandbox options, `language`
 * and `signal`, which covers the whole call: open(), the box and close(). */
async function runCode(code, opts = {}) {
  const { language = "python", signal, stdin, ...rest } = opts ?? {};
  const sig = signalOption({ signal }, "runCode()");
  // Checked before anything is started (the call checks it again).
  if (stdin !== undefined) normalizeCallOptions({ stdin }, "runCode()");
  // One call: a box started ahead would only be started for nothing.
  const sbx = new Sandbox({ prewarm: 0, ...rest });
  await sbx.open({ signal: sig });
  try {
    return await sbx.runCode(code, { language, signal: sig, stdin });
  } finally {
    await sbx.close();
  }
}

module.exports = { Sandbox, withSandbox, runCode };
