"use strict";

// The examples/ programs and what each must print: run by 39.examples (the
// double) and integration/examples (a real kern).
const path = require("path");
const { spawnSync } = require("child_process");
const h = require("./harness");

const EXPECT = {
  "one-shot.js": [/^4950$/m, /^True$/m],
  "session-files.js": [/^3 rows$/m, /out\/summary\.json/, /hot: \[ 'Lima', 'Cairo' \]/],
  "streaming.js": [/^live: step 0$/m, /the result has it all too: "step 0\\nstep 1\\nstep 2\\n"/],
  "agent-tool.js": [/^true 20\d\d \[ 'notes\.txt \(2 bytes, created\)' \]$/m,
    /^false 1 ZeroDivisionError: division by zero$/m, /aborted: true/],
  "abort.js": [/^ABORT_ERR - the user pressed stop - printed before: "working\.\.\.\\n"$/m, /^next call$/m],
  "snapshot.js": [/^snapshot: \d+ bytes$/m, /^restored: 0\.1 0\.2 0\.3$/m],
  "code-interpreter.js": [/^mean: 15\.933333333333332$/m, /^formats: text, html$/m,
    /^crashed cell exit: 134$/m, /^slow cell: timeout$/m, /^rows still: 3$/m, /^after rollback: 3$/m],
  // Issue 33: processes.
  "dev-server.js": [/^GET http:\/\/127\.0\.0\.1:PORT -> 200: <h1>hello from a box<\/h1>$/m,
    /^server stopped: fault null, exit /m],
  "terminal.js": [/^size: 30 100$/m, /^resized: 43 132$/m, /^a terminal: yes$/m, /^after \^C: status 130$/m,
    /^shell exited 0$/m],
  "interactive.js": [/^>>> 1 \+ 1\n2$/m, /^>>> x \* 2\n42$/m, /^>>> 'box'.upper\(\)\n'BOX'$/m, /^repl exited 0$/m],
  // Issue 34: the framework adapters, with their scripted models (no API key set).
  "ai-sdk-agent.js": [/^tool run_code: \{"exitCode":0,"stdout":"6\\n"/m,
    /^tool read_file: "hello from the workspace\\n"$/m, /^answer: The mean is 6/m],
  "openai-agents-sandbox.js": [/^tool output: Process exited with code 0 \| Output: \| 55 \| a kern box$/m,
    /^answer: fib\(10\) is 55\.$/m],
};

/** Runs examples/NAME with env on top of ours; { status, stdout, stderr }. */
function runExample(name, env) {
  const r = spawnSync(process.execPath, ["--no-warnings", path.join(h.repo, "examples", name)], {
    cwd: h.repo, encoding: "utf8", timeout: 90000, env: { ...process.env, ...env },
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

module.exports = { EXPECT, runExample };
