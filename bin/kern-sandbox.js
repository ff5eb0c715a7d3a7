#!/usr/bin/env node
"use strict";

// `npx kern-sandbox doctor [--json] [--image REF]`: whether this host can run
// boxes, as lib/doctor.js checks it. Exit 0 when a box can run, 1 when not,
// 2 for a usage error. `npx kern-sandbox mcp`: the MCP server (lib/cli/mcp.js).
const { doctor } = require("../lib/index.js");

const USAGE = "usage: kern-sandbox doctor [--json] [--image REF]\n       kern-sandbox mcp [--help | options]\n       kern-sandbox worker --help\n";

function table(report) {
  const lines = [];
  const width = Math.max(...report.checks.map((c) => c.id.length));
  for (const c of report.checks) {
    const mark = c.ok ? "ok  " : c.required ? "FAIL" : "warn";
    lines.push(`${mark}  ${c.id.padEnd(width)}  ${c.detail}`);
    if (c.fix) lines.push(`${" ".repeat(width + 8)}fix: ${c.fix}`);
  }
  lines.push("", report.ok ? "boxes can run on this host" : "boxes cannot run on this host: see FAIL above");
  return `${lines.join("\n")}\n`;
}

async function main(argv) {
  if (argv[0] === "mcp") return require("../lib/cli/mcp.js").main(argv.slice(1));
  // The cluster worker (README, "Many machines"): lib/cli/worker.js.
  if (argv[0] === "worker") return require("../lib/cli/worker").main(argv.slice(1));
  if (argv[0] !== "doctor" || argv.includes("--help") || argv.includes("-h")) {
    process.stderr.write(USAGE);
    return argv.includes("--help") || argv.includes("-h") ? 0 : 2;
  }
  let json = false;
  let image;
  for (let i = 1; i < argv.length; i++) {
    if (argv[i] === "--json") json = true;
    else if (argv[i] === "--image" && i + 1 < argv.length) image = argv[++i];
    else {
      process.stderr.write(`kern-sandbox: unknown argument ${JSON.stringify(argv[i])}\n${USAGE}`);
      return 2;
    }
  }
  const report = await doctor(image === undefined ? {} : { image });
  process.stdout.write(json ? `${JSON.stringify(report, null, 2)}\n` : table(report));
  return report.ok ? 0 : 1;
}

main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
}, (e) => {
  process.stderr.write(`kern-sandbox: ${e && e.stack ? e.stack : e}\n`);
  process.exitCode = 1;
});
