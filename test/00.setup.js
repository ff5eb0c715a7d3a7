"use strict";

// Global hooks: every test talks to the kern test double unless a test says
// otherwise, and the run ends with nothing of ours left behind (C23: the H5
// census of SECURITY-CASES.md: boxes, children and zombies, processes of the
// run, descriptors, temp workspaces and env files, host ports, box cgroups).
const assert = require("assert");
const fs = require("fs");
const path = require("path");
const { spawn } = require("child_process");

// The suite runs on the Test build of the addon (the release build plus the
// natives its census reads, csrc/napi/testing.c; npm test builds it first),
// unless a sanitizer run chose its own build. Set before anything loads the
// addon, and inherited by every Node child the tests start.
if (!process.env.KERN_SANDBOX_BUILD) process.env.KERN_SANDBOX_BUILD = "Test";
const h = require("./lib/harness");

// Loaded when first needed, as the suite's other uses of the package are.
const watchClosesSettled = () => require("../lib/census").watchClosesSettled();
const { fdTable, listeningSockets, newListeners, kernCgroups, newKernCgroups } = require("./lib/leaks");

// The caller's own KERN_BIN names the real kern the integration tests may use
// (test/lib/realkern.js); the package under test sees the double.
if (process.env.KS_CALLER_KERN_BIN === undefined && process.env.KERN_BIN !== undefined)
  process.env.KS_CALLER_KERN_BIN = process.env.KERN_BIN;
process.env.KERN_BIN = h.fakeKern();
// A private TMPDIR for the whole run, inherited by every child the tests
// start: what is left in it at the end is this run's, not another suite's
// sharing /tmp. The tests' own scratch dirs (h.tmpDir) live beside it.
const TMP = path.join(h.testRoot(), "tmp");
fs.mkdirSync(TMP, { recursive: true });
process.env.TMPDIR = TMP;

// Under `npm run test:asan` the sanitizer runtimes are preloaded into every
// child the tests start (python3, tar, sh, ...), and LeakSanitizer's check at
// each child's exit cost ~1-5 s per process (5 s per test in test/70 and 72).
// This process keeps the leak check it started with; its children, which
// are not the addon's code, skip it (their memory errors are still logged).
if (h.addonFlavour === "Debug") process.env.ASAN_OPTIONS = `${process.env.ASAN_OPTIONS || ""}:detect_leaks=0`;
// And the programs the tests run only to look at the system (ps, tar, ...)
// run without the preload at all (test/lib/sanitizer-children.js).
if (h.addonFlavour === "Debug") require("./lib/sanitizer-children").install();

// Under `npm run test:tsan` only this process (and its Workers) runs with
// ThreadSanitizer: the runtime crashes dash and python3 at start (a NULL
// setjmp interceptor), so no child may inherit the preload. A Node child
// without the runtime loads the release build (lib/binding.js).
if (h.addonFlavour === "Tsan") delete process.env.LD_PRELOAD;
// The run scripts/test-tsan.sh starts must be on that build, or its clean
// log proves nothing. (Its children, a suite the census test runs
// included, are not asked: they load the release build.)
if (process.env.KS_TSAN_RUN === "1") {
  const loaded = require("../lib/binding").flavour;
  if (loaded !== "Tsan")
    throw new Error(`test:tsan: this process loaded the ${loaded} build of the addon (is libtsan preloaded?)`);
  delete process.env.KS_TSAN_RUN; // after the check: mocha loads this file again if it throws
}

let baselineFds = null;
let baselineSockets = new Set();
let baselineCgroups = new Set();
// The census's own positive control (10.package.test.js) runs a leaking
// suite and needs no patience: KS_CENSUS_QUICK=1 cuts every wait to 0.3 s.
const wait = (ms) => (process.env.KS_CENSUS_QUICK === "1" ? 300 : ms);

/** Entries under dir (recursively) whose name is a workspace or env file. */
function leftovers(dir) {
  const out = [];
  const walk = (d) => {
    let entries;
    try {
      entries = fs.readdirSync(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const p = path.join(d, e.name);
      if (/^(kern-ws-|\.kern-env)/.test(e.name)) out.push(path.relative(dir, p));
      if (e.isDirectory()) walk(p);
    }
  };
  walk(dir);
  return out;
}

/** Live processes other than this one that belong to the run: running a
 * binary from the test root (the doubles, the test helpers), or sitting in
 * it (a box's workload has its workspace as cwd). */
function runProcesses() {
  const root = fs.realpathSync(h.testRoot());
  const inRoot = (p) => p !== null && (p === root || p.startsWith(`${root}/`));
  return h.processes().filter((p) => {
    if (p.pid === process.pid || p.state === "Z") return false;
    let cwd = null;
    try {
      cwd = fs.readlinkSync(`/proc/${p.pid}/cwd`);
    } catch {
      /* gone meanwhile */
    }
    return inRoot(p.exe && p.exe.replace(/ \(deleted\)$/, "")) || inRoot(cwd);
  }).map((p) => ({ pid: p.pid, argv: p.argv.split("\0").join(" ").trim() }));
}

// What each test left (afterEach), in order.
const trail = [];

/** The test after which the run's counts left their baseline and never came
 * back: the first test of the trail's last run of entries above it. A test
 * may hold resources for its suite (a Sandbox opened in before()), so the
 * trail only names a suspect; the census at the end is the judge. */
function suspectOf(baseFdCount) {
  const above = (e) => e.liveBoxes > 0 || e.children > 0 || e.fds > baseFdCount || e.tmpLeftovers > 0;
  let i = trail.length;
  while (i > 0 && above(trail[i - 1])) i--;
  if (i === trail.length) return null;
  const e = trail[i];
  return `${e.test} (after it: ${e.liveBoxes} live boxes, ${e.children} children, ` +
    `${e.fds - baseFdCount} descriptors over the baseline, ${e.tmpLeftovers} temp leftovers)`;
}

exports.mochaHooks = {
  async beforeAll() {
    this.timeout(30000);
    // The engine opens its long-lived descriptors (epoll, eventfd,
    // /dev/null) with its first box, and keeps them for the life of the
    // process: warm it up, then take the baseline.
    const { withSandbox } = require("..");
    await withSandbox((s) => s.run(["true"]));
    // Node itself opens /dev/null on its first child_process.spawn() with a
    // piped stream and keeps it for the life of the process: one such spawn
    // here, so that it is in the baseline and not counted against a test.
    await new Promise((resolve) => {
      const c = spawn("true", [], { stdio: ["ignore", "pipe", "inherit"] });
      c.stdout.resume();
      c.on("close", resolve);
    });
    await h.waitFor(() => h.children().length === 0, 12000);
    await watchClosesSettled();
    baselineFds = fdTable();
    baselineSockets = new Set(listeningSockets().keys());
    baselineCgroups = new Set(kernCgroups());
  },

  // close() does not wait for its inotify instance to close (lib/session.js):
  // each test starts once the previous one's are gone, so a descriptor
  // count taken in a test sees only that test's descriptors.
  async afterEach() {
    await watchClosesSettled();
    // The census's trail: what each test left, so that a leak the census
    // finds at the end names the test after which it began (suspectOf).
    if (baselineFds !== null) {
      trail.push({ test: this.currentTest?.fullTitle() ?? "?",
        liveBoxes: require("../lib/binding").liveBoxes(), children: h.children().length,
        fds: Object.keys(fdTable()).length, tmpLeftovers: leftovers(TMP).length });
    }
  },

  async afterAll() {
    this.timeout(60000);
    await watchClosesSettled();
    const binding = require("../lib/binding");
    // Counted in the census below (a session left open keeps its boxes).
    await h.waitFor(() => binding.liveBoxes() === 0, wait(5000));
    // A `kern stop` helper may outlive its box by up to its own deadline.
    const noChildren = await h.waitFor(() => h.children().length === 0, wait(12000));
    const noProcesses = await h.waitFor(() => runProcesses().length === 0, wait(5000));
    // A port held after the suite is held by a live process; one started by
    // this run and escaped from every other count (a daemon out of its
    // group, in "/") still shows here, and so would a box cgroup that kern
    // failed to remove.
    const newCgroups = () => newKernCgroups(baselineCgroups);
    await h.waitFor(() => newListeners(baselineSockets).length === 0 && newCgroups().length === 0, wait(5000));
    const fdsBack = baselineFds === null ||
      await h.waitFor(() => Object.keys(fdTable()).length === Object.keys(baselineFds).length,
        wait(5000));
    const census = {
      liveBoxes: binding.liveBoxes(),
      children: h.children(), // zombies included
      processes: runProcesses(),
      fds: [],
      tmpLeftovers: leftovers(TMP),
      ports: newListeners(baselineSockets).map(({ socket, owners }) =>
        `${socket} held by ${owners.map((o) => `${o.pid} ${o.argv.slice(0, 120)}`).join(", ")}`),
      cgroups: newCgroups(),
    };
    if (baselineFds !== null) {
      const now = fdTable();
      for (const fd of new Set([...Object.keys(now), ...Object.keys(baselineFds)])) {
        if (now[fd] !== baselineFds[fd]) census.fds.push(`${fd}: ${baselineFds[fd] ?? "-"} -> ${now[fd] ?? "-"}`);
      }
    }
    console.log(`\n  census (C23): ${JSON.stringify({ ...census, tmpEntries: fs.readdirSync(TMP).length })}`);
    // Recorded: now end what a failed test left running (a child waiting on
    // its stdin, say), so that the run still ends by itself (no --exit).
    h.killAll([...census.children.filter((c) => c.state !== "Z").map((c) => c.pid),
      ...census.processes.map((p) => p.pid)]);
    const root = h.testRoot();
    if (noChildren && noProcesses && fdsBack && census.tmpLeftovers.length === 0) h.cleanup();
    const clean = { liveBoxes: 0, children: [], processes: [], fds: [], tmpLeftovers: [], ports: [], cgroups: [] };
    const suspect = baselineFds === null ? null : suspectOf(Object.keys(baselineFds).length);
    assert.deepStrictEqual(census, clean, `leaks after the suite (the test root ${root} is kept for a ` +
      `look)${suspect !== null ? `; they began after the test: ${suspect}` : ""}`);
  },
};
