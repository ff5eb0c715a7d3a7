"use strict";

// What a run may leave behind (H5) and where a secret must never show up
// (A34): shared by the D1 leak census and the D10 canary search in
// test/91.host-faults.test.js and test/92.secret-hygiene.test.js.
const fs = require("fs");
const path = require("path");

/** Regular files under dirs (recursively, never through a symlink) whose
 * content holds needle; with since (ms), only files modified since then. */
function secretFiles(dirs, needle, { since = 0 } = {}) {
  const hits = [];
  const walk = (d) => {
    let entries;
    try {
      entries = fs.readdirSync(d, { withFileTypes: true });
    } catch {
      return; // gone meanwhile, or not a directory
    }
    for (const e of entries) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) {
        walk(p);
        continue;
      }
      if (!e.isFile()) continue;
      try {
        if (since > 0 && fs.statSync(p).mtimeMs < since) continue;
        if (fs.readFileSync(p).includes(needle)) hits.push(p);
      } catch {
        /* removed meanwhile */
      }
    }
  };
  for (const d of dirs) if (d) walk(d);
  return hits;
}

/** The descriptors of pid (default: this process) as {fd: link target};
 * empty if the process is gone. */
function fdTable(pid = "self") {
  const out = {};
  let fds;
  try {
    fds = fs.readdirSync(`/proc/${pid}/fd`);
  } catch {
    return out;
  }
  for (const fd of fds) {
    try {
      out[fd] = fs.readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      /* closed meanwhile (the directory stream itself, for "self") */
    }
  }
  return out;
}

/** Descriptors of pid (default: this process) whose link target includes
 * text, e.g. "kern-sandbox-env" for the engine's env memfds. */
function fdsLinkingTo(text, pid = "self") {
  return Object.values(fdTable(pid)).filter((target) => target.includes(text)).length;
}

function readOrNull(file) {
  try {
    return fs.readFileSync(file);
  } catch {
    return null;
  }
}

/** Every process with its parent, exe, argv and environ (raw bytes; null
 * where unreadable). */
function processTable() {
  const out = new Map();
  for (const name of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const stat = readOrNull(`/proc/${name}/stat`);
    if (stat === null) continue;
    const s = stat.toString("latin1");
    const fields = s.slice(s.lastIndexOf(")") + 2).split(" ");
    let exe = null;
    try {
      exe = fs.readlinkSync(`/proc/${name}/exe`);
    } catch {
      /* a kernel thread, a zombie, or gone */
    }
    out.set(Number(name), { pid: Number(name), state: fields[0], ppid: Number(fields[1]), exe,
      argv: readOrNull(`/proc/${name}/cmdline`), environ: readOrNull(`/proc/${name}/environ`) });
  }
  return out;
}

/**
 * The A34 search for needle. kern is the absolute path of the kern binary
 * (the test double): a process below a kern process that is not kern itself
 * is a box's workload, whose environment is where the secret belongs; every
 * other process (kern, `kern stop`, Node, anything else) must not hold it.
 *   argv     pids whose argv holds it (every process, boxes included)
 *   environ  pids outside boxes whose environ holds it
 *   boxEnv   box workloads whose environ holds it (expected; a positive
 *            control while boxes run)
 *   files    files under dirs (recursively) holding it, and regular files
 *            directly in shallowDirs modified since `since` (for shared
 *            directories such as /tmp and /dev/shm, where other programs
 *            keep large trees)
 */
function canarySearch({ needle, kern, dirs = [], shallowDirs = [], since = 0 }) {
  const table = processTable();
  const inBox = (p) => {
    if (p.exe === kern) return false;
    for (let q = table.get(p.ppid), hops = 0; q !== undefined && hops < 64; q = table.get(q.ppid), hops++) {
      if (q.exe === kern) return true;
    }
    return false;
  };
  const found = { argv: [], environ: [], boxEnv: 0, files: [] };
  for (const p of table.values()) {
    if (p.argv !== null && p.argv.includes(needle)) found.argv.push(p.pid);
    if (p.environ !== null && p.environ.includes(needle)) {
      if (inBox(p)) found.boxEnv++;
      else found.environ.push(p.pid);
    }
  }
  found.files = secretFiles(dirs, needle);
  for (const d of shallowDirs) {
    let names = [];
    try {
      names = fs.readdirSync(d);
    } catch {
      /* absent */
    }
    for (const name of names) {
      const p = path.join(d, name);
      try {
        const st = fs.lstatSync(p);
        if (st.isFile() && st.mtimeMs >= since && fs.readFileSync(p).includes(needle)) found.files.push(p);
      } catch {
        /* removed meanwhile */
      }
    }
  }
  return found;
}

module.exports = { secretFiles, fdTable, fdsLinkingTo, processTable, canarySearch };
