"use strict";

// Shared test harness: the kern test double, its state directory, and the
// leak census. The double is compiled once per run into a private temp dir.
const fs = require("fs");
const os = require("os");
const path = require("path");
const { execFileSync } = require("child_process");
const procfs = require("./procfs");
const { KERNEL_BACKSTOP_S } = require("../../lib/kernel");

const repo = path.resolve(__dirname, "..", "..");
let root = null;

function testRoot() {
  if (root === null) root = fs.mkdtempSync(path.join(os.tmpdir(), "ks-test-"));
  return root;
}

/** Builds the kern test double (once) and returns its absolute path. */
function fakeKern() {
  const bin = path.join(testRoot(), "bin");
  const kern = path.join(bin, "kern");
  if (!fs.existsSync(kern)) {
    fs.mkdirSync(bin, { recursive: true, mode: 0o755 });
    const args = ["-std=gnu11", "-O2", "-Wall", "-Wextra", "-Werror", "-o", kern,
      path.join(repo, "test", "fixtures", "fake-kern.c")];
    // Static when the C library allows it: hundreds of boxes start at once in
    // some tests, and dynamic linking is most of a tiny program's start-up.
    try {
      execFileSync("cc", ["-static", ...args], { stdio: "pipe" });
    } catch {
      execFileSync("cc", args, { stdio: "inherit" });
    }
  }
  return kern;
}

function stateDir() {
  return path.join(path.dirname(fakeKern()), "kern-state");
}

/** The argv the double recorded for box NAME, or of the last box started. */
function readArgv(dir, name) {
  return fs.readFileSync(path.join(dir, `${name}.argv`), "utf8").split("\0").slice(0, -1);
}

/** Whether a recorded box was started ahead of a call: an init waiting for
 * its argv (--wait), or a Python interpreter (--interp) whose kern backstop
 * covers a kernel's life, as a prewarmed one's does (lib/sandbox.js,
 * #startPrewarmed; a cold Python box's is timeoutS + 5 s; a kernel's box
 * counts too). A pool refills in the background, so without this "the last
 * box" could be the refill's. */
function isPrewarmBox(argv) {
  const cmd = argv.slice(argv.indexOf("--") + 1);
  if (!/\/ks-init$/.test(cmd[0] ?? "")) return false;
  if (cmd.includes("--wait")) return true;
  const flags = argv.slice(0, argv.indexOf("--"));
  const backstop = Number(flags[flags.indexOf("--timeout") + 1]);
  return cmd.includes("--interp") && backstop >= KERNEL_BACKSTOP_S;
}

/** The engine's live boxes once no compile of the boot's bytecode runs
 * (lib/bootcache.js: a box of the package's own, which a test's second
 * Python box of an image starts after that call). */
async function settledLiveBoxes() {
  await require("../../lib/bootcache").compilesSettled();
  return require("../../lib/binding").liveBoxes();
}

/** Whether a recorded box compiled the boot's bytecode (lib/bootcache.js):
 * a box of the package's own, started after a call. */
function isCompileBox(argv) {
  const cmd = boxCommand(argv);
  return cmd[0] === "python3" && cmd[1] === "-I" && cmd[2] === "-S";
}

/** The kern argv of the box started last (or of the box called name);
 * prewarm boxes, started ahead of calls, are passed over unless asked for
 * with { prewarm: true }, and boxes that compiled the boot always. */
function recordedArgv(name, { prewarm = false } = {}) {
  const dir = stateDir();
  if (!name) {
    // By the double's CLOCK_MONOTONIC stamp, not mtime: mtimes tick every
    // few ms, so two boxes run back to back can share one.
    const boxes = fs.readdirSync(dir).filter((f) => f.endsWith(".argv")).map((f) => f.slice(0, -".argv".length))
      .map((box) => ({ box, t: BigInt(fs.readFileSync(path.join(dir, `${box}.started`), "utf8")) }))
      .sort((a, b) => (a.t < b.t ? 1 : a.t > b.t ? -1 : 0))
      .filter(({ box }) => (prewarm || !isPrewarmBox(readArgv(dir, box))) &&
        !isCompileBox(readArgv(dir, box)));
    if (boxes.length === 0) throw new Error("no box recorded");
    name = boxes[0].box;
  }
  return readArgv(dir, name);
}

/** The workload's argv in a kern argv: what follows `--`, past the in-box
 * init's own `ks-init [flags] --exec --` when the box runs one. */
function boxCommand(argv) {
  const cmd = argv.slice(argv.indexOf("--") + 1);
  if (!/\/ks-init$/.test(cmd[0] ?? "")) return cmd;
  const sep = cmd.indexOf("--");
  return sep < 0 ? [] : cmd.slice(sep + 1);
}

function clearState() {
  fs.rmSync(stateDir(), { recursive: true, force: true });
}

function tmpDir(prefix = "t-") {
  return fs.mkdtempSync(path.join(testRoot(), prefix));
}

/** Every process: pid, state letter, parent, session, and its argv. */
function processes() {
  const out = [];
  for (const pid of procfs.pids()) {
    const stat = procfs.readStat(pid);
    if (stat === null) continue; // gone meanwhile
    let argv;
    try {
      argv = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8");
    } catch {
      continue; // gone meanwhile
    }
    let exe = null;
    try {
      exe = fs.readlinkSync(`/proc/${pid}/exe`);
    } catch {
      /* a zombie, or not ours to read */
    }
    out.push({ pid, state: stat.state, ppid: stat.ppid, sid: stat.sid, argv, exe });
  }
  return out;
}

/** User and system CPU clock ticks a process has used (0 once it is gone). */
function cpuTicks(pid) {
  const st = procfs.readStat(pid);
  return st === null ? 0 : st.cpuTicks;
}

/** Processes whose parent is this process, with their state letter. */
function children() {
  return processes().filter((p) => p.ppid === process.pid).map(({ pid, state }) => ({ pid, state }));
}

/** Live (not zombie) processes running exe, e.g. the test double. */
function processesUsing(exe) {
  return processes().filter((p) => p.exe === exe && p.state !== "Z").map((p) => p.pid);
}

/** Live processes whose argv mentions marker, except the pids given. */
function processesWith(marker, except = []) {
  return processes().filter((p) => p.argv.includes(marker) && p.state !== "Z" &&
    !except.includes(p.pid)).map((p) => p.pid);
}

/** Live processes whose working directory is dir or lies under it (a box
 * workload of the double runs in its workspace). */
function processesIn(dir) {
  const root = fs.realpathSync(dir);
  return processes().filter((p) => {
    if (p.state === "Z") return false;
    try {
      const cwd = fs.readlinkSync(`/proc/${p.pid}/cwd`);
      return cwd === root || cwd.startsWith(`${root}/`);
    } catch {
      return false;
    }
  }).map((p) => p.pid);
}

/** kern processes whose argv names marker (say a session's workspace) and
 * whose box is up and idle: kern, its init and the init's child (the
 * interpreter, or the process that waits for an argv), every one asleep. */
function idleBoxesWith(marker) {
  const all = processes();
  const kids = (pid) => all.filter((p) => p.ppid === pid);
  return all.filter((k) => k.argv.includes(marker) && k.argv.includes("box") && k.state === "S")
    .filter((k) => {
      const tree = [k];
      for (let i = 0; i < tree.length; i++) tree.push(...kids(tree[i].pid));
      return tree.length >= 3 && tree.every((p) => p.state === "S");
    }).map((k) => k.pid);
}

/** Live views of a call's output that record what it printed: pass
 * onStdout/onStderr in the call's options; until(out, err) waits until each
 * stream so far includes that text (the workload has got that far). */
function liveOutput() {
  const seen = { stdout: "", stderr: "" };
  return {
    onStdout: (c) => { seen.stdout += c; },
    onStderr: (c) => { seen.stderr += c; },
    until: async (out = "", err = "", ms = 10000) => {
      if (!await waitFor(() => seen.stdout.includes(out) && seen.stderr.includes(err), ms, 5))
        throw new Error(`the call never printed ${JSON.stringify([out, err])}: ${JSON.stringify(seen)}`);
    },
  };
}

/** Waits until session s's pool holds n boxes (or more) and as many of its
 * boxes are up and idle: the state a test of prewarmed boxes starts from.
 * Fails the test if that does not come within ms. */
async function poolReady(s, n = 1, ms = 10000) {
  const { POOL_STATS } = require("../../lib/internal");
  // A call schedules the pool's refill (with the kind it used) on its way
  // out: let that run first, so the boxes counted are of that kind.
  await new Promise(setImmediate);
  const ws = s[POOL_STATS]().workspace; // the session's boxes name it in kern's argv
  const ok = await waitFor(() => (s[POOL_STATS]()?.ready ?? 0) >= n && idleBoxesWith(ws).length >= n, ms);
  if (!ok) {
    throw new Error(`the pool never held ${n} idle box(es) within ${ms} ms: ` +
      `${JSON.stringify(s[POOL_STATS]())}, idle ${idleBoxesWith(ws).length}`);
  }
}

function openFds() {
  return fs.readdirSync("/proc/self/fd").length;
}

/** openFds() once the engine's own passing descriptors are gone: a kern
 * still tearing down a box whose call settled at the init's report (it
 * holds the box's pipes until it exits, after the caller has the result), a
 * compile box, a pool box being replaced. For tests that count a call's
 * descriptors from just after a call. */
async function settledFds() {
  await require("../../lib/census").watchClosesSettled();
  let n = openFds();
  for (let i = 0; i < 100; i++) {
    await sleep(10);
    const m = openFds();
    if (m === n && require("../../lib/binding").tailBoxes() === 0) break;
    n = m;
  }
  return n;
}

function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

/** Waits until fn() is true, up to ms; returns its last value. */
async function waitFor(fn, ms = 3000, step = 20) {
  const end = Date.now() + ms;
  let v = fn();
  while (!v && Date.now() < end) {
    await sleep(step);
    v = fn();
  }
  return v;
}

/** Prints a visible SKIP line with the reason, then skips the mocha test:
 * for a test that a machine with what .ci/run installs can run. With
 * KERN_SANDBOX_MUST_WORK=1 (set by .ci/run) such a SKIP fails instead. */
function skip(ctx, reason) {
  if (process.env.KERN_SANDBOX_MUST_WORK === "1")
    throw new Error(`SKIP refused (KERN_SANDBOX_MUST_WORK=1: CI can run this test): ${reason}`);
  console.log(`      SKIP: ${reason}`);
  ctx.skip();
}

/** A SKIP that depends on the host, not on what .ci/run installs: its
 * kernel, a real kern, the addon's flavour under test, a deliberate choice.
 * Never refused. */
function skipHost(ctx, reason) {
  console.log(`      SKIP: ${reason}`);
  ctx.skip();
}

/** Prints a measured figure under the current test's title. */
function note(msg) {
  console.log(`      ${msg}`);
}

/** A private copy of the kern double in dir: its processes (kern box and
 * kern stop alike) are told apart from every other test's by their exe. */
function privateKern(dir) {
  const k = path.join(dir, "kern");
  fs.copyFileSync(fakeKern(), k);
  fs.chmodSync(k, 0o755);
  return k;
}

/** The addon build this process runs on (lib/binding.js): Test (the
 * release build plus the tests' natives; what test/00.setup.js picks),
 * Debug (ASan + UBSan, npm run test:asan), Tsan (npm run test:tsan), or
 * Release when a script loads the harness without the setup. */
const addonFlavour = ["Debug", "Tsan", "Test"].includes(process.env.KERN_SANDBOX_BUILD)
  ? process.env.KERN_SANDBOX_BUILD : "Release";

/** The build a Node child of this process loads: under test:tsan, the Test
 * build (children run without the TSan runtime: test/00.setup.js). */
const childAddonFlavour = addonFlavour === "Tsan" ? "Test" : addonFlavour;

/** True on a sanitizer build: everything is several times slower, so pure
 * timing bounds are relaxed. */
const underSanitizer = addonFlavour === "Debug" || addonFlavour === "Tsan";

/** How long to wait for something to *start* (a Node child, a Worker, a
 * box): `ms` on the release build, at least 30 s on the sanitizer build,
 * where a Node start alone can take seconds on a loaded machine. Only for
 * positive controls: a bound the catalogue sets (a box gone within 2 s) is
 * never stretched. */
function startWait(ms) {
  return underSanitizer ? Math.max(ms, 30000) : ms;
}

/** An upper bound on a wall time measured from JS: `ms` on the release
 * build, `factor` times that on a sanitizer build, where the test process
 * and the addon run several times slower (box workloads do not: the double
 * gives them a fresh environment, without the preload). Some of these are
 * the catalogue's figures (C5's 1 s, C19's and A20's 100 ms): the release
 * build, the one users run, is held to them in `npm test`; under a
 * sanitizer the same test tells prompt from hung, which each use keeps far
 * apart (a hung `kern stop` shows as 10 s, a blocked FIFO as forever). */
function jsBound(ms, factor = 3) {
  return underSanitizer ? ms * factor : ms;
}

/** Sends signal to each pid; one that is gone meanwhile is not an error. */
function killAll(pids, signal = "SIGKILL") {
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
    } catch (e) {
      if (e.code !== "ESRCH") throw e;
    }
  }
}

/** Mounts a tmpfs on a fresh dir (root only); null with the reason otherwise. */
function mountTmpfs(opts) {
  const dir = tmpDir("tmpfs-");
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", opts, "tmpfs", dir], { stdio: "pipe" });
    return { dir, why: null };
  } catch (e) {
    return { dir: null, why: `cannot mount a tmpfs (${String(e.stderr || e.message).trim()})` };
  }
}

/** Unmounts dir (a test's tmpfs) once what sessions leave ending after
 * close() is done (their inotify instances close on a worker thread, and
 * close() does not wait: lib/census.js); a mount still busy after that is
 * retried for up to 5 s, then the error is the test's. */
async function umount(dir) {
  if (dir === null) return;
  await require("../../lib/census").watchClosesSettled();
  for (const t0 = Date.now(); ;) {
    try {
      execFileSync("umount", [dir], { stdio: "pipe" });
      return;
    } catch (e) {
      if (!/busy/.test(String(e.stderr)) || Date.now() - t0 > 5000) throw e;
      await sleep(50);
    }
  }
}

/** The path of command cmd on PATH, or null. */
function have(cmd) {
  try {
    return execFileSync("sh", ["-c", `command -v ${cmd}`], { encoding: "utf8", stdio: "pipe" }).trim();
  } catch {
    return null;
  }
}

/** [exitCode, signalCode] of a child process, once it has exited. Its
 * stdout may still hold unread data then: see closeOf. */
function exitOf(child) {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve([child.exitCode, child.signalCode]);
    else child.on("exit", (c, s) => resolve([c, s]));
  });
}

/** Resolves with the child's first stdout chunk. If `ended` (the child's
 * exitOf or closeOf) settles first, rejects with how it ended, so that a
 * child that dies before it speaks fails the test at once, not at its
 * timeout. `what()` adds to the message (say, the child's stderr so far). */
function firstOutput(child, ended, what = () => "") {
  return Promise.race([new Promise((resolve) => child.stdout.once("data", resolve)),
    ended.then(([c, s]) => {
      throw new Error(`the child ended (${c ?? s}) before its first output${what()}`);
    })]);
}

/** Like exitOf, but once the child's stdio streams have ended too ('close'),
 * so that all it wrote has been read. Call it before the child can end. */
function closeOf(child) {
  return new Promise((resolve) => child.once("close", (c, s) => resolve([c, s])));
}

/** The entries of tmp once a new process has started there: it removes the
 * in-box init's directories (kern-init-PID-*) of processes that died without
 * running JS (lib/init.js), as the next user of the package does. */
function tmpAfterSweep(tmp) {
  const { execFileSync } = require("child_process");
  execFileSync(process.execPath, ["-e", `require(${JSON.stringify(path.join(repo, "lib/init"))}).initDir()`],
    { env: { ...process.env, TMPDIR: tmp }, stdio: "ignore" });
  return fs.readdirSync(tmp);
}

function cleanup() {
  if (root !== null) fs.rmSync(root, { recursive: true, force: true });
  root = null;
}

module.exports = {
  repo, testRoot, fakeKern, stateDir, settledFds, recordedArgv, boxCommand, isPrewarmBox, isCompileBox, settledLiveBoxes, cpuTicks, clearState, tmpDir, children,
  processes, processesUsing, processesWith, processesIn, idleBoxesWith, poolReady, liveOutput, openFds, sleep, waitFor, skip, skipHost, cleanup,
  addonFlavour, childAddonFlavour, underSanitizer, startWait, jsBound, killAll, mountTmpfs, umount, have, exitOf, closeOf, firstOutput, note, privateKern,
  tmpAfterSweep,
};
