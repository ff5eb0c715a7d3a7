"use strict";

// What a run may leave behind (H5) and where a secret must never show up
// (A34): shared by the D1 leak census and the D10 canary search in
// test/91.host-faults.test.js and test/92.secret-hygiene.test.js.
const fs = require("fs");
const path = require("path");
const procfs = require("./procfs");

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
  for (const pid of procfs.pids()) {
    const stat = procfs.readStat(pid);
    if (stat === null) continue;
    let exe = null;
    try {
      exe = fs.readlinkSync(`/proc/${pid}/exe`);
    } catch {
      /* a kernel thread, a zombie, or gone */
    }
    out.set(pid, { pid, state: stat.state, ppid: stat.ppid, exe,
      argv: readOrNull(`/proc/${pid}/cmdline`), environ: readOrNull(`/proc/${pid}/environ`) });
  }
  return out;
}

/** The process's start time in clock ticks since boot (field 22 of stat),
 * or null if it is gone. */
function startTicks(pid) {
  return procfs.readStat(pid)?.startTicks ?? null;
}

/** Sockets of this network namespace that hold a host port or a name
 * (H5 "host ports"): listening TCP, bound UDP (an unconnected UDP socket is
 * state 07) and listening unix sockets, as a Map from inode to a label. */
function listeningSockets() {
  const out = new Map();
  for (const [file, want] of [["tcp", "0A"], ["tcp6", "0A"], ["udp", "07"], ["udp6", "07"]]) {
    const text = readOrNull(`/proc/net/${file}`);
    if (text === null) continue;
    for (const line of text.toString("latin1").split("\n").slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10 || f[3] !== want || f[9] === "0") continue;
      out.set(f[9], `${file} ${f[1]}`);
    }
  }
  const unix = readOrNull("/proc/net/unix");
  if (unix !== null) {
    for (const line of unix.toString("latin1").split("\n").slice(1)) {
      const f = line.trim().split(/\s+/);
      // Flags 00010000 is __SO_ACCEPTCON: the socket listens.
      if (f.length < 7 || (parseInt(f[3], 16) & 0x10000) === 0) continue;
      out.set(f[6], `unix ${f[7] ?? "(unnamed)"}`);
    }
  }
  return out;
}

/** For each socket inode given, the live processes holding it: Map from
 * inode to [{pid, argv}]. */
function socketOwners(inodes) {
  const wanted = new Set([...inodes].map((i) => `socket:[${i}]`));
  const out = new Map();
  if (wanted.size === 0) return out;
  for (const name of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    for (const target of Object.values(fdTable(name))) {
      if (!wanted.has(target)) continue;
      const inode = target.slice(8, -1);
      const argv = (readOrNull(`/proc/${name}/cmdline`) ?? Buffer.alloc(0)).toString().split("\0").join(" ").trim();
      if (!out.has(inode)) out.set(inode, []);
      if (!out.get(inode).some((o) => o.pid === Number(name))) out.get(inode).push({ pid: Number(name), argv });
    }
  }
  return out;
}

/** Sockets listening now that were not in baseline (a Set of inodes) and
 * are held by a process started after this one (older holders are another
 * program's): [{socket, owners}]. */
function newListeners(baseline) {
  const since = startTicks("self");
  const fresh = [...listeningSockets()].filter(([inode]) => !baseline.has(inode));
  const owners = socketOwners(fresh.map(([inode]) => inode));
  return fresh.map(([inode, label]) => ({ socket: label, owners: owners.get(inode) ?? [] }))
    .filter((l) => l.owners.some((o) => (startTicks(o.pid) ?? 0) >= since));
}

/** Box cgroups (H5 "cgroups under kern.slice"): every directory below
 * /sys/fs/cgroup, in every hierarchy, named the way kern names what it
 * creates per box or per probe ("kern-box-<tag>-<pid>", "kern-capprobe-<pid>",
 * systemd's "kern-....scope"). kern.slice itself is kern's persistent parent
 * and is not one of them. */
function kernCgroups(root = "/sys/fs/cgroup") {
  const out = [];
  const walk = (d, depth) => {
    let entries;
    try {
      entries = fs.readdirSync(d, { withFileTypes: true });
    } catch {
      return; // removed meanwhile
    }
    for (const e of entries) {
      if (!e.isDirectory()) continue;
      const p = path.join(d, e.name);
      if (e.name.startsWith("kern-")) out.push(p);
      if (depth < 16) walk(p, depth + 1);
    }
  };
  walk(root, 0);
  return out;
}

/** Box cgroups now that were not in baseline (a Set of paths). */
function newKernCgroups(baseline) {
  return kernCgroups().filter((c) => !baseline.has(c));
}

/** A cgroup directory kern would name as a box's, as a child of this
 * process's cgroup-v2 cgroup, or null where there is no writable one (not
 * root, or no cgroup2 mount). */
function boxCgroupPath(name) {
  if (process.getuid() !== 0) return null;
  const mount = fs.readFileSync("/proc/self/mountinfo", "utf8").split("\n")
    .map((l) => l.split(" - ")).find((parts) => parts[1] && parts[1].startsWith("cgroup2 "));
  const own = /^0::(\/.*)$/m.exec(fs.readFileSync("/proc/self/cgroup", "utf8"));
  if (!mount || !own) return null;
  const dir = path.join(mount[0].split(" ")[4], own[1]);
  try {
    fs.accessSync(dir, fs.constants.W_OK);
  } catch {
    return null;
  }
  return path.join(dir, name);
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

module.exports = {
  secretFiles, fdTable, fdsLinkingTo, processTable, canarySearch,
  listeningSockets, newListeners, kernCgroups, newKernCgroups, boxCgroupPath,
};
