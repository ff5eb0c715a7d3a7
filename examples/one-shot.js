// One call in a throwaway box: no session to open or close.
// Run: node examples/one-shot.js
"use strict";

const { runCode } = require("kern-sandbox");

async function main() {
  const r = await runCode("import sys\nprint(sum(range(100)))\nprint(sys.version_info[:2] >= (3, 8))");
  console.log(r.stdout.trim()); // 4950 / True
  console.log({ exitCode: r.exitCode, fault: r.fault, durationMs: r.durationMs, usage: r.usage });
  if (!r.success) process.exitCode = 1;
}

main();
