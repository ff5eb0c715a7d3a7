"use strict";

// exec and writeStdin of the OpenAI Agents sandbox session, after the SDK's
// own UnixLocalSandboxSession: a command runs until it ends or until
// yieldTimeMs passes; one still running gets a numeric session id, and
// writeStdin feeds it (and polls it) later. Output is kept per process in
// arrival order, stdout and stderr together, up to 1 MiB unread.
const { ShellProcess, hasSpawn, features } = require("../adapter/shell");

const EXEC_YIELD_MS = 10000;
const WRITE_STDIN_YIELD_MS = 250;
const KEEP_CHARS = 1024 * 1024;

/** One process and what it printed since it was last read. */
class Tracked {
  constructor(proc, tty) {
    this.proc = proc;
    this.tty = tty;
    this.out = "";
    this.stdout = "";
    this.stderr = "";
    this.done = false;
    this.exitCode = null;
    this.ended = proc.wait().then((r) => {
      this.exitCode = r.exitCode;
    }, (e) => {
      this.exitCode = 1;
      this.out += `\n[kern-sandbox: ${e.message}]\n`;
    }).finally(() => {
      this.done = true;
    });
  }

  add(name, b) {
    const s = b.toString("utf8");
    this.out = keepTail(this.out + s);
    this[name] = keepTail(this[name] + s);
  }

  /** What came since the last call, and empties it. */
  take() {
    const r = { output: this.out, stdout: this.stdout, stderr: this.stderr };
    this.out = this.stdout = this.stderr = "";
    return r;
  }

  /** Resolves when the process ends or after ms, whichever is first. */
  async settle(ms) {
    let timer;
    await Promise.race([this.ended, new Promise((r) => (timer = setTimeout(r, ms)))]);
    clearTimeout(timer);
    // The last output callbacks of a box that just ended may still be on
    // their way: one turn of the event loop lets them in.
    if (this.done) await new Promise((r) => setImmediate(r));
  }
}

function keepTail(s) {
  return s.length > KEEP_CHARS ? s.slice(s.length - KEEP_CHARS) : s;
}

/** The processes of one session. */
class ProcessTable {
  #next = 1;
  #live = new Map(); // session id -> Tracked
  #all = new Set();

  constructor(internal) {
    this.internal = internal; // @openai/agents-core/sandbox/internal: formatExecResponse, truncateOutput
  }

  /** ports: box ports the process publishes (with sbx.spawn). */
  async exec(sbx, args, env, ports = []) {
    const start = Date.now();
    const tty = args.tty === true && (await features(sbx)).pty;
    let t = null;
    const proc = await ShellProcess.start(sbx, args.cmd, {
      workingDirectory: args.workdir, env, stdin: true, pty: tty ? { cols: 120, rows: 40 } : undefined,
      ports: hasSpawn(sbx) ? ports : [],
      timeoutS: hasSpawn(sbx) ? null : undefined,
      onStart: (p) => {
        p.on("stdout", (b) => t && t.add("stdout", b));
        p.on("stderr", (b) => t && t.add("stderr", b));
      },
    });
    t = new Tracked(proc, tty);
    this.#all.add(t);
    t.ended.finally(() => this.#all.delete(t));
    await t.settle(args.yieldTimeMs ?? EXEC_YIELD_MS);
    return this.#reply(t, start, args.maxOutputTokens, null);
  }

  async writeStdin(args) {
    const t = this.#live.get(args.sessionId);
    if (!t) {
      return this.internal.formatExecResponse({ output: `write_stdin failed: session not found: ${args.sessionId}`,
        wallTimeSeconds: 0, exitCode: 1 });
    }
    const start = Date.now();
    let chars = args.chars ?? "";
    if (!t.tty && chars.includes("\u0003")) {
      // Ctrl-C without a terminal: SIGINT where the process API has signals
      // (with the longest grace, so that a REPL that handles it lives on, as
      // after a Ctrl-C), else the box is killed.
      if (t.proc.proc) t.proc.proc.kill("SIGINT", { graceS: 3600 });
      else t.proc.kill();
      chars = chars.split("\u0003").join("");
    }
    if (chars.length > 0 && !t.done) await t.proc.write(Buffer.from(chars, "utf8"));
    await t.settle(args.yieldTimeMs ?? WRITE_STDIN_YIELD_MS);
    const r = this.#reply(t, start, args.maxOutputTokens, args.sessionId);
    return this.internal.formatExecResponse(r);
  }

  #reply(t, start, maxOutputTokens, id) {
    const taken = t.take();
    const out = this.internal.truncateOutput(taken.output, maxOutputTokens);
    const r = { output: out.text, stdout: taken.stdout, stderr: taken.stderr,
      wallTimeSeconds: (Date.now() - start) / 1000, originalTokenCount: out.originalTokenCount };
    if (t.done) {
      if (id !== null) this.#live.delete(id);
      r.exitCode = t.exitCode ?? 1;
    } else {
      if (id === null) {
        id = this.#next++;
        this.#live.set(id, t);
      }
      r.sessionId = id;
    }
    return r;
  }

  /** The newest running process that published box port `port`. */
  publisherOf(port) {
    return [...this.#all].reverse().find((t) => !t.done && t.proc.ports && t.proc.ports[port]);
  }

  killAll() {
    for (const t of this.#all) t.proc.kill();
    this.#live.clear();
  }
}

module.exports = { ProcessTable, EXEC_YIELD_MS };
