"use strict";

// Issue 15, part 1: stderr is the workload's own. kern's notices are turned
// off with its own switches (KERN_QUIET, --allow-uncapped, --no-uid-range
// where no uid range can be had); what they said is result.limits and one
// process warning. kern's error lines still make startup_failed.
const assert = require("assert");
const { spawnSync } = require("child_process");
const kern = require("..");
const { withSandbox } = kern;
const h = require("./lib/harness");
const { uidRangeAvailable } = require("../lib/hostfacts");

function kernFlags(argv) {
  return argv.slice(0, argv.indexOf("--"));
}

const SCRIPT = "import sys; print('x', file=sys.stderr); sys.exit(3)";

describe("stderr is the workload's own (issue 15)", function () {
  it("on a host that does not enforce the memory cap: stderr === \"x\\n\", exit 3, no fault, " +
    "limits.memory \"not_enforced\"", async function () {
    const r = await withSandbox({ image: "fake:mem-unenforced" }, (sbx) => sbx.runCode(SCRIPT));
    assert.strictEqual(r.stderr, "x\n");
    assert.strictEqual(r.exitCode, 3);
    assert.strictEqual(r.fault, null);
    assert.deepStrictEqual(r.limits, { memory: "not_enforced" });
    // The switches that did it, and the positive control: without them the
    // double prints kern's notice, as kern does.
    const argv = h.recordedArgv();
    assert.ok(kernFlags(argv).includes("--allow-uncapped"));
    const raw = spawnSync(h.fakeKern(), ["box", "raw", "--image", "fake:mem-unenforced", "--memory",
      "512m", "--", "sh", "-c", "echo x >&2; exit 3"], { encoding: "utf8" });
    assert.match(raw.stderr, /^kern: warning: --memory 512m requested/);
  });

  it("limits: \"enforced\" where the cap binds, \"none\" without memoryMb, null when kern " +
    "failed before the box", async function () {
    await withSandbox(async (sbx) => {
      assert.deepStrictEqual((await sbx.run(["true"])).limits, { memory: "enforced" });
    });
    await withSandbox({ memoryMb: null }, async (sbx) => {
      assert.deepStrictEqual((await sbx.run(["true"])).limits, { memory: "none" });
    });
    await withSandbox({ image: "fake:parent-fail" }, async (sbx) => {
      const r = await sbx.run(["true"]);
      assert.strictEqual(r.fault.type, "startup_failed");
      assert.strictEqual(r.limits, null);
    });
  });

  it("one KernSandboxWarning per process, the first time an asked-for cap is not enforced",
    async function () {
      const script = `
        process.env.KERN_BIN = ${JSON.stringify(h.fakeKern())};
        const kern = require(${JSON.stringify(h.repo)});
        const seen = [];
        process.on("warning", (w) => seen.push({ name: w.name, code: w.code, message: w.message }));
        (async () => {
          await kern.withSandbox({ memoryMb: null, image: "fake:mem-unenforced" }, (s) => s.run(["true"]));
          const none = seen.length;
          for (let i = 0; i < 3; i++)
            await kern.withSandbox({ image: "fake:mem-unenforced" }, (s) => s.run(["true"]));
          await kern.runCode("print(1)", { image: "fake:mem-unenforced" });
          await new Promise((r) => setImmediate(r));
          console.log(JSON.stringify({ none, seen }));
        })();`;
      const out = spawnSync(process.execPath, ["--no-deprecation", "-e", script],
        { encoding: "utf8", timeout: 60000 });
      assert.strictEqual(out.status, 0, out.stderr);
      const { none, seen } = JSON.parse(out.stdout);
      assert.strictEqual(none, 0, "memoryMb: null asked for no cap: no warning");
      assert.strictEqual(seen.length, 1, JSON.stringify(seen));
      assert.strictEqual(seen[0].name, "KernSandboxWarning");
      assert.strictEqual(seen[0].code, "KERN_SANDBOX_MEMORY_NOT_ENFORCED");
      assert.match(seen[0].message, /memoryMb 512\) is not enforced on this host/);
      assert.match(out.stderr, /KernSandboxWarning/, "Node prints it once");
    });

  it("requireLimits still refuses such a box, with kern's error as startup_failed", async function () {
    // With a prewarmed box the call can claim one that failed the same way
    // (the same result); prewarm: 0 so that the argv read below is the call's.
    const r = await withSandbox({ image: "fake:mem-unenforced", requireLimits: true, prewarm: 0 },
      (sbx) => sbx.runCode(SCRIPT));
    assert.strictEqual(r.fault.type, "startup_failed");
    assert.match(r.fault.message, /--require-limits/);
    const flags = kernFlags(h.recordedArgv());
    assert.ok(flags.includes("--require-limits") && !flags.includes("--allow-uncapped"));
  });

  it("kern gets KERN_QUIET=1 whatever the caller's environment says; a line with no switch " +
    "stays (fake:warn's note)", async function () {
    const saved = process.env.KERN_QUIET;
    process.env.KERN_QUIET = "0";
    try {
      const r = await withSandbox({ image: "fake:dump+warn" }, (sbx) => sbx.run(["true"]));
      assert.ok(r.stderr.includes("fake-kern: env KERN_QUIET=1\n"), r.stderr);
      assert.ok(!r.stderr.includes("KERN_QUIET=0"));
      assert.ok(!/cpu limit not enforced/.test(r.stderr), "KERN_QUIET did not silence the cpu warning");
      assert.match(r.stderr, /kern: note: running without a systemd scope/);
    } finally {
      if (saved === undefined) delete process.env.KERN_QUIET;
      else process.env.KERN_QUIET = saved;
    }
  });

  it("--no-uid-range goes to kern exactly where no uid range can be had", async function () {
    await withSandbox((sbx) => sbx.run(["true"]));
    const has = kernFlags(h.recordedArgv()).includes("--no-uid-range");
    assert.strictEqual(has, !uidRangeAvailable());
    h.note(`this host: uid range ${uidRangeAvailable() ? "available" : "unavailable"}`);
  });

  it("a workload's own line that looks like kern's is kept; kern's error lines still make " +
    "startup_failed", async function () {
    const r = await withSandbox((sbx) => sbx.run(["sh", "-c",
      "echo 'kern: warning: mine' >&2; echo 'kern: note: also mine' >&2; exit 4"]));
    assert.strictEqual(r.stderr, "kern: warning: mine\nkern: note: also mine\n");
    assert.strictEqual(r.fault, null);
    const missing = await withSandbox({ image: "missing:image" }, (sbx) => sbx.run(["true"]));
    assert.strictEqual(missing.fault.type, "startup_failed");
    assert.strictEqual(missing.fault.message, "error: pull: missing:image: manifest unknown");
  });
});
