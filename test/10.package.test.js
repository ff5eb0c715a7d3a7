"use strict";

const assert = require("assert");
const fs = require("fs");
const path = require("path");
const { execFileSync } = require("child_process");
const kern = require("..");
const h = require("./lib/harness");
const { boxCgroupPath } = require("./lib/leaks");

describe("package", function () {
  it("exports exactly the 0.1.1 names and the documented additions", function () {
    const v011 = ["ExecutionResult", "MountRefused", "Sandbox", "SandboxError", "runCode", "version",
      "withSandbox"];
    // README, "Additions to 0.1.1": issue 13's, issue 15's, then issue 14's.
    const additions = ["AbortError", "isKilledFault", "doctor", "Kernel", "Result", "BoxProcess"];
    assert.deepStrictEqual(Object.keys(kern).sort(), [...v011, ...additions].sort());
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
      return h.skipHost(this, "tsc checks types, not the addon; it runs in the plain suite (npm test)");
    execFileSync(tsc, ["-p", path.join(h.repo, "test/types"), "--noEmit"], { stdio: "pipe" });
  });
});

describe("the suite census (C23)", function () {
  it("C23: a run that leaks a descriptor, an open session (its workspace), a child process, " +
    "a port held by an escaped daemon and a box cgroup fails in the global afterAll, naming each " +
    "(positive control of test/00.setup.js)", function () {
    this.timeout(60000);
    const dir = h.tmpDir("c23-");
    const marker = `c23-${Date.now()}`;
    const spec = path.join(dir, "leaky.test.js");
    const cgroup = boxCgroupPath(`kern-box-census-${marker}`);
    // The daemon leaves its session and sits in "/", running a binary from
    // outside the test root: only the port census can see it.
    const daemon = "cd / && setsid python3 -c 'import socket,time; s=socket.socket(); " +
      "s.bind((\"127.0.0.1\", 0)); s.listen(); time.sleep(20)' " + marker + " </dev/null >/dev/null 2>&1 &";
    fs.writeFileSync(spec, `
      const fs = require("fs");
      const { spawn, execFileSync } = require("child_process");
      const { Sandbox } = require(${JSON.stringify(h.repo)});
      const { listeningSockets } = require(${JSON.stringify(path.join(h.repo, "test/lib/leaks"))});
      it("leaks nothing", function () {});
      it("leaks", async function () {
        fs.openSync(${JSON.stringify(spec)}, "r");
        // (A test after it that leaks nothing itself, below: the leak still names this one.)
        await new Sandbox({ prewarm: 0 }).open(); // its one child is the sleep below
        spawn("sh", ["-c", "sleep 20; :", ${JSON.stringify(marker)}], { stdio: "ignore" }).unref();
        const before = listeningSockets().size;
        execFileSync("sh", ["-c", ${JSON.stringify(daemon)}]);
        // Up to 25 s for python to listen (a loaded machine, a sanitizer run).
        for (const t0 = Date.now(); listeningSockets().size === before && Date.now() - t0 < 25000;)
          await new Promise((r) => setTimeout(r, 50));
        if (${JSON.stringify(cgroup)} !== null) fs.mkdirSync(${JSON.stringify(cgroup)});
      });
      it("a clean test after the leak", function () {});`);
    let out = "";
    let code = 0;
    try {
      out = execFileSync(process.execPath, [path.join(h.repo, "node_modules/mocha/bin/mocha.js"), "--no-config",
        "--require", path.join(h.repo, "test/00.setup.js"), "--timeout", "30000", spec],
      { encoding: "utf8", stdio: "pipe", cwd: h.repo, timeout: 50000,
        env: { ...process.env, KS_CENSUS_QUICK: "1" } });
    } catch (e) {
      out = `${e.stdout}${e.stderr}`;
      code = e.status;
    } finally {
      h.killAll(h.processesWith(marker));
      if (cgroup !== null && fs.existsSync(cgroup)) fs.rmdirSync(cgroup);
      const kept = /the test root (\/\S+) is kept/.exec(out);
      if (kept && path.basename(kept[1]).startsWith("ks-test-")) fs.rmSync(kept[1], { recursive: true, force: true });
    }
    const line = /census \(C23\): (\{.*\})/.exec(out);
    assert.ok(line, out.slice(-2000));
    const census = JSON.parse(line[1]);
    // The census names the test after which the leak began (its trail),
    // not the clean test before it nor the one after it.
    assert.match(out, /they began after the test: leaks \(after it: /, out.slice(-3000));
    assert.strictEqual(code, 1, "the run fails");
    assert.ok(census.fds.some((f) => f.endsWith(`-> ${spec}`)), JSON.stringify(census.fds));
    assert.ok(census.fds.some((f) => /bin\/kern$/.test(f)), "the session's kern descriptor");
    assert.ok(census.tmpLeftovers.some((e) => e.startsWith("kern-ws-")), JSON.stringify(census.tmpLeftovers));
    assert.strictEqual(census.children.length, 1, JSON.stringify(census.children));
    assert.ok(census.ports.some((p) => /^tcp 0100007F:[0-9A-F]{4} held by \d+ .*python/.test(p)),
      JSON.stringify(census.ports));
    assert.ok(!census.processes.some((p) => p.argv.includes("python")), "the daemon escaped the other counts");
    if (cgroup !== null) assert.deepStrictEqual(census.cgroups, [cgroup]);
    else console.log("      (cgroup part not controlled: no writable cgroup2 cgroup here)");
    assert.match(out, /leaks after the suite/);
  });
});
