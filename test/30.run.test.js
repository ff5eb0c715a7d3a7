"use strict";

// The documented behaviour of runCode/run/setup against the kern test
// double: results, the kern command line, the env channel, files.
const assert = require("assert");
const fs = require("fs");
const os = require("os");
const path = require("path");
const { spawnSync } = require("child_process");
const kern = require("..");
const { Sandbox, SandboxError, withSandbox, runCode } = kern;
const h = require("./lib/harness");

function argvOf(name) {
  return h.recordedArgv(name);
}

function lastBoxArgv() {
  return h.recordedArgv();
}

function flagValue(argv, flag) {
  const i = argv.indexOf(flag);
  return i < 0 ? undefined : argv[i + 1];
}

describe("run", function () {
  describe("the README examples", function () {
    it('runCode("print(sum(range(100)))") gives "4950\\n" and success', async function () {
      const r = await runCode("print(sum(range(100)))");
      assert.strictEqual(r.stdout, "4950\n");
      assert.strictEqual(r.success, true);
      assert.strictEqual(r.exitCode, 0);
      assert.strictEqual(r.fault, null);
      assert.strictEqual(r.stderr, "");
      assert.strictEqual(r.truncated, false);
      assert.deepStrictEqual(r.files, []);
      assert.ok(r instanceof kern.ExecutionResult);
      assert.ok(r.durationMs > 0 && r.durationMs < 10000, `durationMs ${r.durationMs}`);
    });

    it("runs node with -e (evaluates, not a syntax check)", async function () {
      const r = await runCode("console.log([1,2,3].map(x => x * x))",
        { image: "node:20-slim", language: "node" });
      assert.strictEqual(r.stdout, "[ 1, 4, 9 ]\n");
      assert.deepStrictEqual(h.boxCommand(lastBoxArgv()),
        ["node", "-e", "console.log([1,2,3].map(x => x * x))"]);
    });

    it("runs bash snippets with sh -c", async function () {
      const r = await runCode("echo $((6*7))", { language: "bash" });
      assert.strictEqual(r.stdout, "42\n");
    });

    it("a timeout is a fault, not an exception", async function () {
      const r = await runCode("while True: pass", { timeoutS: 1 });
      assert.strictEqual(r.success, false);
      assert.strictEqual(r.fault.type, "timeout");
    });

    it("a session keeps files across calls, not memory", async function () {
      await withSandbox(async (sbx) => {
        await sbx.writeFile("data.csv", "a,b\n1,2\n");
        const r = await sbx.runCode(
          "import csv; rows=list(csv.reader(open('data.csv'))); print(len(rows));" +
          "open('out.txt','w').write('hello')");
        assert.strictEqual(r.stdout, "2\n");
        assert.deepStrictEqual(r.files, [{ path: "out.txt", size: 5, change: "created" }]);
        assert.strictEqual((await sbx.readFile("out.txt")).toString(), "hello");
        const r2 = await sbx.runCode("x = 1");
        const r3 = await sbx.runCode("print(x)");
        assert.strictEqual(r2.exitCode, 0);
        assert.notStrictEqual(r3.exitCode, 0, "memory must not persist between calls");
        assert.strictEqual(r3.fault, null, "the workload's own failure is not a fault");
      });
    });
  });

  it("a non-zero exit of the code is a result, not a fault", async function () {
    const r = await runCode("import sys; sys.stderr.write('boom\\n'); sys.exit(3)");
    assert.strictEqual(r.exitCode, 3);
    assert.strictEqual(r.fault, null);
    assert.strictEqual(r.success, false);
    assert.strictEqual(r.stderr, "boom\n");
  });

  it("KERN_SANDBOX_TRACKER=0 (full scans, no inotify) reports the same files as the tracker",
    function () {
      this.timeout(h.startWait(20000));
      // In a child, because the switch is read once, when the addon loads.
      const code = `
        const fs = require("fs");
        const { withSandbox } = require(${JSON.stringify(h.repo)});
        withSandbox(async (sbx) => {
          await sbx.writeFile("keep.txt", "1");
          await sbx.writeFile("mod.txt", "1");
          const a = await sbx.run(["sh", "-c", "mkdir -p sub && printf abc > sub/new.txt && " +
            "printf 12345 > mod.txt && mkdir -p .deps && echo x > .deps/ignored"]);
          const b = await sbx.run(["sh", "-c", "printf 1234 > sub/new.txt && mv mod.txt moved.txt"]);
          const inotify = fs.readdirSync("/proc/self/fd").filter((fd) => {
            try { return fs.readlinkSync("/proc/self/fd/" + fd) === "anon_inode:inotify"; } catch { return false; }
          }).length;
          process.stdout.write(JSON.stringify({ a: a.files, b: b.files, inotify }));
        });`;
      const runWith = (tracker) => {
        const env = { ...process.env };
        if (tracker === null) delete env.KERN_SANDBOX_TRACKER;
        else env.KERN_SANDBOX_TRACKER = tracker;
        const r = spawnSync(process.execPath, ["-e", code], { env, encoding: "utf8" });
        assert.strictEqual(r.status, 0, r.stderr);
        return JSON.parse(r.stdout);
      };
      const scans = runWith("0");
      const tracked = runWith(null);
      assert.deepStrictEqual(scans.a, [
        { path: "mod.txt", size: 5, change: "modified" },
        { path: "sub/new.txt", size: 3, change: "created" },
      ]);
      assert.deepStrictEqual(scans.b, [
        { path: "moved.txt", size: 5, change: "created" },
        { path: "sub/new.txt", size: 4, change: "modified" },
      ]);
      assert.deepStrictEqual({ a: tracked.a, b: tracked.b }, { a: scans.a, b: scans.b });
      // Positive control: the switch took; only the tracker holds an inotify instance.
      assert.strictEqual(scans.inotify, 0);
      assert.ok(tracked.inotify >= 1, `the tracker's inotify instance: ${tracked.inotify}`);
    });

  it("reports created and modified files with sizes", async function () {
    await withSandbox(async (sbx) => {
      await sbx.writeFile("keep.txt", "1");
      await sbx.writeFile("mod.txt", "1");
      const r = await sbx.run(["sh", "-c",
        "mkdir -p sub && printf abc > sub/new.txt && printf 12345 > mod.txt && mkdir -p .deps && " +
        "echo x > .deps/ignored"]);
      assert.deepStrictEqual(r.files, [
        { path: "mod.txt", size: 5, change: "modified" },
        { path: "sub/new.txt", size: 3, change: "created" },
      ]);
    });
  });

  it("reports names that are not UTF-8 as Buffers, and any name exactly, in order", async function () {
    // The engine hands result.files over packed (paths joined by NUL, sizes
    // and kinds in typed arrays); lib/changes.js unpacks them.
    await withSandbox(async (sbx) => {
      await sbx.writeFile("b-mod", "1");
      const r = await sbx.run(["sh", "-c",
        "printf 12 > b-mod && printf 1 > \"$(printf 'a-raw\\377')\" && printf 123 > 'c-\u00fc \u4e2d' && " +
        "printf '' > 'd-empty'"]);
      assert.strictEqual(r.files.length, 4);
      const [raw, mod, uni, empty] = r.files;
      assert.ok(Buffer.isBuffer(raw.path), "a name that is not UTF-8 stays bytes");
      assert.deepStrictEqual(raw.path, Buffer.from("a-raw\xff", "latin1"));
      assert.deepStrictEqual({ ...raw, path: null }, { path: null, size: 1, change: "created" });
      assert.deepStrictEqual(mod, { path: "b-mod", size: 2, change: "modified" });
      assert.deepStrictEqual(uni, { path: "c-\u00fc \u4e2d", size: 3, change: "created" });
      assert.deepStrictEqual(empty, { path: "d-empty", size: 0, change: "created" });
    });
  });

  it("passes bash code over 128 KiB through a workspace file and removes it; Python code of " +
    "any size goes to the box's interpreter, with no file", async function () {
    await withSandbox({ prewarm: 0 }, async (sbx) => {
      const code = `x="${"a".repeat(140 * 1024)}"\necho \${#x}\n`;
      const r = await sbx.runCode(code, { language: "bash" });
      assert.strictEqual(r.stdout, `${140 * 1024}\n`);
      const cmd = h.boxCommand(lastBoxArgv());
      assert.strictEqual(cmd.length, 2);
      assert.match(cmd[1], /^\/workspace\/\.cell-[0-9a-f]+\.sh$/);
      assert.deepStrictEqual(await sbx.listFiles(), []);
      const py = await sbx.runCode(`x = "${"a".repeat(140 * 1024)}"\nprint(len(x))\n`);
      assert.strictEqual(py.stdout, `${140 * 1024}\n`);
      assert.deepStrictEqual(h.boxCommand(lastBoxArgv()).slice(0, 2), ["python3", "-c"]);
      assert.deepStrictEqual(py.files, []);
      assert.deepStrictEqual(await sbx.listFiles(), []);
    });
  });

  it("run() refuses a string or an empty array", async function () {
    await withSandbox(async (sbx) => {
      await assert.rejects(sbx.run("ls -la"), (e) => e instanceof SandboxError && /argv array/.test(e.message));
      await assert.rejects(sbx.run([]), SandboxError);
      await assert.rejects(sbx.run(["echo", 1]), SandboxError);
      await assert.rejects(sbx.run(["echo", "a\0b"]), SandboxError);
      const ok = await sbx.run(["echo", "--net", "-v", "/:/h"]);
      assert.strictEqual(ok.stdout, "--net -v /:/h\n", "A31: argv after -- arrives byte-exact");
    });
  });

  it("refuses calls before open() and after close()", async function () {
    const s = new Sandbox();
    await assert.rejects(s.runCode("1"), /open the Sandbox first/);
    await s.open();
    await s.close();
    await s.close(); // idempotent
    await assert.rejects(s.run(["true"]), /the Sandbox is closed: open\(\) it again/);
    await assert.rejects(s.readFile("x"), /the Sandbox is closed/);
  });

  describe("lifecycle races", function () {
    const fdCount = () => fs.readdirSync("/proc/self/fd").length;
    // A run whose box is up (it printed), so close() has a box to kill.
    async function runningBox(s) {
      let up;
      const printed = new Promise((resolve) => (up = resolve));
      s.onStdout = up;
      const run = s.run(["sh", "-c", "echo up; sleep 5"]);
      await printed;
      s.onStdout = null;
      return { run };
    }

    it("open() while close() is still running waits for it, then opens a working session; " +
      "nothing of either is left", async function () {
      const tmp = os.tmpdir();
      const wsBefore = fs.readdirSync(tmp).filter((n) => n.startsWith("kern-ws-")).length;
      const fds = fdCount();
      const s = new Sandbox();
      await s.open();
      const { run: running } = await runningBox(s);
      const closing = s.close();
      await s.open(); // while the close() above still waits for its box
      await closing;
      assert.strictEqual((await running).fault.type, "killed");
      await s.writeFile("a.txt", "x");
      assert.strictEqual((await s.run(["cat", "a.txt"])).stdout, "x");
      await s.close();
      assert.strictEqual(fs.readdirSync(tmp).filter((n) => n.startsWith("kern-ws-")).length, wsBefore);
      assert.ok(await h.waitFor(() => fdCount() === fds, 2000), `descriptors: ${fdCount()} vs ${fds}`);
    });

    it("every close() resolves only once the session is gone (a second, concurrent close() too)",
      async function () {
        const s = await new Sandbox().open();
        const ws = flagValue(await s.run(["true"]).then(() => lastBoxArgv()), "-v").split(":")[0];
        const { run: running } = await runningBox(s);
        const first = s.close();
        await s.close();
        assert.ok(!fs.existsSync(ws), "the second close() resolved before the workspace was gone");
        await first;
        await running;
      });

    it("a second open() during setup waits for the setup; if setup fails, both reject and " +
      "nothing runs", async function () {
      const marker = `ks-setup-${process.pid}-fail`;
      const s = new Sandbox({ setup: `sleep 0.5; : ${marker}; exit 3` });
      const first = s.open();
      assert.ok(await h.waitFor(() => h.processesWith(marker).length > 0, 5000), "setup never ran");
      const second = s.open();
      const [a, b] = await Promise.allSettled([first, second]);
      assert.strictEqual(a.status, "rejected");
      assert.strictEqual(b.status, "rejected", "the second open() resolved during a failing setup");
      assert.match(b.reason.message, /setup failed \(exit 3\)/);
      await assert.rejects(s.run(["true"]), kern.SandboxError);
    });

    it("close() during setup kills the setup box at once and makes open() fail", async function () {
      const marker = `ks-setup-${process.pid}-close`;
      const s = new Sandbox({ setup: `sleep 30; : ${marker}` });
      const opening = s.open();
      assert.ok(await h.waitFor(() => h.processesWith(marker).length > 0, 5000), "setup never ran");
      const t0 = Date.now();
      await s.close();
      const closeMs = Date.now() - t0;
      await assert.rejects(opening, /closed while open\(\) was still running/);
      assert.ok(closeMs < 2000, `close() took ${closeMs} ms`);
      await assert.rejects(s.run(["true"]), /the Sandbox is closed/);
      // It can be opened again.
      s.setup = null;
      await s.open();
      assert.strictEqual((await s.run(["echo", "again"])).stdout, "again\n");
      await s.close();
    });
  });

  it("refuses an unknown language", async function () {
    await assert.rejects(runCode("1", { language: "ruby" }), /unsupported language/);
  });

  describe("the kern command line", function () {
    it("has the documented flags, --workdir, a backstop timeout and no secret", async function () {
      // prewarm: 0: the last box started is the call's, not a refill's.
      await withSandbox({ env: { TOKEN: "CANARY-0123" }, timeoutS: 2.5, cpus: 1.5, prewarm: 0 }, async (sbx) => {
        const r = await sbx.run(["sh", "-c", "echo $TOKEN $PYTHONPATH"]);
        assert.strictEqual(r.stdout, "CANARY-0123 /workspace/.deps\n");
        const argv = lastBoxArgv();
        assert.strictEqual(argv[1], "box");
        assert.match(argv[2], /^ksbx-[0-9a-f]{16}$/);
        assert.strictEqual(flagValue(argv, "--image"), "python:3.12-slim");
        assert.ok(argv.includes("--ro"));
        assert.strictEqual(flagValue(argv, "--workdir"), "/workspace");
        assert.strictEqual(flagValue(argv, "-v").endsWith(":/workspace"), true);
        assert.strictEqual(flagValue(argv, "--timeout"), "8", "ceil(2.5) + 5 whole seconds");
        assert.strictEqual(flagValue(argv, "--memory"), "512m");
        assert.strictEqual(flagValue(argv, "--pids-limit"), "256");
        assert.strictEqual(flagValue(argv, "--cpus"), "1.5");
        assert.strictEqual(flagValue(argv, "--env-file"), "/dev/fd/4");
        assert.ok(!argv.includes("--net") && !argv.includes("--egress-allow"));
        assert.ok(!argv.join(" ").includes("CANARY-0123"), "A34: the env never appears in argv");
        const ws = flagValue(argv, "-v").split(":")[0];
        assert.ok(!fs.readdirSync(ws).some((f) => f.includes("env")), "no env file in the workspace");
      });
    });

    it("public fields changed between calls take effect at the next call, validated again " +
      "(0.1.1 read them at each call)", async function () {
      await withSandbox({ env: { A: "1" } }, async (sbx) => {
        assert.strictEqual((await sbx.run(["sh", "-c", "echo $A"])).stdout, "1\n");
        sbx.env.A = "2"; // in place, as 0.1.1 allowed
        assert.strictEqual((await sbx.run(["sh", "-c", "echo $A"])).stdout, "2\n");
        Object.assign(sbx, { env: { A: "3" }, image: "alpine:3.20", memoryMb: 64, cpus: 2, pids: null,
          network: true });
        assert.strictEqual((await sbx.run(["sh", "-c", "echo $A"])).stdout, "3\n");
        const argv = lastBoxArgv();
        assert.strictEqual(flagValue(argv, "--image"), "alpine:3.20");
        assert.strictEqual(flagValue(argv, "--memory"), "64m");
        assert.strictEqual(flagValue(argv, "--cpus"), "2");
        assert.ok(!argv.includes("--pids-limit") && argv.includes("--net"));
        sbx.timeoutS = 0.3;
        const slow = await sbx.run(["sh", "-c", "sleep 5"]);
        assert.strictEqual(slow.fault && slow.fault.type, "timeout");
        assert.match(slow.fault.message, /0\.3s/);
        sbx.timeoutS = -1;
        await assert.rejects(sbx.run(["true"]),
          (e) => e instanceof kern.SandboxError && /^sandbox\.timeoutS must be/.test(e.message));
        sbx.timeoutS = 30;
        sbx.env = { "A=B": "x" };
        await assert.rejects(sbx.run(["true"]), kern.SandboxError);
        sbx.env = null;
        assert.strictEqual((await sbx.run(["sh", "-c", "echo ${A:-unset}"])).stdout, "unset\n");
        // enforceLimits reaches kern's environment (KERN_NO_SCOPE), both ways.
        const noScope = async () => (await sbx.runCode("", { language: "bash" })).stderr
          .split("\n").includes("fake-kern: env KERN_NO_SCOPE=1");
        sbx.image = "fake:dump";
        assert.strictEqual(await noScope(), false);
        sbx.enforceLimits = false;
        assert.strictEqual(await noScope(), true);
        sbx.enforceLimits = true;
        assert.strictEqual(await noScope(), false);
      });
    });

    it("omits caps that are null", async function () {
      await withSandbox({ memoryMb: null, pids: null }, async (sbx) => {
        await sbx.run(["true"]);
        const argv = lastBoxArgv();
        assert.ok(!argv.includes("--memory") && !argv.includes("--pids-limit") && !argv.includes("--cpus"));
      });
    });

    it("network: true adds --net after the profiles", async function () {
      await withSandbox({ network: true, profiles: ["vcpu:heavy"] }, async (sbx) => {
        await sbx.run(["true"]);
        const argv = lastBoxArgv();
        assert.ok(argv.indexOf("--net") > argv.indexOf("vcpu:heavy"));
        assert.ok(argv[argv.indexOf("--net") + 1].startsWith("-"), "never a bare token after --net");
      });
    });

    it("egressAllow goes to run boxes only; the setup box gets --net", async function () {
      h.clearState();
      await withSandbox({ egressAllow: ["pypi.org", "files.pythonhosted.org"], setup: "true" },
        async (sbx) => {
          const setupArgv = lastBoxArgv();
          assert.ok(setupArgv.includes("--net"));
          assert.ok(!setupArgv.includes("--egress-allow"));
          await sbx.run(["true"]);
          const argv = lastBoxArgv();
          assert.strictEqual(flagValue(argv, "--egress-allow"), "pypi.org,files.pythonhosted.org");
          assert.ok(!argv.includes("--net"));
        });
    });

    it("mounts become -v SRC:DST[:ro] with the resolved source", async function () {
      const d1 = h.tmpDir("m1-");
      const d2 = h.tmpDir("m2-");
      await withSandbox({ mounts: { [d1]: "/data", [d2]: ["/ref", "ro"] } }, async (sbx) => {
        await sbx.run(["true"]);
        const argv = lastBoxArgv();
        const vs = argv.filter((a, i) => argv[i - 1] === "-v");
        assert.ok(vs.includes(`${fs.realpathSync(d1)}:/data`));
        assert.ok(vs.includes(`${fs.realpathSync(d2)}:/ref:ro`));
      });
    });

    it("A28: refuses a mount source inside the workspace", async function () {
      const ws = h.tmpDir("ws-");
      fs.mkdirSync(path.join(ws, "sub"));
      const s = new Sandbox({ workspace: ws, mounts: { [path.join(ws, "sub")]: "/sub" } });
      await assert.rejects(s.open(), kern.MountRefused);
    });

    it("enforceLimits: false sets KERN_NO_SCOPE=1 for kern; stray KERN_* never reach it (A35)",
      async function () {
        const saved = { ...process.env };
        process.env.KERN_SECCOMP = "denylist";
        process.env.KERN_MANAGED = "1";
        process.env.KERN_CONFIG = "/tmp/evil.toml";
        process.env.KERN_NO_SCOPE = "1";
        try {
          for (const enforceLimits of [true, false]) {
            const r = await runCode("", { language: "bash", image: "fake:dump", enforceLimits });
            const env = r.stderr.split("\n").filter((l) => l.startsWith("fake-kern: env "))
              .map((l) => l.slice("fake-kern: env ".length));
            assert.ok(env.includes("KERN_STARTED_FD=3"));
            assert.strictEqual(env.includes("KERN_NO_SCOPE=1"), !enforceLimits);
            assert.ok(!env.some((e) => /^KERN_(SECCOMP|MANAGED|CONFIG)=/.test(e)), env.join(","));
            assert.ok(env.some((e) => e.startsWith("PATH=")), "positive control: PATH passes");
          }
        } finally {
          for (const k of ["KERN_SECCOMP", "KERN_MANAGED", "KERN_CONFIG", "KERN_NO_SCOPE"])
            if (saved[k] === undefined) delete process.env[k];
        }
      });

    it("depsReadonly mounts .deps read-only on run boxes, once it exists", async function () {
      // prewarm: 0: the argv read is the call's own box (a prewarmed box's
      // mounts are checked by test/42's E3).
      await withSandbox({ depsReadonly: true, prewarm: 0 }, async (sbx) => {
        await sbx.run(["true"]);
        assert.ok(!lastBoxArgv().some((a) => a.endsWith(":/workspace/.deps:ro")), "no .deps yet");
        await sbx.run(["mkdir", ".deps"]);
        await sbx.run(["true"]);
        assert.ok(lastBoxArgv().some((a) => a.endsWith("/.deps:/workspace/.deps:ro")));
      });
    });
  });

  describe("setup", function () {
    it("routes pip install to /workspace/.deps on a network-on box", async function () {
      // --no-index keeps the host's pip (which the double runs) off the network.
      const err = await withSandbox({ setup: "pip install --no-index ks-no-such-package" },
        async () => null).catch((e) => e);
      const argv = lastBoxArgv();
      const cmd = h.boxCommand(argv);
      assert.strictEqual(cmd[0], "sh");
      assert.match(cmd[2],
        /^pip install --target \/workspace\/\.deps --no-cache-dir .* --no-index ks-no-such-package$/);
      assert.ok(argv.includes("--net"));
      assert.strictEqual(flagValue(argv, "--timeout"), "125", "setup gets at least 120 s");
      assert.ok(err instanceof SandboxError && /setup failed/.test(err.message), String(err));
    });

    it("a failing setup throws SandboxError and leaves no workspace", async function () {
      const before = fs.readdirSync(os.tmpdir()).filter((f) => f.startsWith("kern-ws-"));
      await assert.rejects(
        withSandbox({ setup: "echo nope >&2; exit 4" }, async () => assert.fail("must not run")),
        (e) => e instanceof SandboxError && /setup failed \(exit 4\): nope/.test(e.message));
      const after = fs.readdirSync(os.tmpdir()).filter((f) => f.startsWith("kern-ws-"));
      assert.deepStrictEqual(after.filter((f) => !before.includes(f)), []);
    });

    it("a succeeding setup runs once, before the calls", async function () {
      await withSandbox({ setup: "echo ran >> setup.log" }, async (sbx) => {
        await sbx.run(["true"]);
        assert.strictEqual((await sbx.readFile("setup.log")).toString(), "ran\n");
      });
    });
  });

  describe("workspaces", function () {
    it("close() deletes a workspace it created, and leaves a given one alone", async function () {
      const s = new Sandbox();
      await s.open();
      await s.writeFile("a/b.txt", "x");
      await s.run(["true"]);
      const ws = flagValue(lastBoxArgv(), "-v").split(":")[0];
      assert.ok(fs.existsSync(ws));
      await s.close();
      assert.ok(!fs.existsSync(ws));

      const given = h.tmpDir("given-");
      await withSandbox({ workspace: given }, (sbx) => sbx.writeFile("kept.txt", "1"));
      assert.strictEqual(fs.readFileSync(path.join(given, "kept.txt"), "utf8"), "1");
    });

    it("refuses a sensitive workspace", async function () {
      await assert.rejects(new Sandbox({ workspace: "/etc" }).open(), kern.MountRefused);
    });

    it("refuses a relative or missing workspace (as 0.1.1 does), and creates nothing on the way, " +
      "not even under a sensitive tree", async function () {
      const missing = path.join(h.tmpDir("missing-"), "a", "b");
      await assert.rejects(new Sandbox({ workspace: missing }).open(),
        (e) => e instanceof kern.MountRefused && /does not exist: create the directory first/.test(e.message));
      assert.ok(!fs.existsSync(path.dirname(missing)));
      await assert.rejects(new Sandbox({ workspace: "ws-relative" }).open(),
        (e) => e instanceof kern.MountRefused && /must be an absolute host path/.test(e.message));
      assert.ok(!fs.existsSync(path.resolve("ws-relative")));
      // A missing path under a sensitive tree: refused, with nothing made
      // there (the check comes before any mkdir).
      const ssh = path.join(os.homedir(), ".ssh");
      const sshExisted = fs.existsSync(ssh);
      const secret = path.join(ssh, `ks-ws-${process.pid}`, "deep");
      await assert.rejects(new Sandbox({ workspace: secret }).open(), kern.MountRefused);
      assert.ok(!fs.existsSync(path.dirname(secret)), `${path.dirname(secret)} was created`);
      assert.strictEqual(fs.existsSync(ssh), sshExisted, `${ssh} was created`);
      // Positive control: the same calls succeed once the directory exists.
      fs.mkdirSync(missing, { recursive: true });
      await withSandbox({ workspace: missing }, (sbx) => sbx.writeFile("ok.txt", "1"));
      assert.strictEqual(fs.readFileSync(path.join(missing, "ok.txt"), "utf8"), "1");
    });
  });
});
