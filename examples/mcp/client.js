"use strict";

// An MCP client that starts `kern-sandbox mcp` over stdio, as Claude Desktop,
// Cursor or VS Code do with the configurations beside this file, lists its
// tools and calls three of them. Run it as it is: node examples/mcp/client.js
// (it needs @modelcontextprotocol/sdk installed beside kern-sandbox).
const path = require("path");
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");

// The package's own bin; in a project of yours: command "npx", args ["kern-sandbox", "mcp"].
const bin = path.join(path.dirname(require.resolve("kern-sandbox/package.json")), "bin", "kern-sandbox.js");

async function main() {
  const transport = new StdioClientTransport({ command: process.execPath, args: [bin, "mcp"],
    env: { ...process.env }, stderr: "inherit" });
  const client = new Client({ name: "example", version: "1.0.0" });
  await client.connect(transport);
  try {
    const { tools } = await client.listTools();
    console.log("tools:", tools.map((t) => t.name).join(", "));
    const text = (r) => r.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");
    await client.callTool({ name: "write_file", arguments: { path: "data.csv", content: "x\n1\n2\n3\n" } });
    const r = await client.callTool({ name: "run_code",
      arguments: { code: "rows = open('data.csv').read().split()[1:]\nsum(map(int, rows))" } });
    console.log(text(r));
    const bad = await client.callTool({ name: "run_code", arguments: { code: "1/0" } });
    console.log("isError:", bad.isError, "-", text(bad).trim().split("\n").pop());
  } finally {
    await client.close(); // ends the server's stdin: it kills its boxes and exits
  }
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
