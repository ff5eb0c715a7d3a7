"use strict";

// Issue 15, part 2: kern.doctor() and `npx kern-sandbox doctor`, against the
// kern test double: the structure, the table, the exit codes, and each
// check's failure path (kern missing, a temp dir that cannot be written, no
// images, a box that cannot start).
const assert = require("assert");
const fs = require("fs");
const path = require("path");
const { spawnSync } = require("child_process");
const kern = require("..");
const h = require("./lib/harness");

const CLI = path.join(h.repo, "bin", "kern-sandbox.js");
const IDS = ["kern", "linux", "pidfd", "openat2", "userns", "tmpdir", "runtime-dir", "uid-range", "image",
  "box", "cgroup"];
// statfs(2) f_type of the file systems that keep files in memory.
const MEMORY_FS_MAGIC = new Set([0x01021994 /* tmpfs */, 0x858458f6 /* ramfs */]);

function cli(args, env = {}) {
  const r = spawnSync(process.execPath, [CLI, ...args], {
    encoding: "utf8", timeout: 60000, env: { ...process.env, ...env },
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

function byId(report) {
  return Object.fromEntries(report.checks.map((c) => [c.id, c]));
}

describe("doctor (issue 15)", function () {
  this.timeout(60000);

  it("reports every check as { id, ok, required, detail, fix }; a box runs here", async function () {
    const report = await kern.doctor();
    assert.deepStrictEqual(report.checks.map((c) => c.id), IDS);
    for (const c of report.checks) {
      assert.deepStrictEqual(Object.keys(c), ["id", "ok", "required", "detail", "fix"]);
      assert.strictEqual(typeof c.detail, "string");
      assert.ok(c.ok ? c.fix === null : typeof c.fix === "string" && c.fix.length > 0, c.id);
    }
    const c = byId(report);
    assert.strictEqual(report.ok, true, JSON.stringify(report, null, 1));
    assert.match(c.kern.detail, /\(kern 0\.0\.0 \(fake-kern\)\)$/);
    assert.match(c.box.detail, /^a probe box ran in python:3\.12-slim/);
    assert.strictEqual(c.image.ok, true);
    assert.deepStrictEqual(Object.keys(report.controllers), ["memory", "pids", "cpu"]);
    assert.strictEqual(report.controllers.memory, "enforced", "the double reports the cap enforced");
  });

  it("the CLI prints a table and exits 0; --json prints the same structure; bad use exits 2",
    function () {
      const t = cli(["doctor"]);
      assert.strictEqual(t.status, 0, t.stderr);
      for (const id of IDS) assert.match(t.stdout, new RegExp(`^(ok  |warn|FAIL)  ${id}\\s`, "m"));
      assert.match(t.stdout, /boxes can run on this host\n$/);
      assert.strictEqual(t.stderr, "", "the probe box warned");
      const j = cli(["doctor", "--json"]);
      assert.strictEqual(j.status, 0);
      const report = JSON.parse(j.stdout);
      assert.deepStrictEqual(report.checks.map((c) => c.id), IDS);
      assert.strictEqual(cli(["doctor", "--bogus"]).status, 2);
      assert.strictEqual(cli([]).status, 2);
      assert.strictEqual(cli(["doctor", "--help"]).status, 0);
    });

  it("kern missing: the kern check fails with how to get it, nothing that needs kern runs, exit 1",
    function () {
      const r = cli(["doctor", "--json"], { KERN_BIN: "/nonexistent/kern" });
      assert.strictEqual(r.status, 1, r.stderr);
      const c = byId(JSON.parse(r.stdout));
      assert.strictEqual(c.kern.ok, false);
      assert.match(c.kern.detail, /KERN_BIN "\/nonexistent\/kern" is not an executable file/);
      assert.match(c.kern.fix, /KERN_BIN/);
      assert.strictEqual(c.box.ok, false);
      assert.match(c.box.detail, /not checked: kern was not found/);
      assert.strictEqual(c.linux.ok, true, "the other checks still ran");
      const table = cli(["doctor"], { KERN_BIN: "/nonexistent/kern" });
      assert.strictEqual(table.status, 1);
      assert.match(table.stdout, /^FAIL  kern /m);
      assert.match(table.stdout, /boxes cannot run on this host/);
    });

  it("a temp dir that cannot be written: the tmpdir check fails, no probe box, exit 1", function () {
    const notADir = path.join(h.tmpDir("doctor-tmp-"), "file");
    fs.writeFileSync(notADir, "");
    const r = cli(["doctor", "--json"], { TMPDIR: notADir });
    assert.strictEqual(r.status, 1, r.stderr);
    const c = byId(JSON.parse(r.stdout));
    assert.strictEqual(c.tmpdir.ok, false);
    assert.match(c.tmpdir.detail, /cannot make a workspace in .*ENOTDIR/);
    assert.match(c.tmpdir.fix, /TMPDIR/);
    assert.strictEqual(c.box.ok, false);
  });

  it("no images: the image check says the default image is missing and how to get it", function () {
    const bin = h.privateKern(h.tmpDir("doctor-kern-"));
    fs.mkdirSync(path.join(path.dirname(bin), "kern-state"), { mode: 0o700 });
    fs.writeFileSync(path.join(path.dirname(bin), "kern-state", "images"), "");
    const r = cli(["doctor", "--json"], { KERN_BIN: bin });
    const report = JSON.parse(r.stdout);
    const c = byId(report);
    assert.strictEqual(c.image.ok, false);
    assert.match(c.image.detail, /python:3\.12-slim is not in kern's image cache/);
    assert.match(c.image.fix, /kern pull python:3\.12-slim/);
    // The double runs boxes without images; a real kern's probe box would fail.
    assert.strictEqual(c.image.required, false);
    assert.strictEqual(r.status, report.ok ? 0 : 1);
    fs.writeFileSync(path.join(path.dirname(bin), "kern-state", "images"), "python:3.12-slim\n");
    assert.strictEqual(byId(JSON.parse(cli(["doctor", "--json"], { KERN_BIN: bin }).stdout)).image.ok,
      true, "positive control: listed, it passes");
  });

  it("kern's runtime dir on a disk is a warning with the tmpfs fix; in memory it passes", function () {
    // Where kern keeps each box's scratch layer: $XDG_RUNTIME_DIR/kern first.
    const disk = h.tmpDir("doctor-rt-disk-");
    if (MEMORY_FS_MAGIC.has(fs.statfsSync(disk).type))
      return h.skipHost(this, "this host's temp dir is itself in memory, no disk dir to point at");
    const onDisk = byId(JSON.parse(cli(["doctor", "--json"], { XDG_RUNTIME_DIR: disk }).stdout))["runtime-dir"];
    assert.strictEqual(onDisk.ok, false);
    assert.strictEqual(onDisk.required, false, "boxes run; only their tail latency suffers");
    assert.match(onDisk.detail, new RegExp(`^kern's runtime dir ${disk}/kern is on a disk \\(`));
    assert.match(onDisk.fix, new RegExp(`mount -t tmpfs -o mode=0700,uid=\\d+,gid=\\d+ tmpfs ${disk}\``));
    // Positive control: the same check passes for a dir in memory.
    if (!fs.existsSync("/dev/shm") || !MEMORY_FS_MAGIC.has(fs.statfsSync("/dev/shm").type))
      return h.skipHost(this, "no /dev/shm tmpfs on this host for the positive control");
    const mem = fs.mkdtempSync("/dev/shm/ks-doctor-rt-");
    try {
      const inMemory = byId(JSON.parse(cli(["doctor", "--json"], { XDG_RUNTIME_DIR: mem }).stdout))["runtime-dir"];
      assert.strictEqual(inMemory.ok, true, JSON.stringify(inMemory));
      assert.match(inMemory.detail, new RegExp(`^kern's runtime dir ${mem}/kern is in memory \\((tmpfs|ramfs)\\)$`));
      assert.strictEqual(inMemory.fix, null);
    } finally {
      fs.rmSync(mem, { recursive: true, force: true });
    }
  });

  it("a box that cannot start: the box check carries kern's error, exit 1", function () {
    const r = cli(["doctor", "--json", "--image", "fake:parent-fail"]);
    assert.strictEqual(r.status, 1);
    const c = byId(JSON.parse(r.stdout));
    assert.strictEqual(c.box.ok, false);
    assert.match(c.box.detail, /startup_failed: error: box: could not create the sandbox/);
    assert.strictEqual(c.cgroup, undefined, "no cgroup check without a probe result");
  });
});
