"use strict";

// The process tools (start_process, process_output, write_stdin,
// stop_process, list_processes) on the Sandbox's process API (sbx.spawn).
// Each process's stdout and stderr are read as they come into one log of
// the process's own, bounded (the oldest bytes go first, counted), whose
// byte offsets are the cursors process_output takes and returns: a model
// polls with the last next_cursor and gets only what is new.
const { EventEmitter } = require("events");
const { forModel, formatCount: n } = require("./bound");
const { errorResult } = require("./render");

const LOG_BYTES = 1024 * 1024; // kept per process, both streams together
const MAX_LIVE = 16;
const STOP_GRACE_S = 2;
const PORT_WAIT_S = 3;

/** Both streams of one process in arrival order, as byte offsets. */
class OutputLog extends EventEmitter {
  constructor(limit = LOG_BYTES) {
    super();
    this.limit = limit;
    this.chunks = []; // { stream, start, buf }
    this.base = 0; // offset of the oldest byte kept
    this.end = 0; // offset after the newest byte
    this.kept = 0;
  }

  add(stream, buf) {
    this.chunks.push({ stream, start: this.end, buf });
    this.end += buf.length;
    this.kept += buf.length;
    while (this.kept > this.limit && this.chunks.length > 0) {
      const first = this.chunks[0];
      const over = this.kept - this.limit;
      if (first.buf.length <= over) {
        this.chunks.shift();
        this.kept -= first.buf.length;
        this.base = first.start + first.buf.length;
      } else {
        first.buf = first.buf.subarray(over);
        first.start += over;
        this.kept -= over;
        this.base = first.start;
      }
    }
    this.emit("change");
  }

  /** Up to maxBytes from offset since: { stdout, stderr, from, next, dropped }. */
  read(since, maxBytes) {
    const from = Math.min(Math.max(since, this.base), this.end);
    const parts = { stdout: [], stderr: [] };
    let pos = from;
    for (const c of this.chunks) {
      const cEnd = c.start + c.buf.length;
      if (cEnd <= pos) continue;
      const take = Math.min(cEnd - pos, from + maxBytes - pos);
      if (take <= 0) break;
      parts[c.stream].push(c.buf.subarray(pos - c.start, pos - c.start + take));
      pos += take;
    }
    return { stdout: Buffer.concat(parts.stdout).toString(), stderr: Buffer.concat(parts.stderr).toString(),
      from, next: pos, dropped: Math.max(0, this.base - since) };
  }
}

class ProcessTable {
  /** sandbox: () => Promise<Sandbox>; limits: the reply caps. */
  constructor(sandbox, limits) {
    this.sandbox = sandbox;
    this.limits = limits;
    this.entries = new Map();
    this.seq = 0;
  }

  get(id) {
    return this.entries.get(id) ?? null;
  }

  unknown(id) {
    const ids = [...this.entries.keys()];
    return errorResult(`no process ${JSON.stringify(forModel(String(id)))}; ` +
      (ids.length ? `the processes are ${ids.join(", ")}` : "none was started (start_process starts one)"));
  }

  async start(args, signal) {
    const sbx = await this.sandbox();
    if (typeof sbx.spawn !== "function")
      return errorResult("this kern-sandbox has no process API (sbx.spawn); processes need a newer kern-sandbox");
    const live = [...this.entries.values()].filter((e) => e.exit === null).length;
    if (live >= MAX_LIVE) return errorResult(`${live} processes are running, the most this server keeps; stop_process one first`);
    const ports = args.ports ?? [];
    // ports only when asked for: a process API without published ports refuses the option.
    const proc = await sbx.spawn(["sh", "-c", args.command], { stdin: true, timeoutS: null, ...(ports.length ? { ports } : {}) });
    const id = `p${++this.seq}`;
    const entry = { id, command: args.command, proc, log: new OutputLog(), exit: null, ports };
    this.entries.set(id, entry);
    proc.stdout.on("data", (b) => entry.log.add("stdout", b));
    proc.stderr.on("data", (b) => entry.log.add("stderr", b));
    proc.once("exit", (r) => {
      entry.exit = r;
      entry.log.emit("change");
    });
    proc.wait().catch(() => {}); // its outcome is read from 'exit'; a rejection here is no one's to take
    if (signal.aborted) {
      proc.kill("SIGKILL");
      throw signal.reason;
    }
    const lines = [`started process ${id}: ${forModel(args.command)}`];
    for (const port of ports) {
      const pub = proc.ports[port];
      let state = "";
      try {
        await proc.waitForPort(port, { timeoutS: PORT_WAIT_S });
        state = " (listening)";
      } catch {
        state = ` (not listening yet after ${PORT_WAIT_S} s)`;
      }
      lines.push(`port ${port}: ${pub ? `${pub.url}${state}` : "not published: this kern-sandbox cannot publish ports"}`);
    }
    lines.push(`read its output with process_output (id "${id}")`);
    return { content: [{ type: "text", text: lines.join("\n") }] };
  }

  /** Resolves when the log moves past since, the process exits, waitS passes or signal aborts. */
  waitFor(entry, since, waitS, signal) {
    if (waitS <= 0 || entry.log.end > since || entry.exit !== null) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        entry.log.off("change", done);
        signal.removeEventListener("abort", done);
        resolve();
      };
      const timer = setTimeout(done, waitS * 1000);
      entry.log.on("change", done);
      signal.addEventListener("abort", done);
    });
  }

  statusOf(entry) {
    if (entry.exit === null) return "running";
    const r = entry.exit;
    return r.fault ? `exited: ${r.fault.type}: ${forModel(r.fault.message || "")}` : `exited with code ${r.exitCode}`;
  }

  render(entry, since) {
    const page = Math.max(1024, this.limits.replyChars - 1000);
    const out = entry.log.read(since, page);
    const lines = [`process ${entry.id}: ${this.statusOf(entry)}`];
    if (out.dropped > 0) lines.push(`[${n(out.dropped)} bytes before the oldest kept output were dropped]`);
    if (out.stdout) lines.push(`--- stdout ---\n${forModel(out.stdout)}`);
    if (out.stderr) lines.push(`--- stderr ---\n${forModel(out.stderr)}`);
    if (!out.stdout && !out.stderr) lines.push("(no new output)");
    const more = out.next < entry.log.end ? ` (more output waits: call again with since ${out.next})` : "";
    lines.push(`next_cursor: ${out.next}${more}`);
    const failed = entry.exit !== null && !entry.exit.success;
    return { content: [{ type: "text", text: lines.join("\n") }], ...(failed ? { isError: true } : {}) };
  }

  async output(args, signal) {
    const entry = this.get(args.id);
    if (entry === null) return this.unknown(args.id);
    const since = args.since ?? 0;
    await this.waitFor(entry, since, args.wait_s ?? 0, signal);
    return this.render(entry, since);
  }

  async write(args) {
    const entry = this.get(args.id);
    if (entry === null) return this.unknown(args.id);
    if (entry.exit !== null) return errorResult(`process ${entry.id} has exited: ${this.statusOf(entry)}`);
    const stdin = entry.proc.stdin;
    if (stdin === null || stdin.writableEnded) return errorResult(`process ${entry.id}'s stdin is closed`);
    const data = args.data ?? "";
    if (data.length > 0 && !stdin.write(data))
      await new Promise((resolve) => {
        stdin.once("drain", resolve);
        entry.proc.once("exit", resolve);
      });
    if (args.eof) stdin.end();
    return { content: [{ type: "text", text: `wrote ${n(Buffer.byteLength(data))} bytes to ${entry.id}` +
      `${args.eof ? " and closed its stdin" : ""}` }] };
  }

  async stop(args) {
    const entry = this.get(args.id);
    if (entry === null) return this.unknown(args.id);
    if (entry.exit === null) {
      entry.proc.kill("SIGTERM", { graceS: STOP_GRACE_S });
      await new Promise((resolve) => (entry.exit !== null ? resolve() : entry.proc.once("exit", resolve)));
    }
    const tail = Math.max(0, entry.log.end - Math.max(1024, this.limits.streamChars));
    const r = this.render(entry, tail);
    this.entries.delete(entry.id);
    delete r.isError; // stopped on request: its end is no failure of the model's
    return r;
  }

  list() {
    if (this.entries.size === 0) return { content: [{ type: "text", text: "(no processes)" }] };
    const lines = [...this.entries.values()].map((e) => {
      const urls = e.ports.map((p) => e.proc.ports[p]?.url).filter(Boolean);
      return `${e.id}\t${this.statusOf(e)}\t${forModel(e.command).slice(0, 200)}${urls.length ? `\t${urls.join(" ")}` : ""}`;
    });
    return { content: [{ type: "text", text: lines.join("\n") }] };
  }

  /** Kills every process (the server is closing). */
  killAll() {
    for (const e of this.entries.values()) {
      if (e.exit === null) {
        try {
          e.proc.kill("SIGKILL");
        } catch {
          /* gone meanwhile */
        }
      }
    }
    this.entries.clear();
  }
}

module.exports = { ProcessTable, OutputLog };
