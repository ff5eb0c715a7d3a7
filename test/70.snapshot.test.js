"use strict";

// snapshot()/restore(): the opt-in gate, round trips, interoperability with
// GNU tar and Python's tarfile, and hostile archives (A1-A4, A6, A7, A9,
// A11, A14).
const assert = require("assert");
const fs = require("fs");
const path = require("path");
const zlib = require("zlib");
const { execFileSync } = require("child_process");
const { Sandbox, SandboxError } = require("..");
const h = require("./lib/harness");
const { snapshotSession } = require("./lib/snapshot-session");
const { treeOf } = require("./lib/archive");

const MAKE = path.join(h.repo, "test/fixtures/make-archive.py");

describe("snapshot and restore", function () {
  let sbx;
  let ws;
  let out;
  snapshotSession((s) => {
    ({ sbx, ws, out } = s);
  });

  it("is opt-in: without KERN_SANDBOX_SNAPSHOT=1 both throw a SandboxError that says so", function () {
    delete process.env.KERN_SANDBOX_SNAPSHOT;
    try {
      assert.throws(() => sbx.snapshot(path.join(out, "s.tgz")),
        (e) => e instanceof SandboxError && /KERN_SANDBOX_SNAPSHOT=1/.test(e.message));
      assert.throws(() => sbx.restore(path.join(out, "s.tgz")), /KERN_SANDBOX_SNAPSHOT=1/);
      assert.ok(!fs.existsSync(path.join(out, "s.tgz")));
    } finally {
      process.env.KERN_SANDBOX_SNAPSHOT = "1";
    }
  });

  it("round-trips files, including paths over 100 bytes (USTAR prefix)", async function () {
    const long = `${"d".repeat(60)}/${"e".repeat(60)}/${"f".repeat(90)}.txt`;
    await sbx.writeFile("a.txt", "alpha");
    await sbx.writeFile("sub/b.bin", Buffer.from([0, 1, 2, 255]));
    await sbx.writeFile(long, "long");
    await sbx.writeFile(".deps/pkg/__init__.py", "x = 1");
    fs.symlinkSync("/etc/passwd", path.join(ws, "link")); // never archived (A14)
    const snap = path.join(out, "s.tar.gz");
    sbx.snapshot(snap);
    const before = treeOf(ws);
    delete before.link;
    await sbx.close();

    const ws2 = h.tmpDir("snapws2-");
    const s2 = await new Sandbox({ workspace: ws2 }).open();
    try {
      s2.restore(snap);
      assert.deepStrictEqual(treeOf(ws2), before);
    } finally {
      await s2.close();
    }
    // sbx is closed; the afterEach's close() of it again is a no-op.
  });

  it("is deterministic and readable by zlib, GNU tar and Python tarfile (filter='data')", async function () {
    await sbx.writeFile("z.txt", "zz");
    await sbx.writeFile("a/b/c.txt", "abc");
    const s1 = path.join(out, "1.tgz");
    const s2 = path.join(out, "2.tgz");
    sbx.snapshot(s1);
    sbx.snapshot(s2);
    assert.ok(fs.readFileSync(s1).equals(fs.readFileSync(s2)), "same tree, same bytes");
    assert.ok(zlib.gunzipSync(fs.readFileSync(s1)).length % 512 === 0);
    const listed = execFileSync("tar", ["-tzf", s1], { encoding: "utf8" }).trim().split("\n");
    assert.deepStrictEqual(listed, ["a/b/c.txt", "z.txt"]);
    const py = execFileSync("python3", ["-c",
      "import sys,tarfile,tempfile\nt=tarfile.open(sys.argv[1])\nd=tempfile.mkdtemp(dir=sys.argv[2])\n" +
      "t.extractall(d, filter='data')\nprint(sorted(m.name for m in t.getmembers()))\n" +
      "print(open(d+'/a/b/c.txt').read())", s1, out], { encoding: "utf8" });
    assert.strictEqual(py, "['a/b/c.txt', 'z.txt']\nabc\n");
  });

  it("restores an archive GNU tar made of files and directories", function () {
    const src = h.tmpDir("gnusrc-");
    fs.mkdirSync(path.join(src, "dir/sub"), { recursive: true });
    fs.writeFileSync(path.join(src, "dir/sub/x.txt"), "x".repeat(3000));
    fs.writeFileSync(path.join(src, "top.txt"), "top");
    const arc = path.join(out, "gnu.tgz");
    execFileSync("tar", ["-C", src, "-czf", arc, "dir", "top.txt"]);
    sbx.restore(arc);
    assert.strictEqual(fs.readFileSync(path.join(ws, "dir/sub/x.txt"), "utf8"), "x".repeat(3000));
    assert.strictEqual(fs.readFileSync(path.join(ws, "top.txt"), "utf8"), "top");
  });

  describe("hostile archives are refused before anything is written", function () {
    const cases = [
      ["A1: absolute path", "absolute", /absolute/],
      ["A2: '..' traversal", "dotdot", /'\.\.'/],
      ["A3: symlink member", "symlink", /symlink/],
      ["A4: hardlink member", "hardlink", /hardlink/],
      ["A6: FIFO member", "fifo", /FIFO/],
      ["A6: device member", "chardev", /device/],
      ["A6: PAX extension header", "pax", /PAX|extension/],
      ["A6: GNU long-name header", "gnulong", /PAX|extension/],
      ["A7: a directory claiming content (hides a header)", "dir-with-size", /directory member claims/],
      ["A7: a member hidden after a zero block", "zero-then-evil", /after its end marker/],
      ["A8: a bad header checksum", "bad-checksum", /checksum/],
      ["A9: a truncated gzip stream", "truncated", /truncated/],
      ["A9: trailing garbage after the gzip stream", "trailing-garbage", /corrupt|trailing/],
      ["A11: 200 valid members, then '../evil'", "many-then-evil", /'\.\.'/],
    ];
    for (const [title, kind, re] of cases) {
      it(title, async function () {
        await sbx.writeFile("keep.txt", "unchanged");
        const before = treeOf(ws);
        const arc = path.join(out, `${kind}.tgz`);
        execFileSync("python3", [MAKE, arc, kind]);
        assert.throws(() => sbx.restore(arc), (e) => {
          assert.ok(e instanceof SandboxError, String(e));
          assert.match(e.message, re);
          return true;
        });
        assert.deepStrictEqual(treeOf(ws), before, "the workspace is exactly as it was");
        assert.ok(!fs.existsSync("/tmp/ks-evil"));
      });
    }

    it("A9: a gzip bomb stops at the 1 GiB inflate cap with bounded memory", async function () {
      this.timeout(120000);
      const arc = path.join(out, "bomb.tgz");
      execFileSync("python3", [MAKE, arc, "bomb"]);
      const rss0 = process.memoryUsage().rss;
      assert.throws(() => sbx.restore(arc), /more than 1 GiB/);
      assert.ok(process.memoryUsage().rss - rss0 < 64 << 20);
      assert.deepStrictEqual(fs.readdirSync(ws), []);
    });

    it("A3/A12: a directory member that lands on a planted symlink", function () {
      const outside = h.tmpDir("outside-");
      fs.symlinkSync(outside, path.join(ws, "ok"));
      const arc = path.join(out, "good.tgz");
      execFileSync("python3", [MAKE, arc, "dotdot", "fine.txt"]); // ok/a.txt + fine.txt
      assert.throws(() => sbx.restore(arc), /symlink in the workspace/);
      assert.deepStrictEqual(fs.readdirSync(outside), [], "nothing written through the link");
    });
  });

  it("refuses, naming the file, paths over 255 bytes and names restore would refuse (F5)", async function () {
    const dest = path.join(out, "s.tgz");
    const long = `${"d".repeat(200)}/${"f".repeat(60)}.txt`;
    await sbx.writeFile(long, "x");
    assert.throws(() => sbx.snapshot(dest), (e) => e instanceof SandboxError &&
      e.code === "ENAMETOOLONG" && /longer than a USTAR/.test(e.message) && e.path === long);
    await sbx.run(["rm", "-r", "d".repeat(200)]);
    await sbx.writeFile("back\\slash", "x");
    assert.throws(() => sbx.snapshot(dest), (e) => e.code === "EINVAL" && /restore refuses/.test(e.message));
    assert.ok(!fs.existsSync(dest), "no partial archive");
    await sbx.run(["rm", "back\\slash"]);
    sbx.snapshot(dest); // positive control: the same workspace without them
    assert.ok(fs.existsSync(dest));
  });

  it("A9: an archive cut at a gzip member boundary (no end marker) is refused", function () {
    const arc = path.join(out, "cut.tgz");
    execFileSync("python3", ["-c",
      "import gzip,tarfile,io,sys\nb=io.BytesIO()\nt=tarfile.open(fileobj=b,mode='w',format=tarfile.USTAR_FORMAT)\n" +
      "i=tarfile.TarInfo('ok.txt'); i.size=2; t.addfile(i, io.BytesIO(b'hi'))\n" +
      "raw=b.getvalue()[:1024]\nopen(sys.argv[1],'wb').write(gzip.compress(raw))", arc]);
    assert.throws(() => sbx.restore(arc), /no end-of-archive marker/);
    assert.ok(!fs.existsSync(path.join(ws, "ok.txt")));
  });

  it("A14: refuses a snapshot destination inside the workspace", function () {
    assert.throws(() => sbx.snapshot(path.join(ws, "self.tgz")), /inside the workspace/);
  });

  it("A14: a symlink planted at the destination is replaced, not followed", async function () {
    const victim = path.join(h.tmpDir("victim-"), "v.txt");
    fs.writeFileSync(victim, "precious");
    const dest = path.join(out, "s.tgz");
    fs.symlinkSync(victim, dest);
    await sbx.writeFile("a", "1");
    sbx.snapshot(dest);
    assert.strictEqual(fs.readFileSync(victim, "utf8"), "precious");
    assert.ok(fs.lstatSync(dest).isFile());
  });

  it("restore from a FIFO or a missing file fails at once", function () {
    const fifo = path.join(out, "fifo");
    execFileSync("mkfifo", [fifo]);
    assert.throws(() => sbx.restore(fifo), /not a regular file/);
    assert.throws(() => sbx.restore(path.join(out, "nope.tgz")), (e) => e.code === "ENOENT");
  });
});
