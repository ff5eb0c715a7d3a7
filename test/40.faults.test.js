"use strict";

// Fault classification in the 0.1.1 order, and the cases where kern's or the
// workload's output must NOT turn a result into a fault (A42, C22).
const assert = require("assert");
const { runCode, withSandbox } = require("..");
const h = require("./lib/harness");

const sh = (code, opts = {}) => runCode(code, { language: "bash", ...opts });

describe("faults", function () {
  it("C22: exit codes 0..255 pass through; only 137, 143 and 159 are faults", async function () {
    for (const code of [0, 1, 2, 3, 42, 124, 125, 126, 127, 128, 130, 136, 139, 255]) {
      const r = await sh(`exit ${code}`);
      assert.strictEqual(r.exitCode, code);
      assert.strictEqual(r.fault, null, `exit ${code}`);
    }
  });

  it("escape_blocked: the workload died of SIGSYS (159)", async function () {
    const r = await sh("kill -SYS $$");
    assert.strictEqual(r.exitCode, 159);
    assert.strictEqual(r.fault.type, "escape_blocked");
    assert.strictEqual(r.success, false);
  });

  it("killed: the workload died of SIGKILL (137)", async function () {
    const r = await sh("kill -KILL $$");
    assert.strictEqual(r.exitCode, 137);
    assert.strictEqual(r.fault.type, "killed");
  });

  it("timeout: kern's backstop terminated the workload (143)", async function () {
    const r = await sh("kill -TERM $$");
    assert.strictEqual(r.exitCode, 143);
    assert.strictEqual(r.fault.type, "timeout");
  });

  it("timeout: our own deadline comes first, whatever the exit status", async function () {
    const r = await sh("trap '' TERM; while :; do :; done", { timeoutS: 0.3 });
    assert.strictEqual(r.fault.type, "timeout");
    assert.match(r.fault.message, /0\.3s/);
    assert.strictEqual(r.exitCode, 137);
  });

  describe("startup_failed", function () {
    it("comes from kern when the image cannot be pulled (no started bytes)", async function () {
      const r = await sh("echo never", { image: "nonexistent:latest" });
      assert.strictEqual(r.fault.type, "startup_failed");
      assert.strictEqual(r.fault.message, "error: pull: nonexistent:latest: manifest unknown");
      assert.strictEqual(r.exitCode, 1);
      assert.strictEqual(r.stdout, "");
    });

    it("comes from kern when the sandbox cannot be created", async function () {
      const r = await sh("echo never", { image: "fake:parent-fail+warn" });
      assert.strictEqual(r.fault.type, "startup_failed");
      assert.match(r.fault.message, /^error: box: could not create the sandbox/);
    });

    it("A42: a workload forging kern's error lines gets a normal result", async function () {
      const r = await sh(
        "echo 'kern: sandbox setup failed: forged' >&2; echo 'error: pull: forged' >&2; exit 125");
      assert.strictEqual(r.exitCode, 125);
      assert.strictEqual(r.fault, null);
      // Positive control: the same lines with kern's silence on the started
      // fd are kern's own failure.
      const real = await sh("true", { image: "fake:setup-fail+no-started" });
      assert.strictEqual(real.fault.type, "startup_failed");
      assert.match(real.fault.message, /^kern: sandbox setup failed/);
    });

    it("kern's warning and note lines never turn a workload's exit into a fault", async function () {
      // fake:warn's systemd-scope note stands for a kern line with no switch
      // to turn it off (KERN_QUIET and --allow-uncapped drop the others).
      const r = await sh("echo out; exit 2", { image: "fake:warn" });
      assert.strictEqual(r.exitCode, 2);
      assert.strictEqual(r.fault, null);
      assert.match(r.stderr, /kern: note:/);
    });

    it("the message is kern's error line, not its warnings, control characters escaped (A43)",
      async function () {
        const r = await sh("true", { image: "fake:warn+parent-fail" });
        assert.strictEqual(r.fault.type, "startup_failed");
        assert.ok(!/warning|note/.test(r.fault.message), r.fault.message);
      });

    it("with a kern never seen writing the started bytes (older kerns), only kern's own " +
      "prefixes make a startup failure: a workload's 'error:' line and exit 1 is a normal result",
    async function () {
      // A copy of the double at a path of its own, run only silent: the
      // package has never seen this kern speak the started fd.
      const saved = process.env.KERN_BIN;
      process.env.KERN_BIN = h.privateKern(h.tmpDir("old-kern-"));
      try {
        const image = "fake:no-started";
        for (const line of ["error: bad input", "error: could not compile `app`", "Error: x"]) {
          const r = await sh(`echo '${line}' >&2; exit 1`, { image });
          assert.deepStrictEqual([r.exitCode, r.fault], [1, null], line);
        }
        // Positive controls: kern's own lines, with the same silence.
        const pull = await sh("echo never", { image: "nonexistent:latest" });
        assert.strictEqual(pull.fault.type, "startup_failed");
        assert.match(pull.fault.message, /^error: pull: /);
        const setup = await sh("true", { image: "fake:setup-fail+no-started" });
        assert.strictEqual(setup.fault.type, "startup_failed");
        assert.match(setup.fault.message, /^kern: sandbox setup failed/);
      } finally {
        process.env.KERN_BIN = saved;
      }
    });

    it("A42: garbage or a short write on the started fd is classified safely", async function () {
      for (const mode of ["garbage-started", "one-started", "no-started"]) {
        const ok = await sh("echo fine", { image: `fake:${mode}` });
        assert.strictEqual(ok.fault, null, mode);
        assert.strictEqual(ok.stdout, "fine\n");
        const fail = await sh("exit 5", { image: `fake:${mode}` });
        assert.strictEqual(fail.exitCode, 5, mode);
      }
    });
  });

  it("A42: the box cannot write kern's started fd (it is not inherited)", async function () {
    const r = await sh("echo x >&3 2>/dev/null && echo wrote || echo EBADF");
    assert.strictEqual(r.stdout, "EBADF\n");
    assert.strictEqual(r.fault, null);
  });

  it("a fault never hides the output captured before it", async function () {
    const r = await sh("echo before; kill -KILL $$");
    assert.strictEqual(r.stdout, "before\n");
    assert.strictEqual(r.fault.type, "killed");
  });

  it("the session survives faults", async function () {
    await withSandbox({ timeoutS: 0.5 }, async (sbx) => {
      assert.strictEqual((await sbx.run(["sh", "-c", "sleep 5"])).fault.type, "timeout");
      assert.strictEqual((await sbx.run(["sh", "-c", "kill -9 $$"])).fault.type, "killed");
      const r = await sbx.run(["echo", "ok"]);
      assert.strictEqual(r.stdout, "ok\n");
      assert.strictEqual(r.success, true);
    });
    assert.ok(await h.waitFor(() => require("../lib/binding").liveBoxes() === 0));
  });
});
