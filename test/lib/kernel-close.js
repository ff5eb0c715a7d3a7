"use strict";

// Issue 31's flows (test/fixtures/scripts/kernel-close-flows.js), run in
// child processes: test/48 with the double, test/integration/kernel-close
// with a real kern.
const assert = require("assert");
const path = require("path");
const { spawn } = require("child_process");
const h = require("./harness");

const SCRIPT = path.join(__dirname, "../fixtures/scripts/kernel-close-flows.js");
const REPO = path.join(__dirname, "../..");
const PER_CHILD = 50; // rounds in one child process

/** Runs `rounds` rounds of flow in one child; resolves with the rounds that
 * reached their last line, the child's exit and what it said otherwise. */
function runFlow(flow, rounds, env = {}) {
  const child = spawn(process.execPath, [SCRIPT, REPO, flow, String(rounds)],
    { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env } });
  let out = "";
  let err = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (err += d));
  return h.closeOf(child).then(([code, signal]) => ({
    reached: out.split("\n").filter((l) => /^round \d+$/.test(l)).length,
    code, signal, said: `${out.split("\n").filter((l) => !/^round/.test(l)).join("\n")}${err}`.trim(),
  }));
}

async function assertFlow(flow, rounds, env) {
  for (let done = 0; done < rounds; done += PER_CHILD) {
    const n = Math.min(PER_CHILD, rounds - done);
    const r = await runFlow(flow, n, env);
    assert.strictEqual(r.reached, n, `${flow}: ${r.reached} of ${n} rounds reached their last ` +
      `line (exit ${r.code ?? r.signal})${r.said ? `: ${r.said.slice(-2000)}` : ""}`);
    assert.strictEqual(r.code, 0, `${flow}: exit ${r.code ?? r.signal}: ${r.said.slice(-2000)}`);
  }
}

const FLOWS = ["issue", "withSandbox", "fork", "restart", "race"];

module.exports = { runFlow, assertFlow, FLOWS };
