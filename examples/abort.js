// Cancel a call: aborting kills the box, the call rejects with an AbortError
// carrying what the box printed so far.
// Run: node examples/abort.js
"use strict";

const { withSandbox } = require("kern-sandbox");

async function main() {
  await withSandbox(async (sbx) => {
    const ac = new AbortController();
    setTimeout(() => ac.abort(new Error("the user pressed stop")), 500);
    try {
      await sbx.runCode("import time\nprint('working...', flush=True)\ntime.sleep(60)", { signal: ac.signal });
      process.exitCode = 1; // not reached
    } catch (e) {
      if (e.name !== "AbortError") throw e;
      console.log(e.code, "-", e.cause.message, "- printed before:", JSON.stringify(e.stdout));
    }
    // The session goes on.
    console.log((await sbx.runCode("print('next call')")).stdout.trim());
  });
}

main();
