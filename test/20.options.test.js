"use strict";

// Construction-time validation: everything kern would reject or misread is
// refused with a SandboxError that names the option (A26, A27, A29, A31, A32,
// A33, A36).
const assert = require("assert");
const fs = require("fs");
const os = require("os");
const path = require("path");
const { Sandbox, SandboxError, MountRefused } = require("..");
const h = require("./lib/harness");

function refuses(opts, re, cls = SandboxError) {
  assert.throws(() => new Sandbox(opts), (e) => {
    assert.ok(e instanceof cls, `expected ${cls.name}, got ${e && e.name}: ${e && e.message}`);
    if (re) assert.match(e.message, re);
    return true;
  });
}

describe("options", function () {
  it("applies the documented defaults", function () {
    const s = new Sandbox();
    assert.strictEqual(s.image, "python:3.12-slim");
    assert.strictEqual(s.memoryMb, 512);
    assert.strictEqual(s.cpus, null);
    assert.strictEqual(s.pids, 256);
    assert.strictEqual(s.timeoutS, 30);
    assert.strictEqual(s.network, false);
    assert.strictEqual(s.maxOutputBytes, 64 * 1024 * 1024);
    assert.strictEqual(s.enforceLimits, true);
    assert.strictEqual(s.depsReadonly, false);
    assert.strictEqual(s.workspace, null);
    assert.strictEqual(s.setup, null);
    assert.strictEqual(s.onStdout, null);
  });

  it("keeps null for memoryMb, cpus and pids (uncapped)", function () {
    const s = new Sandbox({ memoryMb: null, cpus: null, pids: null });
    assert.strictEqual(s.memoryMb, null);
    assert.strictEqual(s.pids, null);
  });

  it("A32: refuses non-finite, negative, zero or absurd numbers", function () {
    for (const t of [0, -1, NaN, Infinity, 1e308, "30", true])
      refuses({ timeoutS: t }, /options\.timeoutS/);
    for (const m of [NaN, -1, 0, 0.5, 1e20, "512"]) refuses({ memoryMb: m }, /options\.memoryMb/);
    for (const p of [NaN, -1, 0, 1, 0.5, 1e20, "512"]) refuses({ pids: p }, /options\.pids/);
    for (const c of [NaN, -1, 0, 1e20, "2"]) refuses({ cpus: c }, /options\.cpus/);
    for (const b of [0, -1, 1.5, 2 ** 53, "64"]) refuses({ maxOutputBytes: b }, /options\.maxOutputBytes/);
    // Positive controls: the edges that are valid.
    new Sandbox({ timeoutS: 0.25 });
    new Sandbox({ timeoutS: 2147484 });
    new Sandbox({ pids: 2, memoryMb: 1, cpus: 0.5, maxOutputBytes: 1 });
  });

  it("refuses non-boolean switches (network: 'false' is truthy)", function () {
    refuses({ network: "false" }, /options\.network must be a boolean/);
    refuses({ enforceLimits: 0 }, /options\.enforceLimits/);
    refuses({ depsReadonly: "yes" }, /options\.depsReadonly/);
    new Sandbox({ network: true, enforceLimits: false, depsReadonly: true });
  });

  it("A31: refuses images, profiles and domains that could smuggle a flag", function () {
    for (const image of ["--net", "-v/etc:/etc", "", "a b", "x\n", "py\0thon"])
      refuses({ image }, /options\.image/);
    for (const p of ["vcpu:x --net", "vcpu:x\n", "vcpu:x\0--net", "--config=x.toml", "vgpu:x",
      "vcpu:", "vcpu:-x"])
      refuses({ profiles: [p] }, /options\.profiles\[0\]/);
    for (const d of ["a.com,--net", "pypi.org\n", "x.com\0.evil.com", "-x.com", "localhost",
      "1.2.3.4", "https://pypi.org", "*.pypi.org"])
      refuses({ egressAllow: [d] }, /options\.egressAllow\[0\]/);
    new Sandbox({ image: "ghcr.io/org/img:1.2@sha256:abc", profiles: ["vcpu:heavy", "vdisk:s.1"],
      egressAllow: ["pypi.org", "files.pythonhosted.org"] });
  });

  it("refuses egressAllow together with network: true", function () {
    refuses({ egressAllow: ["pypi.org"], network: true }, /cannot be combined/);
    new Sandbox({ egressAllow: [], network: true });
  });

  it("A33: refuses env keys and values the env-file format cannot carry exactly", function () {
    for (const env of [{ "A=B": "1" }, { "": "1" }, { "A\nB": "1" }, { "A\0": "1" }, { "#A": "1" },
      { " A": "1" }])
      refuses({ env }, /options\.env has an invalid key/);
    refuses({ env: { A: "1\nLD_PRELOAD=/workspace/x.so" } }, /newline or NUL/);
    refuses({ env: { A: "x\0y" } }, /newline or NUL/);
    refuses({ env: { A: "trailing " } }, /whitespace/);
    refuses({ env: { A: "a\uD800" } }, /surrogate/);
    refuses({ env: { A: { x: 1 } } }, /must be a string/);
    const s = new Sandbox({ env: { A: " leading kept", B: 5, C: "", D: "a=b#c" } });
    assert.ok(s);
  });

  it("refuses callbacks that are not functions", function () {
    refuses({ onStdout: "log" }, /options\.onStdout must be a function/);
  });

  describe("mounts", function () {
    let dir;
    before(function () {
      dir = h.tmpDir("mnt-");
    });

    it("A26: refuses sensitive sources however they are spelled", function () {
      const link = path.join(dir, "etc-link");
      fs.symlinkSync("/etc", link);
      for (const src of ["/", "/etc", "/etc/", "//etc", "/./etc", "/etc/../etc", link,
        "/proc/self/root", "/proc/1/cwd", os.homedir(), `${os.homedir()}/`, "/dev", "/sys"])
        refuses({ mounts: { [src]: "/data" } }, /refusing mount source|does not exist/, MountRefused);
    });

    it("A27: refuses ancestors and descendants of sensitive paths", function () {
      for (const src of ["/run", "/var", "/home", "/boot", "/etc/ssl", "/proc/self"]) {
        if (!fs.existsSync(src)) continue;
        refuses({ mounts: { [src]: "/data" } }, /refusing mount source/, MountRefused);
      }
    });

    it("A29: refuses ':' and ',' in sources and targets, and bad targets", function () {
      const colon = path.join(dir, "x:y");
      fs.mkdirSync(colon);
      refuses({ mounts: { [colon]: "/data" } }, /':'/, MountRefused);
      for (const t of ["/data:ro", "/data:rw:x", "relative", "/a/../b", "/", "/proc", "/dev/",
        "/a,b"])
        refuses({ mounts: { [dir]: t } }, null, MountRefused);
      refuses({ mounts: { [dir]: ["/data", "rx"] } }, /mount mode/, MountRefused);
      refuses({ mounts: { relative: "/data" } }, /absolute host path/, MountRefused);
      refuses({ mounts: { [path.join(dir, "missing")]: "/data" } }, /does not exist/, MountRefused);
    });

    it("accepts a plain directory (positive control), ro and rw", function () {
      const s = new Sandbox({ mounts: { [dir]: "/data", [h.tmpDir()]: ["/ro", "ro"] } });
      assert.deepStrictEqual(Object.keys(s.mounts).length, 2);
    });
  });

  describe("kern lookup (A36)", function () {
    let saved;
    beforeEach(function () {
      saved = { bin: process.env.KERN_BIN, path: process.env.PATH };
    });
    afterEach(function () {
      process.env.KERN_BIN = saved.bin;
      process.env.PATH = saved.path;
    });

    it("says how to get kern when it is missing", function () {
      delete process.env.KERN_BIN;
      process.env.PATH = h.tmpDir("empty-path-");
      refuses({}, /kern binary was not found.*(install|KERN_BIN)/s);
    });

    it("ignores relative PATH entries", function () {
      delete process.env.KERN_BIN;
      const cwdDir = h.tmpDir("cwd-");
      fs.copyFileSync(h.fakeKern(), path.join(cwdDir, "kern"));
      fs.chmodSync(path.join(cwdDir, "kern"), 0o755);
      const old = process.cwd();
      process.chdir(cwdDir);
      try {
        process.env.PATH = ".:bin";
        refuses({}, /not found/);
        process.env.PATH = cwdDir; // positive control: the same file, absolute entry
        assert.ok(new Sandbox());
      } finally {
        process.chdir(old);
      }
    });

    it("refuses a relative, missing or world-writable KERN_BIN", function () {
      process.env.KERN_BIN = "kern";
      refuses({}, /absolute path/);
      process.env.KERN_BIN = "/nonexistent/kern";
      refuses({}, /not an executable/);
      const d = h.tmpDir("ww-");
      const k = path.join(d, "kern");
      fs.copyFileSync(h.fakeKern(), k);
      fs.chmodSync(k, 0o777);
      process.env.KERN_BIN = k;
      refuses({}, /writable by group or others/);
      fs.chmodSync(k, 0o755);
      assert.ok(new Sandbox()); // positive control
    });
  });
});
