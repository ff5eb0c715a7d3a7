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
// ThreadSanitizer flavour into build/Tsan, --test the flavour npm test loads
// (the Release build plus the tests' natives, csrc/napi/testing.c) into
// build/Test, next to the release build: each configures and builds without
// cleaning. node-gyp's build knows only Debug and Release, so the Tsan and
// Test configurations (binding.gyp) are built by make.
const flags = ["--debug", "--tsan", "--test"];
const chosen = flags.filter((f) => process.argv.includes(f));
if (chosen.length > 1) {
  console.error(`kern-sandbox: ${chosen.join(" and ")} are separate builds; ask for one at a time`);
  process.exit(2);
}
const extra = process.argv.slice(2).filter((a) => !flags.includes(a));
const [cmd, ...pre] = findNodeGyp();
const root = path.resolve(__dirname, "..");
const configure = [cmd, [...pre, "configure", `--nodedir=${nodedir}`, ...extra]];
const byMake = (type) => [process.env.MAKE || "make",
  ["-C", "build", `BUILDTYPE=${type}`, `-j${require("os").cpus().length}`]];
let steps;
if (chosen[0] === "--tsan") {
  steps = [configure, byMake("Tsan")];
} else if (chosen[0] === "--test") {
  steps = [configure, byMake("Test")];
} else if (chosen[0] === "--debug") {
  steps = [configure, [cmd, [...pre, "build", "--debug", `--nodedir=${nodedir}`, ...extra]]];
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
