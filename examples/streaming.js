// Output as it arrives: onStdout/onStderr per call (or per session).
// Run: node examples/streaming.js
"use strict";

const { withSandbox } = require("kern-sandbox");

async function main() {
  await withSandbox(async (sbx) => {
    const seen = [];
    const r = await sbx.runCode(
      "import time\nfor i in range(3):\n    print(f'step {i}', flush=True)\n    time.sleep(0.2)",
      { onStdout: (chunk) => { seen.push(chunk.toString()); process.stdout.write(`live: ${chunk}`); } });
    console.log(`${seen.length} chunks live; the result has it all too:`, JSON.stringify(r.stdout));
    if (!r.success) process.exitCode = 1;
  });
}

main();
