"use strict";

// Issue 34: kern-sandbox/langchain's codeInterpreterTool, driven by
// LangChain.js itself (tool.invoke, as an agent's tool node calls it) against
// the double: code runs, a tool call gives a ToolMessage with the text and
// the ExecutionResult as its artifact, failures are reported as text for the
// model, and the tool made with options owns (and closes) its Sandbox.
const assert = require("assert");
const path = require("path");
const { execFileSync } = require("child_process");
const h = require("./lib/harness");
const { codeInterpreterTool } = require("../lib/langchain");
const { Sandbox, ExecutionResult } = require("..");

describe("LangChain: codeInterpreterTool (issue 34)", function () {
  this.timeout(h.underSanitizer ? 120000 : 30000);

  it("tool.invoke runs the code in an open Sandbox; a tool call gives a ToolMessage with the result as artifact",
    async function () {
      const sbx = await new Sandbox({ prewarm: 0 }).open();
      try {
        const t = codeInterpreterTool(sbx);
        assert.strictEqual(t.name, "code_interpreter");
        const out = await t.invoke({ code: "print('hi')\n6 * 7" });
        assert.match(out, /^exit code 0 \(\d+ ms\)\n--- stdout ---\nhi\n\n--- result 1 ---\n42$/);
        assert.match(await t.invoke({ code: "echo from-bash", language: "bash" }), /stdout ---\nfrom-bash\n/);
        const msg = await t.invoke({ type: "tool_call", id: "call-1", name: "code_interpreter",
          args: { code: "import sys; sys.exit(2)" } });
        assert.strictEqual(msg.tool_call_id, "call-1");
        assert.match(msg.content, /^error: exit code 2/);
        assert.ok(msg.artifact.result instanceof ExecutionResult);
        assert.strictEqual(msg.artifact.result.exitCode, 2);
        assert.strictEqual(msg.artifact.isError, true);
        await assert.rejects(t.invoke({ code: 1 }), /schema|expected/i);
      } finally {
        await sbx.close();
      }
    });

  it("with options or none, the tool opens its own Sandbox on first use and close() closes it", async function () {
    const t = codeInterpreterTool({ prewarm: 0, timeoutS: 5 });
    assert.match(await t.invoke({ code: "open('f.txt', 'w').write('x')\nimport os\nos.listdir('.')" }), /'f\.txt'/);
    await t.close();
    await assert.rejects(t.sandbox.readFile("f.txt"), (e) => e.code === "ERR_SANDBOX_CLOSED");
    const bare = codeInterpreterTool();
    assert.strictEqual(bare.sandbox.timeoutS, 30);
    await bare.close();
  });

  it("a signal in the run's config aborts the call and kills its box", async function () {
    const t = codeInterpreterTool({ prewarm: 0 });
    try {
      const marker = `lc-${Date.now()}`;
      const ac = new AbortController();
      const p = t.invoke({ code: `echo ${marker} >/dev/null; sleep 30`, language: "bash" }, { signal: ac.signal });
      assert.ok(await h.waitFor(() => h.processesWith(marker).length > 0, 10000), "the box started");
      ac.abort();
      await assert.rejects(p, /abort/i);
      assert.ok(await h.waitFor(() => h.processesWith(marker).length === 0, 5000), "the box is gone");
    } finally {
      await t.close();
    }
  });

  it("without @langchain/core: ERR_SANDBOX_MISSING_PEER naming the install command", function () {
    const script = `
      const Module = require("module");
      const orig = Module._resolveFilename;
      Module._resolveFilename = function (req, ...rest) {
        if (req.startsWith("@langchain/core")) {
          const e = new Error("Cannot find module '" + req + "'"); e.code = "MODULE_NOT_FOUND"; throw e;
        }
        return orig.call(this, req, ...rest);
      };
      const lc = require(${JSON.stringify(path.join(h.repo, "lib/langchain"))});
      const loaded = Object.keys(require.cache).filter((f) => f.includes("node_modules"));
      try { lc.codeInterpreterTool(); } catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message, loaded })); }
    `;
    const out = JSON.parse(execFileSync(process.execPath, ["-e", script], { encoding: "utf8" }));
    assert.deepStrictEqual(out.loaded, []);
    assert.strictEqual(out.code, "ERR_SANDBOX_MISSING_PEER");
    assert.match(out.message, /kern-sandbox\/langchain needs @langchain\/core, .*run `npm install @langchain\/core`/);
  });
});
