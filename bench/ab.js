"use strict";

// The A/B of each speed mechanism (bench/README.md, "Speed mechanisms, A/B"):
// for each, the figures of bench/run.js it should move, measured in
// alternated rounds of two arms in one run on this tree: A with every
// mechanism on, B with that one off (KERN_SANDBOX_BENCH_OFF, lib/benchoff.js).
// Each arm of each round is its own `node bench/run.js quick only=...`
// (without quick with `full`; the switches are read once per process).
// Prints a markdown table: per row, each arm's median and range (min-max) over the rounds, B/A, the
// rounds in which B was slower, and a verdict (verdict() below: "moves" or
// "within noise", and none from one round).
//
//   node bench/ab.js                        # every mechanism, 3 rounds
//   node bench/ab.js rounds=5 bootcache inbox-libc
//   node bench/ab.js rounds=8 full mcp-early   # bench/run.js's full calls, not quick's
//   KERN_BENCH_REAL=1 KERN_BIN=/path/to/kern node bench/ab.js rounds=1 bootcache
//
// Against the kern test double unless KERN_BENCH_REAL=1 (as bench/run.js).
const fs = require("fs");
const os = require("os");
const path = require("path");
const { spawnSync } = require("child_process");
const { MECHANISMS } = require("../lib/benchoff");

const ROOT = path.join(__dirname, "..");

// The figures (bench/run.js function names) each mechanism should move,
// and why (bench/README.md says the same).
const MOVES = {
  "inbox-libc": ["perCallOverhead", "oneShot"], // every cold box starts the init
  bootcache: ["oneShot", "kernel"], // every cold interpreter box loads the boot
  "direct-cells": ["kernel"], // a ready kernel's cell, sent without the engine thread's wakeup
  "claim-send": ["prewarmed"], // a claimed exec box's SPEC frame, sent without the engine thread's wakeup
  "hand-stdout": ["processes"], // a process's stdout read by the JS thread, without the engine thread's hop
  "inline-ends": ["prewarmed"], // two thread switches off the end of a call with little output
  "turn-wakes": ["burst"], // 200 calls issued in one turn: their boxes' start-up off the turn's CPU
  propkeys: ["prewarmed", "perCallOverhead"], // every box's options object read by the JS thread
  "mcp-early": ["integrations"], // an MCP run_code answered without the SDK's dispatch on the box's cores
};

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

function parseArgs(argv) {
  let rounds = 3;
  let full = false;
  const names = [];
  for (const a of argv) {
    if (a.startsWith("rounds=")) rounds = Number(a.slice(7));
    else if (a === "full") full = true;
    else if (Object.hasOwn(MOVES, a)) names.push(a);
    else throw new Error(`bench/ab.js: unknown argument ${a} (rounds=N, full, or of: ${Object.keys(MOVES).join(", ")})`);
  }
  if (!Number.isInteger(rounds) || rounds < 1) throw new Error("bench/ab.js: rounds must be a positive integer");
  for (const name of Object.keys(MECHANISMS))
    if (!Object.hasOwn(MOVES, name)) throw new Error(`bench/ab.js: no figures for ${name}`);
  return { rounds, full, names: names.length > 0 ? names : Object.keys(MOVES) };
}

/** The init linked statically against glibc, for inbox-libc's B arm: built
 * here, into dir, from the same sources as the package's (never shipped). */
function buildGlibcInit(dir) {
  const out = path.join(dir, "ks-init");
  const r = spawnSync(process.env.CC || "cc", ["-std=gnu11", "-Wall", "-Wextra", "-Werror", "-O2",
    "-static", "-s", path.join(ROOT, "csrc/init/ks-init.c"), path.join(ROOT, "csrc/init/spec.c"),
    "-o", out], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`bench/ab.js: building the glibc init failed: ${r.stderr || r.error}`);
  return out;
}

/** One arm of one round: bench/run.js's rows as { figure -> ms }. */
function runArm(figures, off, glibcInit, full) {
  const env = { ...process.env, BENCH_JSON: "1" };
  delete env.KERN_SANDBOX_BENCH_OFF;
  delete env.KERN_SANDBOX_BENCH_INIT;
  if (off !== null) {
    env.KERN_SANDBOX_BENCH_OFF = off;
    if (off === "inbox-libc") env.KERN_SANDBOX_BENCH_INIT = glibcInit;
  }
  const args = [path.join(__dirname, "run.js"), ...(full ? [] : ["quick"]), `only=${figures.join(",")}`];
  const r = spawnSync(process.execPath, args,
    { env, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
  if (r.status !== 0)
    throw new Error(`bench/ab.js: bench/run.js failed (${off ?? "nothing"} off): ${r.stderr.slice(-2000)}`);
  const rows = new Map();
  for (const line of r.stdout.split("\n")) {
    if (!line.startsWith("{\"benchRow\"")) continue;
    const j = JSON.parse(line);
    if (j.benchRow.startsWith("event-loop") || j.valueMs === null) continue;
    rows.set(j.benchRow, j.valueMs);
  }
  return rows;
}

/** A verdict on one row from each arm's values, paired by round. "moves"
 * when the medians differ by more than 5% and either the arms' ranges do not
 * overlap, or one arm was slower in every one of at least 6 rounds (a sign
 * test: all 6 by chance has a two-sided p of 1/32). One round gives no range
 * to tell noise by: no verdict then. */
function verdict(a, b) {
  const ma = median(a);
  const mb = median(b);
  // The rounds in which B took longer than A (the arms ran back to back in
  // each, so a drift of the machine between rounds cancels).
  const slower = a.filter((v, i) => b[i] > v).length;
  if (a.length < 2 || b.length < 2) return { ma, mb, ratio: mb / ma, slower, verdict: "no verdict (1 round)" };
  const overlap = Math.min(...a) <= Math.max(...b) && Math.min(...b) <= Math.max(...a);
  const oneSided = a.length >= 6 && (slower === a.length || a.every((v, i) => b[i] < v));
  const moves = (!overlap || oneSided) && Math.abs(mb - ma) > 0.05 * ma;
  return { ma, mb, ratio: mb / ma, slower, verdict: moves ? "moves" : "within noise" };
}

const span = (xs) => `${median(xs).toFixed(3)} (${Math.min(...xs).toFixed(3)}-${Math.max(...xs).toFixed(3)})`;

function main() {
  const { rounds, full, names } = parseArgs(process.argv.slice(2));
  const real = process.env.KERN_BENCH_REAL === "1" && process.env.KERN_BIN;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "kern-bench-ab-"));
  const table = [];
  const started = Date.now();
  try {
    const glibcInit = names.includes("inbox-libc") ? buildGlibcInit(tmp) : null;
    for (const name of names) {
      const figures = MOVES[name];
      const arms = { A: new Map(), B: new Map() };
      for (let r = 0; r < rounds; r++) {
        // Alternated: A first in even rounds, B first in odd ones, so that a
        // drift of the machine within a round weighs on both arms alike.
        for (const arm of r % 2 === 0 ? ["A", "B"] : ["B", "A"]) {
          console.error(`ab: ${name}, round ${r + 1}/${rounds}, arm ${arm} (${arm === "A" ? "all on" : `${name} off`}): only=${figures.join(",")}`);
          for (const [figure, v] of runArm(figures, arm === "A" ? null : name, glibcInit, full)) {
            if (!arms[arm].has(figure)) arms[arm].set(figure, []);
            arms[arm].get(figure).push(v);
          }
        }
      }
      for (const [figure, a] of arms.A) {
        const b = arms.B.get(figure);
        if (b === undefined || b.length !== a.length) continue; // a row one arm lacks: not compared
        const v = verdict(a, b);
        table.push(`| ${name} | ${figure} | ${span(a)} | ${span(b)} | ${v.ratio.toFixed(2)}x | ${v.slower}/${a.length} | ${v.verdict} |`);
      }
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  const cpus = os.cpus();
  console.log([
    `bench/ab.js, ${new Date().toISOString()}, against ${real ? `real kern (${process.env.KERN_BIN})` : "the kern test double"}; ` +
      `${cpus.length} x ${cpus[0].model.trim()}, Linux ${os.release()}, Node ${process.version}; ` +
      `${rounds} alternated round(s) of \`node bench/run.js${full ? "" : " quick"}\` per arm; ${((Date.now() - started) / 1000).toFixed(0)} s`,
    "",
    "Each row's headline time in ms (its p50, or ms per call): median of the rounds (min-max).",
    "",
    "| mechanism | row | A: all on | B: that one off | B/A | rounds B > A | verdict |",
    "|---|---|---|---|---|---|---|",
    ...table,
  ].join("\n"));
}

if (require.main === module) main();

module.exports = { MOVES, verdict, parseArgs };
