"use strict";

// Issue 33's bench rows for processes (bench/run.js, figure `processes`),
// each against a baseline measured in the same run:
//   - spawn() resolved with a prewarmed box, p50 (context: a claimed
//     run(["true"]) to its result, same pace);
//   - a line through a box's cat and back, p50, against the same line
//     through Node's child_process to a host cat;
//   - bulk stdout (head -c N /dev/zero), throughput, against the same
//     command through child_process on the host.
const { spawn } = require("child_process");

const lineOf = (i) => `line ${i} ${"x".repeat(40)}\n`;

/** Round trips of one line each through a stream pair, in ms. */
async function lineTrips(stdin, stdout, n) {
  const out = [];
  let buf = "";
  let want = null;
  stdout.on("data", (d) => {
    buf += d;
    if (want !== null && buf.endsWith(want.line)) {
      const w = want;
      want = null;
      buf = "";
      w.resolve();
    }
  });
  for (let i = 0; i < n; i++) {
    const line = lineOf(i);
    const t0 = process.hrtime.bigint();
    await new Promise((resolve) => {
      want = { line, resolve };
      stdin.write(line);
    });
    out.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return out;
}

/** Reads a Readable to its end: its bytes. */
async function drain(stream) {
  let bytes = 0;
  for await (const c of stream) bytes += c.length;
  return bytes;
}

async function hostCat(n) {
  const child = spawn("cat", [], { stdio: ["pipe", "pipe", "inherit"] });
  const trips = await lineTrips(child.stdin, child.stdout, n);
  child.stdin.end();
  await new Promise((resolve) => child.on("close", resolve));
  return trips;
}

async function hostBulk(bytes) {
  const t0 = process.hrtime.bigint();
  const child = spawn("head", ["-c", String(bytes), "/dev/zero"], { stdio: ["ignore", "pipe", "inherit"] });
  const got = await drain(child.stdout);
  await new Promise((resolve) => child.on("close", resolve));
  if (got !== bytes) throw new Error(`host head gave ${got} bytes`);
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

async function boxBulk(s, bytes) {
  const t0 = process.hrtime.bigint();
  const p = await s.spawn(["head", "-c", String(bytes), "/dev/zero"], { stdin: false });
  const got = await drain(p.stdout);
  await p.wait();
  if (got + p.droppedBytes.stdout !== bytes) throw new Error(`box head: ${got} + ${p.droppedBytes.stdout}`);
  if (p.droppedBytes.stdout !== 0) throw new Error(`a reader that keeps up dropped ${p.droppedBytes.stdout} bytes`);
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

/** The figure: { Sandbox, h, row, median, quick }. */
async function processes({ Sandbox, h, row, median, quick }) {
  const s = await new Sandbox({ prewarm: 1 }).open();
  try {
    await s.run(["true"]); // the pool learns the exec kind
    const n = quick ? 30 : 100;
    const spawns = [];
    const runs = [];
    for (let i = 0; i < n; i++) {
      await h.poolReady(s);
      await h.sleep(50);
      let t0 = process.hrtime.bigint();
      const p = await s.spawn(["true"], { stdin: false });
      spawns.push(Number(process.hrtime.bigint() - t0) / 1e6);
      await p.wait();
      await h.poolReady(s);
      await h.sleep(50);
      t0 = process.hrtime.bigint();
      await s.run(["true"]);
      runs.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    row(`spawn(["true"]) resolved, prewarmed box, ${n} spawns 50 ms apart`,
      `prewarmed run(["true"]) to its result, same pace: p50 ${median(runs).toFixed(2)} ms`,
      `p50 ${median(spawns).toFixed(2)} ms`, "p50 <= 2 ms", median(spawns) <= 2);

    const trips = quick ? 200 : 1000;
    const host = await hostCat(trips);
    await h.poolReady(s);
    const cat = await s.spawn(["cat"], { timeoutS: null });
    const box = await lineTrips(cat.stdin, cat.stdout, trips);
    cat.stdin.end();
    await cat.wait();
    const ratio = median(box) / median(host);
    row(`a line through cat and back, ${trips} lines`,
      `child_process to a host cat: p50 ${median(host).toFixed(3)} ms`,
      `p50 ${median(box).toFixed(3)} ms = ${ratio.toFixed(2)}x`, "<= 1.5x", ratio <= 1.5);

    const bytes = (quick ? 256 : 1024) * 1024 * 1024;
    const hostMs = [];
    const boxMs = [];
    for (let r = 0; r < 3; r++) {
      hostMs.push(await hostBulk(bytes));
      boxMs.push(await boxBulk(s, bytes));
    }
    const mib = bytes / 1048576;
    const hostRate = mib / (median(hostMs) / 1000);
    const boxRate = mib / (median(boxMs) / 1000);
    row(`bulk stdout, head -c ${mib} MiB, read as it comes (3 alternated rounds)`,
      `child_process, the same command on the host: ${hostRate.toFixed(0)} MiB/s`,
      `${boxRate.toFixed(0)} MiB/s = ${(boxRate / hostRate).toFixed(2)}x`, ">= 1.0x", boxRate >= hostRate);
  } finally {
    await s.close();
  }
}

module.exports = { processes };
