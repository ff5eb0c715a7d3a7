"use strict";

// Issue 34, item 2-3: kern-sandbox/mastra's KernWorkspaceSandbox, member by
// member and driven by Mastra itself: a Workspace with the sandbox, and an
// Agent whose model (the AI SDK's MockLanguageModelV3, which Mastra takes
// as a model) calls mastra_workspace_execute_command to write and read a file.
const assert = require("assert");
const fs = require("fs");
const path = require("path");
const h = require("./lib/harness");
const { v3Step, canLoad } = require("./lib/adapters");
const { Sandbox } = require("..");
const { KernWorkspaceSandbox } = require("../lib/mastra");

describe("kern-sandbox/mastra: KernWorkspaceSandbox (issue 34)", function () {
  this.timeout(h.underSanitizer ? 120000 : 30000);

  it("is made with no argument, with Sandbox options, or on an open Sandbox; lifecycle and info", async function () {
    const a = new KernWorkspaceSandbox();
    assert.match(a.id, /^kern-/);
    assert.strictEqual(a.status, "pending");
    assert.deepStrictEqual(await a.start(), { outcome: "created" });
    assert.strictEqual(a.status, "running");
    assert.strictEqual(a.isReady(), true);
    const info = a.getInfo();
    assert.strictEqual(info.provider, "kern");
    assert.strictEqual(info.resources.memoryMB, 512);
    assert.match(a.getInstructions(), /\/workspace/);
    await a.destroy();
    assert.strictEqual(a.status, "destroyed");
    const b = new KernWorkspaceSandbox({ id: "named", memoryMb: 256 });
    assert.strictEqual(b.id, "named");
    assert.strictEqual(b.getInfo().resources.memoryMB, 256);
    await b.destroy();
    const sbx = await new Sandbox().open();
    try {
      const c = new KernWorkspaceSandbox(sbx);
      await c.executeCommand("echo kept > k.txt");
      await c.destroy();
      assert.strictEqual((await sbx.readFile("k.txt")).toString(), "kept\n", "the caller's Sandbox stays open");
    } finally {
      await sbx.close();
    }
    assert.throws(() => new KernWorkspaceSandbox({ id: "../x" }), { code: "ERR_SANDBOX_INVALID_OPTION" });
  });

  it("executeCommand: a shell line, quoted args, cwd, env, streamed output, exit code, timeout", async function () {
    const s = new KernWorkspaceSandbox();
    try {
      const r = await s.executeCommand("echo out; echo err >&2; exit 3");
      assert.strictEqual(r.success, false);
      assert.strictEqual(r.exitCode, 3);
      assert.strictEqual(r.stdout, "out\n");
      assert.strictEqual(r.stderr, "err\n");
      assert.ok(r.executionTimeMs > 0);
      const q = await s.executeCommand("printf '%s|'", ["a b", "it's", "$HOME"]);
      assert.strictEqual(q.stdout, "a b|it's|$HOME|");
      await s.writeFiles([{ path: "sub/x.txt", content: "x" }, { path: "/workspace/bin.dat", content: Buffer.from([0, 1]) }]);
      assert.strictEqual((await s.executeCommand("ls", [], { cwd: "sub" })).stdout, "x.txt\n");
      assert.strictEqual((await s.executeCommand("wc -c < bin.dat")).stdout.trim(), "2");
      assert.strictEqual((await s.executeCommand('printf %s "$V"', [], { env: { V: "val" } })).stdout, "val");
      const seen = [];
      await s.executeCommand("echo one; echo two >&2", [], { onStdout: (d) => seen.push(["out", d]),
        onStderr: (d) => seen.push(["err", d]) });
      assert.deepStrictEqual(seen.sort(), [["err", "two\n"], ["out", "one\n"]]);
      const t = await s.executeCommand("sleep 5", [], { timeout: 300 });
      assert.strictEqual(t.timedOut, true);
      assert.strictEqual(t.success, false);
      const ac = new AbortController();
      setTimeout(() => ac.abort(new Error("stop")), 100);
      await assert.rejects(s.executeCommand("sleep 5", [], { abortSignal: ac.signal }), { name: "AbortError" });
      await assert.rejects(s.writeFiles([{ path: "/etc/x", content: "x" }]), { code: "ERR_SANDBOX_INVALID_PATH" });
      await assert.rejects(s.writeFiles([{ path: "m", content: "x", mode: 0o755 }]), { code: "ERR_SANDBOX_NOT_SUPPORTED" });
    } finally {
      await s.destroy();
    }
  });

  it("snapshot(): a checkpoint that a sandbox with the same id restores at start()", async function () {
    const saved = process.env.KERN_SANDBOX_SNAPSHOT;
    process.env.KERN_SANDBOX_SNAPSHOT = "1";
    const checkpointDir = h.tmpDir("mastra-cp-");
    try {
      const a = new KernWorkspaceSandbox({ id: "cp-1", checkpointDir });
      await a.executeCommand("mkdir -p d && echo saved > d/f.txt");
      await a.snapshot();
      await a.destroy();
      assert.ok(fs.existsSync(path.join(checkpointDir, "cp-1.tar.gz")));
      const b = new KernWorkspaceSandbox({ id: "cp-1", checkpointDir });
      assert.deepStrictEqual(await b.start(), { outcome: "connected" });
      assert.strictEqual((await b.executeCommand("cat d/f.txt")).stdout, "saved\n");
      await b.destroy();
    } finally {
      if (saved === undefined) delete process.env.KERN_SANDBOX_SNAPSHOT;
      else process.env.KERN_SANDBOX_SNAPSHOT = saved;
    }
  });

  it("a Mastra Agent with a Workspace runs a command, writes and reads a file through execute_command", async function () {
    if (!canLoad("@mastra/core/agent") || !canLoad("ai/test"))
      return h.skip(this, "@mastra/core or ai is not installed (npm install)");
    const { Agent } = require("@mastra/core/agent");
    const { Workspace, WORKSPACE_TOOLS } = require("@mastra/core/workspace");
    const { MockLanguageModelV3 } = require("ai/test");
    const tool = WORKSPACE_TOOLS.SANDBOX.EXECUTE_COMMAND;
    const sandbox = new KernWorkspaceSandbox();
    const workspace = new Workspace({ sandbox });
    const model = new MockLanguageModelV3({ doGenerate: [
      v3Step({ calls: [[tool, { command: "echo written-by-mastra > note.txt" }]] }),
      v3Step({ calls: [[tool, { command: "cat note.txt; uname -s" }]] }),
      v3Step({ text: "finished" }),
    ] });
    const agent = new Agent({ id: "kern-agent", name: "kern-agent", instructions: "use the sandbox", model, workspace });
    try {
      const r = await agent.generate("write a note and read it back", { maxSteps: 5 });
      assert.strictEqual(r.text, "finished");
      const toolNames = model.doGenerateCalls[0].tools.map((t) => t.name);
      assert.ok(toolNames.includes(tool), toolNames.join(","));
      const last = JSON.stringify(model.doGenerateCalls[2].prompt);
      assert.match(last, /written-by-mastra/);
      assert.strictEqual((await sandbox.sandbox.readFile("note.txt")).toString(), "written-by-mastra\n");
    } finally {
      await sandbox.destroy();
    }
  });
});
