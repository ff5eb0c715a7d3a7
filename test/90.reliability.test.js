"use strict";

// Reliability under load, faults of the host and lifetimes (C9, C10, C11,
// C12, C16, C20, C21).
const assert = require("assert");
const crypto = require("crypto");
const path = require("path");
const { spawn, spawnSync, execFileSync } = require("child_process");
const { Worker } = require("worker_threads");
const fs = require("fs");
const os = require("os");
const { withSandbox, runCode } = require("..");
const binding = require("../lib/binding");
const h = require("./lib/harness");
const { dirPrefix } = require("../lib/init");
const procfs = require("./lib/procfs");

const { note } = h;

/** Starts a Node that runs one box of the double's `hang-stop` mode into its
 * 0.5 s timeout, reports the fault over IPC, and calls process.exit() when
 * told to. `kern stop` then sleeps 60 s: a helper still running when the
 * process ends. Teardown kills it and waits for it within its 0.5 s budget;
 * the parent-death signal would also end it, so what these tests tell apart
 * is how long the process takes to end, and that nothing is left. */
function hungStopChild() {
  const code = `
    const { runCode } = require(${JSON.stringify(h.repo)});
    runCode("sleep 30", { language: "bash", image: "fake:hang-stop", timeoutS: 0.5 })
      .then((r) => process.send(r.fault && r.fault.type));
    process.once("message", (m) => m === "end" && process.exit(0));`;
  const child = spawn(process.execPath, ["-e", code], { stdio: ["ignore", "ignore", "inherit", "ipc"] });
  const exited = h.exitOf(child);
  // A child that dies before it reports fails the test at once, not at its timeout.
  const fault = Promise.race([new Promise((resolve) => child.once("message", resolve)),
    exited.then(([c, s]) => `the child ended (${c ?? s}) before it reported`)]);
  // The `kern stop` helpers this child spawned (the supervisor is its thread).
  const stops = () => h.processes().filter((q) => q.ppid === child.pid && q.exe === h.fakeKern() &&
    q.state !== "Z" && q.argv.split("\0")[1] === "stop").map((q) => q.pid);
  return { child, exited, fault, stops };
}

/** Sends "end" and returns how many ms the child took to exit (or null). */
async function endChild(child, ms) {
  const t0 = Date.now();
  child.send("end");
  const ended = await h.waitFor(() => child.exitCode !== null || child.signalCode !== null, ms);
  return ended ? Date.now() - t0 : null;
}

/** True once pid is gone or only a zombie (reparented, waiting for a reaper). */
const ended = (pid) => {
  const st = procfs.readStat(pid);
  return st === null || st.state === "Z";
};

describe("reliability", function () {
  it("C11: 300 concurrent runs on one session, each gets its own token back", async function () {
    this.timeout(60000);
    await withSandbox({ timeoutS: 30 }, async (sbx) => {
      const tokens = Array.from({ length: 300 }, () => crypto.randomBytes(8).toString("hex"));
      const results = await Promise.all(tokens.map((t) =>
        sbx.run(["sh", "-c", `echo ${t}; sleep 0.5`])));
      const crossTalk = results.filter((r, i) => r.stdout !== `${tokens[i]}\n`).length;
      assert.strictEqual(crossTalk, 0);
      assert.ok(results.every((r) => r.success));
    });
    assert.ok(await h.waitFor(() => binding.liveBoxes() === 0));
  });

  it("C11: 300 concurrent runs across 60 sessions, mixed floods and timeouts (the timeouts in sessions of " +
    "their own)", async function () {
    this.timeout(60000);
    const jobs = [];
    // The boxes meant to time out get a 1 s deadline in a session of their
    // own; the floods and echoes a long one, so that 300 start-ups on two
    // CPUs (slower still under a sanitizer) cannot time them out.
    for (let s = 0; s < 30; s++) {
      jobs.push(withSandbox({ timeoutS: 1, maxOutputBytes: 4096 }, (short) =>
        withSandbox({ timeoutS: 30, maxOutputBytes: 4096 }, async (sbx) => {
          const rs = await Promise.all(Array.from({ length: 10 }, (_, i) => {
            if (i % 3 === 0) return sbx.run(["sh", "-c", "head -c 1000000 /dev/zero"]);
            if (i % 3 === 1) return short.run(["sh", "-c", "trap '' TERM; sleep 30"]);
            return sbx.run(["echo", `s${s}i${i}`]);
          }));
          return rs.map((r, i) => (i % 3 === 0 ? r.truncated && r.stdout.length === 4096
            : i % 3 === 1 ? r.fault && r.fault.type === "timeout" : r.stdout === `s${s}i${i}\n`));
        })));
    }
    const all = (await Promise.all(jobs)).flat();
    assert.strictEqual(all.length, 300);
    assert.strictEqual(all.filter((ok) => !ok).length, 0);
  });

  it("C12: under a low descriptor limit, runs succeed or fail with EMFILE, then recover", async function () {
    this.timeout(60000);
    let out;
    try {
      out = execFileSync("prlimit", ["--nofile=64:64", process.execPath,
        path.join(h.repo, "test/fixtures/scripts/emfile.js"), h.repo],
      { encoding: "utf8", env: process.env, timeout: 50000 });
    } catch (e) {
      if (e.code === "ENOENT") return h.skip(this, "prlimit is not installed");
      throw e;
    }
    const r = JSON.parse(out);
    assert.deepStrictEqual(r.other, []);
    assert.strictEqual(r.ok + r.emfile, 100);
    assert.ok(r.emfile > 0, `positive control: the limit really bit (${r.ok} ok)`);
    assert.ok(r.recovered);
    // open() meeting EMFILE at each of its steps: a typed error or a session,
    // and no descriptor left behind (positive control: both outcomes occur).
    assert.deepStrictEqual(r.opens.filter((o) => o.leaked !== 0 ||
      !(o.outcome === "ok" || o.outcome === "SandboxError EMFILE")), [], JSON.stringify(r.opens));
    assert.strictEqual(r.opens[0].outcome, "SandboxError EMFILE");
    assert.strictEqual(r.opens[r.opens.length - 1].outcome, "ok");
  });

  it("C9/C10: terminating the Worker that owns a box kills the box", async function () {
    this.timeout(h.underSanitizer ? 60000 : 20000);
    const marker = `worker-${crypto.randomBytes(4).toString("hex")}`;
    const child = spawn(process.execPath,
      [path.join(h.repo, "test/fixtures/scripts/worker-box.js"), h.repo, marker],
      { stdio: ["pipe", "pipe", "inherit"] });
    const exited = new Promise((resolve) => child.on("exit", resolve));
    let out = "";
    const terminated = new Promise((resolve) => child.stdout.on("data", (d) => {
      out += d;
      if (out.includes("terminated")) resolve();
    }));
    try {
      // The child terminates its Worker only once told to, so the box is
      // seen running first however slow the build starts it.
      assert.ok(await h.waitFor(() => h.processesWith(marker, [child.pid]).length >= 2,
        h.startWait(10000)), "positive control: the Worker's box runs");
      child.stdin.end("go\n");
      await Promise.race([terminated, exited.then((c) => {
        throw new Error(`the child ended (${c}) before its Worker was terminated: ${out}`);
      })]);
      const gone = await h.waitFor(() => h.processesWith(marker, [child.pid]).length === 0, 1000);
      const left = h.processesWith(marker, [child.pid]);
      assert.ok(gone, `left after worker.terminate(): ${left}`);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
    }
  });

  it("C10: used from Workers only (the main thread never loads the addon), Workers whose " +
    "results hold output end without crashing the process", async function () {
    this.timeout(30000);
    // A Worker's exit unloads the addons only it loaded; its isolate then
    // frees the result strings, whose finalizer lives in the addon.
    const r = await new Promise((resolve) => {
      const child = spawn(process.execPath,
        [path.join(h.repo, "test/fixtures/scripts/worker-only.js"), h.repo, "3"],
        { stdio: ["ignore", "pipe", "inherit"] });
      let out = "";
      child.stdout.on("data", (d) => (out += d));
      // 'close', not 'exit': only then has all of stdout been read.
      child.on("close", (code, signal) => resolve({ code, signal, out }));
    });
    assert.deepStrictEqual({ code: r.code, signal: r.signal }, { code: 0, signal: null });
    assert.deepStrictEqual(JSON.parse(r.out), Array(3).fill("ascii\ncafé\n"));
  });

  it("C10: 60 Workers that each run boxes and end, while the main thread churns its young " +
    "generation, exit cleanly (under ASan: no report from stale shadow of the clone stacks)", function () {
    this.timeout(120000);
    const r = spawnSync(process.execPath,
      [path.join(h.repo, "test/fixtures/scripts/worker-churn.js"), h.repo, "60"],
    { encoding: "utf8", timeout: 100000 });
    assert.deepStrictEqual({ status: r.status, signal: r.signal, out: r.stdout },
      { status: 0, signal: null, out: "workers 60\n" }, r.stderr.slice(-2000));
  });

  it("C10: 100 Workers start and end while boxes run (idle; a box that finishes; a box left " +
    "running at process.exit() or terminate()): no early kill, deadlines hold, a thread's boxes " +
    "die with it, nothing left", async function () {
    this.timeout(120000);
    // The Workers' code: the idle ones load nothing; the others load the
    // addon (their own supervisor thread, which ends with the Worker). A box
    // reports its workload's pid on its first output line.
    const workerCode = `
      const { parentPort, workerData: w } = require("worker_threads");
      if (w.kind === "short") {
        const { withSandbox } = require(w.repo);
        withSandbox((s) => s.run(["echo", w.marker])).then((r) => parentPort.postMessage(r.stdout));
      } else if (w.kind === "exit" || w.kind === "terminate") {
        const { withSandbox } = require(w.repo);
        parentPort.on("message", () => process.exit(0)); // ends this thread only
        withSandbox({ timeoutS: 60, onStdout: (d) => parentPort.postMessage(Number(String(d).trim())) },
          (s) => s.run(["sh", "-c", "echo $$; while :; do sleep 0.1; done", w.marker]));
      }`;
    // A box's process group (kern's pid: kern leads it, its workload and the
    // workload's children are in it), read while the workload runs.
    const pgrpOf = (pid) => procfs.readStat(pid)?.pgrp ?? null;
    // No live member left (zombies wait for a reaper that is not ours).
    const groupGone = (pgid) => procfs.pids().every((pid) => {
      const stat = procfs.readStat(pid);
      return stat === null || stat.pgrp !== pgid || stat.state === "Z";
    });
    const flag = path.join(h.tmpDir("c10-"), "go");
    const longMarker = `c10-long-${crypto.randomBytes(4).toString("hex")}`;
    // 100 threads: 50 that load nothing, 20 with a box that finishes, 15 that
    // process.exit() and 15 that are terminated while their box runs.
    const kinds = [...Array(50).fill("idle"), ...Array(20).fill("short"), ...Array(15).fill("exit"),
      ...Array(15).fill("terminate")].sort(() => Math.random() - 0.5);
    const wrong = [];
    // The Workers that end with a session open: its descriptors (workspace,
    // kern) and its temporary workspace must go with the Worker's teardown.
    const workspaces = () => fs.readdirSync(os.tmpdir()).filter((e) => e.startsWith("kern-ws-"));
    // The baseline once nothing of an earlier test is still ending: a hung
    // `kern stop` of 65's C19 holds descriptors up to its 10 s deadline, and
    // in the TSan subset (30, 60, 65, 90) it was still running here.
    await h.waitFor(() => h.children().length === 0, 15000);
    const fds0 = h.openFds();
    const ws0 = workspaces();
    let churnDone = false;
    const spins = [];
    await withSandbox({ timeoutS: 60 }, async (sbx) => {
      // A box that must not be killed early: it runs until the churn is over.
      const long = sbx.run(["sh", "-c", `while [ ! -e ${flag} ]; do sleep 0.05; done; echo survived`, longMarker]);
      // Boxes whose deadline (0.5 s) falls while threads come and go.
      const spinner = (async () => {
        while (!churnDone) {
          // The box prints its own group: read here, in onStdout, it could
          // be gone already if the JS thread is late (a Worker starting).
          let pgid = null;
          const r = await runCode("trap '' TERM; read -r _ _ _ _ g _ < /proc/$$/stat; echo $g; " +
            "while :; do sleep 1; done",
          { language: "bash", timeoutS: 0.5, onStdout: (d) => (pgid = Number(String(d).trim())) });
          const gone = pgid !== null && await h.waitFor(() => groupGone(pgid), 1000, 20);
          spins.push(r.durationMs - 500);
          if (!(r.fault && r.fault.type === "timeout") || !gone || r.durationMs - 500 > 2500)
            wrong.push(`spinner: ${JSON.stringify(r.fault)} ${r.durationMs} ms, pgid ${pgid} gone ${gone}`);
        }
      })();
      const one = async (n) => {
        const kind = kinds[n];
        const marker = `c10-w${n}-${crypto.randomBytes(4).toString("hex")}`;
        const w = new Worker(workerCode, { eval: true, workerData: { repo: h.repo, kind, marker } });
        const exited = new Promise((resolve) => w.once("exit", resolve));
        // A Worker that fails before it reports ends, and never sends: then
        // `message` is undefined, and the checks below say so.
        const message = Promise.race([new Promise((resolve) => w.once("message", resolve)),
          exited.then(() => undefined)]);
        w.on("error", (e) => wrong.push(`worker ${n} (${kind}): ${e.message}`));
        let pgid = null;
        if (kind === "short") {
          const out = await message;
          if (out !== `${marker}\n`) wrong.push(`worker ${n}: short box gave ${JSON.stringify(out)}`);
        } else if (kind === "exit" || kind === "terminate") {
          // Its box runs (the workload printed its pid), then its thread ends.
          pgid = pgrpOf(await message);
          if (pgid === null) wrong.push(`worker ${n} (${kind}): its box ended before its group was read`);
          if (kind === "exit") w.postMessage("exit");
          else await w.terminate();
        }
        await exited;
        if (pgid !== null && !(await h.waitFor(() => groupGone(pgid), 1000, 20)))
          wrong.push(`worker ${n} (${kind}): its box's group ${pgid} outlived the thread`);
      };
      let started;
      let next = 0;
      // Whatever fails here, the spinner (sessions of its own) stops; the
      // long box ends with this session, which withSandbox closes.
      try {
        assert.ok(await h.waitFor(() => h.processesWith(longMarker).length >= 2, h.startWait(10000)),
          "the long box runs");
        started = Date.now();
        await Promise.all(Array.from({ length: 8 }, async () => {
          for (let n = next++; n < 100; n = next++) await one(n);
        }));
      } finally {
        churnDone = true;
        await spinner;
      }
      const churnMs = Date.now() - started;
      const stillThere = h.processesWith(longMarker).length >= 2;
      fs.writeFileSync(flag, "");
      const r = await long;
      spins.sort((a, b) => a - b);
      note(`100 Workers (50 idle, 20 short, 15 exit, 15 terminate) in ${churnMs} ms; ${spins.length} ` +
        `spinner boxes timed out meanwhile, past the deadline max ${spins[spins.length - 1].toFixed(0)} ` +
        `ms; the long box ran ${r.durationMs.toFixed(0)} ms`);
      assert.ok(stillThere, "the long box was still running after the churn");
      assert.strictEqual(r.stdout, "survived\n");
      assert.strictEqual(r.fault, null);
      assert.ok(r.durationMs >= churnMs, "it ran through the whole churn");
      assert.ok(spins.length >= 1, "positive control: deadlines fell during the churn");
    });
    assert.deepStrictEqual(wrong, []);
    assert.ok(await h.waitFor(() => binding.liveBoxes() === 0, 2000));
    await h.waitFor(() => h.openFds() === fds0, 2000);
    assert.strictEqual(h.openFds(), fds0, "descriptors back to the count before the Workers");
    assert.deepStrictEqual(workspaces(), ws0, "no workspace of an ended Worker left");
  });

  it("C16: a Sandbox dropped mid-run still completes its run, no crash after GC", async function () {
    this.timeout(20000);
    const code = `
      const { Sandbox } = require(${JSON.stringify(h.repo)});
      (async () => {
        let p;
        { const s = new Sandbox({ timeoutS: 2 }); await s.open(); p = s.run(["sh", "-c", "sleep 0.3; echo done"]); }
        for (let i = 0; i < 5; i++) { global.gc(); await new Promise((r) => setTimeout(r, 50)); }
        const r = await p;
        global.gc();
        console.log(r.stdout.trim());
      })();`;
    const out = execFileSync(process.execPath, ["--expose-gc", "-e", code], { encoding: "utf8" });
    assert.strictEqual(out, "done\n");
  });

  it("C20: no handle or timer of ours stays active after calls", async function () {
    // Read after a full turn of the loop: a setImmediate a call queued as it
    // settled (the pool's refill, the init's release) runs in that turn, and
    // whether it had run yet at the caller's continuation depends on timing
    // (it failed once so under TSan). One that queued itself again would stay.
    const kinds = async () => {
      await new Promise((r) => setTimeout(r, 0));
      await new Promise((r) => setImmediate(r));
      return process.getActiveResourcesInfo().filter((k) => k !== "TTYWrap");
    };
    await runCode("print(1)");
    const base = await kinds();
    await withSandbox(async (sbx) => {
      await sbx.run(["true"]);
      await sbx.run(["sh", "-c", "trap '' TERM; sleep 0.5"]);
    });
    await runCode("while True: pass", { timeoutS: 0.2 });
    assert.deepStrictEqual((await kinds()).sort(), base.sort());
  });

  it("C21: a SIGSTOPped kern is still killed at the deadline", async function () {
    const marker = `stopped-${crypto.randomBytes(4).toString("hex")}`;
    const p = runCode(`sleep 30 # ${marker}`, { language: "bash", timeoutS: 1 });
    assert.ok(await h.waitFor(() => h.processesWith(marker).length > 0, h.startWait(2000)));
    for (const pid of h.processes().filter((q) => q.exe === h.fakeKern() && q.argv.includes(marker)))
      process.kill(pid.pid, "SIGSTOP");
    const r = await p;
    assert.strictEqual(r.fault && r.fault.type, "timeout");
    assert.ok(r.durationMs < 1500, `durationMs ${r.durationMs}`);
    assert.ok(await h.waitFor(() => h.processesWith(marker).length === 0, 2000));
  });
});

describe("reliability: descriptors after the exit hook (C9)", function () {
  it("C9: a Sandbox closed after the exit hook closed its descriptors closes nothing of " +
    "anyone else's, though the numbers were reused", function () {
    this.timeout(h.startWait(20000));
    // In the child: open a session, run the exit hook's shutdown (as
    // process.exit() does before later 'exit' listeners), open files that
    // reuse the freed numbers, close the session, then check those files.
    const code = `
      const fs = require("fs");
      const binding = require(${JSON.stringify(path.join(h.repo, "lib/binding"))});
      const { Sandbox } = require(${JSON.stringify(h.repo)});
      (async () => {
        const sbx = await new Sandbox().open();
        binding.shutdown();
        const mine = [];
        for (let i = 0; i < 8; i++) mine.push(fs.openSync("/dev/null", "r"));
        await sbx.close();
        const bad = mine.filter((fd) => { try { fs.fstatSync(fd); return false; } catch { return true; } });
        process.stdout.write(JSON.stringify({ mine, bad }));
      })();`;
    const r = spawnSync(process.execPath, ["-e", code], { encoding: "utf8" });
    assert.strictEqual(r.status, 0, r.stderr);
    const { mine, bad } = JSON.parse(r.stdout);
    assert.strictEqual(mine.length, 8);
    assert.deepStrictEqual(bad, [], `closed by Sandbox.close(): ${bad} of ${mine}`);
  });
});

describe("reliability: a kern frozen in a cgroup (C21)", function () {
  // A v1 freezer cgroup holds a task in the refrigerator (state D) with a
  // SIGKILL pending until it is thawed: the one kern a SIGKILL cannot end,
  // like one stuck in a hung FUSE or NFS mount. Its cgroup is named
  // ks-freeze-*, not kern-*, so the census does not count it as a box's.
  const FREEZER = "/sys/fs/cgroup/freezer";
  let cg = null;

  function makeFreezer(ctx) {
    if (process.getuid() !== 0) return h.skip(ctx, "needs root to make a freezer cgroup");
    const dir = path.join(FREEZER, `ks-freeze-${crypto.randomBytes(4).toString("hex")}`);
    try {
      fs.mkdirSync(dir);
      fs.accessSync(path.join(dir, "freezer.state"), fs.constants.W_OK);
    } catch (e) {
      return h.skipHost(ctx, `no writable cgroup-v1 freezer hierarchy at ${FREEZER} (${e.code})`);
    }
    cg = dir;
    return dir;
  }
  const freeze = (pid) => {
    fs.writeFileSync(path.join(cg, "cgroup.procs"), String(pid));
    fs.writeFileSync(path.join(cg, "freezer.state"), "FROZEN");
  };
  const thaw = () => fs.writeFileSync(path.join(cg, "freezer.state"), "THAWED");
  const kernOf = (marker) => h.processes().find((q) => q.exe === h.fakeKern() && q.argv.includes(marker));

  afterEach(async function () {
    if (cg === null) return;
    thaw();
    await h.waitFor(() => fs.readFileSync(path.join(cg, "cgroup.procs"), "utf8").trim() === "", 5000);
    fs.rmdirSync(cg);
    cg = null;
  });

  it("C21: a frozen kern (SIGKILL pending, state D) past its deadline: its call settles as a " +
    "timeout; every other box meets its deadline for 16 s (past the 3 s grace and the 10 s " +
    "helper deadline); once thawed it is reaped", async function () {
    this.timeout(60000);
    if (makeFreezer(this) === undefined) return;
    const marker = `frozen-${crypto.randomBytes(4).toString("hex")}`;
    await withSandbox({ timeoutS: 1 }, async (sbx) => {
      const started = Date.now();
      const frozenRun = sbx.run(["sh", "-c", "while :; do sleep 0.1; done", marker]);
      assert.ok(await h.waitFor(() => kernOf(marker) !== undefined, h.startWait(3000)), "kern runs");
      const kern = kernOf(marker).pid;
      freeze(kern);
      const r = await frozenRun;
      const settledMs = Date.now() - started;
      assert.strictEqual(r.fault && r.fault.type, "timeout");
      assert.ok(settledMs < 1000 + 3000 + 2000, `the frozen box's call settled after ${settledMs} ms`);
      // Positive control: SIGKILL really could not end it.
      assert.strictEqual(procfs.readStat(kern)?.state, "D", "kern is frozen with its SIGKILL pending");
      // Other boxes, one after another, while it stays frozen.
      const slow = [];
      let runs = 0;
      while (Date.now() - started < 16000) {
        const t0 = Date.now();
        const other = await sbx.run(["sh", "-c", `echo ${runs}`]);
        const ms = Date.now() - t0;
        if (other.stdout !== `${runs}\n` || ms > 2000) slow.push(`${runs}: ${ms} ms ${JSON.stringify(other.stdout)}`);
        runs++;
        await h.sleep(200);
      }
      const deadline = await sbx.run(["sh", "-c", "sleep 30"]); // a deadline still fires
      assert.strictEqual(deadline.fault && deadline.fault.type, "timeout");
      assert.deepStrictEqual(slow, [], `${runs} runs beside the frozen kern`);
      assert.strictEqual(procfs.readStat(kern)?.state, "D", "still frozen at the end");
      note(`C21 (frozen): its call settled after ${settledMs} ms; ${runs} other runs, none late`);
      thaw();
      // Reaped by the engine (no zombie of ours), and its workload is gone.
      assert.ok(await h.waitFor(() => procfs.readStat(kern) === null &&
        h.processesWith(marker).length === 0, 2000), `left: ${h.processesWith(marker)}`);
    });
  });

  it("C21: process.exit() while a kern is frozen ends at once (the frozen kern is waited for " +
    "by a thread of its own); once thawed, nothing is left", async function () {
    this.timeout(60000);
    if (makeFreezer(this) === undefined) return;
    const marker = `frozen-exit-${crypto.randomBytes(4).toString("hex")}`;
    const code = `
      const { withSandbox } = require(${JSON.stringify(h.repo)});
      withSandbox({ timeoutS: 60 }, (sbx) =>
        sbx.run(["sh", "-c", "while :; do sleep 0.1; done", ${JSON.stringify(marker)}]));
      process.once("message", () => process.exit(0));`;
    const child = spawn(process.execPath, ["-e", code], { stdio: ["ignore", "ignore", "inherit", "ipc"] });
    const exited = h.exitOf(child);
    try {
      assert.ok(await h.waitFor(() => kernOf(marker) !== undefined, h.startWait(5000)), "kern runs");
      const kern = kernOf(marker).pid;
      freeze(kern);
      const t0 = Date.now();
      child.send("end");
      const ended = await h.waitFor(() => child.exitCode !== null || child.signalCode !== null, 5000);
      const ms = Date.now() - t0;
      assert.ok(ended, "process.exit() waited for the frozen kern");
      note(`C21 (frozen): process.exit() took ${ms} ms`);
      assert.strictEqual(procfs.readStat(kern)?.state, "D", "positive control: kern stayed frozen");
      thaw();
      assert.ok(await h.waitFor(() => procfs.readStat(kern) === null &&
        h.processesWith(marker).length === 0, 2000), `left: ${h.processesWith(marker)}`);
    } finally {
      if (child.exitCode === null && child.signalCode === null) {
        if (cg !== null) thaw();
        child.kill("SIGKILL");
      }
      await exited;
    }
  });
  it("C21: process.exit() while a `kern stop` helper is frozen ends within the teardown " +
    "budget; once thawed, the helper is gone", async function () {
    this.timeout(60000);
    if (makeFreezer(this) === undefined) return;
    const { child, exited, fault, stops } = hungStopChild();
    try {
      assert.strictEqual(await fault, "timeout");
      assert.ok(await h.waitFor(() => stops().length === 1, h.startWait(5000)), "kern stop runs");
      const [stop] = stops();
      freeze(stop);
      assert.ok(await h.waitFor(() => procfs.readStat(stop)?.state === "D", 2000),
        "positive control: kern stop is frozen");
      const ms = await endChild(child, 5000);
      assert.notStrictEqual(ms, null, "process.exit() waited for the frozen kern stop");
      note(`C21 (frozen kern stop): process.exit() took ${ms} ms`);
      assert.ok(ms < 2000, `process.exit() took ${ms} ms`);
      assert.strictEqual(procfs.readStat(stop)?.state, "D", "positive control: it stayed frozen");
      thaw();
      assert.ok(await h.waitFor(() => ended(stop), 2000), `kern stop ${stop} still runs after the thaw`);
    } finally {
      if (child.exitCode === null && child.signalCode === null) {
        if (cg !== null) thaw();
        child.kill("SIGKILL");
      }
      await exited;
    }
  });
});

describe("reliability: the host process ends while boxes run (C9)", function () {
  // Each ending is run by the child when told to, once the test has seen its
  // boxes running (no guess at how long start-up takes, e.g. under ASan).
  // The third field: whether the session's temporary workspace is removed.
  // process.exit() and an uncaught exception run the package's 'exit' hook;
  // a SIGTERM without a handler ends Node before any JS or cleanup hook can
  // run, so its workspace stays (as after kill -9).
  const endings = [
    ["process.exit()", "process.exit(0)", true],
    ["an uncaught exception", "throw new Error('boom')", true],
    ["SIGTERM", "process.kill(process.pid, 'SIGTERM')", false],
  ];
  for (const [what, ending, removed] of endings) {
    it(`C9: after ${what}, no kern or box process remains 1 s later; the temporary workspace ` +
      `${removed ? "is removed" : "stays (no JS runs)"}`, async function () {
      this.timeout(h.underSanitizer ? 90000 : 20000);
      const marker = `end-${crypto.randomBytes(4).toString("hex")}`;
      const code = `
        const { withSandbox } = require(${JSON.stringify(h.repo)});
        withSandbox({ timeoutS: 60 }, (sbx) => Promise.all([1, 2].map(() =>
          sbx.run(["sh", "-c", "while :; do sleep 0.1; done", ${JSON.stringify(marker)}]))));
        process.once("message", () => { ${ending}; });`;
      const tmp = h.tmpDir("c9-tmp-");
      const child = spawn(process.execPath, ["-e", code],
        { env: { ...process.env, TMPDIR: tmp }, stdio: ["ignore", "ignore", "ignore", "ipc"] });
      const exited = new Promise((resolve) => child.on("exit", resolve));
      const running = await h.waitFor(() => h.processesWith(marker, [child.pid]).length >= 4,
        h.underSanitizer ? 60000 : 5000);
      if (!running) child.kill("SIGKILL");
      assert.ok(running, "positive control: the boxes run");
      child.send("end");
      await exited;
      const gone = await h.waitFor(() => h.processesWith(marker).length === 0, 1000);
      assert.ok(gone, `left: ${h.processesWith(marker)}`);
      const left = fs.readdirSync(tmp);
      // The in-box init's directory goes with the process's 'exit' hook;
      // without JS, the next process to start removes it.
      const inits = left.filter((e) => e.startsWith(dirPrefix(child.pid)));
      const swept = h.tmpAfterSweep(tmp);
      fs.rmSync(tmp, { recursive: true, force: true });
      assert.strictEqual(inits.length, removed ? 0 : 1, JSON.stringify(left));
      const ws = left.filter((e) => !inits.includes(e));
      assert.strictEqual(ws.length, removed ? 0 : 1, JSON.stringify(left));
      assert.ok(ws.every((e) => /^kern-ws-/.test(e)), JSON.stringify(left));
      assert.deepStrictEqual(swept, ws, "the next process removed the init's directory");
    });
  }

  it("C19/C9: process.exit() while a hung `kern stop` runs ends within the teardown budget, " +
    "and the helper is gone", async function () {
    this.timeout(60000);
    const { child, exited, fault, stops } = hungStopChild();
    try {
      assert.strictEqual(await fault, "timeout");
      assert.ok(await h.waitFor(() => stops().length === 1, h.startWait(5000)),
        "positive control: the hung `kern stop` is running when the process ends");
      const [stop] = stops();
      const ms = await endChild(child, 5000);
      assert.notStrictEqual(ms, null, "process.exit() returned");
      note(`C19/C9: process.exit() beside a hung kern stop took ${ms} ms`);
      assert.ok(ms < 2000, `process.exit() took ${ms} ms`);
      assert.ok(await h.waitFor(() => ended(stop), 2000), `kern stop ${stop} still runs`);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
    }
  });
});
