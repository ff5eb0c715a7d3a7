"use strict";

// A kern that misbehaves: the engine still resolves on time and leaves
// nothing behind (C3, C4, C5, C19, and a kern that ignores SIGTERM).
const assert = require("assert");
const fs = require("fs");
const { execFileSync } = require("child_process");
const path = require("path");
const { runCode, Sandbox } = require("..");
const binding = require("../lib/binding");
const h = require("./lib/harness");

const sh = (code, opts = {}) => runCode(code, { language: "bash", ...opts });

describe("a misbehaving kern", function () {
  it("C4: kern closes its stdio and keeps running: no resolve at EOF, timeout at the deadline", async function () {
    const start = Date.now();
    const r = await sh("sleep 30", { image: "fake:close-stdio", timeoutS: 1 });
    const wall = Date.now() - start;
    assert.strictEqual(r.fault && r.fault.type, "timeout");
    assert.ok(wall >= 1000 && wall < h.jsBound(1500), `wall ${wall}`);
  });

  it("C5: a grandchild in kern's group holds the pipes: resolves promptly, holder killed", async function () {
    const start = Date.now();
    const r = await sh("echo done", { image: "fake:holder" });
    const wall = Date.now() - start;
    assert.strictEqual(r.stdout, "done\n");
    assert.strictEqual(r.fault, null);
    assert.ok(wall < h.jsBound(1000), `wall ${wall}`);
    assert.deepStrictEqual(await h.waitFor(() => h.processesUsing(h.fakeKern()).length === 0, 1000), true);
  });

  it("C5: the group kill works by pidfd (Linux >= 6.9) and by number (forced fallback)", async function () {
    // Each way in a child node, since the switch is read when the addon loads.
    this.timeout(30000);
    const code = `
      const { runCode } = require(${JSON.stringify(h.repo)});
      runCode("echo done", { language: "bash", image: "fake:holder" })
        .then((r) => console.log(JSON.stringify({ stdout: r.stdout, fault: r.fault })));`;
    for (const fallback of ["", "pidfd_pgrp"]) {
      const env = { ...process.env, KERN_SANDBOX_FORCE_FALLBACK: fallback };
      const out = execFileSync(process.execPath, ["-e", code], { env, encoding: "utf8", timeout: 20000 });
      assert.deepStrictEqual(JSON.parse(out), { stdout: "done\n", fault: null }, `fallback '${fallback}'`);
      assert.ok(await h.waitFor(() => h.processesUsing(h.fakeKern()).length === 0, 1000),
        `fallback '${fallback}': the holder in kern's group was killed`);
    }
  });

  it("C3: a daemon in a new session holds the pipes: resolves after a bounded drain", async function () {
    const start = Date.now();
    const r = await sh("echo out", { image: "fake:double-fork" });
    const wall = Date.now() - start;
    assert.strictEqual(r.stdout, "out\n");
    assert.strictEqual(r.exitCode, 0);
    assert.ok(wall < h.jsBound(1000), `wall ${wall}: the drain after kern's exit is bounded`);
    // The double's daemon is outside kern's group: with a real kern it would
    // die with the box's pid namespace. Clean it up here.
    h.killAll(h.processesUsing(h.fakeKern()));
  });

  describe("C3 (kern's watchdog): a child of kern in a session of its own dies with a killed box",
    function () {
      // A real kern forks a watchdog for its --timeout that calls setsid():
      // a SIGKILL of kern leaves it running, for the rest of the box's
      // --timeout when it could not pin the box's PID 1 in time (a day for a
      // kernel's box). fake:watchdog forks one the same way; it sleeps for
      // the --timeout (at least 6 s here) unless someone kills it. A parked
      // box's watchdog is pinned when the box has started (the close()
      // test); a running box's, when it is killed (deadline, abort): with
      // either way turned off in the engine, its tests fail.
      let ws;
      beforeEach(function () {
        ws = h.tmpDir("watchdog-");
      });
      afterEach(function () {
        h.killAll(h.processesWith(ws)); // whatever a failed test left
      });
      // The double's processes for this workspace; the watchdog is the one
      // that leads a session of its own.
      const ofBox = () => h.processes().filter((p) => p.argv.includes(ws) && p.state !== "Z" &&
        p.exe === h.fakeKern());
      const watchdogUp = () => ofBox().some((p) => p.sid === p.pid &&
        ofBox().some((k) => k.pid === p.ppid));
      const goneSoon = async (what) => {
        assert.ok(await h.waitFor(() => ofBox().length === 0, 500),
          `${what}: left ${JSON.stringify(ofBox().map((p) => [p.pid, p.ppid, p.sid]))}`);
      };

      it("at its deadline", async function () {
        const s = await new Sandbox({ image: "fake:watchdog", workspace: ws, timeoutS: 0.5, prewarm: 0 })
          .open();
        try {
          const p = s.run(["sleep", "30"]);
          assert.ok(await h.waitFor(watchdogUp, 2000), "positive control: the watchdog runs");
          const r = await p;
          assert.strictEqual(r.fault?.type, "timeout");
          await goneSoon("deadline");
        } finally {
          await s.close();
        }
      });

      it("by an abort", async function () {
        const s = await new Sandbox({ image: "fake:watchdog", workspace: ws, prewarm: 0 }).open();
        try {
          const ac = new AbortController();
          const p = s.run(["sleep", "30"], { signal: ac.signal });
          assert.ok(await h.waitFor(watchdogUp, 2000), "positive control: the watchdog runs");
          ac.abort();
          await assert.rejects(p, { name: "AbortError" });
          await goneSoon("abort");
        } finally {
          await s.close();
        }
      });

      it("by close() while it waits as a prewarmed box", async function () {
        const s = await new Sandbox({ image: "fake:watchdog", workspace: ws, prewarm: 1 }).open();
        let closed = false;
        try {
          assert.ok(await h.waitFor(watchdogUp, 2000), "positive control: the parked box's watchdog runs");
          await s.close();
          closed = true;
          await goneSoon("close");
        } finally {
          if (!closed) await s.close();
        }
      });

      it("control: at a normal end kern kills its watchdog itself", async function () {
        const s = await new Sandbox({ image: "fake:watchdog", workspace: ws, prewarm: 0 }).open();
        try {
          const p = s.run(["sh", "-c", "sleep 0.3; echo out"]);
          assert.ok(await h.waitFor(watchdogUp, 2000), "positive control: the watchdog runs");
          assert.strictEqual((await p).stdout, "out\n");
          await goneSoon("normal end");
        } finally {
          await s.close();
        }
      });
    });

  it("a kern that ignores SIGTERM is still killed at the deadline", async function () {
    const r = await sh("trap '' TERM; sleep 30", { image: "fake:ignore-term", timeoutS: 0.5 });
    assert.strictEqual(r.fault && r.fault.type, "timeout");
    assert.ok(r.durationMs < 700, `durationMs ${r.durationMs}`);
  });

  it("C19: a hung `kern stop` never blocks: 8 timeouts at once, fs stays responsive", async function () {
    this.timeout(40000);
    const file = path.join(h.tmpDir(), "f");
    fs.writeFileSync(file, "x");
    // stops.log holds every `kern stop` of the suite so far: count ours.
    const stopLines = () => {
      try {
        return fs.readFileSync(path.join(h.stateDir(), "stops.log"), "utf8").split("\n").filter(Boolean).length;
      } catch (e) {
        if (e.code === "ENOENT") return 0;
        throw e;
      }
    };
    const stopsBefore = stopLines();
    const start = Date.now();
    const runs = Array.from({ length: 8 }, () =>
      sh("sleep 30", { image: "fake:hang-stop", timeoutS: 0.5 }));
    const lat = [];
    let done = false;
    const all = Promise.all(runs).finally(() => {
      done = true;
    });
    while (!done) {
      const t = Date.now();
      await fs.promises.readFile(file);
      lat.push(Date.now() - t);
      await h.sleep(20);
    }
    const results = await all;
    const wall = Date.now() - start;
    assert.ok(results.every((r) => r.fault && r.fault.type === "timeout"));
    // A hung stop would show as 10 s (the engine's deadline for `kern stop`).
    assert.ok(wall < h.jsBound(1500), `wall ${wall}: resolving never waits for kern stop`);
    assert.ok(Math.max(...lat) < h.jsBound(100, 10), `readFile max ${Math.max(...lat)} ms`);
    // Each `kern stop` logs its call first; the runs resolve without waiting for it.
    assert.ok(await h.waitFor(() => stopLines() - stopsBefore >= 8, h.startWait(5000)),
      `kern stop ran for each box: ${stopLines() - stopsBefore} of 8`);
    assert.strictEqual(await h.settledLiveBoxes(), 0);
  });
});
