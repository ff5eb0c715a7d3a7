"use strict";

// An MCP run_code round trip against a direct runCode, in the same run:
// the SDK's Client over stdio to `kern-sandbox mcp` (prewarm 1), calling
// run_code("print(1)") one call at a time, and a prewarmed Sandbox in this
// process calling runCode("print(1)"), interleaved in rounds so that both
// see the same phase of the host, and an MCP ping, the protocol's own round
// trip with nothing run. Calls are spaced so the pool refills.
//   KERN_BIN=/root/kern-bin/kern node bench/mcp-roundtrip.js [calls=200] [gapMs=50]
const path = require("path");
const { performance } = require("perf_hooks");
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");
const { Sandbox } = require("..");

const calls = Number(process.argv[2] || 200);
const gapMs = Number(process.argv[3] || 50);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const q = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))];
};

async function main() {
  const transport = new StdioClientTransport({ command: process.execPath,
    args: [path.join(__dirname, "..", "bin", "kern-sandbox.js"), "mcp", "--prewarm", "1"],
    env: { ...process.env }, stderr: "inherit" });
  const client = new Client({ name: "bench", version: "0" });
  await client.connect(transport);
  const sbx = await new Sandbox({ prewarm: 1, trackFiles: false }).open();
  const mcp = [];
  const direct = [];
  const ping = []; // the protocol's floor: a round trip that runs nothing
  try {
    for (let i = 0; i < 10; i++) { // warm-up: both pools, the boot's bytecode
      await client.callTool({ name: "run_code", arguments: { code: "print(1)" } });
      await sbx.runCode("print(1)");
      await sleep(gapMs);
    }
    for (let i = 0; i < calls; i++) {
      let t0 = performance.now();
      const r = await client.callTool({ name: "run_code", arguments: { code: "print(1)" } });
      mcp.push(performance.now() - t0);
      if (r.isError) throw new Error(JSON.stringify(r));
      await sleep(gapMs);
      t0 = performance.now();
      const d = await sbx.runCode("print(1)");
      direct.push(performance.now() - t0);
      if (!d.success) throw new Error(d.stderr);
      await sleep(gapMs);
      t0 = performance.now();
      await client.ping();
      ping.push(performance.now() - t0);
      await sleep(gapMs);
    }
  } finally {
    await sbx.close();
    await client.close();
  }
  const row = (name, xs) => `${name.padEnd(22)} p50 ${q(xs, 0.5).toFixed(3)} ms  p90 ${q(xs, 0.9).toFixed(3)} ms  ` +
    `p99 ${q(xs, 0.99).toFixed(3)} ms`;
  console.log(`${calls} calls each, ${gapMs} ms apart, interleaved; kern ${process.env.KERN_BIN || "(PATH)"}`);
  console.log(row("MCP run_code", mcp));
  console.log(row("direct runCode", direct));
  console.log(row("MCP ping (no box)", ping));
  console.log(`p50 difference: ${(q(mcp, 0.5) - q(direct, 0.5)).toFixed(3)} ms`);
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
