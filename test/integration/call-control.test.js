"use strict";

// Issue 13 (call control) against a real kern: what the double cannot show.
// Capabilities as the box's /proc/self/status has them, abort timing with
// kern's own start and teardown, usage from kern's rusage, requireLimits and
// the cap byte behind `oom`. SKIPs without a real kern or its images.
const assert = require("assert");
const crypto = require("crypto");
const { performance } = require("perf_hooks");
const h = require("../lib/harness");
const path = require("path");
const { realKern, haveImage, useRealKern } = require("../lib/realkern");
const { buildWheel } = require("../lib/wheel");

// An image with pip (python3 -m pip): make-kern-images.sh's python image has
// none, so this names a local one (KERN_PIP_IMAGE), e.g. the same rootfs with
// Debian's python3-pip added and loaded with `kern load`.
const PIP_IMAGE = process.env.KERN_PIP_IMAGE || "python-pip:test";

const SETTLE_MS = h.jsBound(50);
const TEARDOWN_MS = h.jsBound(100);

describe("integration: call control with a real kern (issue 13)", function () {
  this.timeout(120000);
  const pkg = useRealKern();
  let kern;
  before(function () {
    kern = pkg();
  });

  async function capsOf(opts) {
    return kern.withSandbox(opts, async (sbx) => {
      const r = await sbx.run(["sh", "-c", "grep -E '^Cap(Eff|Prm|Bnd):' /proc/self/status"]);
      assert.strictEqual(r.exitCode, 0, r.stderr);
      return Object.fromEntries(r.stdout.trim().split("\n").map((l) => l.split(/:\s+/)));
    });
  }

  it("by default the box has no capabilities; capDrop [] keeps kern's set; NET_RAW drops one " +
    "(positive controls)", async function () {
    const none = await capsOf({});
    assert.deepStrictEqual(none, { CapPrm: "0000000000000000", CapEff: "0000000000000000",
      CapBnd: "0000000000000000" });
    const kept = BigInt(`0x${(await capsOf({ capDrop: [] })).CapBnd}`);
    assert.notStrictEqual(kept, 0n, "positive control: kern's default set is not empty");
    const oneLess = BigInt(`0x${(await capsOf({ capDrop: ["cap_net_raw"] })).CapBnd}`);
    assert.strictEqual(oneLess, kept & ~(1n << 13n), "exactly NET_RAW (13) went");
    const profile = await capsOf({ capDrop: [], securityProfile: "untrusted" });
    assert.strictEqual(profile.CapEff, "0000000000000000", "the untrusted profile drops them all");
    h.note(`kern's set ${kept.toString(16)}, without NET_RAW ${oneLess.toString(16)}`);
  });

  it("the setup box runs with the same dropped set", async function () {
    await kern.withSandbox({ setup: "grep CapEff /proc/self/status > /workspace/setup-caps" },
      async (sbx) => {
        const text = (await sbx.readFile("setup-caps")).toString();
        assert.match(text, /^CapEff:\s+0000000000000000$/m);
      });
  });

  it("setup: \"pip install <local wheel>\" works with the default capDrop ALL", async function () {
    if (!haveImage(PIP_IMAGE))
      return h.skipHost(this, `no image with pip in kern's cache (${PIP_IMAGE}; set KERN_PIP_IMAGE to one)`);
    const dir = h.tmpDir("rk-wheel-");
    const wheel = buildWheel(dir, "ks_rkwheel", "1.0", "VALUE = 'from the wheel'\n");
    await kern.withSandbox({ image: PIP_IMAGE, mounts: { [dir]: ["/wheels", "ro"] },
      setup: `pip install --no-index /wheels/${path.basename(wheel)} && ` +
        "grep CapEff /proc/self/status > /workspace/setup-caps" }, async (sbx) => {
      assert.match((await sbx.readFile("setup-caps")).toString(), /^CapEff:\s+0000000000000000$/m);
      const r = await sbx.runCode("import ks_rkwheel; print(ks_rkwheel.VALUE)");
      assert.strictEqual(r.stdout, "from the wheel\n", r.stderr);
      assert.deepStrictEqual((await sbx.listFiles()).map((f) => f.path), ["setup-caps"]);
    });
  });

  it("every hardening flag and network combination reaches kern as intended", async function () {
    for (const opts of [{ network: true }, { securityProfile: "untrusted", network: true },
      { capDrop: ["SYS_ADMIN", "NET_ADMIN"], securityProfile: "untrusted" },
      { setup: "true", network: true, capDrop: ["NET_RAW"] }]) {
      await kern.withSandbox(opts, async (sbx) => {
        const r = await sbx.run(["echo", "ok"]);
        assert.strictEqual(r.stdout, "ok\n", `${JSON.stringify(opts)}: ${r.stderr}`);
        assert.strictEqual(r.fault, null);
      });
    }
  });

  it("requireLimits: where kern cannot enforce the caps it refuses with a startup_failed fault " +
    "that says why; where it can, the box runs", async function () {
    const r = await kern.withSandbox({ requireLimits: true }, (sbx) => sbx.run(["echo", "ran"]));
    if (r.fault === null) {
      assert.strictEqual(r.stdout, "ran\n");
      h.note("this host enforces the caps: the box ran");
    } else {
      assert.strictEqual(r.fault.type, "startup_failed", JSON.stringify(r));
      assert.match(r.fault.message, /could not be enforced here and --require-limits/);
      assert.strictEqual(r.stdout, "");
      h.note("this host does not enforce the caps: refused with kern's reason");
    }
  });

  it("a SIGKILL status: oom follows kern's cap byte; exit(137) says it was no SIGKILL", async function () {
    // The workload is not the box's PID 1 (the in-box init is), so a SIGKILL
    // it sends itself takes effect.
    const [r, own] = await kern.withSandbox((sbx) => Promise.all([
      sbx.runCode("import os, signal; os.kill(os.getpid(), signal.SIGKILL)"),
      sbx.runCode("import sys; sys.exit(137)")]));
    for (const x of [r, own]) {
      assert.strictEqual(x.fault && x.fault.type, "killed", JSON.stringify(x));
      assert.ok(kern.isKilledFault(x.fault));
    }
    assert.strictEqual(typeof r.fault.oom, "boolean");
    h.note(`SIGKILL: oom ${r.fault.oom}: ${r.fault.message}`);
    if (!r.fault.oom) assert.match(r.fault.message, /not enforced on this host|no memory cap/);
    assert.strictEqual(own.fault.oom, false);
    assert.match(own.fault.message, /exited with status 137 itself/);
  });

  it("usage: a 200 ms busy loop counts >= 150 ms of CPU", async function () {
    const r = await kern.withSandbox((sbx) => sbx.runCode(
      "import time\nend = time.process_time() + 0.2\nwhile time.process_time() < end: pass"));
    assert.strictEqual(r.exitCode, 0, r.stderr);
    const cpu = r.usage.cpuUserMs + r.usage.cpuSystemMs;
    assert.ok(cpu >= 150, `cpu ${cpu} ms`);
    h.note(`user ${r.usage.cpuUserMs} ms, system ${r.usage.cpuSystemMs} ms, maxRss ${r.usage.maxRssKb} KiB`);
  });

  it("abort: a running call settles within 50 ms; 20 sharing a signal too; nothing is left",
    async function () {
      const marker = `rk-abort-${crypto.randomBytes(4).toString("hex")}`;
      await kern.withSandbox(async (sbx) => {
        const times = [];
        for (let i = 0; i < 10; i++) {
          const ac = new AbortController();
          const live = h.liveOutput();
          const p = sbx.runCode(`import time\nprint('x', flush=True)\ntime.sleep(30)  # ${marker}`,
            { signal: ac.signal, onStdout: live.onStdout }).then(() => assert.fail("resolved"), (e) => e);
          await live.until("x\n");
          await h.sleep(Math.random() * 100); // abort at a random point of its sleep
          const t0 = performance.now();
          ac.abort();
          const e = await p;
          times.push(performance.now() - t0);
          assert.strictEqual(e.name, "AbortError");
          assert.strictEqual(e.stdout, "x\n");
        }
        const shared = new AbortController();
        const calls = [];
        for (let i = 0; i < 20; i++) {
          calls.push(sbx.run(["sh", "-c", `sleep 30; : ${marker}`], { signal: shared.signal })
            .then(() => null, (e) => ({ e, at: performance.now() })));
        }
        const shells = () => h.processes().filter((p) => p.state !== "Z" &&
          p.argv.startsWith(`sh\0-c\0sleep 30; : ${marker}`)).length;
        assert.ok(await h.waitFor(() => shells() === 20, 10000), `the 20 boxes run: ${shells()}`);
        const t0 = performance.now();
        shared.abort();
        const all = await Promise.all(calls);
        const worst = Math.max(...all.map((s) => s.at - t0));
        assert.ok(all.every((s) => s.e.name === "AbortError"));
        times.sort((a, b) => a - b);
        assert.ok(times[times.length - 1] < SETTLE_MS, `slowest single ${times[times.length - 1]} ms`);
        assert.ok(worst < SETTLE_MS, `slowest of 20: ${worst} ms`);
        h.note(`single: p50 ${times[5].toFixed(2)} ms, max ${times[9].toFixed(2)} ms; ` +
          `20 at once: slowest ${worst.toFixed(2)} ms`);
      });
      assert.ok(await h.waitFor(() => h.processesWith(marker).length === 0, 2000),
        "a box process outlived its call");
      assert.ok(await h.waitFor(() => h.processesUsing(realKern).length === 0, 2000), "kern left");
    });

  it("abort: open() during setup and the one-shot runCode settle within 100 ms", async function () {
    const marker = `ks-cc-${process.pid}-setup`;
    const sbx = new kern.Sandbox({ setup: `sleep 30; : ${marker}` });
    const ac = new AbortController();
    const p = sbx.open({ signal: ac.signal }).then(() => assert.fail("opened"), (e) => e);
    assert.ok(await h.waitFor(() => h.processesWith(marker).length > 0, 10000), "setup never ran");
    const t0 = performance.now();
    ac.abort();
    const e = await p;
    const openMs = performance.now() - t0;
    assert.strictEqual(e.name, "AbortError");
    const ac2 = new AbortController();
    const live = h.liveOutput();
    const q = kern.runCode("import time; print('up', flush=True); time.sleep(30)",
      { signal: ac2.signal, onStdout: live.onStdout })
      .then(() => assert.fail("resolved"), (x) => x);
    await live.until("up\n");
    const t1 = performance.now();
    ac2.abort();
    assert.strictEqual((await q).name, "AbortError");
    const oneShotMs = performance.now() - t1;
    assert.ok(openMs < TEARDOWN_MS, `open() ${openMs} ms`);
    assert.ok(oneShotMs < TEARDOWN_MS, `runCode ${oneShotMs} ms`);
    h.note(`open(): ${openMs.toFixed(2)} ms, one-shot runCode: ${oneShotMs.toFixed(2)} ms`);
  });
});
