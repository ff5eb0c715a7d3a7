"use strict";

// Issue 32: every SandboxError the package throws carries a stable `code`:
// one of lib/errors.js's CODES (the same list as types/index.d.ts's
// SandboxErrorCode and the README's table), or a host system error's code
// with its errno and syscall. Three checks: the lists agree; every throw
// site in lib/ names a code (read from the source, so that a site no test
// reaches is still checked); and each kind of failure a caller can reach
// throws with its code. Also: `await using` closes a Sandbox and a Kernel.
const assert = require("assert");
const fs = require("fs");
const path = require("path");
const { execFileSync } = require("child_process");
const h = require("./lib/harness");
const { Sandbox, SandboxError, MountRefused, withSandbox } = require("..");
const { CODES } = require("../lib/errors");

const LIB = path.join(h.repo, "lib");
const SYSTEM_CODE = /^E[A-Z0-9]+$/;

/** Asserts that p (a promise or a function) throws a SandboxError with code. */
async function rejectsWith(p, code, extra = () => {}) {
  let err = null;
  try {
    await (typeof p === "function" ? p() : p);
  } catch (e) {
    err = e;
  }
  assert.ok(err !== null, `expected ${code}, but nothing was thrown`);
  assert.ok(err instanceof SandboxError, `expected a SandboxError, got ${err && err.stack}`);
  if (code instanceof RegExp) assert.match(err.code, code, err.message);
  else assert.strictEqual(err.code, code, `${err.message}`);
  extra(err);
  return err;
}

describe("SandboxError codes (issue 32)", function () {
  this.timeout(h.underSanitizer ? 120000 : 30000);

  it("lib/errors.js, types/index.d.ts and the README list the same codes", function () {
    const types = fs.readFileSync(path.join(h.repo, "types/index.d.ts"), "utf8");
    const union = types.slice(types.indexOf("export type SandboxErrorCode ="));
    const inTypes = [...union.slice(0, union.indexOf(";")).matchAll(/"(ERR_[A-Z_]+)"/g)].map((m) => m[1]);
    assert.deepStrictEqual(inTypes, Object.keys(CODES));
    const readme = fs.readFileSync(path.join(h.repo, "README.md"), "utf8");
    const inReadme = [...readme.matchAll(/^\| `(ERR_SANDBOX_[A-Z_]+)` \|/gm)].map((m) => m[1]);
    assert.deepStrictEqual(inReadme, Object.keys(CODES));
  });

  it("every throw site in lib/ names a code from the list (read from the source)", function () {
    const bare = [];
    const unknown = [];
    let sites = 0;
    for (const file of fs.readdirSync(LIB).filter((f) => f.endsWith(".js"))) {
      const src = fs.readFileSync(path.join(LIB, file), "utf8");
      for (const m of src.matchAll(/sandboxError\(\s*"([A-Z_]+)"/g)) {
        sites++;
        if (!Object.prototype.hasOwnProperty.call(CODES, m[1])) unknown.push(`${file}: ${m[1]}`);
      }
      // A SandboxError made directly must get its code from a system error
      // (withSystemFields, with a code of the list as its fallback).
      for (const m of src.matchAll(/new SandboxError\(/g)) {
        const line = src.slice(0, m.index).split("\n").length;
        const around = src.slice(Math.max(0, m.index - 40), m.index + 400);
        const ok = file === "errors.js" || /withSystemFields\(new SandboxError\(/.test(around);
        if (!ok) bare.push(`${file}:${line}`);
      }
    }
    assert.deepStrictEqual(unknown, []);
    assert.deepStrictEqual(bare, [], "a SandboxError made without a code");
    assert.ok(sites > 60, `positive control: the scan found ${sites} coded sites`);
    assert.strictEqual(new MountRefused("x").code, "ERR_SANDBOX_MOUNT_REFUSED");
  });

  describe("each kind of failure throws with its code", function () {
    let s;
    before(async function () {
      s = await new Sandbox({ prewarm: 0 }).open();
    });
    after(async function () {
      if (s) await s.close();
    });

    it("options and arguments", async function () {
      await rejectsWith(() => new Sandbox({ timeoutS: -1 }), "ERR_SANDBOX_INVALID_OPTION");
      await rejectsWith(() => new Sandbox("python"), "ERR_SANDBOX_INVALID_OPTION");
      await rejectsWith(() => new Sandbox({ env: { A: "x\ny" } }), "ERR_SANDBOX_INVALID_OPTION");
      await rejectsWith(s.runCode("1", { timeoutS: 0 }), "ERR_SANDBOX_INVALID_OPTION");
      await rejectsWith(s.runCode("1", { onStdout: 5 }), "ERR_SANDBOX_INVALID_OPTION");
      await rejectsWith(s.readFile("x", { maxBytes: -1 }), "ERR_SANDBOX_INVALID_OPTION");
      await rejectsWith(s.open({ signal: 5 }), "ERR_SANDBOX_INVALID_OPTION");
      await rejectsWith(s.runCode(5), "ERR_SANDBOX_INVALID_ARG");
      await rejectsWith(s.runCode("print(1)\0"), "ERR_SANDBOX_INVALID_ARG");
      await rejectsWith(s.run("ls"), "ERR_SANDBOX_INVALID_ARG");
      await rejectsWith(s.run([]), "ERR_SANDBOX_INVALID_ARG");
      await rejectsWith(withSandbox(5), "ERR_SANDBOX_INVALID_ARG");
      s.timeoutS = -5; // a field set since the constructor: judged at the call
      await rejectsWith(s.runCode("1"), "ERR_SANDBOX_INVALID_OPTION");
      s.timeoutS = 30;
    });

    it("workspace paths, and host file-system failures with the system error's fields",
      async function () {
        await rejectsWith(s.readFile("../x"), "ERR_SANDBOX_INVALID_PATH");
        await rejectsWith(s.writeFile("/etc/x", "y"), "ERR_SANDBOX_INVALID_PATH");
        await rejectsWith(s.readFile("dir/"), "ERR_SANDBOX_INVALID_PATH");
        await rejectsWith(s.readFile("missing.txt"), "ENOENT", (e) => {
          assert.strictEqual(typeof e.errno, "number");
          assert.strictEqual(typeof e.syscall, "string");
        });
        await s.writeFile("big.bin", Buffer.alloc(5000));
        await rejectsWith(s.readFile("big.bin", { maxBytes: 10 }), "EFBIG");
        await s.writeFile("d/f", "x");
        await rejectsWith(s.readFile("d"), SYSTEM_CODE);
      });

    it("mounts, kern, the session's state, setup", async function () {
      await rejectsWith(() => new Sandbox({ mounts: { "/etc": "/x" } }), "ERR_SANDBOX_MOUNT_REFUSED",
        (e) => assert.ok(e instanceof MountRefused));
      const saved = process.env.KERN_BIN;
      try {
        process.env.KERN_BIN = "kern";
        await rejectsWith(() => new Sandbox(), "ERR_SANDBOX_KERN_NOT_FOUND");
        process.env.KERN_BIN = "/nonexistent/kern";
        await rejectsWith(() => new Sandbox(), "ERR_SANDBOX_KERN_NOT_FOUND");
      } finally {
        process.env.KERN_BIN = saved;
      }
      const fresh = new Sandbox({ prewarm: 0 });
      await rejectsWith(fresh.runCode("1"), "ERR_SANDBOX_NOT_OPEN");
      await rejectsWith(fresh.readFile("x"), "ERR_SANDBOX_NOT_OPEN");
      await fresh.open();
      await fresh.close();
      await rejectsWith(fresh.runCode("1"), "ERR_SANDBOX_CLOSED");
      await rejectsWith(fresh.listFiles(), "ERR_SANDBOX_CLOSED");
      await rejectsWith(new Sandbox({ prewarm: 0, setup: "exit 3" }).open(), "ERR_SANDBOX_SETUP_FAILED");
      const saveSnap = process.env.KERN_SANDBOX_SNAPSHOT;
      delete process.env.KERN_SANDBOX_SNAPSHOT;
      try {
        await rejectsWith(() => s.snapshot(path.join(h.tmpDir(), "a.tgz")), "ERR_SANDBOX_NOT_SUPPORTED");
      } finally {
        if (saveSnap !== undefined) process.env.KERN_SANDBOX_SNAPSHOT = saveSnap;
      }
    });

    it("kernels: options, closed, dead, rollback", async function () {
      await rejectsWith(s.kernel({ isolation: "thread" }), "ERR_SANDBOX_INVALID_OPTION");
      await rejectsWith(s.kernel({ checkpoints: 3 }), "ERR_SANDBOX_INVALID_OPTION");
      const k = await s.kernel();
      try {
        await rejectsWith(k.runCode("1", { env: { A: "b" } }), "ERR_SANDBOX_INVALID_OPTION");
        await rejectsWith(k.runCode(5), "ERR_SANDBOX_INVALID_ARG");
        await rejectsWith(k.rollback(), "ERR_SANDBOX_NOT_SUPPORTED");
        await k.runCode("import os\nos._exit(0)").catch(() => {});
        await rejectsWith(k.runCode("1"), "ERR_SANDBOX_KERNEL_DEAD");
      } finally {
        await k.close();
      }
      await rejectsWith(k.runCode("1"), "ERR_SANDBOX_KERNEL_CLOSED");
      const f = await s.kernel({ isolation: "fork" });
      try {
        await rejectsWith(f.rollback(0), "ERR_SANDBOX_INVALID_ARG");
        await rejectsWith(f.rollback(3), "ERR_SANDBOX_NO_CHECKPOINT");
      } finally {
        await f.close();
      }
    });
  });

  it("`await using` closes a Sandbox and a Kernel (TypeScript's down-levelled form, run)",
    async function () {
      const tsc = path.join(h.repo, "node_modules/.bin/tsc");
      if (!fs.existsSync(tsc)) return h.skip(this, "typescript is not installed (npm install)");
      const dir = h.tmpDir("dispose-");
      fs.writeFileSync(path.join(dir, "main.ts"), `
        import { Sandbox } from ${JSON.stringify(h.repo)};
        async function main(): Promise<void> {
          let outer: Sandbox | null = null;
          let outerKernel: { runCode(c: string): Promise<unknown> } | null = null;
          {
            await using sbx = await new Sandbox({ prewarm: 0 }).open();
            await using kernel = await sbx.kernel();
            outer = sbx;
            outerKernel = kernel;
            const r = await kernel.runCode("40 + 2");
            process.stdout.write(r.results[0].text + "\\n");
          }
          for (const p of [outerKernel!.runCode("1"), outer!.runCode("1")])
            await p.then(() => process.stdout.write("open\\n"),
              (e: { code: string }) => process.stdout.write(e.code + "\\n"));
        }
        main();`);
      execFileSync(tsc, ["--target", "ES2022", "--module", "commonjs", "--lib", "ES2022,esnext.disposable",
        "--skipLibCheck", "--types", "node", "--typeRoots", path.join(h.repo, "node_modules/@types"),
        "--outDir", dir, path.join(dir, "main.ts")], { encoding: "utf8" });
      const out = execFileSync(process.execPath, [path.join(dir, "main.js")], { encoding: "utf8" });
      assert.strictEqual(out, "42\nERR_SANDBOX_KERNEL_CLOSED\nERR_SANDBOX_CLOSED\n");
    });
});
