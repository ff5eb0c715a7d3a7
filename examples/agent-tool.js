// A tool handler the size an agent framework expects: code in, a compact
// result out (the tails of stdout and stderr, the fault, the files made),
// so the model sees what it needs without a 64 MiB flood.
// Run: node examples/agent-tool.js
"use strict";

const { Sandbox, AbortError } = require("kern-sandbox");

const TAIL = 2000; // characters of each stream the model gets

function tail(text) {
  return text.length <= TAIL ? text : `[... ${text.length - TAIL} characters cut ...]\n${text.slice(-TAIL)}`;
}

/** Makes the `run_python` tool of one agent conversation. */
function pythonTool(sbx) {
  return async function runPython({ code }, { signal } = {}) {
    try {
      const r = await sbx.runCode(code, { timeoutS: 30, signal });
      return {
        ok: r.success,
        exitCode: r.exitCode,
        stdout: tail(r.stdout),
        stderr: tail(r.stderr),
        fault: r.fault && `${r.fault.type}: ${r.fault.message}`,
        files: r.files.map((f) => `${f.path} (${f.size} bytes, ${f.change})`),
        // Charts as PNG come with the code-interpreter results (issue 14):
        // until then, read a saved file with sbx.readFile("chart.png").
      };
    } catch (e) {
      if (e instanceof AbortError) return { ok: false, aborted: true, stdout: tail(e.stdout) };
      throw e;
    }
  };
}

async function main() {
  const sbx = await new Sandbox({ memoryMb: 512 }).open();
  try {
    const runPython = pythonTool(sbx);
    const good = await runPython({ code: "print('x' * 5000)\nopen('notes.txt', 'w').write('hi')" });
    console.log(good.ok, good.stdout.length, good.files);
    const bad = await runPython({ code: "1 / 0" });
    console.log(bad.ok, bad.exitCode, bad.stderr.trim().split("\n").pop()); // ZeroDivisionError
    const stopped = await runPython({ code: "while True: pass" }, { signal: AbortSignal.timeout(300) });
    console.log(stopped); // { ok: false, aborted: true, stdout: '' }
    if (!good.ok || bad.ok || !stopped.aborted) process.exitCode = 1;
  } finally {
    await sbx.close();
  }
}

main();
