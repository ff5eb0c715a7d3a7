#!/usr/bin/env node
"use strict";

// Where this process's own CPU goes per call, thread by thread: how long each
// thread ran, how long it waited runnable for a CPU, and how often it slept
// (each sleep is one wakeup later). A diagnostic, not a figure of the table
// (`node bench/run.js` has those, with their baselines): wall times on this
// VM move with its phase and the hypervisor's steal, and a thread's run time
// (schedstat, which leaves steal out on a kernel with
// CONFIG_PARAVIRT_TIME_ACCOUNTING, as this VM's) and its wakeups move far less, so a
// change to the host's share of a call shows here first. It found kern's
// SIGCHLD waking the JS thread once per box (bench/README.md).
//
//   node bench/host-cpu.js                 # against the kern test double
//   KERN_BENCH_REAL=1 KERN_BIN=/path/to/kern node bench/host-cpu.js
//   node bench/host-cpu.js cold=300 paced=100
const fs = require("fs");
const h = require("../test/lib/harness");

const realKern = process.env.KERN_BENCH_REAL === "1" && process.env.KERN_BIN;
if (!realKern) process.env.KERN_BIN = h.fakeKern();
const { Sandbox } = require("..");

const arg = (name, dflt) => {
  const a = process.argv.find((x) => x.startsWith(`${name}=`));
  return a ? Number(a.slice(name.length + 1)) : dflt;
};

/** Per thread of this process: name, ns run, ns waited runnable, sleeps. */
function threads() {
  const out = new Map();
  for (const tid of fs.readdirSync("/proc/self/task")) {
    try {
      const dir = `/proc/self/task/${tid}`;
      const [run, wait] = fs.readFileSync(`${dir}/schedstat`, "utf8").split(" ").map(Number);
      const status = fs.readFileSync(`${dir}/status`, "utf8");
      const sleeps = Number(/\nvoluntary_ctxt_switches:\s+(\d+)/.exec(status)[1]);
      const name = fs.readFileSync(`${dir}/comm`, "utf8").trim();
      out.set(tid, { name, run, wait, sleeps });
    } catch {
      // a thread that ended meanwhile
    }
  }
  return out;
}

/** The JS thread, the engine's threads (ks-supervisor, ks-scan, ks-reaper,
 * ...), and every other thread (V8's and libuv's workers) summed, per call,
 * between two readings. (A thread that ended between them cannot be read:
 * the short-lived ones, a closer or a reaper, are left out.) */
function perCall(a, b, n) {
  const groups = new Map();
  for (const [tid, t] of b) {
    const p = a.get(tid) || { run: 0, wait: 0, sleeps: 0 };
    const g = tid === String(process.pid) ? "JS thread" : t.name.startsWith("ks-") ? "engine"
      : "other threads";
    const s = groups.get(g) || { run: 0, wait: 0, sleeps: 0 };
    s.run += t.run - p.run;
    s.wait += t.wait - p.wait;
    s.sleeps += t.sleeps - p.sleeps;
    groups.set(g, s);
  }
  for (const g of ["JS thread", "engine", "other threads"]) {
    const s = groups.get(g) || { run: 0, wait: 0, sleeps: 0 };
    console.log(`  ${g.padEnd(14)} ran ${(s.run / n / 1e3).toFixed(0).padStart(5)} us, ` +
      `waited runnable ${(s.wait / n / 1e3).toFixed(0).padStart(5)} us, ` +
      `slept ${(s.sleeps / n).toFixed(2)} times per call`);
  }
}

async function measure(title, opts, n, gapMs, call) {
  if (!(n > 0)) return;
  const s = await new Sandbox(opts).open();
  try {
    await h.sleep(300); // a prewarmed box boots
    for (let i = 0; i < 20; i++) await call(s); // warm-up
    const took = [];
    const a = threads();
    for (let i = 0; i < n; i++) {
      const t0 = process.hrtime.bigint();
      await call(s);
      took.push(Number(process.hrtime.bigint() - t0) / 1e6);
      if (gapMs > 0) await h.sleep(gapMs);
    }
    const b = threads();
    took.sort((x, y) => x - y);
    console.log(`${title}: ${n} calls, p50 ${took[n >> 1].toFixed(2)} ms from the call to its result`);
    perCall(a, b, n);
  } finally {
    await s.close();
  }
}

(async () => {
  console.log(`kern-sandbox host CPU per call, against ${realKern ? `real kern (${realKern})` : "the kern test double"}`);
  const ws = h.tmpDir("host-cpu-");
  await measure("cold run([\"true\"]), back to back", { workspace: ws, prewarm: 0 }, arg("cold", 300), 0,
    (s) => s.run(["true"]));
  await measure("run([\"true\"]), prewarm: 1, 50 ms apart", { workspace: ws, prewarm: 1 },
    arg("paced", 100), 50, (s) => s.run(["true"]));
})().catch((e) => {
  console.error(e);
  process.exitCode = 1;
}).finally(() => h.cleanup());
