"use strict";

// Issue 13, call control (additions to 0.1.1): per-call options, readFile's
// maxBytes, trackFiles, kern's hardening flags, usage and OOM attribution,
// against the kern test double. Aborts are in 36.abort.test.js.
const assert = require("assert");
const fs = require("fs");
const path = require("path");
const { spawnSync } = require("child_process");
const kern = require("..");
const { Sandbox, SandboxError, withSandbox, runCode, isKilledFault } = kern;
const h = require("./lib/harness");
const { buildWheel } = require("./lib/wheel");

function flagValues(argv, flag) {
  const out = [];
  const end = argv.indexOf("--");
  for (let i = 0; i < end; i++) if (argv[i] === flag) out.push(argv[i + 1]);
  return out;
}

function kernFlags(argv) {
  return argv.slice(0, argv.indexOf("--"));
}

describe("call control (issue 13)", function () {
  describe("per-call options", function () {
    it("timeoutS per call overrides the session's, fractions work, and the fault names it",
      async function () {
        // prewarm: 0: the argv read is the call's own box.
        await withSandbox({ timeoutS: 30, prewarm: 0 }, async (sbx) => {
          const t0 = Date.now();
          const r = await sbx.run(["sleep", "5"], { timeoutS: 0.25 });
          assert.strictEqual(r.fault.type, "timeout");
          assert.match(r.fault.message, /its 0\.25s limit/);
          assert.ok(Date.now() - t0 < 2000, `took ${Date.now() - t0} ms`);
          // kern's backstop follows the value that applied.
          assert.strictEqual(flagValues(h.recordedArgv(), "--timeout")[0], "6");
          // The next call without one has the session's again.
          const ok = await sbx.runCode("import time; time.sleep(0.4); print('done')");
          assert.strictEqual(ok.stdout, "done\n");
          assert.strictEqual(flagValues(h.recordedArgv(), "--timeout")[0], "35");
          for (const inherit of [undefined, null]) {
            await sbx.run(["true"], { timeoutS: inherit });
            assert.strictEqual(flagValues(h.recordedArgv(), "--timeout")[0], "35");
          }
        });
      });

    it("a bad timeoutS, env, callback or signal is refused with a SandboxError that names it, " +
      "and starts no box", async function () {
      // prewarm: 0: no box ahead of the calls, so any box recorded is a call's.
      await withSandbox({ prewarm: 0 }, async (sbx) => {
        h.clearState();
        const bad = [
          [{ timeoutS: Infinity }, /options\.timeoutS must be a finite number above 0/],
          [{ timeoutS: NaN }, /options\.timeoutS/],
          [{ timeoutS: "5" }, /options\.timeoutS .*got "5"/],
          [{ timeoutS: 0 }, /options\.timeoutS/],
          [{ timeoutS: -1 }, /options\.timeoutS/],
          [{ env: { "A=B": "x" } }, /options\.env has an invalid key/],
          [{ env: { A: "x\n" } }, /options\.env\.A must not contain a newline/],
          [{ env: "A=1" }, /options\.env must be an object/],
          [{ onStdout: "log" }, /options\.onStdout must be a function or null/],
          [{ signal: {} }, /signal must be an AbortSignal/],
          ["fast", /options must be an object/],
        ];
        for (const [opts, re] of bad) {
          await assert.rejects(sbx.run(["true"], opts),
            (e) => e instanceof SandboxError && re.test(e.message), JSON.stringify(opts));
          await assert.rejects(sbx.runCode("print(1)", opts),
            (e) => e instanceof SandboxError && re.test(e.message) && /runCode\(\)/.test(e.message));
        }
        assert.ok(!fs.existsSync(h.stateDir()) ||
          fs.readdirSync(h.stateDir()).filter((f) => f.endsWith(".argv")).length === 0,
          "a refused call started a box");
      });
    });

    it("env is merged over the session's for that call only, and never reaches argv",
      async function () {
        const secret = "per-call-canary-8d1e";
        await withSandbox({ env: { A: "session", B: "kept" } }, async (sbx) => {
          const r = await sbx.run(["sh", "-c", 'echo "$A $B $C"'], { env: { A: "call", C: secret } });
          assert.strictEqual(r.stdout, `call kept ${secret}\n`);
          assert.ok(!h.recordedArgv().some((a) => a.includes(secret)), "the value reached argv");
          const next = await sbx.run(["sh", "-c", 'echo "$A $B ${C-unset}"']);
          assert.strictEqual(next.stdout, "session kept unset\n");
        });
      });

    it("onStdout/onStderr per call; null turns the session's callback off for that call",
      async function () {
        const session = [];
        await withSandbox({ onStdout: (c) => session.push(c.toString()) }, async (sbx) => {
          const mine = [];
          const errs = [];
          await sbx.run(["sh", "-c", "echo one; echo two >&2"],
            { onStdout: (c) => mine.push(c.toString()), onStderr: (c) => errs.push(c.toString()) });
          assert.strictEqual(mine.join(""), "one\n");
          assert.strictEqual(errs.join(""), "two\n");
          assert.deepStrictEqual(session, [], "the session's callback saw a call that had its own");
          const r = await sbx.run(["echo", "quiet"], { onStdout: null });
          assert.strictEqual(r.stdout, "quiet\n");
          assert.deepStrictEqual(session, [], "onStdout: null did not turn streaming off");
          await sbx.run(["echo", "loud"]);
          assert.strictEqual(session.join(""), "loud\n");
        });
      });

    it("runCode keeps `language` next to the call options; the one-shot runCode takes them too",
      async function () {
        await withSandbox(async (sbx) => {
          const r = await sbx.runCode("echo $X", { language: "bash", env: { X: "42" }, timeoutS: 5 });
          assert.strictEqual(r.stdout, "42\n");
        });
        const ac = new AbortController();
        const r = await runCode("import os; print(os.environ['Y'])",
          { env: { Y: "one-shot" }, timeoutS: 10, signal: ac.signal });
        assert.strictEqual(r.stdout, "one-shot\n");
        const t = await runCode("while True: pass", { timeoutS: 0.3 });
        assert.match(t.fault.message, /its 0\.3s limit/);
      });
  });

  describe("readFile maxBytes and trackFiles", function () {
    it("readFile refuses a file over maxBytes with EFBIG before reading it; at the limit it reads",
      async function () {
        await withSandbox(async (sbx) => {
          await sbx.writeFile("f.bin", Buffer.alloc(1000, 7));
          assert.strictEqual((await sbx.readFile("f.bin", { maxBytes: 1000 })).length, 1000);
          const err = await sbx.readFile("f.bin", { maxBytes: 999 }).catch((e) => e);
          assert.ok(err instanceof SandboxError, String(err));
          assert.strictEqual(err.code, "EFBIG");
          assert.match(err.message, /larger than maxBytes \(999 bytes\)/);
          // An 8 GiB sparse file: refused at once, memory flat (fstat, no read).
          await sbx.run(["sh", "-c", "truncate -s 8G sparse.bin"]);
          const rss0 = process.memoryUsage().rss;
          const t0 = Date.now();
          const e2 = await sbx.readFile("sparse.bin", { maxBytes: 1 << 20 }).catch((e) => e);
          assert.strictEqual(e2.code, "EFBIG");
          assert.ok(Date.now() - t0 < 1000 && process.memoryUsage().rss - rss0 < 64 << 20);
          for (const bad of [-1, 1.5, "10", 2 ** 31]) {
            await assert.rejects(sbx.readFile("f.bin", { maxBytes: bad }),
              (e) => e instanceof SandboxError && /options\.maxBytes must be an integer/.test(e.message));
          }
          assert.strictEqual((await sbx.readFile("f.bin", { maxBytes: null })).length, 1000);
          assert.strictEqual((await sbx.readFile("f.bin", {})).length, 1000);
        });
      });

    it("trackFiles: false gives files [] for a call that creates and changes files; the default " +
      "reports them (positive control)", async function () {
      const script = "echo a > new.txt; echo b >> old.txt";
      await withSandbox({ trackFiles: false }, async (sbx) => {
        await sbx.writeFile("old.txt", "x");
        const r = await sbx.run(["sh", "-c", script]);
        assert.strictEqual(r.exitCode, 0);
        assert.deepStrictEqual(r.files, []);
        assert.strictEqual((await sbx.readFile("new.txt")).toString(), "a\n");
        assert.strictEqual(sbx.trackFiles, false);
      });
      await withSandbox(async (sbx) => {
        await sbx.writeFile("old.txt", "x");
        const r = await sbx.run(["sh", "-c", script]);
        assert.deepStrictEqual(r.files.map((f) => `${f.path}:${f.change}`).sort(),
          ["new.txt:created", "old.txt:modified"]);
      });
      assert.throws(() => new Sandbox({ trackFiles: "no" }), /options\.trackFiles must be a boolean/);
    });
  });

  describe("kern's hardening flags", function () {
    it("every box, the setup box included, gets --cap-drop ALL by default; [] gives 0.1.1's argv",
      async function () {
        h.clearState();
        await withSandbox({ setup: "true" }, async (sbx) => {
          assert.deepStrictEqual(flagValues(h.recordedArgv(), "--cap-drop"), ["ALL"], "setup box");
          await sbx.run(["true"]);
          assert.deepStrictEqual(flagValues(h.recordedArgv(), "--cap-drop"), ["ALL"], "run box");
          assert.deepStrictEqual(sbx.capDrop, ["ALL"]);
        });
        await withSandbox({ capDrop: [] }, async (sbx) => {
          await sbx.run(["true"]);
          const flags = kernFlags(h.recordedArgv());
          assert.ok(!flags.includes("--cap-drop") && !flags.includes("--security-profile") &&
            !flags.includes("--apparmor") && !flags.includes("--require-limits"), flags.join(" "));
        });
      });

    it("capDrop names: any case, CAP_ optional, de-duplicated; a bare string or an unknown " +
      "name is refused with the fix", async function () {
      await withSandbox({ capDrop: ["net_raw", "CAP_SYS_PTRACE", "NET_RAW"] }, async (sbx) => {
        await sbx.run(["true"]);
        assert.deepStrictEqual(flagValues(h.recordedArgv(), "--cap-drop"), ["NET_RAW", "SYS_PTRACE"]);
      });
      assert.throws(() => new Sandbox({ capDrop: "ALL" }),
        (e) => e instanceof SandboxError && /options\.capDrop must be an array .*\["ALL"\]/.test(e.message));
      assert.throws(() => new Sandbox({ capDrop: ["NET_RAWW"] }),
        (e) => e instanceof SandboxError && /options\.capDrop\[0\] is not a Linux capability name/.test(e.message));
      assert.throws(() => new Sandbox({ capDrop: ["--privileged"] }), SandboxError);
      assert.throws(() => new Sandbox({ capDrop: [13] }), SandboxError);
    });

    it("securityProfile accepts only \"untrusted\"; apparmor only a profile name", async function () {
      for (const bad of ["strict", "UNTRUSTED", true, ["untrusted"]]) {
        assert.throws(() => new Sandbox({ securityProfile: bad }),
          (e) => e instanceof SandboxError && /options\.securityProfile must be "untrusted"/.test(e.message));
      }
      for (const bad of ["-x", "", "a b", "a/b", "x".repeat(129), "a\nb", 5]) {
        assert.throws(() => new Sandbox({ apparmor: bad }),
          (e) => e instanceof SandboxError && /options\.apparmor must be an AppArmor profile name/.test(e.message),
          JSON.stringify(bad));
      }
      await withSandbox({ securityProfile: "untrusted", apparmor: "ks_box.v1-x" }, async (sbx) => {
        const r = await sbx.run(["true"]);
        assert.strictEqual(r.exitCode, 0, r.stderr);
        const argv = h.recordedArgv();
        assert.deepStrictEqual(flagValues(argv, "--security-profile"), ["untrusted"]);
        assert.deepStrictEqual(flagValues(argv, "--apparmor"), ["ks_box.v1-x"]);
      });
    });

    it("requireLimits: kern's refusal is a startup_failed fault with its reason; where the " +
      "caps hold, the box runs (positive control)", async function () {
      await withSandbox({ requireLimits: true, image: "fake:mem-unenforced" }, async (sbx) => {
        const r = await sbx.run(["echo", "must not run"]);
        assert.strictEqual(r.stdout, "");
        assert.strictEqual(r.fault && r.fault.type, "startup_failed", JSON.stringify(r));
        assert.match(r.fault.message, /could not be enforced here and --require-limits/);
        assert.ok(kernFlags(h.recordedArgv()).includes("--require-limits"));
      });
      await withSandbox({ requireLimits: true }, async (sbx) => {
        const r = await sbx.run(["echo", "ran"]);
        assert.strictEqual(r.stdout, "ran\n");
        assert.strictEqual(r.fault, null);
      });
      await assert.rejects(withSandbox({ requireLimits: true, image: "fake:mem-unenforced",
        setup: "true" }, async () => assert.fail("must not open")),
      (e) => e instanceof SandboxError && /setup failed \(startup_failed: .*--require-limits/.test(e.message));
      assert.throws(() => new Sandbox({ requireLimits: 1 }), /options\.requireLimits must be a boolean/);
    });

    it("every combination of the flags with network, profiles, egressAllow and the setup box " +
      "passes the double's parser as kern's (a bare token after --net is its value)", async function () {
      // The positive control: the double refuses what 0.1.23 sent.
      const k = h.fakeKern();
      const old = spawnSync(k, ["box", "x", "--image", "img", "--net", "vcpu:heavy", "--", "true"],
        { encoding: "utf8" });
      assert.strictEqual(old.status, 1);
      assert.match(old.stderr, /--net: unexpected value 'vcpu:heavy'/);
      const kinds = [
        {}, { network: true }, { egressAllow: ["pypi.org"] }, { profiles: ["vcpu:heavy", "vdisk:s"] },
        { network: true, profiles: ["vgpio:leds"] },
      ];
      const hardening = [
        {}, { capDrop: [] }, { capDrop: ["NET_RAW", "SYS_ADMIN"] }, { securityProfile: "untrusted" },
        { apparmor: "p1" }, { requireLimits: true },
        { capDrop: ["ALL"], securityProfile: "untrusted", apparmor: "p.2", requireLimits: true },
      ];
      let n = 0;
      for (const a of kinds) {
        for (const b of hardening) {
          const opts = { ...a, ...b, setup: "echo setup-ran" };
          await withSandbox(opts, async (sbx) => {
            const r = await sbx.run(["echo", "ok"]);
            assert.strictEqual(r.stdout, "ok\n", `${JSON.stringify(opts)}: ${r.stderr}`);
            assert.strictEqual(r.fault, null);
            const flags = kernFlags(h.recordedArgv());
            if (opts.network) assert.ok(flags.includes("--net"));
            if (a.profiles) assert.ok(flags.indexOf("--net") === -1 ||
              flags.indexOf("--net") > Math.max(...a.profiles.map((p) => flags.indexOf(p))));
          });
          n++;
        }
      }
      h.note(`${n} option sets, each through a setup box and a run box`);
    });

    it("with capDrop ALL the box has no capabilities (/proc/self/status); capDrop [] keeps them " +
      "(positive control)", async function () {
      if (process.getuid() !== 0) return h.skip(this, "the double drops capabilities only when run as root");
      const caps = async (opts) => withSandbox(opts, async (sbx) => {
        const r = await sbx.run(["sh", "-c", "grep -E '^Cap(Eff|Bnd):' /proc/self/status"]);
        return Object.fromEntries(r.stdout.trim().split("\n").map((l) => l.split(/:\s+/)));
      });
      const none = await caps({});
      assert.deepStrictEqual(none, { CapEff: "0000000000000000", CapBnd: "0000000000000000" });
      const kept = await caps({ capDrop: [] });
      assert.notStrictEqual(kept.CapEff, "0000000000000000");
      const oneLess = await caps({ capDrop: ["NET_RAW"] });
      assert.strictEqual(BigInt(`0x${oneLess.CapBnd}`) & (1n << 13n), 0n, "NET_RAW still bounded");
      assert.notStrictEqual(oneLess.CapBnd, "0000000000000000");
    });

    it("setup: \"pip install <local wheel>\" works with the default capDrop ALL", async function () {
      const py = spawnSync("python3", ["-m", "pip", "--version"], { encoding: "utf8" });
      if (py.status !== 0) return h.skip(this, "python3 -m pip is not installed (python3-pip)");
      const dir = h.tmpDir("wheel-");
      const wheel = buildWheel(dir, "ks_capwheel", "1.0", "VALUE = 'from the wheel'\n");
      // The double runs the setup box on the host: map-script maps the box
      // paths in its script (/workspace/.deps, /wheels) to the host's.
      await withSandbox({ image: "fake:map-script", setup: `pip install --no-index /wheels/${path.basename(wheel)}`,
        mounts: { [dir]: ["/wheels", "ro"] } }, async (sbx) => {
        assert.deepStrictEqual(flagValues(h.recordedArgv(), "--cap-drop"), ["ALL"]);
        const r = await sbx.run(["python3", "-c",
          "import sys; sys.path.insert(0, '.deps'); import ks_capwheel; print(ks_capwheel.VALUE)"]);
        assert.strictEqual(r.stdout, "from the wheel\n", r.stderr);
        assert.deepStrictEqual(await sbx.listFiles(), [], "the install landed outside .deps");
      });
    });
  });

  describe("usage and OOM attribution", function () {
    it("a 200 ms busy loop shows cpuUserMs + cpuSystemMs >= 150; maxRssKb is a number",
      async function () {
        await withSandbox(async (sbx) => {
          const r = await sbx.runCode(
            "import time\nend = time.process_time() + 0.2\nwhile time.process_time() < end: pass");
          assert.strictEqual(r.exitCode, 0, r.stderr);
          assert.ok(r.usage !== null);
          const cpu = r.usage.cpuUserMs + r.usage.cpuSystemMs;
          assert.ok(cpu >= 150, `cpu ${cpu} ms`);
          assert.ok(Number.isInteger(r.usage.maxRssKb) && r.usage.maxRssKb > 0);
          h.note(`busy 200 ms: user ${r.usage.cpuUserMs} ms, system ${r.usage.cpuSystemMs} ms, ` +
            `maxRss ${r.usage.maxRssKb} KiB`);
          const idle = await sbx.run(["true"]);
          assert.ok(idle.usage.cpuUserMs + idle.usage.cpuSystemMs < 100, JSON.stringify(idle.usage));
          assert.deepStrictEqual(Object.keys(idle.usage), ["cpuUserMs", "cpuSystemMs", "maxRssKb"]);
        });
      });

    it("a SIGKILL with the memory cap enforced is killed with oom: true; without a cap, with " +
      "an unenforced cap, at the deadline and at close() it is not", async function () {
      const kill9 = ["sh", "-c", "kill -9 $$"];
      const fault = async (opts, argv = kill9) => withSandbox(opts, (sbx) => sbx.run(argv).then((r) => r.fault));
      const enforced = await fault({});
      assert.strictEqual(enforced.type, "killed");
      assert.strictEqual(enforced.oom, true);
      assert.match(enforced.message, /memory cap enforced: out of memory/);
      assert.ok(isKilledFault(enforced));
      const noCap = await fault({ memoryMb: null });
      assert.deepStrictEqual([noCap.type, noCap.oom], ["killed", false]);
      assert.match(noCap.message, /no memory cap was set/);
      const unenforced = await fault({ image: "fake:mem-unenforced" });
      assert.deepStrictEqual([unenforced.type, unenforced.oom], ["killed", false]);
      assert.match(unenforced.message, /not enforced on this host/);
      const late = await fault({ timeoutS: 0.2 }, ["sleep", "5"]);
      assert.strictEqual(late.type, "timeout");
      assert.strictEqual(late.oom, undefined);
      assert.ok(!isKilledFault(late));
      const sbx = await new Sandbox().open();
      const live = h.liveOutput();
      const p = sbx.run(["sh", "-c", "echo up; sleep 5"], { onStdout: live.onStdout });
      await live.until("up\n");
      await sbx.close();
      const closed = (await p).fault;
      assert.deepStrictEqual([closed.type, closed.oom], ["killed", false]);
    });
  });
});
