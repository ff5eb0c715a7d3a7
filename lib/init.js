"use strict";

// The host side of the in-box init (csrc/init/): where its binary is, the
// private directory each session mounts it from, its command lines, and the
// spec frames of csrc/init/protocol.h.
const fs = require("fs");
const os = require("os");
const path = require("path");
const benchoff = require("./benchoff");
const binding = require("./binding");

// From the one definition of each (csrc/init/protocol.h, via the addon).
const BOX_DIR = binding.PROTOCOL.INIT_BOX_DIR;
const BOX_PATH = binding.PROTOCOL.INIT_BOX_PATH;
const REPORT_EXITED = binding.PROTOCOL.INIT_END.EXITED;
const REPORT_SIGNALED = binding.PROTOCOL.INIT_END.SIGNALED;

// The Python that runs in the box (its own files: code that runs in the box
// is never a string in C or JS): the bootstrap every Python box starts with
// (`python3 -c`), carrying the rich results' code and the kernel driver.
const PYTHON_BOOT = pythonBoot(path.join(__dirname, "inbox"));
// What every interpreter box runs first: it loads the boot from the init
// directory, as bytecode where lib/bootcache.js compiled it for the box's
// interpreter, else as text (python-load.py).
const PYTHON_LOAD = fs.readFileSync(path.join(__dirname, "inbox", "python-load.py"), "utf8");
const BOOT_SOURCE = "boot.py"; // in the init directory: PYTHON_BOOT's text

/**
 * The boot's source, with the texts of python-rich.py and python-kernel.py
 * in it as string constants (the lines `_KS_RICH_SOURCE = None` and
 * `_KS_KERNEL_SOURCE = None`): one -c argument carries all three, and the
 * rendering code and the kernel driver are compiled only when needed, or
 * while a prewarmed box waits. (JSON's string syntax is a subset of Python's.)
 */
function pythonBoot(dir) {
  let boot = fs.readFileSync(path.join(dir, "python-boot.py"), "utf8");
  for (const [name, file] of [["_KS_RICH_SOURCE", "python-rich.py"], ["_KS_KERNEL_SOURCE", "python-kernel.py"]]) {
    const line = `${name} = None\n`;
    if (!boot.includes(line)) throw new Error(`kern-sandbox: ${dir}/python-boot.py has no ${line.trim()}`);
    const text = fs.readFileSync(path.join(dir, file), "utf8");
    boot = boot.replace(line, `${name} = ${JSON.stringify(text)}\n`);
  }
  return boot;
}

/** The built init next to the addon that loaded, or null (not built). */
function findInitBinary() {
  const build = path.join(__dirname, "..", "build");
  for (const flavour of [binding.flavour, "Release"]) {
    const file = path.join(build, flavour, "ks-init");
    try {
      if (fs.statSync(file).isFile()) return file;
    } catch {
      // next
    }
  }
  return null;
}

// With the bench switch inbox-libc off, the init linked against glibc that
// bench/ab.js built (lib/benchoff.js), in the built one's place.
const INIT_BINARY = benchoff.INIT ?? findInitBinary();

/**
 * The process's private directory (0700, under TMPDIR, never inside a
 * workspace) holding the init (a hard link to the built one, or a copy,
 * 0500, on another file system), which every box of the
 * process mounts read-only at /.ks: nobody but us can replace the program
 * each box runs first. Beside it only the Python boot's text (boot.py) and
 * its bytecode per kern and image (lib/bootcache.js), read-only as well,
 * what python-load.py runs in interpreter boxes. One per process, not per
 * session: a file made and removed per session waits on a journaled /tmp
 * behind kern's teardown writes, for no gain in isolation (the sessions of
 * one process trust each other). Removed when the process (or Worker) exits; a directory
 * left by a process that was SIGKILLed is removed by the next one to start
 * in the same PID namespace (its name says which: a pid alone means nothing
 * to a process in another namespace sharing this TMPDIR, where the owner
 * would look dead). Made again if it went (someone cleaned TMPDIR).
 * Null when the init is not built or cannot be set up (boxes then run their
 * workload directly, as 0.1.1 did).
 */
const dirs = new Map(); // tmpdir -> directory, or null once it failed there

/** This process's PID namespace, as the inode number /proc names it. */
const PID_NS = (() => {
  try {
    return /\[(\d+)\]/.exec(fs.readlinkSync("/proc/self/ns/pid"))[1];
  } catch {
    return "0";
  }
})();

/** The name prefix of the init directories of process pid (this namespace's). */
function dirPrefix(pid = process.pid) {
  return `kern-init-${PID_NS}-${pid}-`;
}

function initDir(tmpdir = os.tmpdir()) {
  if (INIT_BINARY === null) return null;
  if (dirs.has(tmpdir)) {
    const known = dirs.get(tmpdir);
    if (known === null || fs.existsSync(path.join(known, "ks-init"))) return known;
    removeInitDir(known); // it went: made again below
  }
  let dir = null;
  try {
    removeStaleDirs(tmpdir);
    dir = fs.mkdtempSync(path.join(tmpdir, dirPrefix()));
    // kern's -v syntax cannot carry ':' or ','.
    if (/[:\n\r,]/.test(dir)) throw new Error("unusable path");
    fs.chmodSync(dir, 0o700);
    const file = path.join(dir, "ks-init");
    // A hard link where the file system allows it: the init is then never
    // open for writing in this process. A copy is, for a moment, and a box
    // started by another thread in that moment (a Worker's engine) holds
    // the write descriptor until its own exec: a box exec'ing this init
    // then fails with ETXTBSY (seen in C10, 60 Workers starting at once).
    try {
      fs.linkSync(INIT_BINARY, file);
    } catch {
      fs.copyFileSync(INIT_BINARY, file, fs.constants.COPYFILE_EXCL);
      fs.chmodSync(file, 0o500);
    }
    fs.writeFileSync(path.join(dir, BOOT_SOURCE), PYTHON_BOOT, { mode: 0o400, flag: "wx" });
  } catch {
    if (dir !== null) removeInitDir(dir);
    dir = null;
  }
  dirs.set(tmpdir, dir);
  if (dir !== null && dirs.size === 1) process.once("exit", removeAll);
  return dir;
}

function removeAll() {
  for (const dir of dirs.values()) removeInitDir(dir);
  dirs.clear();
}

function removeInitDir(dir) {
  // The init, the boot's text and its bytecode files (lib/bootcache.js).
  if (dir !== null) fs.rmSync(dir, { recursive: true, force: true });
}

/** Our own kern-init-NS-PID-* directories of this PID namespace whose
 * process is gone. */
function removeStaleDirs(tmpdir) {
  const uid = typeof process.getuid === "function" ? process.getuid() : -1;
  for (const name of fs.readdirSync(tmpdir)) {
    const m = /^kern-init-(\d+)-(\d+)-[A-Za-z0-9]{6}$/.exec(name);
    if (m === null || m[1] !== PID_NS || Number(m[2]) === process.pid) continue;
    const dir = path.join(tmpdir, name);
    try {
      if (fs.lstatSync(dir).uid !== uid) continue;
      process.kill(Number(m[2]), 0); // alive (or not ours to signal): leave it
    } catch (e) {
      if (e.code === "ESRCH") removeInitDir(dir);
    }
  }
}

/** The box command that runs `command` under the init, started now; with
 * stdin, its stdin pipe comes first on the channel (a STDIN frame); with
 * started, a process's: the init says STARTED and takes SIGNAL frames;
 * with tty ({ keepTerm }, and stdin), what the STDIN frame brings is the
 * workload's terminal (TERM=xterm-256color unless keepTerm). */
function coldCommand(command, apparmor, stdin = false, started = false, tty = null) {
  const ttyArgs = tty === null ? [] : tty.keepTerm ? ["--tty", "--keep-term"] : ["--tty"];
  return [BOX_PATH, ...apparmorArgs(apparmor), "--exec", ...(stdin ? ["--stdin", ...ttyArgs] : []),
    ...(started ? ["--started"] : []), "--", ...command];
}

/** The box command of a Python interpreter the host talks to (the
 * interpreter protocol, csrc/core/box/interp.h): python3 booted now,
 * waiting for its code (RUN) or to become a kernel (KERNEL). Cold or
 * prewarmed alike. bootBin: the in-box path of the boot's bytecode for
 * this box's interpreter (lib/bootcache.js), used when it is there. */
function interpCommand(apparmor, bootBin, stdin = false) {
  return [BOX_PATH, ...apparmorArgs(apparmor), "--interp", ...(stdin ? ["--stdin"] : []), "--",
    "python3", "-c", PYTHON_LOAD,
    `${BOX_DIR}/${BOOT_SOURCE}`, bootBin];
}

/** The box command of a prewarmed box: an init waiting for its argv
 * ("exec"), or a Python interpreter ("python"). */
function waitingCommand(kind, apparmor, bootBin) {
  if (kind === "python") return interpCommand(apparmor, bootBin);
  return [BOX_PATH, ...apparmorArgs(apparmor), "--wait"];
}

function apparmorArgs(apparmor) {
  // The init words a refused exec as kern does, naming the profile.
  return apparmor !== null ? ["--apparmor", apparmor] : [];
}

/** The SPEC frame for an init waiting with --wait: the argv to exec
 * (csrc/init/protocol.h; built by the engine, the one encoder of it). */
function specFrame(command, process = false) {
  return binding.specFrame(command, process);
}

module.exports = { BOX_DIR, BOX_PATH, BOOT_SOURCE, INIT_BINARY, REPORT_EXITED, REPORT_SIGNALED,
  initDir, dirPrefix, coldCommand, interpCommand, waitingCommand, specFrame };
