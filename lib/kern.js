"use strict";

// Everything about talking to the kern binary: finding it, the environment it
// gets, and the `kern box` command line.
const fs = require("fs");
const path = require("path");
const crypto = require("crypto");
const { sandboxError, sandboxErrorFromSystem } = require("./errors");
const { BOX_WORKSPACE } = require("./mounts");
const INIT_BOX_DIR = "/.ks"; // lib/init.js BOX_DIR, csrc/init/protocol.h
const binding = require("./binding");
const { uidRangeAvailable } = require("./hostfacts");

const DEPS_DIR = ".deps";
const HOW_TO_GET_KERN =
  "install it (see https://github.com/getkern/kern: `curl -fsSL " +
  "https://raw.githubusercontent.com/getkern/kern/main/install.sh | sh`) so that `kern` is on " +
  "PATH, or set KERN_BIN to the absolute path of the kern binary";

function checkKernFile(file, source) {
  let st;
  try {
    st = fs.statSync(file);
    fs.accessSync(file, fs.constants.X_OK);
  } catch {
    return `${source} ${JSON.stringify(file)} is not an executable file`;
  }
  return checkKernStat(st, file, source);
}

function checkKernStat(st, file, source) {
  if (!st.isFile()) return `${source} ${JSON.stringify(file)} is not a regular file`;
  if ((st.mode & 0o111) === 0) return `${source} ${JSON.stringify(file)} is not an executable file`;
  // Anyone who can rewrite kern runs code as us on the next box (A36).
  if (st.mode & 0o022)
    return `${source} ${JSON.stringify(file)} is writable by group or others; refusing to run it`;
  const uid = typeof process.getuid === "function" ? process.getuid() : 0;
  if (st.uid !== 0 && st.uid !== uid)
    return `${source} ${JSON.stringify(file)} belongs to another user (uid ${st.uid}); ` +
      "refusing to run it";
  return null;
}

/** Finds kern: $KERN_BIN, else the first `kern` in an absolute PATH entry. */
function findKern(env = process.env) {
  if (env.KERN_BIN) {
    const file = env.KERN_BIN;
    if (!path.isAbsolute(file))
      throw sandboxError("ERR_SANDBOX_KERN_NOT_FOUND", `KERN_BIN must be an absolute path, got ${JSON.stringify(file)}`);
    const problem = checkKernFile(file, "KERN_BIN");
    if (problem) throw sandboxError("ERR_SANDBOX_KERN_NOT_FOUND", `${problem}; ${HOW_TO_GET_KERN}`);
    return fs.realpathSync.native(file);
  }
  // Relative entries ('.', '', 'bin') would make the answer depend on the
  // current directory, which may well be a workspace a box can write.
  const dirs = (env.PATH || "").split(path.delimiter).filter((d) => path.isAbsolute(d));
  for (const dir of dirs) {
    const cand = path.join(dir, "kern");
    if (fs.existsSync(cand) && checkKernFile(cand, "PATH entry") === null)
      return fs.realpathSync.native(cand);
  }
  throw sandboxError("ERR_SANDBOX_KERN_NOT_FOUND", `the kern binary was not found on PATH; ${HOW_TO_GET_KERN}`);
}

/**
 * Opens the kern that findKern() resolved and checks the file it got, not
 * the path: every box of the session executes this handle's descriptor, so
 * a file renamed over the path afterwards never runs (A36). The engine
 * reports the opened file's mode and owner and whether it is a script
 * (binding.kernOpen). Returns the kern handle; close it with binding.wsClose.
 */
function openKern(file) {
  let opened;
  try {
    opened = binding.kernOpen(file);
  } catch (e) {
    // Its code, errno, syscall and path come along (sandboxErrorFromSystem).
    throw sandboxErrorFromSystem(`kern ${JSON.stringify(file)} cannot be opened; ${HOW_TO_GET_KERN}`, e,
      "ERR_SANDBOX_KERN_NOT_FOUND");
  }
  const { handle, mode, uid, script } = opened;
  const isFile = (mode & fs.constants.S_IFMT) === fs.constants.S_IFREG;
  let problem = checkKernStat({ mode, uid, isFile: () => isFile }, file, "kern");
  // Exec through a close-on-exec descriptor cannot run a `#!` script (its
  // interpreter would get a /dev/fd path that is closed by then): say so here
  // rather than fail every run with ENOENT.
  if (!problem && script)
    problem = `kern ${JSON.stringify(file)} is a script; kern must be the kern binary itself`;
  if (problem) {
    binding.wsClose(handle);
    throw sandboxError("ERR_SANDBOX_KERN_NOT_FOUND", `${problem}; ${HOW_TO_GET_KERN}`);
  }
  return handle;
}

// kern reads many KERN_* variables, some of which weaken the box (a seccomp
// denylist, an outer enforcer that disables the timeout and PDEATHSIG). It
// gets only what it needs to find its images, config and user systemd.
const PASSED_ENV = [
  "PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "NO_COLOR",
  "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME",
  "DBUS_SESSION_BUS_ADDRESS",
  "http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY",
  "SSL_CERT_FILE", "SSL_CERT_DIR",
  "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "LC_COLLATE", "LC_NUMERIC", "LC_TIME", "LC_MONETARY",
];

/** kern's environment. Looked up by name: enumerating process.env is slow. */
function kernEnv({ enforceLimits, startedFd }, env = process.env) {
  const out = [];
  for (const k of PASSED_ENV) {
    const v = env[k];
    if (v !== undefined) out.push(`${k}=${v}`);
  }
  out.push(`KERN_STARTED_FD=${startedFd}`);
  // kern's prose about the host (caps it cannot enforce, a systemd scope)
  // is for a person at a terminal: it would open every result's stderr.
  // What it says reaches the caller as data (result.limits, a warning).
  out.push("KERN_QUIET=1");
  if (!enforceLimits) out.push("KERN_NO_SCOPE=1");
  return out;
}

// Random bytes for box names, drawn from the CSPRNG 4 KiB at a time: one
// randomBytes(8) per call costs more than the rest of the name's path.
let namePool = Buffer.alloc(0);
let namePos = 0;

function boxName() {
  // kern box names: 1-64 of [A-Za-z0-9_.-], starting alphanumeric.
  if (namePos + 8 > namePool.length) {
    namePool = crypto.randomBytes(4096);
    namePos = 0;
  }
  const hex = namePool.toString("hex", namePos, namePos + 8);
  namePos += 8;
  return `ksbx-${hex}`;
}

/**
 * The `kern box` argv. Only validated tokens come before `--`: a user token
 * there could be a flag (even `--help`). `--net` goes after the profiles,
 * because kern reads a bare token right after `--net` as its value.
 */
function boxArgv(o, { kern, name, workspace, isSetup, depsDirExists, envFd, command, initDir = null }) {
  const argv = [kern, "box", name, "--image", o.image, "--ro",
    "-v", `${workspace}:${BOX_WORKSPACE}`, "--workdir", BOX_WORKSPACE];
  if (o.depsReadonly && !isSetup && depsDirExists)
    argv.push("-v", `${workspace}/${DEPS_DIR}:${BOX_WORKSPACE}/${DEPS_DIR}:ro`);
  // The in-box init, from the session's private directory (lib/init.js).
  if (initDir !== null) argv.push("-v", `${initDir}:${INIT_BOX_DIR}:ro`);
  // kern's own --timeout is a backstop just past ours, in whole seconds;
  // none for a process with no deadline (timeoutS null).
  const timeoutS = isSetup ? Math.max(o.timeoutS, 120) : o.timeoutS;
  if (timeoutS !== null) argv.push("--timeout", String(Math.ceil(timeoutS) + 5));
  if (o.memoryMb !== null) argv.push("--memory", `${o.memoryMb}m`);
  if (o.cpus !== null) argv.push("--cpus", String(o.cpus));
  if (o.pids !== null) argv.push("--pids-limit", String(o.pids));
  // Hardening flags (additions to 0.1.1), each a flag with its value, so
  // none can take a profile token or `--net` as its value.
  for (const cap of o.capDrop) argv.push("--cap-drop", cap);
  if (o.securityProfile !== null) argv.push("--security-profile", o.securityProfile);
  if (o.apparmor !== null) argv.push("--apparmor", o.apparmor);
  // Without requireLimits, a cap this host cannot enforce is accepted (as
  // kern does by default): --allow-uncapped says so and drops kern's notice,
  // which result.limits and one process warning carry instead. The two are
  // exclusive for kern.
  argv.push(o.requireLimits ? "--require-limits" : "--allow-uncapped");
  // Where no uid range can be had, the single-uid map is what every box gets
  // anyway: saying so drops kern's note on each non-zero exit, nothing else.
  if (!uidRangeAvailable()) argv.push("--no-uid-range");
  argv.push(...o.profiles);
  for (const m of o.mounts) argv.push("-v", `${m.src}:${m.target}${m.ro ? ":ro" : ""}`);
  if (o.egressAllow.length > 0 && !isSetup) argv.push("--egress-allow", o.egressAllow.join(","));
  else if (isSetup || o.network) argv.push("--net");
  // A process's published ports (lib/ports.js): kern refuses them with --net.
  if (o.publish !== undefined) argv.push(...o.publish);
  argv.push("--env-file", `/dev/fd/${envFd}`, "--");
  // What a prewarmed box must have been started with for a call to use it:
  // every flag but the box's name and its backstop.
  const flags = argv.slice(3).map((a, i, all) => (all[i - 1] === "--timeout" ? "*" : a));
  argv.push(...command);
  return { argv, timeoutS, flagsKey: flags.join("\0") };
}

/** The env file kern hands the workload: KEY=VALUE lines, validated upstream. */
function envFileContent(env) {
  const merged = { ...env };
  if (merged.PYTHONPATH === undefined) merged.PYTHONPATH = `${BOX_WORKSPACE}/${DEPS_DIR}`;
  let text = "";
  for (const [k, v] of Object.entries(merged)) text += `${k}=${v}\n`;
  return Buffer.from(text, "utf8");
}

module.exports = { findKern, openKern, kernEnv, boxName, boxArgv, envFileContent, DEPS_DIR,
  HOW_TO_GET_KERN };
