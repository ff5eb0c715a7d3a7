"use strict";

// Issue 34 item 1 against the double: the server's life on stdio and what no
// well-behaved client sends. Malformed and oversize lines get error replies
// and the server keeps serving; stdout carries only protocol frames (the
// package's warnings go to stderr); stdin EOF and SIGTERM end it with no
// box and no temporary workspace left; the CLI's flags, environment
// variables and --help; kernel mode; the inspector's CLI; a missing SDK.
const assert = require("assert");
const fs = require("fs");
const path = require("path");
const crypto = require("crypto");
const { execFileSync, spawnSync } = require("child_process");
const h = require("./lib/harness");
const { BIN, connect, textOf, raw } = require("./lib/mcp");
const { parseArgs, OPTIONS, ENV_PREFIX } = require("../lib/cli/mcp");

/** The workspace of a server, from a command run in it. */
async function workspaceOf(send, next, id) {
  send({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "run_command", arguments: { command: "pwd" } } });
  const r = await next((m) => m.id === id);
  return r.result.content[0].text.match(/stdout ---\n(\S+)\n/)[1];
}

describe("MCP server: stdio, lifecycle and the CLI (issue 34)", function () {
  this.timeout(h.underSanitizer ? 120000 : 30000);

  it("a malformed line gets an error reply and the server keeps serving; stdout is only protocol",
    async function () {
      const s = raw();
      try {
        await s.init();
        s.send("this is not json\n");
        assert.strictEqual((await s.next((m) => m.error && m.error.code === -32700)).id, null);
        s.send('{"jsonrpc":"2.0","id":5,"method":7}\n');
        assert.match((await s.next((m) => m.id === 5)).error.message, /^Invalid Request/);
        s.send({ jsonrpc: "2.0", id: 6, method: "no/such/method" });
        assert.strictEqual((await s.next((m) => m.id === 6)).error.code, -32601);
        s.send({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { arguments: {} } });
        // The SDK answers a tools/call without a name as an internal error.
        assert.ok([-32602, -32603].includes((await s.next((m) => m.id === 7)).error.code));
        s.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 999 } });
        // A line over the 32 MiB cap, without a newline for a while: skipped
        // with bounded memory, then answered.
        const hwmOf = () => Number(fs.readFileSync(`/proc/${s.child.pid}/status`, "utf8").match(/VmHWM:\s+(\d+)/)[1]);
        const before = hwmOf();
        const chunk = Buffer.alloc(1024 * 1024, 0x61);
        for (let i = 0; i < 40; i++) s.child.stdin.write(chunk);
        s.send("\n");
        const big = await s.next((m) => m.error && /longer than 33554432 bytes was skipped/.test(m.error.message));
        assert.strictEqual(big.id, null);
        // At most the 32 MiB cap is held (ASan's quarantine keeps freed chunks a while longer).
        const grew = hwmOf() - before;
        h.note(`a 40 MiB line without a newline: peak RSS grew ${grew} kB`);
        assert.ok(grew < (h.underSanitizer ? 160 : 80) * 1024, `peak RSS grew ${grew} kB`);
        s.send({ jsonrpc: "2.0", id: 8, method: "tools/call", params: { name: "run_code", arguments: { code: "print(7)" } } });
        assert.match((await s.next((m) => m.id === 8)).result.content[0].text, /stdout ---\n7\n/);
        s.end();
        assert.deepStrictEqual(await s.exit, { code: 0, signal: null });
        for (const line of s.lines) assert.strictEqual(JSON.parse(line).jsonrpc, "2.0", line.slice(0, 200));
        assert.strictEqual(s.lines.length, 7);
      } finally {
        s.child.kill("SIGKILL");
      }
    });

  it("a call the server answers itself as its line is read (no SDK dispatch): a cancel in the same write kills it; " +
    "a task-augmented or _meta call is left to the SDK", async function () {
    const s = raw();
    try {
      await s.init();
      const call = (id, name, args, extra = {}) => `${JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call",
        params: { name, arguments: args, ...extra } })}\n`;
      // The Sandbox is open after a first call: the early path needs it.
      s.send(call(1, "run_code", { code: "print(1)" }));
      assert.match((await s.next((m) => m.id === 1)).result.content[0].text, /stdout ---\n1\n/);
      const ws = await workspaceOf(s.send, s.next, 2);
      // The call and its cancel in one write: the server answers the call
      // itself and the cancel finds it there; the box is killed, the
      // request gets no reply, and the ping behind both is answered.
      const marker = `early-${crypto.randomBytes(4).toString("hex")}`;
      s.send(call(3, "run_command", { command: `echo ${marker} > /dev/null; sleep 30` }) +
        `${JSON.stringify({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 3 } })}\n` +
        `${JSON.stringify({ jsonrpc: "2.0", id: 4, method: "ping" })}\n`);
      assert.deepStrictEqual((await s.next((m) => m.id === 4)).result, {});
      assert.ok(await h.waitFor(() => h.processesWith(marker).length === 0, 5000), "the cancelled box is gone");
      // A task-augmented call (no tasks capability) and one with _meta are
      // not started early: the SDK refuses the first, and its code never runs.
      s.send(call(5, "run_command", { command: "touch task-ran" }, { task: { ttl: 1000 } }));
      assert.ok((await s.next((m) => m.id === 5)).error, "a task request is refused");
      s.send(call(6, "run_command", { command: "touch meta-ran" }, { _meta: { progressToken: 1 } }));
      assert.strictEqual((await s.next((m) => m.id === 6)).result.isError, undefined);
      // The positive control: the same command, plain, does run.
      s.send(call(7, "run_command", { command: "touch plain-ran" }));
      await s.next((m) => m.id === 7);
      assert.ok(fs.existsSync(path.join(ws, "plain-ran")) && fs.existsSync(path.join(ws, "meta-ran")));
      assert.ok(!fs.existsSync(path.join(ws, "task-ran")), "the refused task request ran its command");
      assert.ok(!s.lines.some((l) => JSON.parse(l).id === 3), "the cancelled request got a reply");
      s.end();
      assert.deepStrictEqual(await s.exit, { code: 0, signal: null });
    } finally {
      s.child.kill("SIGKILL");
    }
  });

  it("negotiates each protocol revision the SDK supports; an unknown one gets the latest", async function () {
    const { SUPPORTED_PROTOCOL_VERSIONS, LATEST_PROTOCOL_VERSION } = require("@modelcontextprotocol/sdk/types.js");
    for (const asked of [...SUPPORTED_PROTOCOL_VERSIONS, "1999-01-01"]) {
      const s = raw();
      try {
        s.send({ jsonrpc: "2.0", id: 1, method: "initialize",
          params: { protocolVersion: asked, capabilities: {}, clientInfo: { name: "raw", version: "0" } } });
        const r = await s.next((m) => m.id === 1);
        assert.strictEqual(r.result.protocolVersion, asked === "1999-01-01" ? LATEST_PROTOCOL_VERSION : asked);
        assert.deepStrictEqual(r.result.capabilities, { tools: {} });
        s.end();
        assert.deepStrictEqual(await s.exit, { code: 0, signal: null });
      } finally {
        s.child.kill("SIGKILL");
      }
    }
  });

  it("1,000 requests pipelined in one write each get their reply", async function () {
    const s = raw();
    try {
      await s.init();
      let batch = "";
      for (let i = 0; i < 1000; i++) {
        batch += `${JSON.stringify(i % 100 === 0
          ? { jsonrpc: "2.0", id: i, method: "tools/call", params: { name: "run_code", arguments: { code: `print(${i})` } } }
          : { jsonrpc: "2.0", id: i, method: i % 2 ? "ping" : "tools/list" })}\n`;
      }
      s.send(batch);
      await s.next((m) => m.id === 999);
      assert.ok(await h.waitFor(() => s.lines.length >= 1001, 20000), `${s.lines.length} replies`);
      const ids = new Set(s.lines.map((l) => JSON.parse(l).id));
      for (let i = 0; i < 1000; i++) assert.ok(ids.has(i), `reply ${i}`);
      const r = await s.next((m) => m.id === 300);
      assert.match(r.result.content[0].text, /stdout ---\n300\n/);
      s.end();
      assert.deepStrictEqual(await s.exit, { code: 0, signal: null });
    } finally {
      s.child.kill("SIGKILL");
    }
  });

  it("a 10 MB run_code is run; its reply is bounded", async function () {
    const c = await connect();
    try {
      const code = `# ${"x".repeat(10 * 1024 * 1024)}\nprint('big code ran')`;
      const r = await c.client.callTool({ name: "run_code", arguments: { code } });
      assert.match(textOf(r), /stdout ---\nbig code ran\n/);
      const echo = await c.client.callTool({ name: "run_code", arguments: { code: `s = '${"y".repeat(10 * 1024 * 1024)}'\ns` } });
      assert.ok(textOf(echo).length <= 64000);
    } finally {
      await c.client.close();
    }
  });

  for (const how of ["stdin EOF", "SIGTERM"]) {
    it(`${how} ends the server with a box running: no box and no temporary workspace left; ` +
      "warnings went to stderr", async function () {
      const marker = `end-${crypto.randomBytes(4).toString("hex")}`;
      // fake:mem-unenforced makes the package warn (KernSandboxWarning) on its first box.
      const s = raw(["--image", "fake:mem-unenforced"]);
      try {
        await s.init();
        const ws = await workspaceOf(s.send, s.next, "ws");
        assert.ok(fs.existsSync(ws));
        s.send({ jsonrpc: "2.0", id: "long", method: "tools/call",
          params: { name: "run_command", arguments: { command: `echo ${marker} >/dev/null; sleep 30` } } });
        assert.ok(await h.waitFor(() => h.processesWith(marker).length > 0, 10000), "the box started");
        const t0 = Date.now();
        if (how === "SIGTERM") s.child.kill("SIGTERM");
        else s.end();
        const exit = await s.exit;
        assert.deepStrictEqual(exit, { code: 0, signal: null }, s.stderr());
        assert.ok(Date.now() - t0 < 5000, `${Date.now() - t0} ms`);
        assert.deepStrictEqual(h.processesWith(marker), []);
        assert.ok(!fs.existsSync(ws), "the temporary workspace is removed");
        for (const line of s.lines) JSON.parse(line);
        assert.match(s.stderr(), /KERN_SANDBOX_MEMORY_NOT_ENFORCED/);
      } finally {
        s.child.kill("SIGKILL");
      }
    });
  }

  it("--help lists every option with its environment variable; a bad flag or value exits 2", function () {
    const help = execFileSync(process.execPath, [BIN, "mcp", "--help"], { encoding: "utf8" });
    for (const [flag, env] of OPTIONS) {
      assert.ok(help.includes(flag), flag);
      assert.ok(help.includes(`${ENV_PREFIX}${env}`), env);
    }
    for (const flag of ["--image", "--setup", "--memory", "--cpus", "--timeout", "--workspace", "--network",
      "--egress-allow", "--prewarm", "--kernel"]) assert.ok(help.includes(flag), flag);
    for (const args of [["--bogus"], ["--timeout", "abc"], ["--memory", "-1"], ["--timeout"]]) {
      const r = spawnSync(process.execPath, [BIN, "mcp", ...args], { encoding: "utf8", input: "" });
      assert.strictEqual(r.status, 2, `${args}: ${r.stderr}`);
      assert.strictEqual(r.stdout, "");
      assert.match(r.stderr, /^kern-sandbox mcp: /);
    }
    // A value the Sandbox refuses (prewarm 0-16) exits 2 with its message.
    const r = spawnSync(process.execPath, [BIN, "mcp", "--prewarm", "99"], { encoding: "utf8", input: "" });
    assert.strictEqual(r.status, 2);
    assert.match(r.stderr, /prewarm/);
  });

  it("options come from the environment and flags; a flag wins", function () {
    const env = { [`${ENV_PREFIX}IMAGE`]: "env:img", [`${ENV_PREFIX}TIMEOUT`]: "9", [`${ENV_PREFIX}KERNEL`]: "1",
      [`${ENV_PREFIX}EGRESS_ALLOW`]: "a.com, b.org", [`${ENV_PREFIX}MEMORY`]: "0", [`${ENV_PREFIX}REPLY_CHARS`]: "500" };
    assert.deepStrictEqual(parseArgs(["--image", "flag:img", "--cpus=1.5", "--network", "--setup", "pip install x",
      "--workspace", "/w", "--prewarm", "2", "--stream-chars", "100", "--max-images", "2"], env).options, {
      image: "flag:img", timeoutS: 9, kernel: true, egressAllow: ["a.com", "b.org"], memoryMb: null, cpus: 1.5,
      network: true, setup: "pip install x", workspace: "/w", prewarm: 2,
      limits: { replyChars: 500, streamChars: 100, imagesPerReply: 2 } });
    assert.throws(() => parseArgs([], { [`${ENV_PREFIX}NETWORK`]: "maybe" }), /KERN_SANDBOX_MCP_NETWORK must be 1\/true/);
  });

  it("--kernel: Python state persists across run_code calls; a cell that crashes loses only itself",
    async function () {
      const c = await connect(["--kernel"]);
      try {
        const { tools } = await c.client.listTools();
        assert.match(tools[0].description, /ONE persistent interpreter/);
        const call = (code) => c.client.callTool({ name: "run_code", arguments: { code } });
        assert.strictEqual((await call("rows = [1, 2, 3]")).isError, undefined);
        assert.match(textOf(await call("sum(rows)")), /--- result 1 ---\n6$/);
        const crash = await call("rows.clear()\nimport os\nos._exit(3)");
        assert.strictEqual(crash.isError, true);
        assert.match(textOf(crash), /exit code 3/);
        assert.match(textOf(await call("len(rows)")), /--- result 1 ---\n3$/);
        assert.match(textOf(await c.client.callTool({ name: "run_code", arguments: { code: "echo $0", language: "bash" } })),
          /stdout ---\nsh\n/);
        // A cancelled cell is killed; the state from before it stands.
        const ac = new AbortController();
        const slow = c.client.callTool({ name: "run_code", arguments: { code: "rows.append(4)\nimport time\ntime.sleep(30)" } },
          undefined, { signal: ac.signal });
        await h.sleep(300);
        ac.abort();
        await assert.rejects(slow, /abort/i);
        assert.match(textOf(await call("len(rows)")), /--- result 1 ---\n3$/);
      } finally {
        await c.client.close();
      }
    });

  it("the inspector's CLI (@modelcontextprotocol/inspector --cli) lists and calls the tools", function () {
    let bin;
    try {
      bin = require.resolve("@modelcontextprotocol/inspector/clients/launcher/build/index.js");
    } catch {
      return h.skip(this, "@modelcontextprotocol/inspector is not installed (npm install)");
    }
    // It declares node >= 22.19 but its CLI runs on Node 20 (checked on 20.20.2).
    // The inspector gives the server only the environment it is told (-e): the double, the run's
    // TMPDIR and addon, and under test:asan the sanitizer runtimes the ASan addon needs first.
    const pass = ["KERN_BIN", "TMPDIR", "KERN_SANDBOX_BUILD", "LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS"]
      .filter((k) => process.env[k] !== undefined).flatMap((k) => ["-e", `${k}=${process.env[k]}`]);
    const run = (...args) => spawnSync(process.execPath, [bin, "--cli", ...pass, process.execPath, BIN, "mcp", ...args],
      { encoding: "utf8", timeout: 60000 });
    const list = run("--method", "tools/list");
    assert.strictEqual(list.status, 0, list.stderr);
    assert.deepStrictEqual(JSON.parse(list.stdout).tools.map((t) => t.name).slice(0, 3), ["run_code", "run_command", "write_file"]);
    const called = run("--method", "tools/call", "--tool-name", "run_code", "--tool-arg", "code=print(6*7)");
    assert.strictEqual(called.status, 0, called.stderr);
    assert.match(JSON.parse(called.stdout).content[0].text, /stdout ---\n42\n/);
  });

  it("examples/mcp/client.js runs as it is; the configurations beside it name the server", function () {
    const r = spawnSync(process.execPath, [path.join(h.repo, "examples/mcp/client.js")], { encoding: "utf8", timeout: 30000 });
    assert.strictEqual(r.status, 0, r.stderr);
    assert.match(r.stdout, /^tools: run_code, run_command, write_file, read_file, list_files, start_process/m);
    assert.match(r.stdout, /--- result 1 ---\n6$/m);
    assert.match(r.stdout, /^isError: true - ZeroDivisionError: division by zero$/m);
    const args = ["-y", "-p", "kern-sandbox", "-p", "@modelcontextprotocol/sdk", "kern-sandbox", "mcp"];
    const desktop = JSON.parse(fs.readFileSync(path.join(h.repo, "examples/mcp/claude_desktop_config.json"), "utf8"));
    assert.deepStrictEqual(desktop.mcpServers["kern-sandbox"].args, args);
    const vscode = JSON.parse(fs.readFileSync(path.join(h.repo, "examples/mcp/vscode-mcp.json"), "utf8"));
    assert.deepStrictEqual(vscode.servers["kern-sandbox"].args, [...args, "--kernel"]);
  });

  it("without the SDK: a SandboxError ERR_SANDBOX_MISSING_PEER naming the install command; " +
    "requiring the subpath (or the package) loads nothing from node_modules", function () {
    const script = `
      const Module = require("module");
      const orig = Module._resolveFilename;
      Module._resolveFilename = function (req, ...rest) {
        if (req.startsWith("@modelcontextprotocol/sdk")) {
          const e = new Error("Cannot find module '" + req + "'"); e.code = "MODULE_NOT_FOUND"; throw e;
        }
        return orig.call(this, req, ...rest);
      };
      require(${JSON.stringify(h.repo)});
      const mcp = require(${JSON.stringify(path.join(h.repo, "lib/mcp"))});
      const loaded = Object.keys(require.cache).filter((f) => f.includes("node_modules"));
      try { mcp.createMcpServer(); } catch (e) { console.log(JSON.stringify({ name: e.name, code: e.code, message: e.message, loaded })); }
    `;
    const out = JSON.parse(execFileSync(process.execPath, ["-e", script], { encoding: "utf8" }));
    assert.deepStrictEqual(out.loaded, []);
    assert.strictEqual(out.name, "SandboxError");
    assert.strictEqual(out.code, "ERR_SANDBOX_MISSING_PEER");
    assert.match(out.message, /kern-sandbox\/mcp needs @modelcontextprotocol\/sdk, .*run `npm install @modelcontextprotocol\/sdk`/);
    // Positive control: with the SDK there, the same server is made.
    const ok = execFileSync(process.execPath, ["-e", `const m = require(${JSON.stringify(path.join(h.repo, "lib/mcp"))});
      const s = m.createMcpServer({ prewarm: 0 }); console.log(typeof s.server.connect); s.close();`], { encoding: "utf8" });
    assert.strictEqual(ok.trim(), "function");
  });
});
