"use strict";

// Walk bombs (SECURITY-CASES.md A25): a box fills its workspace with more
// files, more path bytes or deeper chains than a walk may take. The caps are
// compile-time constants of csrc/core/workspace/wsfs.h (KS_WS_MAX_ENTRIES, 1,000,000
// files; KS_WS_MAX_PATH_BYTES, 256 MiB of paths, each counted with its NUL;
// KS_WS_PATH_MAX, 4,095 bytes): listFiles() then fails with E2BIG or
// ENAMETOOLONG (syscall "walk"), a run's change list is [] (README: "a
// workspace a box made too big to walk gives `files: []`"), and close()
// still removes the tree. Each test checks the boundary from both sides.
// The 10^6-file case takes minutes on a loaded 2-core machine (creating and
// removing a million files), so it runs only with KERN_SANDBOX_STRESS=1.
const assert = require("assert");
const fs = require("fs");
const os = require("os");
const path = require("path");
const { execFileSync } = require("child_process");
const { Sandbox, SandboxError } = require("..");
const h = require("./lib/harness");

const stress = process.env.KERN_SANDBOX_STRESS === "1";
const MiB = 1 << 20;
const MAX_ENTRIES = 1000000; // KS_WS_MAX_ENTRIES
const MAX_PATH_BYTES = 256 * MiB; // KS_WS_MAX_PATH_BYTES
const TMPFS_MAGIC = 0x01021994;

const { note } = h;

/** Builds test/fixtures/mkfiles.c (once per run) into the test temp root. */
function buildMkfiles() {
  const bin = path.join(h.testRoot(), "bin", "mkfiles");
  if (!fs.existsSync(bin)) {
    fs.mkdirSync(path.dirname(bin), { recursive: true, mode: 0o755 });
    execFileSync("cc", ["-std=gnu11", "-O2", "-Wall", "-Wextra", "-Werror", "-o", bin,
      path.join(h.repo, "test", "fixtures", "mkfiles.c")], { stdio: "pipe" });
  }
  return bin;
}

/** Peak RSS growth (bytes) while fn runs, from VmHWM after resetting it
 * (clear_refs 5): the engine's threads are in this process, so their
 * buffers count. Returns { value, ms, grew } or { error, ms, grew }. */
async function measured(fn) {
  const status = () => fs.readFileSync("/proc/self/status", "utf8");
  const kb = (s, key) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, "m").exec(s)[1]) * 1024;
  global.gc?.();
  fs.writeFileSync("/proc/self/clear_refs", "5");
  const rss0 = kb(status(), "VmRSS");
  const t0 = Date.now();
  let out;
  try {
    out = { value: await fn() };
  } catch (error) {
    out = { error };
  }
  out.ms = Date.now() - t0;
  out.grew = kb(status(), "VmHWM") - rss0;
  return out;
}

const mib = (b) => (b / MiB).toFixed(1);

/** Asserts err is the walk's SandboxError with errno name code. */
function walkError(err, code) {
  assert.ok(err instanceof SandboxError, String(err && err.stack));
  assert.strictEqual(err.code, code, err.message);
  assert.strictEqual(err.errno, -os.constants.errno[code]);
  assert.strictEqual(err.syscall, "walk");
}

describe("A25: walk bombs", function () {
  let base = null; // where owned workspaces go: a tmpfs when there is one
  let mounted = false;
  let mkfiles = null;

  before(function () {
    this.timeout(60000);
    mkfiles = buildMkfiles();
    // 65,536 files take a second on a tmpfs and much longer on ext4.
    try {
      if (fs.statfsSync("/dev/shm").type === TMPFS_MAGIC) base = fs.mkdtempSync("/dev/shm/ks-a25-");
    } catch {
      /* no /dev/shm */
    }
    if (base === null && process.getuid() === 0) {
      const dir = h.tmpDir("tmpfs-");
      try {
        execFileSync("mount", ["-t", "tmpfs", "-o", "size=4g,mode=0755", "tmpfs", dir], { stdio: "pipe" });
        base = dir;
        mounted = true;
      } catch {
        /* on disk below */
      }
    }
    if (base === null) {
      base = h.tmpDir("a25-");
      note("note: no tmpfs, the workspaces are on disk (slower)");
    }
  });

  after(function () {
    this.timeout(120000);
    if (mounted) execFileSync("umount", [base]);
    else if (base !== null) fs.rmSync(base, { recursive: true, force: true });
  });

  /** A session whose workspace open() creates (and close() removes) under base. */
  async function ownedSession(opts = {}) {
    const saved = process.env.TMPDIR;
    process.env.TMPDIR = base; // read once, by open()
    try {
      const sbx = await new Sandbox({ timeoutS: 300, ...opts }).open();
      const r = await sbx.run(["sh", "-c", "pwd -P"]);
      assert.strictEqual(r.exitCode, 0, r.stderr);
      const ws = r.stdout.trim();
      assert.strictEqual(path.dirname(ws), fs.realpathSync(base));
      return { sbx, ws };
    } finally {
      if (saved === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = saved;
    }
  }

  async function ok(sbx, argv) {
    const r = await sbx.run(argv);
    assert.strictEqual(r.exitCode, 0, `${argv.join(" ").slice(0, 200)}: ${r.stderr}`);
    assert.strictEqual(r.fault, null);
    return r;
  }

  /** The cap from both sides: `fill` (a run that makes exactly the cap) is
   * listed in full by the run and by listFiles; one more small file makes
   * listFiles fail with E2BIG, and run() still returns, with files []. */
  async function capBothSides(sbx, ws, { fill, made, expectCount, checkList, boundMiB }) {
    const t1 = Date.now();
    const r1 = await ok(sbx, fill);
    const fillMs = Date.now() - t1;
    assert.strictEqual(r1.stdout, `made ${made}\n`);
    // At the cap: the run's own change list is complete (the tracker's
    // queue overflowed; its rescan walks exactly the cap).
    assert.strictEqual(r1.files.length, expectCount, "the run lists every file it made");
    assert.ok(r1.files.every((f) => f.change === "created" && f.size === 0));

    const full = await measured(() => sbx.listFiles());
    if (full.error) throw full.error;
    assert.strictEqual(full.value.length, expectCount, "exactly at the cap: listed in full");
    checkList(full.value);

    // One file more (a 1-byte name at the top: 2 more bytes, 1 more entry).
    const r2 = await ok(sbx, ["sh", "-c", "echo over > x; echo ran"]);
    assert.strictEqual(r2.stdout, "ran\n", "the run's own result stands");
    assert.deepStrictEqual(r2.files, [], "no change list past the cap (x was made)");

    const over = await measured(() => sbx.listFiles());
    assert.ok(over.error, `listFiles() past the cap returned ${over.value && over.value.length} entries`);
    walkError(over.error, "E2BIG");
    // The session still works.
    assert.strictEqual(String(await sbx.readFile("x")), "over\n");

    // Recovery: back at the cap, the next run that begins there has a list
    // again (the run that removes the extra files began past the cap).
    const r3 = await ok(sbx, ["rm", "x"]);
    assert.deepStrictEqual(r3.files, []);
    const r4 = await ok(sbx, ["sh", "-c", `echo again > ${full.value[0].path}`]);
    assert.deepStrictEqual(r4.files, [{ path: full.value[0].path, size: 6, change: "modified" }]);

    const t2 = Date.now();
    await sbx.close();
    const closeMs = Date.now() - t2;
    assert.ok(!fs.existsSync(ws), "close() removed the workspace");
    note(`fill ${fillMs} ms; at the cap: listFiles ${full.ms} ms, RSS +${mib(full.grew)} MiB; ` +
      `one over: E2BIG in ${over.ms} ms, RSS +${mib(over.grew)} MiB; close() ${closeMs} ms`);
    assert.ok(over.ms < 30000, `E2BIG took ${over.ms} ms`);
    // Under ASan, freed blocks stay resident in its quarantine (256 MiB by
    // default) before reuse: the walk's own bound plus that. Under TSan,
    // each byte the walk touches also has 2 bytes of shadow: 3 times it.
    const bound = { Release: boundMiB, Test: boundMiB, Debug: boundMiB + 256, Tsan: 3 * boundMiB }[h.addonFlavour] * MiB;
    assert.ok(over.grew < bound, `the refused walk grew RSS by ${mib(over.grew)} MiB`);
  }

  it("A25: 256 MiB of path bytes: 65,536 files with 4,095-byte paths list in full (listFiles and " +
    "result.files); one more file gives E2BIG fast in bounded memory, run() still returns " +
    "(files []), the list comes back under the cap, close() removes it", async function () {
    this.timeout(h.underSanitizer ? 600000 : 120000);
    const { sbx, ws } = await ownedSession();
    try {
      // 15 components of 255 bytes (3,839 bytes), then a 255-byte name:
      // 4,095 bytes, 4,096 with the NUL, so 65,536 files are exactly 256 MiB.
      const dir = Array(15).fill("a".repeat(255)).join("/");
      const N = MAX_PATH_BYTES / 4096;
      const name = (i) => `${dir}/${String(i).padStart(255, "0")}`;
      assert.strictEqual(Buffer.byteLength(name(0)), 4095);
      await capBothSides(sbx, ws, {
        fill: [mkfiles, dir, String(N), "0", "255"], made: N, expectCount: N,
        checkList: (list) => {
          const bytes = list.reduce((a, e) => a + Buffer.byteLength(e.path) + 1, 0);
          assert.strictEqual(bytes, MAX_PATH_BYTES, "the listing holds exactly 256 MiB of paths");
          assert.strictEqual(list[0].path, name(0));
          assert.strictEqual(list[N - 1].path, name(N - 1));
        },
        // The walk's arena stops at the cap: 256 MiB, plus its records.
        boundMiB: 256 + 64,
      });
    } finally {
      await sbx.close();
    }
  });

  it("A25: 10^6 files: exactly 1,000,000 list in full (listFiles and result.files); one more gives " +
    "E2BIG fast in bounded memory, run() still returns (files []), close() removes it", async function () {
    if (!stress)
      return h.skipHost(this, "creating and removing 10^6 files takes minutes on a loaded 2-core host and " +
        "the cap is a compile-time constant (KS_WS_MAX_ENTRIES): run with KERN_SANDBOX_STRESS=1");
    this.timeout(1800000);
    const { sbx, ws } = await ownedSession();
    try {
      // 1,000 directories of 1,000 files: "d000123/000456", 14 bytes.
      await capBothSides(sbx, ws, {
        fill: [mkfiles, ".", String(MAX_ENTRIES), "1000", "6"], made: MAX_ENTRIES,
        expectCount: MAX_ENTRIES,
        checkList: (list) => {
          assert.strictEqual(list[0].path, "d000000/000000");
          assert.strictEqual(list[MAX_ENTRIES - 1].path, "d000999/999999");
        },
        // 10^6 records of 32 bytes (a 2^20 array) and 15 MB of paths.
        boundMiB: 64 + 64,
      });
    } finally {
      await sbx.close();
    }
  });

  it("A25: a 10,000-deep chain gives ENAMETOOLONG in listFiles and files [] in run(), iteratively " +
    "(no stack overflow, no fd left); the deepest chain a path can name (2,047 levels, 4,095 bytes) " +
    "lists in full; close() removes it", async function () {
    this.timeout(h.underSanitizer ? 300000 : 60000);
    const { sbx, ws } = await ownedSession();
    try {
      const chain = (top, depth, leaf) => ["python3", "-c", [
        "import os, sys",
        "top, depth, leaf = sys.argv[1], int(sys.argv[2]), sys.argv[3]",
        "fd = os.open('.', os.O_RDONLY)",
        "os.mkdir(top); os.chdir(top)",
        "for _ in range(depth):",
        "    os.mkdir('d'); os.chdir('d')",
        "if leaf: open(leaf, 'w').write('x')",
        "os.fchdir(fd)",
      ].join("\n"), top, String(depth), leaf];
      // "m/" + 2,046 x "d/" + "f": 4,095 bytes, 2,047 directories.
      const deepest = `m/${"d/".repeat(2046)}f`;
      assert.strictEqual(Buffer.byteLength(deepest), 4095);
      const r1 = await ok(sbx, chain("m", 2046, "f"));
      assert.deepStrictEqual(r1.files, [{ path: deepest, size: 1, change: "created" }]);
      assert.deepStrictEqual(await sbx.listFiles(), [{ path: deepest, size: 1, change: "created" }]);

      const fds0 = await h.settledFds();
      const t0 = Date.now();
      const r2 = await ok(sbx, chain("deep", 10000, "f"));
      const runMs = Date.now() - t0;
      assert.deepStrictEqual(r2.files, [], "the run's change walk cannot name it: no list");
      const all = await measured(() => sbx.listFiles());
      walkError(all.error, "ENAMETOOLONG");
      const sub = await measured(() => sbx.listFiles("deep"));
      walkError(sub.error, "ENAMETOOLONG");
      // An empty chain past 4,095 bytes is refused as well: the walk cannot
      // name the directories, whatever they hold.
      await ok(sbx, chain("bare", 10000, ""));
      walkError(await sbx.listFiles("bare").then(() => null, (e) => e), "ENAMETOOLONG");
      assert.deepStrictEqual(await sbx.listFiles("m"), [{ path: deepest, size: 1, change: "created" }]);
      assert.strictEqual(await h.settledFds(), fds0, "no descriptor left open");

      // Recovery: once the chains are gone, runs list again.
      const r3 = await ok(sbx, ["rm", "-rf", "deep", "bare"]);
      assert.deepStrictEqual(r3.files, []);
      const r4 = await ok(sbx, ["sh", "-c", "echo hi > new"]);
      assert.deepStrictEqual(r4.files, [{ path: "new", size: 3, change: "created" }]);

      // close() with a 10,000-deep chain in place.
      await ok(sbx, chain("deep", 10000, "f"));
      const t1 = Date.now();
      await sbx.close();
      const closeMs = Date.now() - t1;
      assert.ok(!fs.existsSync(ws), "close() removed the 10,000-deep chain");
      note(`10,000-deep chain: run ${runMs} ms (files []), listFiles ENAMETOOLONG in ${all.ms} ms ` +
        `(RSS +${mib(all.grew)} MiB); close() ${closeMs} ms`);
      assert.ok(all.ms < 10000 && all.grew < 64 * MiB);
    } finally {
      await sbx.close();
    }
  });
});
