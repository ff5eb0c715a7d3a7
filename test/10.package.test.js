"use strict";

const assert = require("assert");
const fs = require("fs");
const path = require("path");
const { execFileSync } = require("child_process");
const kern = require("..");
const h = require("./lib/harness");

describe("package", function () {
  it("exports exactly the 0.1.1 names", function () {
    assert.deepStrictEqual(Object.keys(kern).sort(),
      ["ExecutionResult", "MountRefused", "Sandbox", "SandboxError", "runCode", "version",
        "withSandbox"]);
  });

  it("exports the version of package.json", function () {
    const pkg = JSON.parse(fs.readFileSync(path.join(h.repo, "package.json"), "utf8"));
    assert.strictEqual(kern.version, pkg.version);
    assert.strictEqual(kern.version, "0.1.1");
  });

  it("has the documented package metadata", function () {
    const pkg = JSON.parse(fs.readFileSync(path.join(h.repo, "package.json"), "utf8"));
    assert.strictEqual(pkg.name, "kern-sandbox");
    assert.strictEqual(pkg.main, "lib/index.js");
    assert.strictEqual(pkg.types, "types/index.d.ts");
    assert.strictEqual(pkg.license, "Apache-2.0");
    assert.deepStrictEqual(pkg.os, ["linux"]);
    assert.strictEqual(pkg.engines.node, ">=18");
    assert.ok(Array.isArray(pkg.files) && pkg.files.includes("lib/"));
    assert.ok(!/--exit/.test(pkg.scripts.test), "mocha --exit would hide leaks");
  });

  it("builds C only, gnu11, -Wall -Wextra -Werror, hidden visibility, pinned NAPI_VERSION", function () {
    const gyp = fs.readFileSync(path.join(h.repo, "binding.gyp"), "utf8");
    for (const flag of ["-std=gnu11", "-Wall", "-Wextra", "-Werror", "-fvisibility=hidden"])
      assert.ok(gyp.includes(`"${flag}"`), flag);
    assert.match(gyp, /NAPI_VERSION=8/);
    assert.ok(!/\.cc"|\.cpp"/.test(gyp), "C sources only");
  });

  it("error classes keep their 0.1.1 shape", function () {
    const e = new kern.MountRefused("x");
    assert.ok(e instanceof kern.SandboxError && e instanceof Error);
    assert.strictEqual(e.name, "MountRefused");
    assert.strictEqual(new kern.SandboxError("y").name, "SandboxError");
    const r = new kern.ExecutionResult({ stdout: "", stderr: "", exitCode: 0, durationMs: 1 });
    assert.strictEqual(r.success, true);
    assert.strictEqual(r.fault, null);
    assert.deepStrictEqual(r.files, []);
    assert.strictEqual(r.truncated, false);
    const bad = new kern.ExecutionResult({ stdout: "", stderr: "", exitCode: 0, durationMs: 1,
      fault: { type: "timeout", message: "m" } });
    assert.strictEqual(bad.success, false);
  });

  it("imports from an ES module with named and default exports", function () {
    const out = execFileSync(process.execPath, [path.join(h.repo, "test/types/esm-import.mjs")],
      { encoding: "utf8" });
    const got = JSON.parse(out);
    for (const name of ["Sandbox", "withSandbox", "runCode", "ExecutionResult", "SandboxError",
      "MountRefused", "version"]) {
      assert.ok(got.named.includes(name), name);
      assert.ok(got.defaultKeys.includes(name), name);
    }
    assert.strictEqual(got.version, "0.1.1");
  });

  it("type-checks the whole documented API with tsc --strict", function () {
    this.timeout(120000);
    const tsc = path.join(h.repo, "node_modules", ".bin", "tsc");
    if (!fs.existsSync(tsc)) return h.skip(this, "typescript is not installed (npm install)");
    if (h.underSanitizer)
      return h.skip(this, "tsc checks types, not the addon; it runs in the plain suite (npm test)");
    execFileSync(tsc, ["-p", path.join(h.repo, "test/types"), "--noEmit"], { stdio: "pipe" });
  });
});
