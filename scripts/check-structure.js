#!/usr/bin/env node
"use strict";

// The tree's structural rules (ARCHITECTURE.md, "Rules"; issue 32):
//   - no include cycle among csrc/ modules (X.c or X.h including Y.h makes X
//     depend on Y; a module is X.c, X.h and X-part.c/.h, see moduleOf), and
//     no call cycle among them (X calls a function Y defines, and Y one of
//     X's: read with nm from the release build's objects, so it needs
//     `npm run build` first);
//   - no require cycle among lib/ files;
//   - no function over 120 lines and no file over 900 lines in csrc/ or lib/
//     (the in-box Python, lib/inbox/, aside).
// What the tree breaks today is listed in scripts/structure-baseline.json:
// a violation listed there is reported, one not listed fails the check, and
// a listed one that is gone must leave the list (so the list only shrinks).
// Usage: node scripts/check-structure.js [--update-baseline]
const fs = require("fs");
const path = require("path");
const { execFileSync } = require("child_process");

const ROOT = path.join(__dirname, "..");
const BASELINE = path.join(__dirname, "structure-baseline.json");
const MAX_FUNCTION_LINES = Number(process.env.KS_MAX_FUNCTION_LINES || 120);
const MAX_FILE_LINES = 900;

function walk(dir, exts) {
  const out = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...walk(p, exts));
    else if (exts.some((x) => e.name.endsWith(x))) out.push(p);
  }
  return out.sort();
}

const rel = (p) => path.relative(ROOT, p);

/** The module a csrc/ file (or object) belongs to: X for X.c and X.h, and
 * for X-part.c or X-part.h (a module's second file, its private header)
 * when X.c or X.h exists beside it. So wstrack-internal.h and
 * wstrack-events.c are wstrack's, while sup-internal.h, which has no sup.c,
 * stays a module of its own. */
function moduleOf(file) {
  const base = path.resolve(ROOT, file).replace(/\.[cho]$/, "");
  const m = /^(.*\/[^/-]+)-[^/]+$/.exec(base);
  if (m !== null && (fs.existsSync(`${m[1]}.c`) || fs.existsSync(`${m[1]}.h`))) return rel(m[1]);
  return rel(base);
}

/** Cycles of a graph (Map node -> Set of nodes), each as its nodes in order,
 * rotated to start at its smallest name (so each is reported once). */
function cycles(graph) {
  const found = new Set();
  const out = [];
  const stack = [];
  const onStack = new Set();
  const done = new Set();
  function visit(n) {
    stack.push(n);
    onStack.add(n);
    for (const m of graph.get(n) || []) {
      if (onStack.has(m)) {
        const cyc = stack.slice(stack.indexOf(m));
        const i = cyc.indexOf([...cyc].sort()[0]);
        const key = [...cyc.slice(i), ...cyc.slice(0, i)].join(" -> ");
        if (!found.has(key)) {
          found.add(key);
          out.push(key);
        }
      } else if (!done.has(m)) {
        visit(m);
      }
    }
    stack.pop();
    onStack.delete(n);
    done.add(n);
  }
  for (const n of [...graph.keys()].sort()) if (!done.has(n)) visit(n);
  return out.sort();
}

function includeCycles() {
  const graph = new Map();
  for (const file of walk(path.join(ROOT, "csrc"), [".c", ".h"])) {
    const from = moduleOf(file);
    if (!graph.has(from)) graph.set(from, new Set());
    for (const m of fs.readFileSync(file, "utf8").matchAll(/^#\s*include\s+"([^"]+)"/gm)) {
      const to = moduleOf(path.resolve(path.dirname(file), m[1]));
      if (to !== from) graph.get(from).add(to);
    }
  }
  return cycles(graph).map((c) => `include cycle: ${c}`);
}

/** Call cycles among the addon's and the init's objects (nm: the symbols
 * each defines, T/D/B/R, and those it takes from elsewhere, U). */
function callCycles() {
  const objDir = path.join(ROOT, "build/Release/obj.target");
  if (!fs.existsSync(objDir)) throw new Error("check-structure: build the addon first (npm run build)");
  const objs = walk(objDir, [".o"]);
  const defined = new Map();
  const wants = new Map();
  for (const o of objs) {
    const unit = moduleOf(rel(o).replace(/^build\/Release\/obj\.target\/[^/]+\//, ""));
    if (!wants.has(unit)) wants.set(unit, new Set());
    for (const line of execFileSync("nm", [o], { encoding: "utf8" }).split("\n")) {
      const m = line.trim().match(/^(?:[0-9a-f]+\s+)?([A-Za-z])\s+(\S+)$/);
      if (m === null) continue;
      if (m[1] === "U") wants.get(unit).add(m[2]);
      else if ("TDBR".includes(m[1])) defined.set(m[2], unit);
    }
  }
  const graph = new Map();
  for (const [unit, syms] of wants) {
    graph.set(unit, new Set([...syms].filter((s) => s !== "main").map((s) => defined.get(s)).filter((u) => u && u !== unit)));
  }
  return cycles(graph).map((c) => `call cycle: ${c}`);
}

function requireCycles() {
  const graph = new Map();
  for (const file of walk(path.join(ROOT, "lib"), [".js"])) {
    const from = rel(file);
    graph.set(from, new Set());
    for (const m of fs.readFileSync(file, "utf8").matchAll(/require\("(\.{1,2}\/[^"]+)"\)/g)) {
      let to = path.resolve(path.dirname(file), m[1]);
      if (!to.endsWith(".js")) to += ".js";
      graph.get(from).add(rel(to));
    }
  }
  return cycles(graph).map((c) => `require cycle: ${c}`);
}

/** Functions longer than the limit: C function bodies (a line that opens
 * at column 0 with `{` or ends a signature with ` {`, to its `}` at column
 * 0), JS functions and methods by brace depth from their header line. */
function longFunctions(file) {
  const lines = fs.readFileSync(file, "utf8").split("\n");
  const out = [];
  if (file.endsWith(".c")) {
    for (let i = 0; i < lines.length; i++) {
      if (!/^[A-Za-z_].*\)\s*\{$/.test(lines[i]) || /^(if|for|while|switch|else)\b/.test(lines[i])) continue;
      let j = i + 1;
      while (j < lines.length && lines[j] !== "}") j++;
      const name = (lines[i].match(/([A-Za-z_][A-Za-z0-9_]*)\s*\(/) || [])[1] || "?";
      if (j - i + 1 > MAX_FUNCTION_LINES) out.push(`long function: ${rel(file)} ${name} (${j - i + 1} lines)`);
      i = j;
    }
    return out;
  }
  const header = /^(\s*)(?:(?:static\s+)?(?:async\s+)?(?:function\s*\*?\s*([A-Za-z_$][\w$]*)|(#?[A-Za-z_$][\w$]*|\[[^\]]+\])\s*)\([^)]*\)?[^;]*\{\s*$|.*=\s*(?:async\s*)?(?:function\b[^{]*|\([^)]*\)\s*=>|[A-Za-z_$][\w$]*\s*=>)\s*\{\s*$)/;
  for (let i = 0; i < lines.length; i++) {
    const m = lines[i].match(header);
    if (m === null || /^\s*(if|for|while|switch|catch|else|try|do)\b/.test(lines[i])) continue;
    const indent = m[1].length;
    let j = i + 1;
    while (j < lines.length && !(lines[j].startsWith(`${" ".repeat(indent)}}`) &&
      lines[j].length > indent && lines[j][indent] === "}")) j++;
    const name = m[2] || m[3] || (lines[i].match(/(?:const|let|var)\s+([\w$]+)/) || [])[1] || "?";
    if (j - i + 1 > MAX_FUNCTION_LINES) out.push(`long function: ${rel(file)} ${name} (${j - i + 1} lines)`);
  }
  return out;
}

function sizes() {
  const out = [];
  const files = [...walk(path.join(ROOT, "csrc"), [".c", ".h"]),
    ...walk(path.join(ROOT, "lib"), [".js"]).filter((f) => !rel(f).startsWith("lib/inbox/"))];
  for (const file of files) {
    const n = fs.readFileSync(file, "utf8").split("\n").length - 1;
    if (n > MAX_FILE_LINES) out.push(`long file: ${rel(file)} (${n} lines)`);
    out.push(...longFunctions(file));
  }
  return out;
}

// A violation's identity leaves out its line count, which moves with edits.
const key = (v) => v.replace(/ \(\d+ lines\)$/, "");

function main() {
  const found = [...includeCycles(), ...callCycles(), ...requireCycles(), ...sizes()];
  if (process.argv.includes("--update-baseline")) {
    fs.writeFileSync(BASELINE, `${JSON.stringify(found.map(key), null, 2)}\n`);
    console.log(`check-structure: baseline written, ${found.length} known violation(s)`);
    return;
  }
  const baseline = new Set(JSON.parse(fs.readFileSync(BASELINE, "utf8")));
  const fresh = found.filter((v) => !baseline.has(key(v)));
  const gone = [...baseline].filter((b) => !found.some((v) => key(v) === b));
  for (const v of found) console.log(`${baseline.has(key(v)) ? "known" : "NEW  "} ${v}`);
  for (const b of gone) console.log(`GONE  ${b} (remove it from scripts/structure-baseline.json)`);
  console.log(`check-structure: ${found.length} violation(s), ${fresh.length} new, ${gone.length} fixed ` +
    "but still listed");
  if (fresh.length > 0 || gone.length > 0) process.exitCode = 1;
}

main();
