#!/usr/bin/env node
// Builds the addon with node-gyp against the headers installed with this Node
// (nodedir), so a fresh machine needs no download: node-gyp must never try to
// fetch headers from the network.
"use strict";

const { spawnSync } = require("child_process");
const fs = require("fs");
const path = require("path");

function findNodedir() {
  const candidates = [];
  if (process.env.npm_config_nodedir) candidates.push(process.env.npm_config_nodedir);
  candidates.push(path.resolve(path.dirname(process.execPath), ".."));
  for (const dir of candidates) {
    if (fs.existsSync(path.join(dir, "include", "node", "node_api.h")) &&
        fs.existsSync(path.join(dir, "include", "node", "common.gypi")))
      return dir;
  }
  return null;
}

function findNodeGyp() {
  // npm tells lifecycle scripts where its bundled node-gyp is.
  const fromNpm = process.env.npm_config_node_gyp;
  if (fromNpm && fs.existsSync(fromNpm)) return [process.execPath, fromNpm];
  const bundled = path.resolve(path.dirname(process.execPath), "..", "lib", "node_modules",
    "npm", "node_modules", "node-gyp", "bin", "node-gyp.js");
  if (fs.existsSync(bundled)) return [process.execPath, bundled];
  return ["node-gyp"];
}

const nodedir = findNodedir();
if (!nodedir) {
  console.error(
    "kern-sandbox: the Node headers (include/node/node_api.h) were not found next to " +
      process.execPath + ".\nInstall the headers package of your Node distribution " +
      "(e.g. Debian: apt-get install libnode-dev or nodejs with headers), or set " +
      "npm_config_nodedir to a directory containing include/node.");
  process.exit(1);
}

// --debug builds the ASan + UBSan flavour into build/Debug, --tsan the
// ThreadSanitizer flavour into build/Tsan, next to the release build: each
// configures and builds without cleaning. node-gyp's build knows only Debug
// and Release, so the Tsan configuration (binding.gyp) is built by make.
const debug = process.argv.includes("--debug");
const tsan = process.argv.includes("--tsan");
if (debug && tsan) {
  console.error("kern-sandbox: --debug and --tsan are two builds; ask for one at a time");
  process.exit(2);
}
const extra = process.argv.slice(2).filter((a) => a !== "--debug" && a !== "--tsan");
const [cmd, ...pre] = findNodeGyp();
const root = path.resolve(__dirname, "..");
let steps;
if (tsan) {
  steps = [[cmd, [...pre, "configure", `--nodedir=${nodedir}`, ...extra]],
    [process.env.MAKE || "make", ["-C", "build", "BUILDTYPE=Tsan", `-j${require("os").cpus().length}`]]];
} else if (debug) {
  steps = [[cmd, [...pre, "configure", `--nodedir=${nodedir}`, ...extra]],
    [cmd, [...pre, "build", "--debug", `--nodedir=${nodedir}`, ...extra]]];
} else {
  steps = [[cmd, [...pre, "rebuild", `--nodedir=${nodedir}`, ...extra]]];
}
for (const [program, args] of steps) {
  const r = spawnSync(program, args, { stdio: "inherit", cwd: root });
  if (r.error) {
    console.error(`kern-sandbox: could not run ${program}: ${r.error.message}`);
    process.exit(1);
  }
  if (r.status !== 0) process.exit(r.status === null ? 1 : r.status);
}
