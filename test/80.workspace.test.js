"use strict";

// Host-side workspace I/O against a hostile workspace (SECURITY-CASES.md
// A17-A25): boxes plant symlinks, FIFOs, sockets, devices, hardlinks, huge
// and deep trees, and the host reads, writes, lists and deletes through the
// public API. Every path-resolution case runs twice: in this process (openat2)
// and in a child node whose addon was loaded with
// KERN_SANDBOX_FORCE_FALLBACK=openat2 (the O_NOFOLLOW walk), and both must
// give the same outcome. The concurrent attack (H4) is in 81.workspace-race.
const assert = require("assert");
const crypto = require("crypto");
const fs = require("fs");
const os = require("os");
const path = require("path");
const { isDeepStrictEqual } = require("util");
const { execFileSync } = require("child_process");
const { Sandbox, SandboxError } = require("..");
const binding = require("../lib/binding");
const h = require("./lib/harness");
const probe = require("./fixtures/scripts/ws-probe");
const attack = require("./fixtures/scripts/ws-attack");

const MiB = 1 << 20;
const ERRNO = os.constants.errno;

// The syscall that resolves paths in this process: "openat2" on Linux 5.6+
// (decided once, in before()); the forced fallback always says "openat".
let R = null;

const norm = (p) => p.split("/").filter((c) => c !== "" && c !== ".").join("/");
const q = (s) => `'${String(s).replace(/'/g, "'\\''")}'`;

/** Runs a shell script in a box of sbx (cwd = the workspace) and requires exit 0. */
async function box(sbx, script) {
  const r = await sbx.run(["sh", "-c", `set -e\n${script}`]);
  assert.strictEqual(r.exitCode, 0, `the box failed (${r.exitCode}): ${r.stderr}`);
  assert.strictEqual(r.fault, null);
  return r;
}

/** The path of sbx's workspace as the box sees it on the host (fake kern maps it). */
async function workspaceOf(sbx) {
  const r = await sbx.run(["sh", "-c", "pwd -P"]);
  assert.strictEqual(r.exitCode, 0);
  return r.stdout.trim();
}

/**
 * Compares probe results with the expectations of ops; returns the list of
 * mismatches (empty when all is as expected). An op expects:
 *   "ok" (optionally `want`: the read content as a latin1 string, or the list),
 *   "SandboxError" (a path-string refusal from lib/paths.js: no code, no errno;
 *   optionally `msg`, a RegExp), or an errno name with `syscall` ("R" is the
 *   resolution syscall of the mode) and `errPath` (default: the folded path).
 */
function mismatches(results, ops, res) {
  const bad = [];
  ops.forEach((o, i) => {
    const r = results[i];
    const where = `${o.op}(${o.path === undefined ? "" : JSON.stringify(o.path).slice(0, 60)})`;
    if (o.expect === "ok") {
      if (!r.ok) {
        bad.push(`${where}: want success, got ${r.code}/${r.syscall}: ${r.message}`);
      } else if (o.want !== undefined) {
        const got = o.op === "read" ? Buffer.from(r.value, "base64").toString("latin1") : r.value;
        if (!isDeepStrictEqual(got, o.want))
          bad.push(`${where}: got ${JSON.stringify(got).slice(0, 300)}, want ${JSON.stringify(o.want).slice(0, 300)}`);
      }
      return;
    }
    if (r.ok) {
      bad.push(`${where}: want ${o.expect}, but it succeeded`);
      return;
    }
    if (o.expect === "SandboxError") {
      if (r.name !== "SandboxError" || r.code !== "ERR_SANDBOX_INVALID_PATH" || r.errno !== undefined ||
          r.syscall !== undefined)
        bad.push(`${where}: want a path-string SandboxError (ERR_SANDBOX_INVALID_PATH, no errno), got ${r.name} ${r.code}/${r.syscall}`);
      else if (o.msg && !o.msg.test(r.message))
        bad.push(`${where}: message ${JSON.stringify(r.message)} does not match ${o.msg}`);
      return;
    }
    const sys = [].concat(o.syscall).map((s) => (s === "R" ? res : s));
    const errPath = o.errPath !== undefined ? o.errPath : norm(o.path || "");
    if (r.name !== "SandboxError" || r.code !== o.expect || r.errno !== -ERRNO[o.expect] ||
        !sys.includes(r.syscall) || r.path !== errPath) {
      bad.push(`${where}: want ${o.expect} (errno ${-ERRNO[o.expect]}) from ${sys.join("|")} ` +
        `on ${JSON.stringify(errPath)}, got ${r.name} ${r.code} (errno ${r.errno}) from ` +
        `${r.syscall} on ${JSON.stringify(r.path)}: ${r.message}`);
    }
  });
  return bad;
}

const outcome = (r) => ({ ok: r.ok, name: r.name, code: r.code, errno: r.errno, path: r.path,
  value: r.value });

/**
 * Runs ops here and in the forced-fallback child on the same workspace, checks
 * both against the expectations, and requires the same outcome op by op (the
 * syscall aside: "openat2" here is "openat" there, and only there).
 */
async function bothModes(sbx, ws, ops) {
  const mine = await probe.runOps(sbx, ops);
  assert.deepStrictEqual(mismatches(mine, ops, R), [], `in this process (${R})`);
  const fb = await attack.fallbackProbe(ws, ops);
  assert.strictEqual(fb.mode, "openat2");
  assert.deepStrictEqual(mismatches(fb.results, ops, "openat"), [], "with openat2 forced off");
  assert.deepStrictEqual(fb.results.map(outcome), mine.map(outcome),
    "the fallback gives exactly the outcomes of openat2");
  mine.forEach((r, i) => {
    const f = fb.results[i];
    assert.notStrictEqual(f.syscall, "openat2", "the child really ran the fallback");
    if (!r.ok) assert.strictEqual(f.syscall, r.syscall === "openat2" ? "openat" : r.syscall);
  });
  return { mine, fb: fb.results };
}

const OUTER_FILES = {
  f: "OUTSIDE",
  hostname: "OUTER-HOSTNAME\n",
  "etc/passwd": "OUTER-PASSWD\n",
};

function makeOuter() {
  const outer = h.tmpDir("outer-");
  for (const [rel, content] of Object.entries(OUTER_FILES)) {
    fs.mkdirSync(path.dirname(path.join(outer, rel)), { recursive: true });
    fs.writeFileSync(path.join(outer, rel), content);
  }
  return outer;
}

describe("workspace I/O against a hostile workspace", function () {
  let ws;
  let outer;
  let sbx;

  before(async function () {
    const s = await new Sandbox({ workspace: h.tmpDir("ws-mode-") }).open();
    try {
      await s.readFile("missing");
    } catch (e) {
      R = e.syscall;
    } finally {
      await s.close();
    }
    assert.ok(R === "openat2" || R === "openat", `resolution syscall ${R}`);
    if (R !== "openat2")
      console.log("      NOTE: this kernel has no openat2: both modes run the O_NOFOLLOW walk");
    attack.buildSwapper();
  });

  beforeEach(async function () {
    ws = h.tmpDir("ws-");
    outer = makeOuter();
    // capDrop []: a box makes a device (A20; mknod needs CAP_MKNOD, which
    // every box drops by default since issue 13).
    // prewarm: 0: the tests count descriptors around calls, and a box
    // refilled after a call would be counted against them.
    sbx = await new Sandbox({ workspace: ws, timeoutS: 60, capDrop: [], prewarm: 0 }).open();
  });

  afterEach(async function () {
    await attack.stopAll();
    await sbx.close();
    // GNU rm, not fs.rmSync: some trees here are deeper than PATH_MAX.
    execFileSync("rm", ["-rf", "--one-file-system", ws, outer]);
  });

  it("A17: a symlink in any component (outside or inside the workspace) is refused, also when a box swaps a directory for one between two calls", async function () {
    const before = attack.census(outer);
    await box(sbx, `mkdir d real; echo inside > d/f; ln -s ${q(outer)} l; ln -s .. real/up
      ln -s real inner; echo in-real > real/g`);
    // Positive control: outside the API, every link leads where the box meant.
    assert.strictEqual(fs.readFileSync(path.join(ws, "l/f"), "utf8"), "OUTSIDE");
    assert.strictEqual(fs.readFileSync(path.join(ws, "real/up/l/f"), "utf8"), "OUTSIDE");
    assert.strictEqual(fs.readFileSync(path.join(ws, "inner/g"), "utf8"), "in-real\n");
    const ops = [
      { op: "write", path: "d/f", data: "v1", expect: "ok" },
      { op: "read", path: "d/f", expect: "ok", want: "v1" },
      { op: "read", path: "real/g", expect: "ok", want: "in-real\n" },
      { op: "read", path: "l/f", expect: "ELOOP", syscall: "R" },
      { op: "write", path: "l/f", data: "PWNED", expect: "ELOOP", syscall: "R" },
      { op: "write", path: "l/new/sub/f", data: "PWNED", expect: "ELOOP", syscall: "R" },
      { op: "write", path: "real/up/l/f", data: "PWNED", expect: "ELOOP", syscall: "R" },
      { op: "write", path: "real/up/real/x", data: "x", expect: "ELOOP", syscall: "R" },
      { op: "read", path: "real/up/d/f", expect: "ELOOP", syscall: "R" },
      { op: "read", path: "inner/g", expect: "ELOOP", syscall: "R" },
      { op: "write", path: "inner/g", data: "x", expect: "ELOOP", syscall: "R" },
      { op: "list", path: "l", expect: "ELOOP", syscall: "R" },
      { op: "list", path: "inner", expect: "ELOOP", syscall: "R" },
    ];
    await bothModes(sbx, ws, ops);

    // The box replaces d by a symlink to $OUTER between two host calls.
    await box(sbx, `rm -rf d; ln -s ${q(outer)} d`);
    assert.strictEqual(fs.readFileSync(path.join(ws, "d/f"), "utf8"), "OUTSIDE");
    await bothModes(sbx, ws, [
      { op: "write", path: "d/f", data: "PWNED", expect: "ELOOP", syscall: "R" },
      { op: "read", path: "d/f", expect: "ELOOP", syscall: "R" },
      { op: "write", path: "d/etc/passwd", data: "PWNED", expect: "ELOOP", syscall: "R" },
      { op: "read", path: "d/hostname", expect: "ELOOP", syscall: "R" },
      { op: "list", path: "d", expect: "ELOOP", syscall: "R" },
      { op: "list", expect: "ok", want: [{ path: "real/g", size: 8 }] },
    ]);
    assert.deepStrictEqual(attack.census(outer), before, "H3: nothing under $OUTER changed");
  });

  it("A18: a 1 MiB canary outside is never truncated, statically or while a box swaps d and l -> $OUTER", async function () {
    this.timeout(60000);
    fs.writeFileSync(path.join(outer, "f"), crypto.randomBytes(MiB));
    const before = attack.census(outer);
    await box(sbx, `mkdir d; ln -s ${q(outer)} l; ln -s ${q(path.join(outer, "f"))} leaf`);
    assert.strictEqual(fs.statSync(path.join(ws, "l/f")).size, MiB, "the canary is reachable via l");
    await bothModes(sbx, ws, [
      { op: "write", path: "leaf", data: "", expect: "ELOOP", syscall: "fstatat" },
      { op: "write", path: "l/f", data: "", expect: "ELOOP", syscall: "R" },
      { op: "write", path: "d/f", data: "inside-static-0", expect: "ok" },
    ]);
    // Both modes under the H4 attack (the long run is 81.workspace-race).
    const swapper = await attack.startSwapper(sbx, ws, "d", "l");
    let here;
    let there;
    let swaps;
    try {
      [here] = await probe.runOps(sbx, [{ op: "race", n: 4000, concurrency: 8, tag: "here", prior: [["static", 1]] }]);
      [there] = (await attack.fallbackProbe(ws,
        [{ op: "race", n: 4000, concurrency: 8, tag: "fb", prior: [["static", 1], ["here", 4000]] }])).results;
    } finally {
      ({ swaps } = await swapper.stop());
    }
    for (const [mode, r] of [["openat2", here], ["fallback", there]]) {
      assert.ok(r.ok, `${mode}: ${r.message}`);
      const v = r.value;
      console.log(`      [${mode}] ${v.ops} ops: ${v.writesOk} writes, ${v.readsOk} reads ok, ` +
        `refused ${JSON.stringify(v.failures)}`);
      assert.strictEqual(v.ops, 4000);
      assert.strictEqual(v.foreignReads, 0, `read outside content: ${v.foreignSamples}`);
      assert.deepStrictEqual(v.badErrors, []);
      assert.ok(v.writesOk > 0, "some writes landed inside d");
      for (const key of Object.keys(v.failures))
        assert.match(key, /^(write|read) (ELOOP|ENOTDIR|ENOENT|EAGAIN)\//);
    }
    assert.ok(swaps > 0, `the swapper really ran (${swaps} swaps)`);
    assert.deepStrictEqual(attack.census(outer), before, "H3: the canary is intact");
    assert.strictEqual(fs.statSync(path.join(outer, "f")).size, MiB);
  });

  it("A19: a symlinked leaf, dir or trailing slash is never followed", async function () {
    // /etc/hostname as in the case; /etc/passwd where a host has none.
    const E = fs.existsSync("/etc/hostname") ? "hostname" : "passwd";
    const etcHostname = fs.readFileSync(`/etc/${E}`, "latin1");
    const etcBefore = fs.statSync(`/etc/${E}`, { bigint: true });
    const before = attack.census(outer);
    const up = path.relative(ws, "/"); // "../../..": from the workspace to "/"
    const o = outer.slice(1); // $OUTER below "/"
    await box(sbx, `ln -s /etc/${E} leaf; ln -s /etc dir; ln -s /proc/self/root dir2
      ln -s ${q(up)} rel; ln -s ${q(path.join(outer, "hostname"))} leafo; ln -s ${q(outer)} diro
      ln -s ${q(path.join(outer, "new"))} dangling; mkdir real; echo inside > real/hostname`);
    // Positive control: outside the API each link reaches its target.
    assert.strictEqual(fs.readFileSync(path.join(ws, "leaf"), "latin1"), etcHostname);
    assert.strictEqual(fs.readFileSync(path.join(ws, "dir", E), "latin1"), etcHostname);
    assert.strictEqual(fs.readFileSync(path.join(ws, "dir2/etc", E), "latin1"), etcHostname);
    assert.strictEqual(fs.readFileSync(path.join(ws, "rel/etc", E), "latin1"), etcHostname);
    assert.strictEqual(fs.readFileSync(path.join(ws, "rel", o, "hostname"), "utf8"), OUTER_FILES.hostname);
    assert.strictEqual(fs.readFileSync(path.join(ws, "diro/hostname"), "utf8"), OUTER_FILES.hostname);
    // Reads go to /etc; writes only ever to $OUTER (never risk a host file).
    const ops = [
      { op: "read", path: "leaf", expect: "ELOOP", syscall: "R" },
      { op: "read", path: "leaf/", expect: "SandboxError", msg: /names a directory/ },
      { op: "read", path: "dir/", expect: "SandboxError", msg: /names a directory/ },
      { op: "read", path: `dir/${E}`, expect: "ELOOP", syscall: "R" },
      { op: "read", path: "dir2/etc/passwd", expect: "ELOOP", syscall: "R" },
      { op: "read", path: "rel/x", expect: "ELOOP", syscall: "R" },
      { op: "read", path: `rel/etc/${E}`, expect: "ELOOP", syscall: "R" },
      { op: "read", path: `rel/${o}/hostname`, expect: "ELOOP", syscall: "R" },
      { op: "read", path: "diro/hostname", expect: "ELOOP", syscall: "R" },
      { op: "write", path: "leafo", data: "PWNED", expect: "ELOOP", syscall: "fstatat" },
      { op: "write", path: "leaf", data: "PWNED", expect: "ELOOP", syscall: "fstatat" },
      { op: "write", path: "dangling", data: "PWNED", expect: "ELOOP", syscall: "fstatat" },
      { op: "write", path: "leafo/", data: "PWNED", expect: "SandboxError", msg: /names a directory/ },
      { op: "write", path: "diro/", data: "PWNED", expect: "SandboxError", msg: /names a directory/ },
      { op: "write", path: "diro/hostname", data: "PWNED", expect: "ELOOP", syscall: "R" },
      { op: "write", path: "diro/new/sub/f", data: "PWNED", expect: "ELOOP", syscall: "R" },
      { op: "write", path: `dir2/${o}/etc/passwd`, data: "PWNED", expect: "ELOOP", syscall: "R" },
      { op: "write", path: `rel/${o}/hostname`, data: "PWNED", expect: "ELOOP", syscall: "R" },
      { op: "write", path: `rel/${o}/x`, data: "PWNED", expect: "ELOOP", syscall: "R" },
      { op: "list", path: "dir", expect: "ELOOP", syscall: "R" },
      { op: "list", path: "dir/", expect: "ELOOP", syscall: "R", errPath: "dir" },
      { op: "list", path: "dir2", expect: "ELOOP", syscall: "R" },
      { op: "list", path: "dir2/etc", expect: "ELOOP", syscall: "R" },
      { op: "list", path: "rel", expect: "ELOOP", syscall: "R" },
      { op: "list", path: "leaf", expect: "ELOOP", syscall: "R" },
      // Positive control: the same operations on a real directory work.
      { op: "read", path: "real/hostname", expect: "ok", want: "inside\n" },
      { op: "write", path: "real/hostname", data: "inside\n", expect: "ok" },
      { op: "list", path: "real", expect: "ok", want: [{ path: "real/hostname", size: 7 }] },
      { op: "list", expect: "ok", want: [{ path: "real/hostname", size: 7 }] },
    ];
    await bothModes(sbx, ws, ops);
    // "dir/." is folded to "dir" by lib/paths.js (see the A23 '/.' test), so
    // its exact code depends on that fix: here it must be refused, alike in
    // both modes.
    const dotOps = [
      { op: "read", path: "dir/." },
      { op: "read", path: "dir2/." },
      { op: "write", path: "diro/.", data: "PWNED" },
    ];
    const here = await probe.runOps(sbx, dotOps);
    const there = (await attack.fallbackProbe(ws, dotOps)).results;
    here.forEach((r, i) => {
      const label = `${dotOps[i].op}(${dotOps[i].path})`;
      assert.ok(!r.ok, `${label} must be refused`);
      assert.strictEqual(r.name, "SandboxError", label);
      assert.ok(r.code === "ERR_SANDBOX_INVALID_PATH" || r.code === "ELOOP" || r.code === "EISDIR",
        `${label}: ${r.code}/${r.syscall}`);
      assert.deepStrictEqual(outcome(there[i]), outcome(r), `${label}: same in both modes`);
    });
    assert.deepStrictEqual(attack.census(outer), before, "H3: nothing under $OUTER changed");
    const etcAfter = fs.statSync(`/etc/${E}`, { bigint: true });
    assert.strictEqual(etcAfter.mtimeNs, etcBefore.mtimeNs);
    assert.strictEqual(fs.readFileSync(`/etc/${E}`, "latin1"), etcHostname);
    assert.ok(!fs.existsSync(path.join(outer, "new")));
  });

  it("A20: a FIFO, a Unix socket and a device in the workspace fail within 100 ms and block no thread", async function () {
    await box(sbx, `mkfifo fifo; mkdir sub; mkfifo sub/fifo2; echo plain > plain
      python3 -c "import socket; socket.socket(socket.AF_UNIX).bind('sock')"
      mknod dev c 1 3`);
    // Positive control: they really are what they claim, next to a plain file.
    assert.ok(fs.lstatSync(path.join(ws, "fifo")).isFIFO());
    assert.ok(fs.lstatSync(path.join(ws, "sock")).isSocket());
    assert.ok(fs.lstatSync(path.join(ws, "dev")).isCharacterDevice());
    const ops = [
      { op: "read", path: "fifo", expect: "EINVAL", syscall: "fstat" },
      { op: "write", path: "fifo", data: "x", expect: "EINVAL", syscall: "fstatat" },
      { op: "read", path: "sub/fifo2", expect: "EINVAL", syscall: "fstat" },
      { op: "read", path: "sock", expect: "ENXIO", syscall: "R" },
      { op: "write", path: "sock", data: "x", expect: "EINVAL", syscall: "fstatat" },
      { op: "read", path: "dev", expect: "EINVAL", syscall: "fstat" },
      { op: "write", path: "dev", data: "x", expect: "EINVAL", syscall: "fstatat" },
      // Not directories: the engine says ENOTDIR at once (never opening
      // them), which lists nothing, as in 0.1.1.
      { op: "list", path: "fifo", expect: "ok", want: [] },
      { op: "list", path: "sock", expect: "ok", want: [] },
      { op: "list", path: "dev", expect: "ok", want: [] },
      { op: "list", path: "sub", expect: "ok", want: [] },
      { op: "list", expect: "ok", want: [{ path: "plain", size: 6 }] },
      { op: "read", path: "plain", expect: "ok", want: "plain\n" },
    ];
    const { mine, fb } = await bothModes(sbx, ws, ops);
    for (const r of [...mine, ...fb]) assert.ok(r.ms < h.jsBound(100, 10), `a call took ${r.ms} ms`);
    const root = binding.wsOpen(ws, false);
    try {
      for (const p of ["fifo", "sock", "dev"])
        await assert.rejects(binding.wsList(root, p), { code: "ENOTDIR" }, `the engine lists ${p}`);
    } finally {
      binding.wsClose(root);
    }
    assert.ok(fs.lstatSync(path.join(ws, "fifo")).isFIFO(), "the FIFO is still a FIFO");

    // Many FIFO reads and writes at once (more than the 4 threadpool threads)
    // while Node's own fs reads a file: nothing waits for a FIFO writer.
    const host = path.join(h.tmpDir("plain-"), "x");
    fs.writeFileSync(host, "y".repeat(1024));
    const t0 = process.hrtime.bigint();
    const elapsed = () => Number(process.hrtime.bigint() - t0) / 1e6;
    const api = [];
    for (let i = 0; i < 16; i++) {
      api.push(sbx.readFile("fifo").then(() => "ok", (e) => e.code));
      api.push(sbx.writeFile("fifo", "x").then(() => "ok", (e) => e.code));
    }
    const fsDone = fs.promises.readFile(host).then((b) => ({ ms: elapsed(), len: b.length }));
    const codes = await Promise.all(api);
    const apiMs = elapsed();
    const fsRead = await fsDone;
    assert.deepStrictEqual([...new Set(codes)], ["EINVAL"]);
    assert.strictEqual(fsRead.len, 1024);
    assert.ok(fsRead.ms < h.jsBound(100, 10), `a parallel fs.readFile took ${fsRead.ms} ms`);
    assert.ok(apiMs < h.jsBound(100, 10), `32 FIFO calls took ${apiMs} ms`);
  });

  it("A21: writeFile on one name of a hardlinked file replaces only that name (wsfs.h policy)", async function () {
    await box(sbx, `echo old > a; ln a b; mkdir x; echo old2 > x/c; ln x/c y
      echo fb-old > a2; ln a2 b2; chmod 0750 b`);
    const sa = fs.statSync(path.join(ws, "a"));
    const sb = fs.statSync(path.join(ws, "b"));
    // Positive control: one inode, two names, before the write.
    assert.strictEqual(sa.ino, sb.ino);
    assert.strictEqual(sa.nlink, 2);
    const mine = await probe.runOps(sbx, [
      { op: "write", path: "b", data: "new" },
      { op: "write", path: "y", data: "new2" },
      { op: "read", path: "a" },
      { op: "read", path: "b" },
      { op: "read", path: "x/c" },
      { op: "read", path: "y" },
    ]);
    assert.deepStrictEqual(mismatches(mine, [
      { op: "write", path: "b", expect: "ok" },
      { op: "write", path: "y", expect: "ok" },
      { op: "read", path: "a", expect: "ok", want: "old\n" },
      { op: "read", path: "b", expect: "ok", want: "new" },
      { op: "read", path: "x/c", expect: "ok", want: "old2\n" },
      { op: "read", path: "y", expect: "ok", want: "new2" },
    ], R), []);
    const a = fs.statSync(path.join(ws, "a"));
    const b = fs.statSync(path.join(ws, "b"));
    assert.notStrictEqual(a.ino, b.ino, "b is a new inode");
    assert.strictEqual(a.ino, sa.ino, "a keeps the old inode");
    assert.strictEqual(a.nlink, 1);
    assert.strictEqual(b.nlink, 1);
    assert.strictEqual(b.mode & 0o7777, 0o750, "the permission bits of the name written are kept");
    // The same policy with the fallback walk, on the second pair.
    const fb = (await attack.fallbackProbe(ws, [
      { op: "write", path: "b2", data: "fb-new" }, { op: "read", path: "a2" },
    ])).results;
    assert.deepStrictEqual(mismatches(fb, [
      { op: "write", path: "b2", expect: "ok" },
      { op: "read", path: "a2", expect: "ok", want: "fb-old\n" },
    ], "openat"), []);
    assert.strictEqual(fs.readFileSync(path.join(ws, "b2"), "utf8"), "fb-new");
    assert.strictEqual(fs.statSync(path.join(ws, "a2")).nlink, 1);
  });

  it("A22: a 1 TiB sparse file fails fast with EFBIG, without memory growth", async function () {
    const big = path.join(ws, "big");
    fs.writeFileSync(big, "");
    fs.truncateSync(big, 2 ** 40);
    fs.writeFileSync(path.join(ws, "edge"), "");
    fs.truncateSync(path.join(ws, "edge"), 2 ** 31); // one byte over the 2^31-1 cap
    fs.writeFileSync(path.join(ws, "mib"), "");
    fs.truncateSync(path.join(ws, "mib"), MiB);
    // Positive control: Node's own readFile gives up on it with ERR_FS_FILE_TOO_LARGE.
    assert.strictEqual(fs.statSync(big).size, 2 ** 40);
    await assert.rejects(fs.promises.readFile(big), { code: "ERR_FS_FILE_TOO_LARGE" });
    const rss0 = process.memoryUsage().rss;
    const ops = [
      { op: "read", path: "big", expect: "EFBIG", syscall: "fstat" },
      { op: "read", path: "edge", expect: "EFBIG", syscall: "fstat" },
      { op: "read", path: "mib", expect: "ok", want: "\0".repeat(MiB) },
    ];
    const mine = await probe.runOps(sbx, ops.slice(0, 2));
    const rss1 = process.memoryUsage().rss;
    assert.deepStrictEqual(mismatches(mine, ops.slice(0, 2), R), []);
    for (const r of mine) assert.ok(r.ms < h.jsBound(100, 10), `EFBIG took ${r.ms} ms`);
    assert.ok(rss1 - rss0 < 16 * MiB, `RSS grew by ${(rss1 - rss0) / MiB} MiB`);
    const { fb } = await bothModes(sbx, ws, ops);
    assert.ok(fb[0].ms < h.jsBound(100, 10) && fb[1].ms < h.jsBound(100, 10), `EFBIG took ${fb[0].ms}, ${fb[1].ms} ms`);
  });

  it("A22: a file growing while it is read gives a consistent prefix each time, never an error", async function () {
    this.timeout(60000);
    const CAP = 64 * MiB;
    const running = sbx.run(["python3", "-c", [
      "import os, time",
      "fd = os.open('grow', os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)",
      "chunk = b'g' * 65536",
      "t = time.time()",
      `while not os.path.exists('grow.stop') and time.time() - t < 30 and os.fstat(fd).st_size < ${CAP}:`,
      "    os.write(fd, chunk)",
      "    time.sleep(0.001)",
    ].join("\n")]);
    const ref = Buffer.alloc(CAP, "g");
    const lengths = new Set();
    let reads = 0;
    try {
      assert.ok(await h.waitFor(() => fs.existsSync(path.join(ws, "grow")), 5000));
      // At least 1.5 s, and on until the file was seen at two lengths (a
      // read of up to 64 MiB is slow under the sanitizers), 20 s at most.
      const t0 = Date.now();
      while (Date.now() - t0 < 1500 || (lengths.size < 2 && Date.now() - t0 < 20000)) {
        const b = await sbx.readFile("grow");
        reads++;
        assert.ok(b.length <= CAP);
        assert.ok(b.equals(ref.subarray(0, b.length)), `read ${reads}: not a prefix of the file`);
        lengths.add(b.length);
      }
    } finally {
      fs.writeFileSync(path.join(ws, "grow.stop"), "");
      await running;
    }
    console.log(`      ${reads} reads, ${lengths.size} distinct lengths, up to ${Math.max(...lengths)} bytes`);
    assert.ok(lengths.size >= 2, "positive control: the file really grew between reads");
  });

  it("A23: path strings: clear refusals, newline and U+FFFD allowed, no surrogate aliasing", async function () {
    const name255 = "n".repeat(255);
    const max = Array.from({ length: 16 }, (_, i) => String.fromCharCode(97 + i).repeat(255)).join("/");
    assert.strictEqual(Buffer.byteLength(max), 4095);
    const tooLong = `${"a/".repeat(2048)}a`; // 4097 bytes
    const ops = [
      { op: "write", path: "", data: "x", expect: "SandboxError", msg: /must name a file/ },
      { op: "write", path: ".", data: "x", expect: "SandboxError", msg: /must name a file/ },
      { op: "write", path: "..", data: "x", expect: "SandboxError", msg: /escapes/ },
      { op: "write", path: "/abs", data: "x", expect: "SandboxError", msg: /relative/ },
      { op: "write", path: "a/../../x", data: "x", expect: "SandboxError", msg: /escapes/ },
      { op: "write", path: "a\0b", data: "x", expect: "SandboxError", msg: /NUL/ },
      { op: "write", path: tooLong, data: "x", expect: "SandboxError", msg: /longer than 4095/ },
      { op: "write", path: "n".repeat(256), data: "x", expect: "SandboxError", msg: /longer than 255/ },
      { op: "write", path: "a\uD800", data: "evil", expect: "SandboxError", msg: /surrogate/ },
      { op: "write", path: "\uDC00b", data: "evil", expect: "SandboxError", msg: /surrogate/ },
      { op: "read", path: "", expect: "SandboxError" },
      { op: "read", path: "..", expect: "SandboxError" },
      { op: "read", path: "a\uD800", expect: "SandboxError", msg: /surrogate/ },
      { op: "list", path: "..", expect: "SandboxError", msg: /escapes/ },
      { op: "list", path: "/", expect: "SandboxError", msg: /relative/ },
      { op: "list", path: "a\0", expect: "SandboxError", msg: /NUL/ },
      // Allowed: Linux names may hold a newline, and U+FFFD is a real character.
      { op: "write", path: "a\nb", data: "newline", expect: "ok" },
      { op: "read", path: "a\nb", expect: "ok", want: "newline" },
      { op: "write", path: "a\uFFFD", data: "keep", expect: "ok" },
      { op: "read", path: "a\uFFFD", expect: "ok", want: "keep" },
      { op: "write", path: name255, data: "255", expect: "ok" },
      { op: "write", path: max, data: "max", expect: "ok" },
      { op: "read", path: max, expect: "ok", want: "max" },
      { op: "read", path: "./a//b/../", expect: "SandboxError", msg: /names a directory/ },
      { op: "write", path: "a/b/..", data: "x", expect: "SandboxError", msg: /names a directory/ },
      // A '..' that stays inside is folded lexically, as in 0.1.1.
      { op: "write", path: "sub/../folded", data: "in", expect: "ok" },
      { op: "read", path: "x/y/../../folded", expect: "ok", want: "in" },
      { op: "read", path: "raw\uFFFD", expect: "ENOENT", syscall: "R" },
    ];
    await box(sbx, "printf raw > \"$(printf 'raw\\377')\"");
    await bothModes(sbx, ws, ops);
    // The surrogate never aliased U+FFFD: "a\uFFFD" still holds "keep".
    assert.strictEqual(fs.readFileSync(path.join(ws, "a\uFFFD"), "utf8"), "keep");
    assert.deepStrictEqual(fs.readdirSync(ws, { encoding: "buffer" })
      .filter((n) => n.includes(Buffer.from("a\uFFFD"))).length, 1);
    // listFiles: exact names; the non-UTF-8 one as a Buffer, never as U+FFFD.
    const list = await sbx.listFiles();
    const names = list.map((e) => (Buffer.isBuffer(e.path) ? `buf:${e.path.toString("hex")}` : e.path));
    assert.deepStrictEqual(names.sort(), [max, "a\nb", "a\uFFFD", "buf:726177ff", "folded", name255].sort());
    // Defence in depth: the native layer alone refuses the same strings.
    const root = binding.wsOpen(ws, false);
    try {
      const native = [
        ["..", "EINVAL"], ["a/../../x", "EINVAL"], ["/abs", "EINVAL"], ["a\0b", "EINVAL"],
        ["", "EINVAL"], [".", "EINVAL"], ["x/", "EISDIR"], ["x/.", "EISDIR"],
        ["n".repeat(256), "ENAMETOOLONG"], [tooLong, "ENAMETOOLONG"],
      ];
      for (const [p, code] of native) {
        for (const call of [() => binding.wsReadFile(root, p, 100),
          () => binding.wsWriteFile(root, p, Buffer.from("x"))]) {
          await assert.rejects(call(), (e) => {
            assert.strictEqual(e.code, code, JSON.stringify(p));
            assert.strictEqual(e.errno, -ERRNO[code]);
            assert.strictEqual(e.syscall, "path");
            return true;
          });
        }
      }
      await assert.rejects(binding.wsList(root, "../x"), { code: "EINVAL", syscall: "path" });
    } finally {
      binding.wsClose(root);
    }
    assert.ok(!fs.existsSync(path.join(path.dirname(ws), "x")));
  });

  it("A23: a trailing '/.' names a directory: writeFile('x/.') creates no file x, readFile('file/.') is refused", async function () {
    // wsfs.h: a path ending in "/" or "/." names a directory (EISDIR); the
    // native layer says so (A23 test above), lib/paths.js must not fold it.
    await box(sbx, "echo content > file");
    for (const [op, p] of [["write", "newdir/."], ["read", "file/."], ["write", "file/."]]) {
      const call = op === "write" ? sbx.writeFile(p, "data") : sbx.readFile(p);
      await assert.rejects(call, (e) => {
        assert.ok(e instanceof SandboxError);
        // A path-string refusal, or the native EISDIR/ENOTDIR: never success.
        assert.ok(e.code === "ERR_SANDBOX_INVALID_PATH" || e.code === "EISDIR" || e.code === "ENOTDIR",
          `${op}(${p}): ${e.code}`);
        return true;
      }, `${op}(${JSON.stringify(p)}) must be refused`);
    }
    assert.ok(!fs.existsSync(path.join(ws, "newdir")), "no file named newdir was created");
    assert.strictEqual(fs.readFileSync(path.join(ws, "file"), "utf8"), "content\n");
  });

  it("close() of an owned workspace leaves its last descriptor to a thread of its own " +
    "(wsCloseLater): the workspace is gone when close() resolves, the descriptor soon after, " +
    "and only a descriptor the addon holds is closed", async function () {
    const { watchClosesSettled } = require("../lib/census");
    // wsCloseLater takes a workspace handle, never a number (which may name
    // something else of the program's), and closes a handle once.
    const other = fs.openSync(__filename, "r");
    try {
      assert.throws(() => binding.wsCloseLater(other), { name: "TypeError", code: "ERR_INVALID_ARG_TYPE" });
      assert.ok(fs.fstatSync(other).isFile(), "positive control: the program's file is still open");
    } finally {
      fs.closeSync(other);
    }
    const mine = binding.wsOpen(h.tmpDir("close-later-"), false);
    assert.strictEqual(binding.wsCloseLater(mine), true);
    assert.strictEqual(binding.wsCloseLater(mine), false, "a closed handle closes nothing");
    const before = await h.settledFds();
    // The descriptors that name a temporary workspace (s.workspace stays
    // null for one, as in 0.1.1).
    const wsFds = () => fs.readdirSync("/proc/self/fd").map((d) => {
      try {
        return fs.readlinkSync(`/proc/self/fd/${d}`);
      } catch {
        return "";
      }
    }).filter((l) => /\/kern-ws-[^/]+$/.test(l));
    const s = await new Sandbox({ prewarm: 0 }).open();
    const orig = binding.wsCloseLater;
    const later = [];
    binding.wsCloseLater = function (root) {
      const r = orig.call(this, root);
      later.push(r);
      return r;
    };
    let ws;
    try {
      const held = wsFds();
      assert.ok(held.length >= 1, "positive control: the session holds its workspace");
      ws = held[0];
      assert.ok(fs.existsSync(ws));
    } finally {
      try {
        await s.close();
      } finally {
        binding.wsCloseLater = orig;
      }
    }
    assert.deepStrictEqual(later, [true], "close() handed its workspace's descriptor to wsCloseLater");
    assert.ok(!fs.existsSync(ws), "the workspace is gone when close() resolves");
    await watchClosesSettled();
    assert.deepStrictEqual(wsFds(), [], "its descriptor is closed");
    assert.strictEqual(await h.settledFds(), before);
  });

  describe("A24: close() of an owned workspace", function () {
    let canary;
    let canaryBefore;
    let owned;
    let ownedWs;

    beforeEach(function () {
      canary = h.tmpDir("canary-");
      fs.writeFileSync(path.join(canary, "keep"), "precious");
      fs.mkdirSync(path.join(canary, "sub/deep"), { recursive: true });
      fs.writeFileSync(path.join(canary, "sub/x"), "x");
      fs.writeFileSync(path.join(canary, "sub/deep/y"), "y");
      canaryBefore = attack.census(canary);
      owned = null;
      ownedWs = null;
    });

    afterEach(async function () {
      await attack.stopAll();
      if (owned) await owned.close();
      // Never leave a kern-ws-* directory behind, whatever the test found.
      if (ownedWs && fs.existsSync(ownedWs)) execFileSync("rm", ["-rf", "--one-file-system", ownedWs]);
    });

    it("A24: symlinks to a canary planted at any depth are unlinked, never followed", async function () {
      owned = await new Sandbox().open();
      ownedWs = await workspaceOf(owned);
      assert.match(path.basename(ownedWs), /^kern-ws-/);
      await box(owned, `ln -s ${q(canary)} link; ln -s ${q(path.join(canary, "keep"))} flink
        mkdir -p real/deep; echo a > real/a; ln -s ${q(canary)} real/deep/link; ln -s .. real/up
        ln -s ${q(path.join(canary, "sub"))} real/deep/sub; mkfifo real/fifo`);
      // Positive control: the canary is reachable through the links before close().
      assert.deepStrictEqual(fs.readdirSync(path.join(ownedWs, "link")).sort(), ["keep", "sub"]);
      assert.strictEqual(fs.readFileSync(path.join(ownedWs, "real/deep/sub/x"), "utf8"), "x");
      await owned.close();
      assert.ok(!fs.existsSync(ownedWs), "the owned workspace is gone");
      assert.deepStrictEqual(attack.census(canary), canaryBefore, "the canary is intact");
    });

    it("A24: a box looping `mv sub sub.d; ln -s $CANARY sub; mv sub.d sub` (and a renameat2 swapper) during close() never gets the canary deleted", async function () {
      this.timeout(30000);
      owned = await new Sandbox({ timeoutS: 4 }).open();
      ownedWs = await workspaceOf(owned);
      await box(owned, `mkdir -p sub/deep x/deep; echo a > sub/a; echo b > sub/deep/b
        echo c > x/deep/c; ln -s ${q(canary)} xl; ln -s ${q(canary)} cl`);
      // The loop of the case; `rm sub` is needed between the link and the move
      // back (rename(2) cannot put a directory over a symlink), and -T keeps
      // mv from moving sub.d into the canary through the link.
      const mvLoop = owned.run(["sh", "-c", `while :; do mv -T sub sub.d && ln -s ${q(canary)} sub ` +
        "&& rm sub && mv -T sub.d sub; done"]);
      // startSwapper resolves only once the host saw x become the symlink.
      const swapper = await attack.startSwapper(owned, ownedWs, "x", "xl");
      let flips = 0;
      await h.waitFor(() => {
        if (attack.isLink(path.join(ownedWs, "sub"))) flips++;
        return flips >= 3;
      }, 5000, 1);
      // Positive control: the loop really plants the link, which reaches the canary.
      assert.ok(flips >= 3, `sub was seen as a symlink ${flips} times`);
      assert.deepStrictEqual(fs.readdirSync(path.join(ownedWs, "cl")).sort(), ["keep", "sub"]);
      await owned.close();
      // Both boxes end, at the latest at their 4 s deadline (or killed by close()).
      const { swaps } = await swapper.stop();
      const r = await mvLoop.catch((e) => e);
      console.log(`      swapper: ${swaps < 0 ? "ended by close()" : `${swaps} swaps`}; ` +
        `mv loop: ${r instanceof Error ? r.message : JSON.stringify(r.fault)}`);
      assert.deepStrictEqual(attack.census(canary), canaryBefore, "the canary is intact");
    });

    it("A24: close() ends the session's running boxes before it deletes the workspace", async function () {
      this.timeout(30000);
      owned = await new Sandbox({ timeoutS: 5 }).open();
      ownedWs = await workspaceOf(owned);
      const marker = `ks-a24-${crypto.randomBytes(6).toString("hex")}`;
      const running = owned.run(["sh", "-c", `while :; do echo x > ${marker}; sleep 0.02; done`]);
      let settledAt = null;
      running.then(() => { settledAt = Date.now(); }, () => { settledAt = Date.now(); });
      assert.ok(await h.waitFor(() => h.processesWith(marker).length > 0, h.startWait(3000)),
        "the box runs");
      await owned.close();
      const closedAt = Date.now();
      try {
        // Expected: the box is killed (kill boxes first, then delete: A24),
        // so its run settles and its processes are gone within a second.
        await h.waitFor(() => settledAt !== null, 2000);
        assert.ok(settledAt !== null, "the run of a box still running at close() has not " +
          `settled ${Date.now() - closedAt} ms after close() resolved`);
        assert.deepStrictEqual(h.processesWith(marker), [], "no box process survives close()");
        assert.ok(!fs.existsSync(ownedWs), "the owned workspace is gone");
      } finally {
        await running.catch(() => {});
      }
    });
  });

  it("A25: 10,000 files and a 300-deep chain are listed in full, with no descriptor left open", async function () {
    this.timeout(60000);
    await box(sbx, "python3 -c \"import os\n" +
      "for d in range(10):\n    os.mkdir('f%d' % d)\n" +
      "    for i in range(1000):\n        open('f%d/%04d' % (d, i), 'w').write('x' * (i % 7))\n" +
      "os.makedirs('/'.join(['d'] * 300))\nopen('/'.join(['d'] * 300 + ['leaf']), 'w').write('deep')\"");
    const deepLeaf = `${"d/".repeat(300)}leaf`;
    const fds0 = await h.settledFds();
    const t0 = Date.now();
    const list = await sbx.listFiles();
    const ms = Date.now() - t0;
    assert.strictEqual(h.openFds(), fds0, "no descriptor leaked");
    console.log(`      listFiles: ${list.length} entries in ${ms} ms`);
    assert.strictEqual(list.length, 10001);
    const paths = list.map((e) => e.path);
    const sorted = [...paths].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    assert.deepStrictEqual(paths, sorted, "sorted by byte value (strcmp)");
    assert.strictEqual(new Set(paths).size, paths.length);
    assert.ok(paths.includes(deepLeaf));
    assert.deepStrictEqual(list.find((e) => e.path === "f3/0013"), { path: "f3/0013", size: 6, change: "created" });
    await bothModes(sbx, ws, [
      { op: "list", path: "d/d/d", expect: "ok", want: [{ path: deepLeaf, size: 4 }] },
      { op: "read", path: deepLeaf, expect: "ok", want: "deep" },
      { op: "list", path: "f9", expect: "ok",
        want: Array.from({ length: 1000 }, (_, i) => ({ path: `f9/${String(i).padStart(4, "0")}`, size: i % 7 })) },
    ]);
  });

  it("A25: a chain deeper than a path can name gives ENAMETOOLONG (4095 bytes list, 4096 and a 1,100-deep chain do not), and close() still removes it", async function () {
    this.timeout(60000);
    const owned = await new Sandbox().open();
    const ownedWs = await workspaceOf(owned);
    try {
      // ok/ + 818 x "dddd/" + "ff" = 4095 bytes; no/ + ... + "fff" = 4096;
      // deep/ + 1,100 x "dddd/": past the limit at level 819.
      const r = await owned.run(["python3", "-c", [
        "import os",
        "def chain(top, depth, leaf):",
        "    fd = os.open('.', os.O_RDONLY)",
        "    os.mkdir(top); os.chdir(top)",
        "    for _ in range(depth):",
        "        os.mkdir('dddd'); os.chdir('dddd')",
        "    if leaf: open(leaf, 'w').write('x')",
        "    os.fchdir(fd)",
        "chain('ok', 818, 'ff')",
        "chain('no', 818, 'fff')",
        "chain('deep', 1100, 'f')",
      ].join("\n")]);
      assert.strictEqual(r.exitCode, 0, r.stderr);
      // The run's own change scan cannot walk it either: no list, still a result.
      assert.deepStrictEqual(r.files, []);
      const okPath = `ok/${"dddd/".repeat(818)}ff`;
      assert.strictEqual(Buffer.byteLength(okPath), 4095);
      // The run's kern may still be tearing its box down (its descriptors
      // go when it exits), and the pool refilling: count from after that.
      await h.sleep(20);
      assert.ok(await h.waitFor(() => binding.liveBoxes() <= 1, 5000), "the pool's old box is gone");
      const fds0 = await h.settledFds();
      await bothModes(owned, ownedWs, [
        { op: "list", path: "ok", expect: "ok", want: [{ path: okPath, size: 1 }] },
        { op: "list", path: "no", expect: "ENAMETOOLONG", syscall: "walk" },
        { op: "list", path: "deep", expect: "ENAMETOOLONG", syscall: "walk" },
        { op: "list", expect: "ENAMETOOLONG", syscall: "walk" },
        { op: "read", path: okPath, expect: "ok", want: "x" },
      ]);
      assert.strictEqual(h.openFds(), fds0, "no descriptor leaked");
      await owned.close();
      assert.ok(!fs.existsSync(ownedWs), "close() removed the 1,100-deep tree");
    } finally {
      await owned.close();
      if (fs.existsSync(ownedWs)) execFileSync("rm", ["-rf", "--one-file-system", ownedWs]);
    }
  });

  it("listFiles(subdir): a symlink is ELOOP; a missing dir or a file lists nothing, as in 0.1.1",
    async function () {
    await box(sbx, `mkdir -p real/in; echo x > real/in/f; echo t > file; ln -s real link
      ln -s ${q(outer)} out; ln -s nowhere dangling`);
    const want = [{ path: "real/in/f", size: 2 }];
    await bothModes(sbx, ws, [
      { op: "list", path: "link", expect: "ELOOP", syscall: "R" },
      { op: "list", path: "link/in", expect: "ELOOP", syscall: "R" },
      { op: "list", path: "out", expect: "ELOOP", syscall: "R" },
      { op: "list", path: "dangling", expect: "ELOOP", syscall: "R" },
      { op: "list", path: "nope", expect: "ok", want: [] },
      { op: "list", path: "real/nope", expect: "ok", want: [] },
      { op: "list", path: "file", expect: "ok", want: [] },
      { op: "list", path: "file/x", expect: "ok", want: [] },
      { op: "list", path: "real/../..", expect: "SandboxError", msg: /escapes/ },
      { op: "list", path: "real/..", expect: "ok", want: [{ path: "file", size: 2 }, ...want] },
      { op: "list", path: "real", expect: "ok", want },
      { op: "list", path: "./real//in/.", expect: "ok", want },
      { op: "list", path: "real/", expect: "ok", want },
      { op: "list", path: ".", expect: "ok", want: [{ path: "file", size: 2 }, ...want] },
    ]);
  });

  it("listFiles excludes .deps (top level), .ks-* (any depth) and top-level .kern-env* files, symlinks and FIFOs", async function () {
    await box(sbx, `mkdir -p .deps/pkg a/.deps .ks-rm-1 sub
      echo x > .deps/pkg/m.py; echo y > a/.deps/y; echo 1 > .ks-tmp-1; echo 2 > a/.ks-tmp-2
      echo 3 > .ks-rm-1/f; echo S > .kern-env; echo S > .kern-env-42; echo k > a/.kern-env
      echo d > .deps-not-the-dir; echo f > sub/f; ln -s sub/f link; mkfifo pipe`);
    // Positive control: the hidden ones are there on disk.
    for (const p of [".deps/pkg/m.py", ".ks-tmp-1", "a/.ks-tmp-2", ".ks-rm-1/f", ".kern-env", ".kern-env-42"])
      assert.ok(fs.existsSync(path.join(ws, p)), p);
    await bothModes(sbx, ws, [
      { op: "list", expect: "ok", want: [
        { path: ".deps-not-the-dir", size: 2 }, { path: "a/.deps/y", size: 2 },
        { path: "a/.kern-env", size: 2 }, { path: "sub/f", size: 2 }] },
      { op: "list", path: "a", expect: "ok", want: [
        { path: "a/.deps/y", size: 2 }, { path: "a/.kern-env", size: 2 }] },
    ]);
  });

  it("writeFile creates missing parents, keeps a replaced file's rwx bits (never set-id), and refuses a file or directory in the way", async function () {
    const ref = path.join(h.tmpDir("umask-"), "ref");
    fs.writeFileSync(ref, "", { mode: 0o644 });
    fs.mkdirSync(`${ref}.d`, { mode: 0o755 });
    await sbx.writeFile("p/q/r/f.txt", "deep");
    assert.strictEqual(fs.readFileSync(path.join(ws, "p/q/r/f.txt"), "utf8"), "deep");
    for (const d of ["p", "p/q", "p/q/r"]) {
      const st = fs.lstatSync(path.join(ws, d));
      assert.ok(st.isDirectory(), d);
      assert.strictEqual(st.mode & 0o7777, fs.statSync(`${ref}.d`).mode & 0o7777, d);
    }
    assert.strictEqual(fs.statSync(path.join(ws, "p/q/r/f.txt")).mode & 0o7777,
      fs.statSync(ref).mode & 0o7777);
    fs.chmodSync(path.join(ws, "p/q/r/f.txt"), 0o4755);
    await sbx.writeFile("p/q/r/f.txt", "#!/bin/sh\n");
    assert.strictEqual(fs.statSync(path.join(ws, "p/q/r/f.txt")).mode & 0o7777, 0o755);
    await bothModes(sbx, ws, [
      { op: "write", path: "p/q/r/f.txt/x", data: "x", expect: "ENOTDIR", syscall: "R" },
      { op: "write", path: "p/q", data: "x", expect: "EISDIR", syscall: "fstatat" },
      { op: "read", path: "p/q", expect: "EISDIR", syscall: "fstat" },
      { op: "write", path: "./n1//n2/./f", data: "ok", expect: "ok" },
      { op: "read", path: "n1/n2/f", expect: "ok", want: "ok" },
      { op: "read", path: "n1/missing", expect: "ENOENT", syscall: "R" },
    ]);
    assert.deepStrictEqual(execFileSync("find", [ws, "-name", ".ks-*"], { encoding: "utf8" }), "",
      "no temp file left behind");
  });

  it("writeFile is atomic: readers never see a mix of two 1 MiB contents", async function () {
    this.timeout(30000);
    const A = Buffer.alloc(MiB, "A");
    const B = Buffer.alloc(MiB, "B");
    await sbx.writeFile("atomic.bin", A);
    let writing = true;
    const seen = { A: 0, B: 0, api: 0, fs: 0 };
    const bad = [];
    const check = (buf, how) => {
      seen[how]++;
      if (buf.equals(A)) seen.A++;
      else if (buf.equals(B)) seen.B++;
      else if (bad.length < 5) bad.push(`${how}: ${buf.length} bytes, first ${buf[0]}, last ${buf[buf.length - 1]}`);
    };
    const writer = (async () => {
      try {
        for (let i = 0; i < 120; i++) await sbx.writeFile("atomic.bin", i % 2 ? A : B);
      } finally {
        writing = false;
      }
    })();
    const reader = async (how) => {
      while (writing) {
        check(how === "api" ? await sbx.readFile("atomic.bin") :
          await fs.promises.readFile(path.join(ws, "atomic.bin")), how);
      }
    };
    await Promise.all([writer, reader("api"), reader("api"), reader("fs"), reader("fs")]);
    console.log(`      reads: ${seen.api} through the API, ${seen.fs} direct; ${seen.A} A, ${seen.B} B`);
    assert.deepStrictEqual(bad, [], "a torn or mixed read");
    // Positive control: both contents were really observed, by both readers.
    assert.ok(seen.A > 0 && seen.B > 0, JSON.stringify(seen));
    assert.ok(seen.api > 0 && seen.fs > 0, JSON.stringify(seen));
  });

  describe("C14: a full file system", function () {
    let mnt = null;

    before(function () {
      mnt = h.tmpDir("tmpfs-");
      try {
        execFileSync("mount", ["-t", "tmpfs", "-o", "size=1m,mode=0755", "tmpfs", mnt], { stdio: "pipe" });
      } catch (e) {
        const why = `cannot mount a 1 MiB tmpfs (${String(e.stderr || e.message).trim()})`;
        mnt = null;
        if (process.env.KERN_SANDBOX_MUST_WORK === "1") throw new Error(why);
        h.skip(this, why);
      }
    });

    after(function () {
      if (mnt !== null) execFileSync("umount", [mnt]);
    });

    it("C14: writeFile past a 1 MiB tmpfs gives ENOSPC, keeps the old content and leaves no .ks-tmp-* file", async function () {
      const s = await new Sandbox({ workspace: mnt }).open();
      try {
        const st = fs.statfsSync(mnt);
        assert.ok(st.blocks * st.bsize <= 1.5 * MiB, "positive control: the file system is tiny");
        const small = crypto.randomBytes(100 * 1024);
        await s.writeFile("small", small); // positive control: a write that fits
        const big = Buffer.alloc(2 * MiB, "z");
        for (const p of ["big", "small", "dir/big"]) {
          await assert.rejects(s.writeFile(p, big), (e) => {
            assert.ok(e instanceof SandboxError);
            assert.strictEqual(e.code, "ENOSPC");
            assert.strictEqual(e.errno, -ERRNO.ENOSPC);
            assert.strictEqual(e.syscall, "write");
            assert.strictEqual(e.path, p);
            return true;
          }, p);
        }
        assert.ok((await s.readFile("small")).equals(small), "the old content is intact");
        assert.ok(!fs.existsSync(path.join(mnt, "big")), "no partial file");
        assert.deepStrictEqual(execFileSync("find", [mnt, "-name", ".ks-*"], { encoding: "utf8" }), "");
        assert.deepStrictEqual((await s.listFiles()).map((e) => e.path), ["small"]);
        await s.writeFile("small", "after"); // the space came back
        assert.strictEqual((await s.readFile("small")).toString(), "after");
      } finally {
        await s.close();
      }
    });
  });
});
