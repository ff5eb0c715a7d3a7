#!/usr/bin/env node
"use strict";

// fs.promises.readFile latency while 64 boxes start (issue 2's figure), next
// to its control: the same 64 kern processes started by an unrelated shell,
// with no kern-sandbox code in this process. On a machine where process
// creation is dear, the control shows the same spikes: they are the
// machine's, not the engine's.
//
//   node bench/readfile-latency.js [ROUNDS]
const fs = require("fs");
const path = require("path");
const { spawn } = require("child_process");
const h = require("../test/lib/harness");

process.env.KERN_BIN = h.fakeKern();
const ROUNDS = Number(process.argv[2] || 3);
const file = path.join(h.tmpDir("rfl-"), "f");
fs.writeFileSync(file, "x".repeat(1024));

/** readFile every 10 ms until done() is true; returns the latencies (ms). */
async function sample(done) {
  const lat = [];
  while (!done()) {
    const t = process.hrtime.bigint();
    await fs.promises.readFile(file);
    lat.push(Number(process.hrtime.bigint() - t) / 1e6);
    await h.sleep(10);
  }
  return lat.sort((a, b) => a - b);
}

const fmt = (lat) => `n ${lat.length}, p95 ${lat[Math.floor(lat.length * 0.95)].toFixed(1)} ms, ` +
  `max ${lat[lat.length - 1].toFixed(1)} ms`;

async function control() {
  const ws = h.tmpDir("rfl-ws-");
  const script = `for i in $(seq 64); do "$KERN_BIN" box rfl$i --image python:3.12-slim ` +
    `-v "${ws}:/workspace" -- sleep 1 >/dev/null 2>&1 & done; wait`;
  const child = spawn("sh", ["-c", script], { stdio: "ignore" });
  let done = false;
  child.on("exit", () => { done = true; });
  return sample(() => done);
}

async function engine() {
  const { withSandbox } = require("..");
  let lat;
  await withSandbox(async (sbx) => {
    let done = false;
    const all = Promise.all(Array.from({ length: 64 }, () => sbx.run(["sleep", "1"])))
      .finally(() => { done = true; });
    lat = await sample(() => done);
    await all;
  });
  return lat;
}

(async () => {
  console.log(`readFile during 64 box start-ups, ${ROUNDS} rounds each, interleaved`);
  for (let r = 0; r < ROUNDS; r++) {
    console.log(`  control (a shell starts the 64 kerns): ${fmt(await control())}`);
    console.log(`  engine  (64 x run(["sleep","1"])):     ${fmt(await engine())}`);
  }
  h.cleanup();
})();
