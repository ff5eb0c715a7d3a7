"use strict";

// A worker's run directory: every workspace and private file of its boxes
// lives under it (the worker points its process's TMPDIR there), so a
// worker that was SIGKILLed leaves one directory, which the next worker
// started with the same state dir removes. Its boxes die with it (the
// engine's supervisor holds PR_SET_PDEATHSIG on kern).
const fs = require("fs");
const os = require("os");
const path = require("path");

/** The start time of pid (clock ticks since boot), or null if it is gone. */
function startTime(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
  } catch {
    return null;
  }
}

function defaultStateDir() {
  return path.join(os.tmpdir(), `kern-sandbox-worker-${process.getuid()}`);
}

/** Removes the run directories of workers that are no longer running;
 * returns their names. */
function removeStale(stateDir) {
  const removed = [];
  let entries = [];
  try {
    entries = fs.readdirSync(stateDir);
  } catch {
    return removed;
  }
  for (const name of entries) {
    const m = /^run-(\d+)-(\d+)$/.exec(name);
    if (!m) continue;
    if (startTime(Number(m[1])) === m[2]) continue; // that worker still runs
    fs.rmSync(path.join(stateDir, name), { recursive: true, force: true });
    removed.push(name);
  }
  return removed;
}

/** Creates this process's run directory (after removing stale ones). */
function createRunDir(stateDir = defaultStateDir()) {
  fs.mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  const removed = removeStale(stateDir);
  const dir = path.join(stateDir, `run-${process.pid}-${startTime(process.pid)}`);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(path.join(dir, "tmp"), { recursive: true, mode: 0o700 });
  return { dir, tmp: path.join(dir, "tmp"), removed };
}

module.exports = { createRunDir, removeStale, defaultStateDir };
