"use strict";

// Issue 34 item 1, the process tools. Their bookkeeping (cursors, the
// bounded log, stdin, stop, list) is tested here on a stand-in of the
// process API's BoxProcess (docs: the common shape of sbx.spawn), so it
// runs before sbx.spawn exists; the end-to-end tests through the SDK's
// Client need sbx.spawn (issue 33) and skip until it lands.
const assert = require("assert");
const http = require("http");
const { EventEmitter } = require("events");
const { PassThrough } = require("stream");
const h = require("./lib/harness");
const { connect, textOf } = require("./lib/mcp");
const { ProcessTable, OutputLog } = require("../lib/mcp/procs");
const { DEFAULT_LIMITS } = require("../lib/mcp/bound");
const { Sandbox } = require("..");

/** A stand-in BoxProcess: streams the test writes, kill() that exits. */
class FakeProc extends EventEmitter {
  constructor(argv, opts) {
    super();
    this.argv = argv;
    this.opts = opts;
    this.id = "fake";
    this.stdout = new PassThrough();
    this.stderr = new PassThrough();
    this.stdin = new PassThrough();
    this.stdinData = "";
    this.stdin.on("data", (b) => {
      this.stdinData += b;
    });
    this.ports = Object.fromEntries((opts.ports ?? []).map((p) => [p, { host: "127.0.0.1", port: 40000 + p,
      url: `http://127.0.0.1:${40000 + p}` }]));
    this.exited = false;
    this.killed = [];
  }

  wait() {
    return new Promise((resolve) => this.once("exit", resolve));
  }

  async waitForPort() {}

  exit(code) {
    this.exited = true;
    setImmediate(() => this.emit("exit", { exitCode: code, fault: null, success: code === 0 }));
  }

  kill(signal) {
    this.killed.push(signal);
    this.exit(143);
  }
}

function table() {
  const procs = [];
  const sbx = { spawn: async (argv, opts) => {
    const p = new FakeProc(argv, opts);
    procs.push(p);
    return p;
  } };
  const never = new AbortController().signal;
  return { t: new ProcessTable(async () => sbx, DEFAULT_LIMITS), procs, never };
}

const tick = () => new Promise((r) => setImmediate(r));

describe("MCP server: the process tools (issue 34)", function () {
  this.timeout(h.underSanitizer ? 120000 : 30000);

  describe("bookkeeping, on a stand-in BoxProcess", function () {
    it("start_process: a shell line with no deadline, stdin open, the ports published; the reply has the id and URLs",
      async function () {
        const { t, procs, never } = table();
        const r = await t.start({ command: "python3 -m http.server 8000", ports: [8000] }, never);
        assert.deepStrictEqual(procs[0].argv, ["sh", "-c", "python3 -m http.server 8000"]);
        assert.deepStrictEqual(procs[0].opts, { stdin: true, timeoutS: null, ports: [8000] });
        await t.start({ command: "true" }, never);
        assert.deepStrictEqual(procs[1].opts, { stdin: true, timeoutS: null }, "no ports option when none is asked for");
        assert.strictEqual(textOf(r), "started process p1: python3 -m http.server 8000\n" +
          "port 8000: http://127.0.0.1:48000 (listening)\nread its output with process_output (id \"p1\")");
      });

    it("process_output: output after a cursor and the next cursor, both streams, the exit", async function () {
      const { t, procs, never } = table();
      await t.start({ command: "x" }, never);
      const p = procs[0];
      p.stdout.write("one\n");
      p.stderr.write("warn\n");
      await tick();
      let r = textOf(await t.output({ id: "p1" }, never));
      assert.strictEqual(r, "process p1: running\n--- stdout ---\none\n\n--- stderr ---\nwarn\n\nnext_cursor: 9");
      p.stdout.write("two\n");
      await tick();
      r = textOf(await t.output({ id: "p1", since: 9 }, never));
      assert.strictEqual(r, "process p1: running\n--- stdout ---\ntwo\n\nnext_cursor: 13");
      assert.match(textOf(await t.output({ id: "p1", since: 13 }, never)), /\(no new output\)\nnext_cursor: 13$/);
      // wait_s returns as soon as something new comes.
      const t0 = Date.now();
      setTimeout(() => p.stdout.write("three\n"), 50);
      r = textOf(await t.output({ id: "p1", since: 13, wait_s: 10 }, never));
      assert.ok(Date.now() - t0 < 2000);
      assert.match(r, /three/);
      p.exit(3);
      await tick();
      const done = await t.output({ id: "p1", since: 19 }, never);
      assert.strictEqual(done.isError, true);
      assert.match(textOf(done), /^process p1: exited with code 3\n/);
    });

    it("the log is bounded: the oldest bytes go, and a stale cursor says how many were dropped", function () {
      const log = new OutputLog(10);
      log.add("stdout", Buffer.from("0123456789"));
      log.add("stderr", Buffer.from("abcde"));
      assert.strictEqual(log.base, 5);
      const r = log.read(0, 100);
      assert.deepStrictEqual(r, { stdout: "56789", stderr: "abcde", from: 5, next: 15, dropped: 5 });
      assert.deepStrictEqual(log.read(12, 2), { stdout: "", stderr: "cd", from: 12, next: 14, dropped: 0 });
    });

    it("write_stdin, stop_process, list_processes; an unknown id is an error naming the ids", async function () {
      const { t, procs, never } = table();
      await t.start({ command: "cat", ports: [] }, never);
      assert.match(textOf(await t.write({ id: "p1", data: "hi\n" })), /^wrote 3 bytes to p1$/);
      assert.match(textOf(await t.write({ id: "p1", data: "", eof: true })), /and closed its stdin/);
      await tick();
      assert.strictEqual(procs[0].stdinData, "hi\n");
      assert.match(textOf(await t.write({ id: "p1", data: "x" })), /stdin is closed/);
      assert.match(textOf(t.list()), /^p1\trunning\tcat$/);
      const stopped = await t.stop({ id: "p1" });
      assert.deepStrictEqual(procs[0].killed, ["SIGTERM"]);
      assert.strictEqual(stopped.isError, undefined);
      assert.match(textOf(stopped), /exited with code 143/);
      const unknown = await t.output({ id: "p1" }, never);
      assert.strictEqual(unknown.isError, true);
      assert.match(textOf(unknown), /no process "p1"; none was started/);
      await t.start({ command: "a" }, never);
      assert.match(textOf(await t.stop({ id: "zz" })), /the processes are p2/);
      t.killAll();
      assert.deepStrictEqual(procs[1].killed, ["SIGKILL"]);
    });
  });

  describe("end to end through the SDK's Client", function () {
    let c;
    before(async function () {
      if (typeof Sandbox.prototype.spawn !== "function") return;
      c = await connect();
    });
    after(async function () {
      if (c) await c.client.close();
    });
    beforeEach(function () {
      if (typeof Sandbox.prototype.spawn !== "function") h.skipHost(this, "needs sbx.spawn (issue 33)");
    });
    const call = (name, args) => c.client.callTool({ name, arguments: args });

    const idOf = (r) => textOf(r).match(/^started process (p\d+)/)[1];

    it("stdin, output by cursor, exit code, list, stop", async function () {
      const id = idOf(await call("start_process", { command: "while read l; do echo got-$l; done; echo bye >&2; exit 3" }));
      assert.match(textOf(await call("write_stdin", { id, data: "a\nb\n" })), new RegExp(`^wrote 4 bytes to ${id}$`));
      let out = textOf(await call("process_output", { id, wait_s: 10 }));
      for (let i = 0; i < 50 && !out.includes("got-b"); i++) {
        await h.sleep(100);
        out = textOf(await call("process_output", { id }));
      }
      assert.match(out, /^process p\d+: running\n--- stdout ---\ngot-a\ngot-b\n\nnext_cursor: 12$/);
      assert.match(textOf(await call("list_processes", {})), new RegExp(`^${id}\trunning\t`, "m"));
      assert.match(textOf(await call("process_output", { id, since: 12 })), /\(no new output\)\nnext_cursor: 12$/);
      await call("write_stdin", { id, data: "c\n", eof: true });
      let end = await call("process_output", { id, since: 12, wait_s: 10 });
      for (let i = 0; i < 50 && !/exited/.test(textOf(end)); i++) {
        await h.sleep(100);
        end = await call("process_output", { id, since: 12 });
      }
      assert.strictEqual(end.isError, true);
      assert.match(textOf(end), /^process p\d+: exited with code 3\n--- stdout ---\ngot-c\n\n--- stderr ---\nbye\n/);
      assert.match(textOf(await call("stop_process", { id })), /exited with code 3/);
      assert.match(textOf(await call("list_processes", {})), /^\(no processes\)$/);
    });

    it("stop_process ends a process that runs on; its box is gone", async function () {
      const marker = `proc-${Date.now()}`;
      const id = idOf(await call("start_process", { command: `echo ${marker} >/dev/null; sleep 60` }));
      assert.ok(await h.waitFor(() => h.processesWith(marker).length > 0, 10000));
      const r = await call("stop_process", { id });
      assert.strictEqual(r.isError, undefined);
      assert.match(textOf(r), /exited/);
      assert.ok(await h.waitFor(() => h.processesWith(marker).length === 0, 5000));
    });

    it("a process started with a port serves HTTP to the host at the returned URL", async function () {
      const r = await call("start_process", { command: "python3 -m http.server 8000", ports: [8000] });
      if (r.isError && /no option "ports"|cannot publish ports/.test(textOf(r)))
        return h.skipHost(this, "needs published ports (sbx.spawn's ports, issue 33 item 3)");
      const id = idOf(r);
      const url = textOf(r).match(/port 8000: (http:\/\/\S+)/)[1];
      const body = await new Promise((resolve, reject) => http.get(url, (res) => {
        let b = "";
        res.on("data", (d) => { b += d; });
        res.on("end", () => resolve(b));
      }).on("error", reject));
      assert.match(body, /Directory listing/);
      assert.match(textOf(await call("stop_process", { id })), /exited/);
    });
  });
});
