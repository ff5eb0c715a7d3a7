"use strict";

// The same behaviours against a real kern. Runs when one is found
// (KERN_INTEGRATION_BIN, or `kern` in an absolute PATH entry) with the images
// of ../shared/tools/make-kern-images.sh in its cache; otherwise every test
// says SKIP and why.
const assert = require("assert");
const fs = require("fs");
const path = require("path");
const crypto = require("crypto");
const { spawn, execFileSync } = require("child_process");
const { isDeepStrictEqual } = require("util");
const h = require("../lib/harness");
const leaks = require("../lib/leaks");
const procfs = require("../lib/procfs");

const { realKern, haveImage, why, useRealKern } = require("../lib/realkern");

const V1_PIDS = "/sys/fs/cgroup/pids";
/** Whether this host has a cgroup-v1 pids hierarchy root can write. */
function haveV1Pids() {
  try {
    fs.accessSync(path.join(V1_PIDS, "cgroup.procs"), fs.constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/** Builds fixtures/cgroup-exec.c as `out`: a kern that joins cgroup dir, or
 * with perBox a fresh child of it capped at perBox tasks, then execs the
 * real kern. */
function buildCgroupExec(out, dir, perBox = null) {
  execFileSync("cc", ["-std=gnu11", "-O2", "-Wall", "-Wextra", "-Werror", `-DKS_CGROUP_DIR="${dir}"`,
    `-DKS_REAL_KERN="${realKern}"`, ...(perBox === null ? [] : [`-DKS_PIDS_PER_BOX=${perBox}`]),
    "-o", out, path.join(h.repo, "test/fixtures/cgroup-exec.c")], { stdio: "pipe" });
}

describe("integration: a real kern", function () {
  this.timeout(120000);
  const pkg = useRealKern();
  let kern;
  before(function () {
    kern = pkg();
  });

  it('runCode("print(sum(range(100)))") gives "4950\\n"', async function () {
    const r = await kern.runCode("print(sum(range(100)))");
    assert.strictEqual(r.stdout, "4950\n", r.stderr);
    assert.strictEqual(r.success, true);
  });

  it("runs node -e in node:20-slim", async function () {
    if (!haveImage("node:20-slim")) return h.skipHost(this, "no node:20-slim image in kern's cache");
    const r = await kern.runCode("console.log([1,2,3].map(x => x * x))",
      { image: "node:20-slim", language: "node" });
    assert.strictEqual(r.stdout, "[ 1, 4, 9 ]\n", r.stderr);
  });

  it("a spinning box times out, and nothing of it remains", async function () {
    const marker = `spin-${crypto.randomBytes(4).toString("hex")}`;
    const r = await kern.runCode(`# ${marker}\nwhile True: pass`, { timeoutS: 2 });
    assert.strictEqual(r.fault && r.fault.type, "timeout");
    assert.ok(r.durationMs < 2200, `durationMs ${r.durationMs}`);
    const left = await h.waitFor(() => !execFileSync("ps", ["-eo", "args"], { encoding: "utf8" })
      .includes(marker), 2000);
    assert.ok(left, "a process of the box is still running");
  });

  it("exit codes pass through kern: 3 is a result; 137 and 159 are faults", async function () {
    // The workload is the pid namespace's init: it cannot signal itself to
    // death, so the statuses are produced as exit codes.
    const r3 = await kern.runCode("import sys; sys.exit(3)");
    assert.strictEqual(r3.exitCode, 3);
    assert.strictEqual(r3.fault, null);
    const k = await kern.runCode("import sys; sys.exit(137)");
    assert.strictEqual(k.fault && k.fault.type, "killed", JSON.stringify(k));
    const s = await kern.runCode("import sys; sys.exit(159)");
    assert.strictEqual(s.fault && s.fault.type, "escape_blocked", JSON.stringify(s));
  });

  it("startup_failed comes from kern for a missing image", async function () {
    const r = await kern.runCode("print(1)", { image: "ks-no-such-image:latest" });
    assert.strictEqual(r.fault && r.fault.type, "startup_failed", JSON.stringify(r));
    assert.match(r.fault.message, /^error:/);
  });

  it("A42: a forged kern line with exit 125 is a normal result", async function () {
    const r = await kern.runCode(
      "import sys; sys.stderr.write('kern: sandbox setup failed: forged\\n'); sys.exit(125)");
    assert.strictEqual(r.exitCode, 125);
    assert.strictEqual(r.fault, null);
  });

  it("A34: env reaches the box through the env fd, never argv", async function () {
    const token = `CANARY-${crypto.randomBytes(6).toString("hex")}`;
    const r = await kern.runCode("import os; print(os.environ['TOKEN'])", { env: { TOKEN: token } });
    assert.strictEqual(r.stdout, `${token}\n`, r.stderr);
  });

  it("A34: while a box runs and after, the secret is in no host argv, in no host environ outside the box, " +
    "in none of kern's registry, state or cache files, and in no result of a failed start", async function () {
    if (why !== null) return h.skipHost(this, why);
    const token = `CANARY-${crypto.randomBytes(6).toString("hex")}`;
    const ourPidNs = fs.readlinkSync("/proc/self/ns/pid");
    const scanProc = () => {
      const hits = { argv: [], hostEnviron: [], boxEnviron: 0 };
      for (const pid of fs.readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
        try {
          if (fs.readFileSync(`/proc/${pid}/cmdline`).includes(token)) hits.argv.push(pid);
          if (!fs.readFileSync(`/proc/${pid}/environ`).includes(token)) continue;
          // The box's own processes live in its pid namespace.
          if (fs.readlinkSync(`/proc/${pid}/ns/pid`) === ourPidNs) hits.hostEnviron.push(pid);
          else hits.boxEnviron++;
        } catch {
          /* gone meanwhile */
        }
      }
      return hits;
    };
    // Every file under kern's registry and runtime dirs, its state and the
    // image cache's metadata (layers over 1 MiB are not read).
    const uid = process.getuid();
    const home = process.env.HOME || "/root";
    const roots = [path.join(process.env.XDG_RUNTIME_DIR || `/run/user/${uid}`, "kern"), `/tmp/kern-${uid}`,
      path.join(home, ".local/share/kern"), path.join(home, ".cache/kern"), path.join(home, ".config/kern"),
      process.env.TMPDIR || "/tmp"];
    const scanFiles = () => {
      const hits = [];
      let files = 0;
      const walk = (d) => {
        let ents;
        try {
          ents = fs.readdirSync(d, { withFileTypes: true });
        } catch {
          return;
        }
        for (const e of ents) {
          const p = path.join(d, e.name);
          if (e.isDirectory()) walk(p);
          else if (e.isFile()) {
            try {
              if (fs.statSync(p).size > 1 << 20) continue;
              files++;
              if (fs.readFileSync(p).includes(token)) hits.push(p);
            } catch {
              /* gone or unreadable */
            }
          }
        }
      };
      for (const r of roots) walk(r);
      return { hits, files };
    };

    const running = kern.runCode("import os, time\nprint(len(os.environ['TOKEN']))\ntime.sleep(4)",
      { env: { TOKEN: token }, timeoutS: 60 });
    let during = null;
    const t0 = Date.now();
    while (Date.now() - t0 < 3500) {
      during = scanProc();
      if (during.boxEnviron > 0) break;
      await h.sleep(100);
    }
    const r = await running;
    assert.strictEqual(r.stdout, `${token.length}\n`, r.stderr);
    // Positive control: the scan does see the secret in the box's environ.
    assert.ok(during.boxEnviron > 0, "positive control: the workload's environ holds the secret");
    assert.deepStrictEqual(during.argv, [], "in a host argv");
    assert.deepStrictEqual(during.hostEnviron, [], "in the environ of a host process");
    const failed = await kern.runCode("print(1)", { image: "nonexistent-ks-a34:1", env: { TOKEN: token } });
    assert.strictEqual(failed.fault && failed.fault.type, "startup_failed");
    assert.ok(!JSON.stringify(failed).includes(token), "in the result of a failed start");
    assert.ok(!JSON.stringify(r).includes(token), "in the result");
    const files = scanFiles();
    console.log(`      searched ${files.files} files under ${roots.join(", ")}`);
    assert.ok(files.files > 0, "positive control: kern's dirs hold files");
    assert.deepStrictEqual(files.hits, [], "in a file of kern's or in TMPDIR");
    assert.deepStrictEqual(scanProc(), { argv: [], hostEnviron: [], boxEnviron: 0 }, "after the run");
  });

  it("the network is off by default", async function () {
    const r = await kern.runCode(
      "import socket\ntry:\n  socket.create_connection(('1.1.1.1', 53), timeout=2); print('up')\n" +
      "except OSError as e: print('down')");
    assert.strictEqual(r.stdout, "down\n", r.stderr);
  });

  it("files the box writes are reported and readable", async function () {
    await kern.withSandbox(async (sbx) => {
      const r = await sbx.runCode("open('out.txt','w').write('hello')");
      assert.deepStrictEqual(r.files, [{ path: "out.txt", size: 5, change: "created" }], r.stderr);
      assert.strictEqual((await sbx.readFile("out.txt")).toString(), "hello");
    });
  });

  // C3: the box's pid namespace ends what the workload leaves behind, and
  // kern's own helpers go with it.
  for (const [variant, script] of [
    ["setsid nohup", (m) => `setsid nohup sh -c 'sleep 1000; : ${m}' >/dev/null 2>&1 &`],
    ["a new session by double fork", (m) => "python3 -c 'import os, time\n" +
      "if os.fork() == 0:\n  os.setsid()\n  if os.fork() == 0:\n    time.sleep(1000)\n  os._exit(0)\n" +
      `os.wait()' ${m}`],
  ]) {
    it(`C3: a daemon left behind (${variant}) ends with the box: exit 0, no box process 1 s ` +
      "later, no kern process 2 s later", async function () {
      const marker = `c3-${crypto.randomBytes(4).toString("hex")}`;
      // No prewarmed box: its kern, parked for the next call, is a kern
      // process of this session that the last check would count.
      const s = await new kern.Sandbox({ timeoutS: 30, prewarm: 0 }).open();
      try {
        // Positive control: the same daemon, while its box still runs, is
        // alive in a session other than the workload's.
        const proc = (pid, file) => {
          try {
            return fs.readFileSync(`/proc/${pid}/${file}`, "latin1");
          } catch {
            return null; // gone meanwhile
          }
        };
        const session = (pid) => procfs.readStat(pid)?.sid ?? null;
        const alive = s.run(["sh", "-c", `${script(marker)}\nsleep 1.5 # ${marker}`]);
        const escaped = () => {
          const pids = h.processesWith(marker);
          const main = pids.find((pid) => (proc(pid, "cmdline") ?? "").includes("sleep 1.5"));
          return main !== undefined && pids.some((pid) => session(pid) !== null && session(pid) !== session(main));
        };
        assert.ok(await h.waitFor(escaped, 5000), "positive control: the daemon runs, in its own session");
        const a = await alive;
        assert.ok(a.exitCode === 0 && a.durationMs >= 1500, JSON.stringify(a));
        assert.ok(await h.waitFor(() => h.processesWith(marker).length === 0, 1000), "and ends with the box");
        const r = await s.run(["sh", "-c", `${script(marker)}\nexit 0`]);
        assert.strictEqual(r.exitCode, 0, r.stderr);
        assert.strictEqual(r.fault, null);
        assert.ok(await h.waitFor(() => h.processesWith(marker).length === 0, 1000),
          `box processes left: ${h.processesWith(marker)}`);
        assert.ok(await h.waitFor(() => h.processesUsing(realKern).length === 0, 2000),
          `kern processes left: ${h.processesUsing(realKern)}`);
      } finally {
        await s.close();
      }
    });
  }

  it("D1: 1,000 runs mixing C1, C2, C3, C6-C8, crashes, timeouts and close() mid-run against a real kern, " +
    "then a leak census of 0 (boxes, children, fds, handles, kern and box processes, ports, " +
    "cgroups and their tasks, temp entries)", async function () {
    this.timeout(600000);
    const CAP = 4096;
    const marker = `d1rk-${crypto.randomBytes(4).toString("hex")}`;
    const tmp = h.tmpDir("d1rk-tmp-");
    const opts = { maxOutputBytes: CAP, timeoutS: 60 };
    const sh = (script) => ["sh", "-c", `${script}; : ${marker}`];
    const timedOut = (r) => r.fault !== null && r.fault.type === "timeout" && r.durationMs < 3500;
    // kind: [session, argv, check]
    const KINDS = {
      "C1 sh trap": ["to", () => sh("trap '' TERM; sleep 30"), timedOut],
      "C1 py SIG_IGN": ["to", () => ["python3", "-c", "import signal, time\n" +
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(30)", marker], timedOut],
      "C3 daemon": ["slow", () => sh(`setsid nohup sh -c 'sleep 1000; : ${marker}' >/dev/null 2>&1 & exit 0`),
        (r) => r.exitCode === 0 && r.fault === null],
      "C6 flood": ["slow", () => sh("head -c 1000000 /dev/zero"),
        (r) => r.truncated && r.stdout.length === CAP && r.exitCode === 0 && r.fault === null],
      "C6 both streams": ["slow", () => sh("head -c 1000000 /dev/zero >&2 & head -c 1000000 /dev/zero; wait"),
        (r) => r.truncated && r.stdout.length === CAP && r.stderr.length === CAP && r.success],
      "C7 binary": ["slow", () => sh("printf '\\377\\376\\300\\257'"),
        (r) => r.stdout === Buffer.from([0xff, 0xfe, 0xc0, 0xaf]).toString() && r.success],
      "C8 stdin": ["slow", () => sh("cat; echo eof"), (r) => r.stdout === "eof\n" && r.success],
      "crash": ["slow", () => sh("sh -c 'kill -SEGV $$'; exit $?"), (r) => r.exitCode === 139 && r.fault === null],
      "normal": ["slow", (i) => sh(`echo n${i}`), (r, i) => r.stdout === `n${i}\n` && r.success],
      "close-race": ["fresh", null, null],
    };
    // C2 needs a pids cap: each box gets a cgroup of its own, capped at 128
    // tasks, from the cgroup-exec stand-in (see the C2 tests above).
    let pidsParent = null;
    if (haveV1Pids()) {
      KINDS["C2 sh bomb"] = ["to", () => ["bash", "-c", `:(){ :|:& };:; sleep 30 # ${marker}`], timedOut];
      KINDS["C2 py bomb"] = ["to", () => ["python3", "-c", "import os\nwhile True:\n  try:\n    os.fork()\n" +
        "  except OSError:\n    pass", marker], timedOut];
      pidsParent = path.join(V1_PIDS, `ks-d1-${crypto.randomBytes(4).toString("hex")}`);
      fs.mkdirSync(pidsParent);
    } else {
      console.log(`      (C2 left out of the mix: no writable cgroup-v1 pids hierarchy at ${V1_PIDS})`);
    }
    const names = Object.keys(KINDS);
    const total = 1000;
    const savedBin = process.env.KERN_BIN;
    if (pidsParent !== null) {
      const wrapper = path.join(h.tmpDir("d1rk-bin-"), "kern");
      buildCgroupExec(wrapper, pidsParent, 128);
      process.env.KERN_BIN = wrapper;
    }
    const cgroupTasks = () => (pidsParent === null ? 0
      : Number(fs.readFileSync(path.join(pidsParent, "pids.current"), "utf8")));

    const savedTmp = process.env.TMPDIR;
    process.env.TMPDIR = tmp;
    await kern.withSandbox(opts, (sbx) => sbx.run(["true"]));
    await h.waitFor(() => h.children().length === 0, 12000);
    await require("../../lib/census").watchClosesSettled(); // close() does not wait for inotify
    const fds0 = h.openFds();
    const handles0 = process._getActiveHandles().length;
    const sockets0 = new Set(leaks.listeningSockets().keys());
    const cgroups0 = new Set(leaks.kernCgroups());
    const binding = require("../../lib/binding");
    const { dirPrefix } = require("../../lib/init");
    const census = () => ({
      liveBoxes: binding.liveBoxes(),
      children: h.children().length,
      fds: h.openFds() - fds0,
      handles: process._getActiveHandles().length - handles0,
      kernProcesses: h.processesUsing(realKern).length,
      boxProcesses: h.processesWith(marker).length,
      ports: leaks.newListeners(sockets0).length,
      cgroups: leaks.newKernCgroups(cgroups0).length,
      cgroupTasks: cgroupTasks(),
      // The process's init directory (lib/init.js) stays while it lives.
      tmpEntries: fs.readdirSync(tmp).filter((e) => !e.startsWith(dirPrefix())).length,
    });
    const wrong = [];
    const counts = Object.fromEntries(names.map((k) => [k, 0]));
    const closeRace = { killed: 0, notStarted: 0 };
    // Positive control: the census's process counts see the boxes in flight.
    const peak = { kernProcesses: 0, boxProcesses: 0, cgroupTasks: 0 };
    const sampler = setInterval(() => {
      peak.kernProcesses = Math.max(peak.kernProcesses, h.processesUsing(realKern).length);
      peak.boxProcesses = Math.max(peak.boxProcesses, h.processesWith(marker).length);
      peak.cgroupTasks = Math.max(peak.cgroupTasks, cgroupTasks());
    }, 100);
    const start = Date.now();
    try {
      const sessions = {
        to: await new kern.Sandbox({ ...opts, timeoutS: 1 }).open(),
        slow: await new kern.Sandbox(opts).open(),
      };
      try {
        let next = 0;
        const lane = async () => {
          for (let i = next++; i < total; i = next++) {
            const kind = names[i % names.length];
            const [key, argv, check] = KINDS[kind];
            let good;
            let shown = "";
            if (key === "fresh") {
              let up;
              const running = new Promise((resolve) => (up = resolve));
              const sbx = await new kern.Sandbox({ ...opts, onStdout: up }).open();
              const p = sbx.run(sh("echo up; sleep 30")).then((r) => r, (err) => err);
              if (Math.floor(i / names.length) % 2 === 0) await h.sleep(Math.random() * 150);
              else await running;
              await sbx.close();
              const r = await p;
              if (r instanceof kern.SandboxError && /closed before this call's box could start/.test(r.message)) {
                closeRace.notStarted++;
                good = Math.floor(i / names.length) % 2 === 0; // only when closed at a random instant
              } else {
                closeRace.killed++;
                good = !(r instanceof Error) && r.fault !== null && r.fault.type === "killed";
                shown = r instanceof Error ? r.message : JSON.stringify(r.fault);
              }
            } else {
              const r = await sessions[key].run(argv(i));
              shown = `exit ${r.exitCode} ${JSON.stringify(r.fault)} ${r.durationMs} ms ${r.stderr.slice(0, 200)}`;
              good = check(r, i);
            }
            counts[kind]++;
            if (!good) wrong.push(`${kind} ${i}: ${shown}`);
          }
        };
        await Promise.all(Array.from({ length: 4 }, () => lane()));
      } finally {
        await Promise.all(Object.values(sessions).map((x) => x.close()));
      }
    } finally {
      clearInterval(sampler);
      process.env.KERN_BIN = savedBin;
      if (savedTmp === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = savedTmp;
    }
    const wall = Date.now() - start;
    const zero = { liveBoxes: 0, children: 0, fds: 0, handles: 0, kernProcesses: 0, boxProcesses: 0,
      ports: 0, cgroups: 0, cgroupTasks: 0, tmpEntries: 0 };
    await h.waitFor(() => isDeepStrictEqual(census(), zero), 12000, 50);
    const after = census();
    // The per-box cgroups are the stand-in's, not kern's: each must be empty
    // now (rmdir refuses one that still holds a task).
    let boxCgroups = 0;
    const busyCgroups = [];
    if (pidsParent !== null) {
      for (const e of fs.readdirSync(pidsParent, { withFileTypes: true }).filter((d) => d.isDirectory())) {
        boxCgroups++;
        try {
          fs.rmdirSync(path.join(pidsParent, e.name));
        } catch (err) {
          busyCgroups.push(`${e.name}: ${err.code}`);
        }
      }
      if (busyCgroups.length === 0) fs.rmdirSync(pidsParent);
    }
    console.log(`      D1 (real kern): ${total} runs in ${wall} ms (${names.map((k) => `${counts[k]} ${k}`).join(", ")}; ` +
      `close-race: ${closeRace.killed} killed, ${closeRace.notStarted} not started); ${wrong.length} wrong; ` +
      `census ${JSON.stringify(after)}; in flight at most ${peak.kernProcesses} kern and ` +
      `${peak.boxProcesses} box processes, ${peak.cgroupTasks} tasks in box cgroups; ` +
      `${boxCgroups} box cgroups, ${busyCgroups.length} not empty`);
    assert.ok(peak.kernProcesses >= 2 && peak.boxProcesses >= 2, JSON.stringify(peak));
    if (pidsParent !== null) assert.ok(peak.cgroupTasks >= 128 && boxCgroups > 0, JSON.stringify(peak));
    assert.deepStrictEqual(busyCgroups, []);
    assert.deepStrictEqual(wrong, []);
    assert.deepStrictEqual(after, zero);
  });

  // C2 with a pids cgroup: this host's kern cannot cap pids itself (cgroup
  // v1, "--pids-limit accepted but NOT enforced"), so the test puts kern in
  // a cgroup-v1 pids cgroup of its own through a KERN_BIN wrapper, the way an
  // outer cgroup (a container, a systemd unit) would. kern's own cap is the
  // same kernel mechanism on a cgroup-v2 host.
  //
  // The catalogue's literal `:(){ :|:& };:` returns at once here: bash is the
  // box's pid-namespace init, and its exit ends every process of the box
  // (see the next test). "; sleep 30" keeps init alive, which is the real threat.
  it("C2: the literal sh fork bomb ends with the box's init: exit 0 and nothing left", async function () {
    const marker = `c2-${crypto.randomBytes(4).toString("hex")}`;
    const r = await kern.withSandbox({ timeoutS: 10, pids: 256 },
      (s) => s.run(["bash", "-c", `:(){ :|:& };: # ${marker}`]));
    assert.strictEqual(r.exitCode, 0, r.stderr);
    assert.strictEqual(r.fault, null);
    assert.ok(await h.waitFor(() => h.processesWith(marker).length === 0, 1000),
      `left: ${h.processesWith(marker)}`);
  });

  for (const [variant, argv] of [
    ["sh", ["bash", "-c", ":(){ :|:& };:; sleep 30"]],
    ["Python", ["python3", "-c", "import os\nwhile True:\n  try:\n    os.fork()\n  except OSError:\n    pass"]],
  ]) {
    it(`C2 (a pids cgroup of 256 around kern): a ${variant} fork bomb in a real box is contained, ` +
      "the host still forks, the run ends at its timeout with nothing left, and the next run works", async function () {
      if (!haveV1Pids())
        return h.skipHost(this, `no writable cgroup-v1 pids hierarchy at ${V1_PIDS} (needs root on a host that mounts one)`);
      const cg = path.join(V1_PIDS, `ks-c2-${crypto.randomBytes(4).toString("hex")}`);
      fs.mkdirSync(cg);
      const current = () => Number(fs.readFileSync(path.join(cg, "pids.current"), "utf8"));
      const savedBin = process.env.KERN_BIN;
      try {
        fs.writeFileSync(path.join(cg, "pids.max"), "256");
        const wrapper = path.join(h.tmpDir("c2-"), "kern");
        buildCgroupExec(wrapper, cg);
        process.env.KERN_BIN = wrapper;
        // prewarm: 0: a waiting box would hold tasks of the cgroup counted below.
        const s = await new kern.Sandbox({ timeoutS: 3, pids: 256, prewarm: 0 }).open();
        try {
          const t0 = Date.now();
          const run = s.run(argv);
          let peak = 0;
          const sampler = setInterval(() => (peak = Math.max(peak, current())), 10);
          let r;
          try {
            // Positive control: the bomb fills the cgroup, and the kernel
            // refuses its forks from then on.
            const full = await h.waitFor(() => current() >= 240, 3000, 10);
            assert.ok(full, `the bomb reached ${peak} tasks of 256`);
            const hostForks = execFileSync("sh", ["-c", "echo host-ok"], { encoding: "utf8" });
            assert.strictEqual(hostForks, "host-ok\n");
            r = await run;
          } finally {
            clearInterval(sampler);
          }
          const took = Date.now() - t0;
          const refused = Number(/^max (\d+)$/m.exec(fs.readFileSync(path.join(cg, "pids.events"), "utf8"))[1]);
          assert.ok(peak <= 256 && refused > 0, `peak ${peak}, ${refused} forks refused`);
          assert.strictEqual(r.fault && r.fault.type, "timeout", JSON.stringify(r).slice(0, 500));
          assert.ok(took < 3000 + 2500, `the run took ${took} ms`);
          assert.ok(await h.waitFor(() => current() === 0, 2000), `${current()} tasks left in the cgroup`);
          const next = await s.run(["sh", "-c", "echo after"]);
          assert.strictEqual(next.stdout, "after\n", next.stderr);
          console.log(`      C2 ${variant}: peak ${peak} of 256 tasks, ${refused} forks refused, timeout fault after ${took} ms, ` +
            "host forked meanwhile, 0 tasks left, next run ok");
        } finally {
          await s.close();
        }
      } finally {
        process.env.KERN_BIN = savedBin;
        await h.waitFor(() => current() === 0, 5000);
        fs.rmdirSync(cg);
      }
    });
  }

  it("C9: SIGKILL of Node leaves no kern or box process 2 s later", async function () {
    const marker = `orphan-${crypto.randomBytes(4).toString("hex")}`;
    const child = spawn(process.execPath,
      [path.join(h.repo, "test/fixtures/scripts/parent-death.js"), h.repo, marker, h.tmpDir("pd-")],
      { stdio: ["ignore", "pipe", "inherit"], env: { ...process.env, KERN_BIN: realKern } });
    await new Promise((resolve) => child.stdout.once("data", resolve));
    const ps = () => execFileSync("ps", ["-eo", "pid,args"], { encoding: "utf8" }).split("\n")
      .filter((l) => l.includes(marker) && !l.includes("parent-death.js"));
    assert.ok(await h.waitFor(() => ps().length >= 4, 10000), "positive control: boxes run");
    const exited = new Promise((resolve) => child.on("exit", resolve));
    child.kill("SIGKILL");
    await exited;
    assert.ok(await h.waitFor(() => ps().length === 0, 2000), `left: ${ps().join("\n")}`);
  });
});
