"use strict";

// Two trees of this package, one row at a time, with many calls per process
// (issue 32's "none more than 5% worse" on the rows whose spread in
// bench/run.js is wider than 5%: the prewarmed calls, close() with an idle
// box, a prewarmed kernel()'s start, a shared kernel cell). Each round runs
// one child process per tree, the order alternated, so that both see the
// same phase of the host; each child loads its tree's package by path and
// measures through the public API only, which both trees share.
//   KERN_BIN=... node bench/trees.js [rounds=8] [calls=200] [only=GROUP,...] [tracked=1] TREE_A TREE_B
// An arm may be TREE@off=NAME[,NAME...]: that tree with those bench
// switches off (KERN_SANDBOX_BENCH_OFF, lib/benchoff.js), so that one
// mechanism is measured A/B on one tree with this harness's many calls.
// (only=: the row groups, ROWS' third column, snapshots among them;
// tracked=1: the sessions track
// files, the package's default, where otherwise trackFiles is false)
// Prints, per row and tree, the p50 of all calls pooled and the range of
// the rounds' p50s, B's pooled p50 over A's, and the rounds in which B's
// p50 was over A's.
const path = require("path");
const fs = require("fs");
const os = require("os");
const { spawnSync } = require("child_process");
const { makeTree, snapshotRounds } = require("./snaptree");

const ROWS = [
  ["runTrue", 'run(["true"]), prewarm: 1, 50 ms apart', "prewarmed"],
  ["runCode", 'runCode("print(1)"), prewarm: 1, 50 ms apart', "prewarmed"],
  ["cell", 'kernel cell "1", shared, back to back (prewarm: 1 session)', "cell"],
  ["cellShared", "kernel cell sum(range(1000)), shared, back to back (prewarm: 0)", "cells"],
  ["cellFork", "kernel cell sum(range(1000)), fork, back to back (prewarm: 0)", "cells"],
  ["close", "close() with an idle prewarmed box", "close"],
  ["close0", "close() after one settled run([\"true\"]), prewarm: 0", "close0"],
  ["kernel", "kernel() to its first result, with a prewarmed box", "kernel"],
  ["b2bWarm", 'runCode("print(1)") back to back, prewarm: 1', "b2b"],
  ["b2bCold", 'runCode("print(1)") back to back, prewarm: 0', "b2b"],
  ["oneShot", 'one-shot runCode("print(1)")', "oneshot"],
  ["oneShotRef", 'one-shot runCode("print(1)") of 0.1.1, interleaved with the row above', "oneshot"],
  ["snapshot", "snapshot(), 10,000 files / 100 MiB", "snapshots"],
  ["tarC", "tar -I 'gzip -1' -cf of the same tree, interleaved", "snapshots"],
  ["restore", "restore() of that snapshot", "snapshots"],
  ["tarX", "tar -xzf of that snapshot, interleaved", "snapshots"],
];
// Ratios that bench/run.js reports within one run, rebuilt per tree from
// the rows above: [name, numerator row, denominator row].
const RATIOS = [
  ["back to back runCode, prewarm 1 over prewarm 0", "b2bWarm", "b2bCold"],
  ["one-shot runCode over 0.1.1's", "oneShot", "oneShotRef"],
  ["snapshot over tar -c", "snapshot", "tarC"],
  ["restore over tar -xzf", "restore", "tarX"],
];
// The reference 0.1.1 package beside the repositories (as bench/run.js finds it).
const REFERENCE = path.join(__dirname, "..", "..", "shared", "spec", "kern-sandbox-0.1.1", "index.js");

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;

/** Times `count` calls of `call` one after another into `into`. */
async function timed(into, count, call, gapMs = 0) {
  for (let i = 0; i < count; i++) {
    if (gapMs > 0) await sleep(gapMs);
    const t0 = process.hrtime.bigint();
    await call();
    into.push(ms(t0));
  }
}

/** One tree's calls in this process: { row: [ms, ...] }, the row groups of
 * `groups` only. */
async function child(tree, calls, groups, tracked) {
  const { Sandbox, runCode } = require(tree);
  const { ENGINE } = require(path.join(tree, "lib", "internal"));
  const track = tracked === "1" ? {} : { trackFiles: false };
  const opts = { prewarm: 1, ...track };
  const cold = { prewarm: 0, [ENGINE]: "init", ...track };
  const out = Object.fromEntries(ROWS.map(([k]) => [k, []]));
  const want = (g) => groups.includes(g);
  const py = (s) => () => s.runCode("print(1)");
  if (want("prewarmed") || want("cell")) {
    // A session per kind: a session's pool refills with the kind of its
    // last call, so alternating kinds in one would find the wrong box.
    const exec = await new Sandbox(opts).open();
    const pys = await new Sandbox(opts).open();
    try {
      await timed([], 10, () => exec.run(["true"])); // warm-up
      await timed([], 10, py(pys));
      for (let i = 0; want("prewarmed") && i < calls; i++) {
        await timed(out.runTrue, 1, () => exec.run(["true"]), 50);
        await timed(out.runCode, 1, py(pys), 50);
      }
      if (want("cell")) {
        const k = await pys.kernel();
        await timed(out.cell, calls * 2, () => k.runCode("1")).finally(() => k.close());
      }
    } finally {
      await exec.close();
      await pys.close();
    }
  }
  if (want("cells")) { // as bench/run.js's kernel(): a prewarm: 0 session
    const s = await new Sandbox({ prewarm: 0, ...track }).open();
    try {
      for (const [isolation, into, count] of [["shared", out.cellShared, calls * 5], ["fork", out.cellFork, calls]]) {
        const k = await s.kernel({ isolation });
        const cell = async () => {
          const r = await k.runCode("sum(range(1000))");
          if (r.results[0]?.text !== "499500") throw new Error(`a cell failed: ${JSON.stringify(r)}`);
        };
        await timed([], 50, cell).then(() => timed(into, count, cell)).finally(() => k.close());
      }
    } finally {
      await s.close();
    }
  }
  for (let i = 0; i < calls / 5; i++) {
    if (want("close")) {
      const s = await new Sandbox(opts).open();
      await sleep(300); // its box is up and idle
      await timed(out.close, 1, () => s.close());
    }
    if (want("close0")) {
      const s = await new Sandbox(cold).open();
      await s.run(["true"]);
      await timed(out.close0, 1, () => s.close());
    }
    if (want("kernel")) {
      const s = await new Sandbox(opts).open();
      await sleep(300);
      await timed(out.kernel, 1, async () => (await s.kernel()).runCode("1"));
      await s.close(); // closes its kernel
    }
  }
  if (want("b2b")) { // interleaved chunks, as bench/run.js's prewarmed()
    for (let r = 0; r < 5; r++) {
      for (const [o, into] of [[opts, out.b2bWarm], [cold, out.b2bCold]]) {
        const s = await new Sandbox(o).open();
        await sleep(300); // the first box boots
        await timed(into, Math.ceil(calls / 5), py(s)).finally(() => s.close());
      }
    }
  }
  if (want("oneshot")) {
    const ref = require(REFERENCE);
    for (let i = 0; i < calls / 4 + 2; i++) {
      // Each call starts after the other's kern has gone (a sleep, where
      // bench/run.js waits for the teardown it can see).
      await timed(i < 2 ? [] : out.oneShot, 1, () => runCode("print(1)"));
      await sleep(100);
      await timed(i < 2 ? [] : out.oneShotRef, 1, () => ref.runCode("print(1)"));
      await sleep(100);
    }
  }
  if (want("snapshots")) { // as bench/run.js's snapshots(): 3 of each per child
    const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "bench-trees-snap-"));
    const src = path.join(scratch, "tree");
    fs.mkdirSync(src);
    makeTree(src);
    const sbx = await new Sandbox({ workspace: src }).open();
    try {
      const t = await snapshotRounds(Sandbox, sbx, src, scratch, 3);
      [out.snapshot, out.tarC, out.restore, out.tarX] = [t.ours, t.tars, t.oursX, t.tarsX];
    } finally {
      await sbx.close();
      fs.rmSync(scratch, { recursive: true, force: true });
    }
  }
  return out;
}

function p50(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

function main() {
  const args = process.argv.slice(2);
  if (args[0] === "--child") {
    // Some trees let the loop go empty while a claimed box runs (fc6f334
    // exits in the middle of a prewarmed run(["true"]) with nothing else
    // pending): a timer keeps the child alive, as bench/run.js's do.
    const alive = setInterval(() => {}, 1000);
    child(path.resolve(args[1]), Number(args[2]), args[3].split(","), args[4]).finally(() => clearInterval(alive)).then((out) => process.stdout.write(JSON.stringify(out)),
      (e) => {
        console.error(e);
        process.exitCode = 1;
      });
    return;
  }
  const opt = (name, dflt) => Number((args.find((a) => a.startsWith(`${name}=`)) ?? `=${dflt}`).split("=")[1]);
  const rounds = opt("rounds", 8);
  const calls = opt("calls", 200);
  // only=GROUP[,GROUP...]: the third column of ROWS; by default the rows
  // that were there first.
  const only = (args.find((a) => a.startsWith("only=")) ?? "only=prewarmed,cell,close,kernel").slice(5);
  const tracked = (args.find((a) => a.startsWith("tracked=")) ?? "tracked=0").slice(8);
  const arms = args.filter((a) => !a.includes("=") || a.includes("@off="));
  const trees = arms.map((a) => a.split("@off=")[0]);
  const offs = arms.map((a) => a.split("@off=")[1] ?? "");
  if (trees.length !== 2) {
    console.error("usage: KERN_BIN=... node bench/trees.js [rounds=8] [calls=200] TREE_A[@off=NAME] TREE_B[@off=NAME]");
    process.exitCode = 2;
    return;
  }
  const all = trees.map(() => Object.fromEntries(ROWS.map(([k]) => [k, []])));
  const perRound = trees.map(() => Object.fromEntries(ROWS.map(([k]) => [k, []])));
  const t0 = Date.now();
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? [0, 1] : [1, 0];
    for (const t of order) {
      console.error(`trees: round ${r + 1}/${rounds}, ${arms[t]}`);
      // (Snapshots are opt-in: the snapshots group takes them.)
      const env = { ...process.env, KERN_SANDBOX_BENCH_OFF: offs[t], KERN_SANDBOX_SNAPSHOT: "1" };
      const c = spawnSync(process.execPath, [__filename, "--child", trees[t], String(calls), only, tracked],
        { encoding: "utf8", maxBuffer: 64 << 20, stdio: ["ignore", "pipe", "inherit"], env });
      if (c.status !== 0) throw new Error(`the child of ${arms[t]} failed (${c.status})`);
      const out = JSON.parse(c.stdout);
      for (const [k] of ROWS) {
        if (out[k].length === 0) continue;
        all[t][k].push(...out[k]);
        perRound[t][k].push(p50(out[k]));
      }
    }
  }
  const f = (x) => x.toFixed(3);
  console.log(`bench/trees.js, ${new Date().toISOString()}, kern ${process.env.KERN_BIN ?? "(PATH)"}; ` +
    `${rounds} alternated rounds, ${calls} calls per row and round; trackFiles ${tracked === "1"}; ` +
    `${Math.round((Date.now() - t0) / 1000)} s`);
  console.log(`A = ${arms[0]}\nB = ${arms[1]}\n`);
  console.log("| row | A: p50 of all calls (rounds' p50s) | B: the same | B/A | rounds B > A |");
  console.log("|---|---|---|---|---|");
  for (const [k, name] of ROWS) {
    if (all[0][k].length === 0) continue;
    const [a, b] = [p50(all[0][k]), p50(all[1][k])];
    const range = (t) => `${f(Math.min(...perRound[t][k]))}-${f(Math.max(...perRound[t][k]))}`;
    // The rounds paired (each ran both arms, one after the other): in how
    // many B's p50 was over A's, as bench/ab.js counts them.
    const slower = perRound[1][k].filter((v, i) => v > perRound[0][k][i]).length;
    console.log(`| ${name} | ${f(a)} ms (${range(0)}) | ${f(b)} ms (${range(1)}) | ${(b / a).toFixed(3)}x | ` +
      `${slower}/${perRound[1][k].length} |`);
  }
  for (const [name, num, den] of RATIOS) {
    if (all[0][num].length === 0) continue;
    // Each tree's ratio of its pooled p50s, and the range of its rounds' ratios.
    const ratio = (t) => p50(all[t][num]) / p50(all[t][den]);
    const rounds = (t) => perRound[t][num].map((v, i) => v / perRound[t][den][i]);
    const range = (t) => `${f(Math.min(...rounds(t)))}-${f(Math.max(...rounds(t)))}`;
    console.log(`| ratio: ${name} | ${f(ratio(0))}x (${range(0)}) | ${f(ratio(1))}x (${range(1)}) | ` +
      `${(ratio(1) / ratio(0)).toFixed(3)}x |`);
  }
}

main();
