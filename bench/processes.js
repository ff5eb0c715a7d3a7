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
const fs = require("fs");
const http = require("http");
const os = require("os");
const path = require("path");
const { pickPorts } = require("../lib/ports");
const { poolReadyMuted } = require("./poolready");

// An HTTP/1.1 server (keep-alive), the same program in the box and on the
// host: Python's http.server serving the current directory.
// One write per response and no Nagle: otherwise a kept-alive connection
// waits out the peer's delayed ACK (40 ms) on both sides alike.
const SERVER = "import http.server as h, sys\n" +
  "h.SimpleHTTPRequestHandler.protocol_version = 'HTTP/1.1'\n" +
  "h.SimpleHTTPRequestHandler.wbufsize = -1\n" +
  "h.SimpleHTTPRequestHandler.disable_nagle_algorithm = True\n" +
  "h.SimpleHTTPRequestHandler.log_message = lambda *a: None\n" +
  "h.ThreadingHTTPServer(('127.0.0.1', int(sys.argv[1])), h.SimpleHTTPRequestHandler).serve_forever()\n";

const lineOf = (i) => `line ${i} ${"x".repeat(40)}\n`;

/** Round trips of one line each through a stream pair, in ms. */
async function lineTrips(stdin, stdout, n) {
  const out = [];
  let buf = "";
  let want = null;
  const onData = (d) => {
    buf += d;
    if (want !== null && buf.endsWith(want.line)) {
      const w = want;
      want = null;
      buf = "";
      w.resolve();
    }
  };
  stdout.on("data", onData);
  for (let i = 0; i < n; i++) {
    const line = lineOf(i);
    const t0 = process.hrtime.bigint();
    await new Promise((resolve) => {
      want = { line, resolve };
      stdin.write(line);
    });
    out.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  stdout.off("data", onData);
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
  // keepBytes well over what the box writes in a pause of this thread (a
  // major GC at some GiB/s): the row is the throughput of a reader that
  // keeps up, and a drop fails it.
  const p = await s.spawn(["head", "-c", String(bytes), "/dev/zero"], { stdin: false, keepBytes: 64 << 20 });
  const got = await drain(p.stdout);
  await p.wait();
  if (got + p.droppedBytes.stdout !== bytes) throw new Error(`box head: ${got} + ${p.droppedBytes.stdout}`);
  if (p.droppedBytes.stdout !== 0) throw new Error(`a reader that keeps up dropped ${p.droppedBytes.stdout} bytes`);
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

/** GET url n times, each timed, on agent (keep-alive) or a new connection each. */
async function gets(url, n, agent) {
  const out = [];
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    await new Promise((resolve, reject) => {
      http.get(url, { agent }, (res) => {
        res.resume();
        res.on("end", resolve);
      }).on("error", reject);
    });
    out.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return out;
}

/** A TCP port free on the host now. */
async function freePort() {
  const [m] = await pickPorts([1], "127.0.0.1");
  return m.host;
}

/** HTTP through a published port against the same server on the host. */
async function httpRows(s, { h, row, median, quick, loop }) {
  const n = quick ? 200 : 1000;
  await s.writeFile("index.html", "hello\n");
  const box = await s.spawn(["python3", "-c", SERVER, "8000"], { ports: [8000], timeoutS: null, stdin: false });
  await box.waitForPort(8000, { timeoutS: 60 });
  loop?.disable(); // the host server's spawn forks this process (bench/run.js, the loop monitor)
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ks-bench-http-"));
  fs.writeFileSync(path.join(dir, "index.html"), "hello\n");
  const host = spawn("python3", ["-c", SERVER, String(port)], { cwd: dir, stdio: "ignore" });
  loop?.enable();
  try {
    const hostUrl = `http://127.0.0.1:${port}/`;
    for (let i = 0; i < 100; i++) {
      try {
        await gets(hostUrl, 1, undefined);
        break;
      } catch {
        await h.sleep(50);
      }
    }
    const boxUrl = `${box.ports[8000].url}/`;
    const keepBox = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const keepHost = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const kb = [];
    const kh = [];
    const nb = [];
    const nh = [];
    for (let r = 0; r < 4; r++) { // alternated rounds
      kh.push(...await gets(hostUrl, n / 4, keepHost));
      kb.push(...await gets(boxUrl, n / 4, keepBox));
      nh.push(...await gets(hostUrl, n / 8, new http.Agent({ keepAlive: false })));
      nb.push(...await gets(boxUrl, n / 8, new http.Agent({ keepAlive: false })));
    }
    keepBox.destroy();
    keepHost.destroy();
    row(`HTTP GET through a published port, kept-alive connection, ${n} requests`,
      `the same server on the host: p50 ${median(kh).toFixed(3)} ms`,
      `p50 ${median(kb).toFixed(3)} ms (+${(median(kb) - median(kh)).toFixed(3)} ms)`, "<= baseline + 0.3 ms",
      median(kb) <= median(kh) + 0.3);
    row(`HTTP GET through a published port, a new connection each, ${n / 2} requests`,
      `the same server on the host: p50 ${median(nh).toFixed(3)} ms`,
      `p50 ${median(nb).toFixed(3)} ms`, "p50 <= 3 ms", median(nb) <= 3);
  } finally {
    host.kill("SIGKILL");
    fs.rmSync(dir, { recursive: true, force: true });
    box.kill("SIGKILL");
    await box.wait();
  }
}

/** The figure: { Sandbox, h, row, median, quick, loop }. */
async function processes({ Sandbox, h, row, median, quick, loop }) {
  // The host baselines spawn with child_process, which forks this process:
  // not this package's time, so the loop monitor is off meanwhile.
  const unmonitored = async (fn) => {
    loop?.disable();
    try {
      return await fn();
    } finally {
      loop?.enable();
    }
  };
  const s = await new Sandbox({ prewarm: 1 }).open();
  try {
    await s.run(["true"]); // the pool learns the exec kind
    const n = quick ? 30 : 100;
    const spawns = [];
    const runs = [];
    for (let i = 0; i < n; i++) {
      await poolReadyMuted(h, loop, s);
      await h.sleep(50);
      let t0 = process.hrtime.bigint();
      const p = await s.spawn(["true"], { stdin: false });
      spawns.push(Number(process.hrtime.bigint() - t0) / 1e6);
      await p.wait();
      await poolReadyMuted(h, loop, s);
      await h.sleep(50);
      t0 = process.hrtime.bigint();
      await s.run(["true"]);
      runs.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    row(`spawn(["true"]) resolved, prewarmed box, ${n} spawns 50 ms apart`,
      `prewarmed run(["true"]) to its result, same pace: p50 ${median(runs).toFixed(2)} ms`,
      `p50 ${median(spawns).toFixed(2)} ms`, "p50 <= 2 ms", median(spawns) <= 2);

    const trips = quick ? 200 : 1000;
    await poolReadyMuted(h, loop, s);
    const cat = await s.spawn(["cat"], { timeoutS: null });
    // The pool refills after the spawn took its box: a box starting on the
    // other core would be in the figure, which the host cat does not have.
    await poolReadyMuted(h, loop, s);
    // Three alternated rounds, both with the loop monitor off (the same
    // conditions: where the scheduler puts the two cats moves a round trip
    // by tens of microseconds on a VM, so neither side gets one placement).
    const hostTrips = [];
    const box = [];
    for (let r = 0; r < 3; r++) {
      hostTrips.push(...await unmonitored(() => hostCat(trips)));
      box.push(...await unmonitored(() => lineTrips(cat.stdin, cat.stdout, trips)));
    }
    cat.stdin.end();
    await cat.wait();
    const ratio = median(box) / median(hostTrips);
    row(`a line through cat and back, 3 alternated rounds of ${trips} lines`,
      `child_process to a host cat: p50 ${median(hostTrips).toFixed(3)} ms`,
      `p50 ${median(box).toFixed(3)} ms = ${ratio.toFixed(2)}x`, "<= 1.5x", ratio <= 1.5);

    const bytes = (quick ? 256 : 1024) * 1024 * 1024;
    const hostMs = [];
    const boxMs = [];
    // Both readers keep the JS thread busy on purpose (a GiB through it as
    // fast as it goes): the loop monitor is off for this row, whose figure
    // is the throughput itself.
    for (let r = 0; r < 3; r++) {
      hostMs.push(await unmonitored(() => hostBulk(bytes)));
      boxMs.push(await unmonitored(() => boxBulk(s, bytes)));
    }
    const mib = bytes / 1048576;
    const hostRate = mib / (median(hostMs) / 1000);
    const boxRate = mib / (median(boxMs) / 1000);
    row(`bulk stdout, head -c ${mib} MiB, read as it comes (3 alternated rounds)`,
      `child_process, the same command on the host: ${hostRate.toFixed(0)} MiB/s`,
      `${boxRate.toFixed(0)} MiB/s = ${(boxRate / hostRate).toFixed(2)}x`, ">= 1.0x", boxRate >= hostRate);
    await httpRows(s, { h, row, median, quick, loop });
  } finally {
    await s.close();
  }
}

module.exports = { processes };
