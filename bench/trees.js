"use strict";

// Two trees of this package, one row at a time, with many calls per process
// (issue 32's "none more than 5% worse" on the rows whose spread in
// bench/run.js is wider than 5%: the prewarmed calls, close() with an idle
// box, a prewarmed kernel()'s start, a shared kernel cell). Each round runs
// one child process per tree, the order alternated, so that both see the
// same phase of the host; each child loads its tree's package by path and
// measures through the public API only, which both trees share.
//   KERN_BIN=... node bench/trees.js [rounds=8] [calls=200] [only=prewarmed] [tracked=1] TREE_A TREE_B
// (only=prewarmed: the two prewarmed rows alone; tracked=1: the sessions
// track files, the package's default, where otherwise trackFiles is false)
// Prints, per row and tree, the p50 of all calls pooled and the range of
// the rounds' p50s, and B's pooled p50 over A's.
const path = require("path");
const { spawnSync } = require("child_process");

const ROWS = [
  ["runTrue", 'run(["true"]), prewarm: 1, 50 ms apart'],
  ["runCode", 'runCode("print(1)"), prewarm: 1, 50 ms apart'],
  ["cell", 'kernel cell "1", shared, back to back'],
  ["close", "close() with an idle prewarmed box"],
  ["kernel", "kernel() to its first result, with a prewarmed box"],
];

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;

/** One tree's calls in this process: { row: [ms, ...] }. */
async function child(tree, calls, only, tracked) {
  const { Sandbox } = require(tree);
  const opts = { prewarm: 1, ...(tracked === "1" ? {} : { trackFiles: false }) };
  const out = Object.fromEntries(ROWS.map(([k]) => [k, []]));
  // A session per kind: a session's pool refills with the kind of its last
  // call, so alternating kinds in one would find the wrong box each time.
  const exec = await new Sandbox(opts).open();
  const py = await new Sandbox(opts).open();
  try {
    for (let i = 0; i < 10; i++) { // warm-up
      await exec.run(["true"]);
      await py.runCode("print(1)");
    }
    for (let i = 0; i < calls; i++) {
      await sleep(50);
      let t0 = process.hrtime.bigint();
      await exec.run(["true"]);
      out.runTrue.push(ms(t0));
      await sleep(50);
      t0 = process.hrtime.bigint();
      await py.runCode("print(1)");
      out.runCode.push(ms(t0));
    }
    if (only === "prewarmed") return out;
    const k = await py.kernel();
    try {
      for (let i = 0; i < calls * 2; i++) {
        const t0 = process.hrtime.bigint();
        await k.runCode("1");
        out.cell.push(ms(t0));
      }
    } finally {
      await k.close();
    }
  } finally {
    await exec.close();
    await py.close();
  }
  for (let i = 0; i < (only === "prewarmed" ? 0 : calls / 5); i++) {
    const s = await new Sandbox(opts).open();
    await sleep(300); // its box is up and idle
    let t0 = process.hrtime.bigint();
    await s.close();
    out.close.push(ms(t0));
    const s2 = await new Sandbox(opts).open();
    await sleep(300);
    t0 = process.hrtime.bigint();
    const k = await s2.kernel();
    await k.runCode("1");
    out.kernel.push(ms(t0));
    await k.close();
    await s2.close();
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
    child(path.resolve(args[1]), Number(args[2]), args[3], args[4]).finally(() => clearInterval(alive)).then((out) => process.stdout.write(JSON.stringify(out)),
      (e) => {
        console.error(e);
        process.exitCode = 1;
      });
    return;
  }
  const opt = (name, dflt) => Number((args.find((a) => a.startsWith(`${name}=`)) ?? `=${dflt}`).split("=")[1]);
  const rounds = opt("rounds", 8);
  const calls = opt("calls", 200);
  const only = (args.find((a) => a.startsWith("only=")) ?? "only=").slice(5);
  const tracked = (args.find((a) => a.startsWith("tracked=")) ?? "tracked=0").slice(8);
  const trees = args.filter((a) => !a.includes("="));
  if (trees.length !== 2) {
    console.error("usage: KERN_BIN=... node bench/trees.js [rounds=8] [calls=200] TREE_A TREE_B");
    process.exitCode = 2;
    return;
  }
  const all = trees.map(() => Object.fromEntries(ROWS.map(([k]) => [k, []])));
  const perRound = trees.map(() => Object.fromEntries(ROWS.map(([k]) => [k, []])));
  const t0 = Date.now();
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? [0, 1] : [1, 0];
    for (const t of order) {
      console.error(`trees: round ${r + 1}/${rounds}, ${trees[t]}`);
      const c = spawnSync(process.execPath, [__filename, "--child", trees[t], String(calls), only, tracked],
        { encoding: "utf8", maxBuffer: 64 << 20, stdio: ["ignore", "pipe", "inherit"] });
      if (c.status !== 0) throw new Error(`the child of ${trees[t]} failed (${c.status})`);
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
  console.log(`A = ${trees[0]}\nB = ${trees[1]}\n`);
  console.log("| row | A: p50 of all calls (rounds' p50s) | B: the same | B/A |");
  console.log("|---|---|---|---|");
  for (const [k, name] of ROWS) {
    if (all[0][k].length === 0) continue;
    const [a, b] = [p50(all[0][k]), p50(all[1][k])];
    const range = (t) => `${f(Math.min(...perRound[t][k]))}-${f(Math.max(...perRound[t][k]))}`;
    console.log(`| ${name} | ${f(a)} ms (${range(0)}) | ${f(b)} ms (${range(1)}) | ${(b / a).toFixed(3)}x |`);
  }
}

main();
