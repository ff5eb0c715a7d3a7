"use strict";

// Issue 34's bench rows (bench/run.js, figure `integrations`), each against
// the direct call in the same run, alternated one by one so both see the
// same phase of the host:
//   - an MCP run_code("print(1)") round trip: the SDK's Client over stdio to
//     `kern-sandbox mcp --prewarm 1`, against a direct runCode("print(1)") on
//     a prewarmed Sandbox in this process (bench/mcp-roundtrip.js has the
//     longer run, with the protocol's own ping beside it);
//   - the AI SDK session's run({ command: "true" }) against sbx.run(["sh",
//     "-c", "true"]) on the same prewarmed Sandbox.
// Skipped, saying so, when a framework is not installed.
const path = require("path");
const { poolReadyMuted } = require("./poolready");

function tryRequire(id) {
  try {
    return require(id);
  } catch {
    return null;
  }
}

async function mcpRow({ Sandbox, h, row, median, quick, loop }) {
  loop?.disable(); // loading a framework is the bench's own synchronous work
  const client = tryRequire("@modelcontextprotocol/sdk/client/index.js");
  const stdio = tryRequire("@modelcontextprotocol/sdk/client/stdio.js");
  loop?.enable();
  if (client === null || stdio === null) {
    console.error("    (MCP row skipped: @modelcontextprotocol/sdk is not installed)");
    return;
  }
  loop?.disable(); // the server's spawn forks this process (child_process)
  const transport = new stdio.StdioClientTransport({ command: process.execPath,
    args: [path.join(__dirname, "..", "bin", "kern-sandbox.js"), "mcp", "--prewarm", "1"],
    env: { ...process.env }, stderr: "inherit" });
  const c = new client.Client({ name: "bench", version: "0" });
  await c.connect(transport);
  loop?.enable();
  const sbx = await new Sandbox({ prewarm: 1, trackFiles: false }).open();
  const n = quick ? 60 : 200;
  const mcp = [];
  const direct = [];
  try {
    for (let i = 0; i < n + 10; i++) {
      let t0 = process.hrtime.bigint();
      const r = await c.callTool({ name: "run_code", arguments: { code: "print(1)" } });
      const m = Number(process.hrtime.bigint() - t0) / 1e6;
      if (r.isError) throw new Error(JSON.stringify(r));
      await h.sleep(50);
      t0 = process.hrtime.bigint();
      const d = await sbx.runCode("print(1)");
      const dm = Number(process.hrtime.bigint() - t0) / 1e6;
      if (!d.success) throw new Error(d.stderr);
      await h.sleep(50);
      if (i >= 10) { // the first ten warm both pools and the boot's bytecode
        mcp.push(m);
        direct.push(dm);
      }
    }
  } finally {
    await sbx.close();
    await c.close();
  }
  const diff = median(mcp) - median(direct);
  row(`MCP run_code("print(1)") round trip, ${n} calls 50 ms apart`,
    `a direct runCode("print(1)"), prewarmed, alternated: p50 ${median(direct).toFixed(2)} ms`,
    `p50 ${median(mcp).toFixed(2)} ms (+${diff.toFixed(2)} ms)`, "p50 within 1 ms", diff <= 1);
}

async function aiSdkRow({ Sandbox, h, row, median, quick, loop }) {
  loop?.disable(); // loading a framework is the bench's own synchronous work
  const ai = tryRequire("ai") === null ? null : require("../lib/ai");
  loop?.enable();
  if (ai === null) {
    console.error("    (AI SDK row skipped: ai is not installed)");
    return;
  }
  const sbx = await new Sandbox({ prewarm: 1 }).open();
  const n = quick ? 60 : 200;
  const direct = [];
  const viaSdk = [];
  try {
    // The session loads the rest of its framework at its first call: the
    // bench's own synchronous work again.
    loop?.disable();
    const s = ai.createSandboxSession(sbx);
    await s.run({ command: "true" });
    loop?.enable();
    const ready = () => poolReadyMuted(h, loop, sbx);
    for (let i = 0; i < n + 10; i++) {
      await ready();
      let t0 = process.hrtime.bigint();
      await sbx.run(["sh", "-c", "true"]);
      const d = Number(process.hrtime.bigint() - t0) / 1e6;
      await ready();
      t0 = process.hrtime.bigint();
      await s.run({ command: "true" });
      const v = Number(process.hrtime.bigint() - t0) / 1e6;
      if (i >= 10) {
        direct.push(d);
        viaSdk.push(v);
      }
    }
  } finally {
    await sbx.close();
  }
  const diff = median(viaSdk) - median(direct);
  row(`AI SDK session run({ command: "true" }), ${n} calls`,
    `sbx.run(["sh", "-c", "true"]) on the same prewarmed Sandbox, alternated: p50 ${median(direct).toFixed(2)} ms`,
    `p50 ${median(viaSdk).toFixed(2)} ms (${diff >= 0 ? "+" : ""}${diff.toFixed(3)} ms)`, "p50 within 0.2 ms",
    Math.abs(diff) <= 0.2);
}

/** The figure: { Sandbox, h, row, median, quick, loop }. */
async function integrations(ctx) {
  await mcpRow(ctx);
  await aiSdkRow(ctx);
}

module.exports = { integrations };
