"use strict";

// Two trees of this package in one process, their calls alternated one by
// one: issue 32's "none more than 5% worse" for the rows whose spread from
// run to run is as wide as that. bench/trees.js runs each tree in a child
// process of its own per round; there, the spread between rounds (which
// core each thread wakes on, the host's frequency, the other tenants) is as
// wide as the difference it looks for. Here each call of tree A has a call
// of tree B beside it, the order drawn at random per pair, and the figure is
// the median of the pairs' ratios, with a bootstrap interval.
//   KERN_BIN=... node bench/pairs.js [pairs=600] [only=GROUP,...] [tracked=1] TREE_A[@off=NAME] TREE_B[@off=NAME]
// Groups: prewarmed (the default: run(["true"]) and runCode, prewarm: 1,
// 50 ms apart), close (close() with an idle prewarmed box; after one settled
// run, prewarm: 0), cells (a kernel's cells back to back, shared and fork),
// kernel (kernel() to its first result, prewarmed box).
// An arm's @off= sets KERN_SANDBOX_BENCH_OFF while that tree loads (a tree
// reads it once, at its load: it applies to that tree only; for two arms of
// one tree, copy the tree). tracked=1: the sessions track files, the
// package's default, where otherwise trackFiles is false.
const path = require("path");

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The median of xs. */
function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

/** A 95% bootstrap interval of the median of xs (seeded, so two runs over
 * the same figures print the same interval). */
function interval(xs) {
  let seed = 12345;
  const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
  const meds = [];
  for (let b = 0; b < 1000; b++) meds.push(median(xs.map(() => xs[Math.floor(rand() * xs.length)])));
  meds.sort((a, b) => a - b);
  return [meds[25], meds[974]];
}

async function timeOne(call) {
  const t0 = process.hrtime.bigint();
  await call();
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

/** Loads one arm's package, with its bench switches. */
function load(spec) {
  const [tree, off = ""] = spec.split("@off=");
  const dir = path.resolve(tree);
  const before = process.env.KERN_SANDBOX_BENCH_OFF;
  if (off) process.env.KERN_SANDBOX_BENCH_OFF = off;
  else delete process.env.KERN_SANDBOX_BENCH_OFF;
  try {
    return { name: spec, Sandbox: require(dir).Sandbox, ENGINE: require(path.join(dir, "lib", "internal")).ENGINE };
  } finally {
    if (before === undefined) delete process.env.KERN_SANDBOX_BENCH_OFF;
    else process.env.KERN_SANDBOX_BENCH_OFF = before;
  }
}

/** A kernel's cells back to back (as bench/run.js's kernel()): a prewarm: 0
 * session's kernel per arm, kept for the whole row. */
function kernelCells(isolation) {
  return { group: "cells", keep: true, block: 50,
    ready: async (a, o) => {
      const s = await new a.Sandbox({ prewarm: 0, ...o }).open();
      return { s, k: await s.kernel({ isolation }) };
    },
    call: async ({ k }) => {
      const r = await k.runCode("sum(range(1000))");
      if (r.results[0]?.text !== "499500") throw new Error(`a cell failed: ${JSON.stringify(r)}`);
    },
    done: async ({ s, k }) => {
      await k.close();
      await s.close();
    } };
}

// Each row: its group, and per pair, what each arm readies untimed (ready)
// and the call timed (call, given what ready returned), then what ends it
// (done). A row with `keep` readies once for many pairs (measure()).
const ROWS = {
  runTrue: { group: "prewarmed", keep: true, gapMs: 50,
    ready: (a, o) => new a.Sandbox({ prewarm: 1, ...o }).open(), call: (s) => s.run(["true"]), done: (s) => s.close() },
  runCode: { group: "prewarmed", keep: true, gapMs: 50,
    ready: (a, o) => new a.Sandbox({ prewarm: 1, ...o }).open(), call: (s) => s.runCode("print(1)"), done: (s) => s.close() },
  close: { group: "close", settleMs: 300, // its box is up and idle
    ready: (a, o) => new a.Sandbox({ prewarm: 1, ...o }).open(), call: (s) => s.close() },
  close0: { group: "close",
    ready: async (a, o) => {
      const s = await new a.Sandbox({ prewarm: 0, [a.ENGINE]: "init", ...o }).open();
      await s.run(["true"]);
      return s;
    },
    call: (s) => s.close() },
  cellShared: kernelCells("shared"),
  cellFork: kernelCells("fork"),
  kernel: { group: "kernel", settleMs: 300,
    ready: (a, o) => new a.Sandbox({ prewarm: 1, ...o }).open(),
    call: async (s) => (await s.kernel()).runCode("1"), done: (s) => s.close() },
};

/** pairs of row's calls, the arms alternated: [[ms of A], [ms of B]]. A
 * row with `keep` readies anew every `block` pairs (all of them by default):
 * one kernel's speed differs from another's by a few percent for its whole
 * life, which a single kernel per arm would count as the trees'. */
async function measure(row, arms, pairs, opts) {
  const times = [[], []];
  const block = row.keep ? (row.block ?? pairs) : 1;
  for (let i = 0; i < pairs; i += block) {
    const ready = await Promise.all(arms.map((a) => row.ready(a, opts)));
    try {
      if (row.keep) for (const r of ready) for (let w = 0; w < 10; w++) await row.call(r); // warm-up
      if (row.settleMs) await sleep(row.settleMs);
      for (let j = i; j < Math.min(i + block, pairs); j++) {
        const first = Math.random() < 0.5 ? 0 : 1;
        for (const k of [first, 1 - first]) {
          if (row.gapMs) await sleep(row.gapMs);
          times[k].push(await timeOne(() => row.call(ready[k])));
        }
      }
    } finally {
      if (row.done) await Promise.all(ready.map(row.done));
    }
  }
  return times;
}

async function main() {
  const args = process.argv.slice(2);
  const opt = (name, dflt) => (args.find((a) => a.startsWith(`${name}=`)) ?? `=${dflt}`).split("=")[1];
  const pairs = Number(opt("pairs", 600));
  const groups = opt("only", "prewarmed").split(",");
  const tracked = opt("tracked", "0") === "1";
  const specs = args.filter((a) => !a.includes("=") || a.includes("@off="));
  if (specs.length !== 2 || !(pairs > 0)) {
    console.error("usage: KERN_BIN=... node bench/pairs.js [pairs=600] [only=GROUP,...] [tracked=1] TREE_A[@off=NAME] TREE_B[@off=NAME]");
    process.exitCode = 2;
    return;
  }
  const arms = specs.map(load);
  const opts = tracked ? {} : { trackFiles: false };
  console.log(`A = ${arms[0].name}\nB = ${arms[1].name}\n${pairs} pairs a row, trackFiles ${tracked}`);
  console.log("row       p50 A ms  p50 B ms  B/A (pairs' median, 95%)   pairs B slower");
  for (const [name, row] of Object.entries(ROWS)) {
    if (!groups.includes(row.group)) continue;
    const [a, b] = await measure(row, arms, pairs, opts);
    const ratios = a.map((x, i) => b[i] / x);
    const [lo, hi] = interval(ratios);
    const slower = ratios.filter((x) => x > 1).length;
    console.log(
      `${name.padEnd(9)} ${median(a).toFixed(3).padStart(8)}  ${median(b).toFixed(3).padStart(8)}  ` +
        `${median(ratios).toFixed(3)}x (${lo.toFixed(3)}-${hi.toFixed(3)})`.padEnd(27) +
        `${slower}/${pairs}`,
    );
  }
}

// Some trees let the loop go empty while a claimed box runs (fc6f334 exits
// in the middle of a prewarmed run(["true"]) with nothing else pending): a
// timer keeps the process alive, as bench/trees.js's children do.
const alive = setInterval(() => {}, 1000);
main()
  .catch((e) => {
    console.error(e);
    process.exitCode = 1;
  })
  .finally(() => clearInterval(alive));
