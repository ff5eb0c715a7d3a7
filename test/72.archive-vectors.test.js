"use strict";

// restore() against hand-made hostile archives, one input per test: the
// spellings of A1 (absolute), A2 ('..'), A3 (symlinks), A4 (hardlinks),
// A6 (typeflags), A7 (header desync) and A8 (numeric fields) that 70 and 71
// do not cover. Every refusal is checked three ways: the error names the
// rule, the workspace is exactly as it was (restore is all or nothing), and
// nothing appeared or changed beside the workspace, in the test root or in
// /tmp. Each group has positive controls in the same run: the benign
// archive of the same shape restores (the checks see a write inside), and
// where it is safe, Python's tarfile with no filter extracts the hostile
// archive and the same checks see it write outside.
const assert = require("assert");
const fs = require("fs");
const os = require("os");
const path = require("path");
const { execFileSync } = require("child_process");
const h = require("./lib/harness");
const { snapshotSession } = require("./lib/snapshot-session");
const { census, refusedIntact } = require("./lib/archive");
const { octal, checksumOf, header, writeTgz } = require("./lib/tar");

// Every name an escape could create starts with this, so /tmp (shared with
// other processes) can be searched for our leaks alone.
const MARK = "ks72-";

const dir = (name) => ({ name, typeflag: "5" });
const file = (name, data = "x") => ({ name, data });
const symlink = (name, linkname) => ({ name, typeflag: "2", linkname });
const hardlink = (name, linkname) => ({ name, typeflag: "1", linkname });

/** A PAX record "<len> key=value\n", len counting itself. */
function paxRecord(key, value) {
  const body = ` ${key}=${value}\n`;
  let n = body.length + 1;
  while (String(n).length + body.length !== n) n++;
  return `${n}${body}`;
}

describe("restore: hostile archive vectors (A1-A4, A6-A8)", function () {
  let sbx;
  let ws;
  let out;
  let outer;
  let S; // the sentinel directory beside the workspace ($OUTER of H3)
  snapshotSession((s) => {
    ({ sbx, ws, out, outer } = s);
    S = path.join(outer, "sentinel");
    fs.mkdirSync(S);
    fs.writeFileSync(path.join(S, "canary"), "canary"); // also a hardlink target
    fs.writeFileSync(path.join(ws, "keep.txt"), "unchanged");
  });

  /** What lies outside the workspace: everything beside it (link counts
   * included), the test root's entries and our names in /tmp. */
  function outside() {
    const beside = census(outer);
    for (const k of Object.keys(beside)) if (k === "ws" || k.startsWith("ws/")) delete beside[k];
    return {
      beside,
      root: fs.readdirSync(h.testRoot()).sort(),
      tmp: fs.readdirSync(os.tmpdir()).filter((n) => n.startsWith(MARK)).sort(),
    };
  }

  function archive(members, opts) {
    return writeTgz(path.join(out, "a.tgz"), members, opts);
  }

  /** Python's tarfile with no filter: a reader that acts on what the header says. */
  function pythonExtract(arc) {
    execFileSync("python3", ["-c", "import sys,tarfile\nt=tarfile.open(sys.argv[1])\nt.errorlevel=0\n" +
      "t.extractall(sys.argv[2], filter='fully_trusted')", arc, ws], { stdio: "pipe" });
  }

  /** The shared check of a refused input (c.re, c.escapes: see the tables). */
  function refused(c) {
    const arc = archive(c.members());
    const before = outside();
    const err = refusedIntact(sbx, ws, arc, c.re);
    assert.strictEqual(err.code, "EINVAL");
    assert.match(err.message, /^unsafe or malformed snapshot, nothing restored: /);
    assert.deepStrictEqual(outside(), before, "nothing written or linked outside the workspace");
    if (c.escapes) {
      // Positive control: the same archive, read by a trusting reader, does
      // write outside, and the check above would have seen it.
      pythonExtract(arc);
      assert.notDeepStrictEqual(outside().beside, before.beside, "tarfile wrote beside the workspace");
    }
    return err;
  }

  /** An input that restores: exactly `files` (path -> content) appear in the
   * workspace, next to keep.txt, and nothing appears outside. */
  function restored(members, files) {
    const before = outside();
    sbx.restore(archive(members));
    const want = { "keep.txt": "unchanged", ...files };
    const got = {};
    for (const [rel, entry] of Object.entries(census(ws))) {
      if (entry.startsWith("f ")) got[rel] = fs.readFileSync(path.join(ws, rel), "latin1");
    }
    assert.deepStrictEqual(got, want);
    assert.deepStrictEqual(fs.readdirSync(ws).filter((n) => n.startsWith(".ks-")), [], "no staging left");
    assert.deepStrictEqual(outside(), before, "nothing written outside the workspace");
  }

  /** What GNU tar and Python's tarfile list for the same archive. */
  function otherReaders(arc) {
    const gnu = execFileSync("tar", ["-tzf", arc], { encoding: "latin1" }).split("\n").filter(Boolean);
    const py = JSON.parse(execFileSync("python3", ["-c", "import sys,tarfile,json\n" +
      "print(json.dumps(tarfile.open(sys.argv[1]).getnames()))", arc], { encoding: "latin1" }));
    return { gnu, py };
  }

  /** Registers one it() per refused input. */
  function refusals(cases) {
    for (const c of cases) it(c.title, function () { refused(c); });
  }

  describe("A1: absolute member names", function () {
    const abs = () => path.join(S, `${MARK}abs`);
    refusals([
      ["$OUTER/x", () => abs()],
      ["//$OUTER/x", () => `/${abs()}`],
      ["////$OUTER/x", () => `///${abs()}`],
      ["/", () => "/"],
      ["/.", () => "/."],
    ].flatMap(([shown, name]) => [
      { title: `A1: '${shown}' as a file member is refused, nothing written inside or outside`,
        members: () => [file("ok.txt"), file(name())], re: /absolute path/, escapes: shown.includes("$OUTER") },
      { title: `A1: '${shown}' as a directory member is refused, nothing written inside or outside`,
        members: () => [file("ok.txt"), dir(`${name()}/`)], re: /absolute path/, escapes: shown.includes("$OUTER") },
    ]));

    it("A1: positive control: the same members without the leading '/' restore", function () {
      restored([file("ok.txt"), file(`${MARK}abs`), dir("d/")], { "ok.txt": "x", [`${MARK}abs`]: "x" });
      assert.ok(fs.statSync(path.join(ws, "d")).isDirectory());
    });
  });

  describe("A2: '..' in member names", function () {
    // One level up lands beside the workspace; three levels up is /tmp.
    const escaping = [`../${MARK}x`, `a/../../${MARK}x`, `./../${MARK}x`, `a/./../../${MARK}x`,
      `tmp/../../${MARK}moo`];
    const others = [`../../../${MARK}x`, "..", "a/..", "a/b/..", "a/../b"];
    // 'a/' and 'tmp/' come first so that a reader resolving 'a/../..' through
    // the file system (tarfile does) finds them, and the control escapes.
    const lead = [file("ok.txt"), dir("a/"), dir("tmp/")];
    refusals([...escaping, ...others].flatMap((name) => [
      { title: `A2: '${name}' as a file member is refused, nothing written inside or outside`,
        members: () => [...lead, file(name)], re: /contains '\.\.'/, escapes: escaping.includes(name) },
      { title: `A2: '${name}/' as a directory member is refused, nothing written inside or outside`,
        members: () => [...lead, dir(`${name}/`)], re: /contains '\.\.'/, escapes: escaping.includes(name) },
    ]));

    it("A2: positive control: the same shapes without '..' restore ('./a/./x' is folded to 'a/x')", function () {
      restored([file("ok.txt"), file(`./a/./${MARK}x`), dir("a/b/")], { "ok.txt": "x", [`a/${MARK}x`]: "x" });
      assert.ok(fs.statSync(path.join(ws, "a/b")).isDirectory());
    });
  });

  describe("A3: symlink members, chains and a member through them", function () {
    const evil = `${MARK}x`;
    refusals([
      { title: "A3: dir 'd/', then 'd -> $OUTER', then 'd/x' is refused",
        members: () => [dir("d/"), symlink("d", S), file(`d/${evil}`)] },
      { title: "A3: 'l -> $OUTER', then 'l/x' is refused",
        members: () => [symlink("l", S), file(`l/${evil}`)], escapes: true },
      { title: "A3: 'current -> .', 'parent -> current/..', then 'parent/x' is refused",
        members: () => [symlink("current", "."), symlink("parent", "current/.."), file(`parent/${evil}`)],
        escapes: true },
      { title: "A3: 'parent -> ..', then 'parent/x' is refused",
        members: () => [symlink("parent", ".."), file(`parent/${evil}`)], escapes: true },
      { title: "A3: 'a -> b', 'b -> ..', then 'a/x' is refused",
        members: () => [symlink("a", "b"), symlink("b", ".."), file(`a/${evil}`)], escapes: true },
      { title: "A3: 'a/b/c/up -> ../..', 'a/b/escape -> c/up/../..', then 'a/b/escape/x' is refused",
        members: () => [dir("a/b/c/"), symlink("a/b/c/up", "../.."), symlink("a/b/escape", "c/up/../.."),
          file(`a/b/escape/${evil}`)], escapes: true },
      { title: "A3: a symlink with an empty name is refused",
        members: () => [file("ok.txt"), symlink("", S)] },
      { title: "A3: a symlink with an empty target is refused",
        members: () => [file("ok.txt"), symlink("l", "")] },
    ].map((c) => ({ ...c, re: /symlink members are not allowed/ })));

    it("A3: positive control: the same shape with a directory instead of the link restores", function () {
      restored([dir("d/"), file(`d/${evil}`), dir("a/b/c/")], { [`d/${evil}`]: "x" });
    });
  });

  describe("A4: hardlink members", function () {
    refusals([
      { title: "A4: a hardlink to '../outside' (a file beside the workspace) is refused",
        members: () => [file("ok.txt"), hardlink("h", "../sentinel/canary")], escapes: true },
      { title: "A4: a hardlink to 'C:../f' is refused",
        members: () => [file("ok.txt"), hardlink("h", "C:../f")] },
      { title: "A4: a hardlink named like an existing workspace file is refused, the file untouched",
        members: () => [file("ok.txt"), hardlink("keep.txt", "../sentinel/canary")] },
      { title: "A4: 'a -> /etc', then a hardlink 'b' to 'a/passwd' is refused",
        members: () => [symlink("a", "/etc"), hardlink("b", "a/passwd")] },
      { title: "A4: a hardlink to a symlink stored deeper ('d/l -> $OUTER/canary') is refused",
        members: () => [dir("d/"), symlink("d/l", path.join(S, "canary")), hardlink("h", "d/l")] },
    ].map((c) => ({ ...c, re: /hardlink members|symlink members/ })));

    it("A4: a hardlink to '/etc/passwd' is refused, /etc/passwd unchanged (inode, links, size, mtime)", function () {
      const st = () => {
        const s = fs.statSync("/etc/passwd");
        return [s.ino, s.nlink, s.size, s.mtimeMs];
      };
      const before = st();
      refused({ members: () => [file("ok.txt"), hardlink("h", "/etc/passwd")], re: /hardlink members/ });
      assert.deepStrictEqual(st(), before);
    });

    it("A4: a hardlink to an earlier member of the same archive is refused too (no link is ever made); tarfile makes it", function () {
      const members = [file("ok.txt", "first"), hardlink("h", "ok.txt")];
      refused({ members: () => members, re: /hardlink members/ });
      // Positive control: a standard reader makes h a second name of ok.txt.
      pythonExtract(archive(members));
      assert.strictEqual(fs.statSync(path.join(ws, "h")).nlink, 2);
      assert.strictEqual(fs.statSync(path.join(ws, "h")).ino, fs.statSync(path.join(ws, "ok.txt")).ino);
    });

    it("A4: positive control: the same shape with a regular file instead of the link restores", function () {
      restored([file("ok.txt", "first"), file("h", "second")], { "ok.txt": "first", h: "second" });
      assert.strictEqual(fs.statSync(path.join(ws, "h")).nlink, 1);
    });
  });

  describe("A6: typeflags other than file and directory, one by one", function () {
    // Each special header carries what a reader honouring it would act on:
    // a PAX path or a GNU long link name that points outside.
    const pax = paxRecord("path", `../${MARK}pax`);
    // 3, 6 and L are also in 70; here the whole catalogue list is in one table.
    const rows = [
      ["3", "character device", /device members/, ""],
      ["4", "block device", /device members/, ""],
      ["6", "FIFO", /FIFO members/, ""],
      ["7", "contiguous file", /contiguous-file members/, "x"],
      ["S", "GNU sparse", /GNU sparse, multivolume and label/, "x"],
      ["M", "GNU multivolume continuation", /GNU sparse, multivolume and label/, "x"],
      ["V", "GNU volume label", /GNU sparse, multivolume and label/, ""],
      ["L", "GNU long name", /PAX and GNU extension headers/, `../${MARK}long\0`, true],
      ["K", "GNU long link name", /PAX and GNU extension headers/, `../sentinel/canary\0`],
      ["x", "PAX extended header", /PAX and GNU extension headers/, pax, true],
      ["g", "PAX global header", /PAX and GNU extension headers/, pax, true],
      ["Z", "unknown", /unknown type/, "x"],
    ];
    refusals(rows.map(([t, what, re, data, escapes]) => ({
      title: `A6: typeflag '${t}' (${what}) is refused with a message naming its kind, nothing written`,
      members: () => [file("ok.txt"), { name: `${MARK}t${t}`, typeflag: t, data }, file("after")],
      re, escapes,
    })));

    it("A6: positive control: the same archive with typeflag '0' restores all three members", function () {
      restored([file("ok.txt"), { name: `${MARK}t0`, typeflag: "0", data: "x" }, file("after")],
        { "ok.txt": "x", [`${MARK}t0`]: "x", after: "x" });
    });
  });

  describe("A7: header desync and parser differentials", function () {
    it("A7 (3): a name with an embedded NUL ('safe\\0../../x') restores as 'safe' only, as GNU tar and tarfile read it", function () {
      const members = [file(`safe\0../../${MARK}x`, "s")];
      assert.deepStrictEqual(otherReaders(archive(members)), { gnu: ["safe"], py: ["safe"] });
      restored(members, { safe: "s" });
    });

    it("A7 (3): a prefix with an embedded NUL ('ok\\0../..' + 'f') restores as 'ok/f'", function () {
      const members = [{ name: "f", prefix: `ok\0../../${MARK}x`, data: "p" }];
      assert.deepStrictEqual(otherReaders(archive(members)), { gnu: ["ok/f"], py: ["ok/f"] });
      restored(members, { "ok/f": "p" });
    });

    refusals([
      { title: "A7 (4): prefix '..' + name 'x' is refused as '../x', never restored as bare 'x'",
        members: () => [file("ok.txt"), { name: `${MARK}x`, prefix: "..", data: "x" }],
        re: /contains '\.\.'/, escapes: true },
      { title: "A7 (4): prefix 'a/../..' + name 'x' is refused",
        members: () => [dir("a/"), { name: `${MARK}x`, prefix: "a/../..", data: "x" }],
        re: /contains '\.\.'/, escapes: true },
      { title: "A7 (4): an absolute prefix ('$OUTER') + name 'x' is refused",
        members: () => [file("ok.txt"), { name: `${MARK}x`, prefix: S, data: "x" }],
        re: /absolute path/, escapes: true },
      { title: "A7 (4): a prefix '//$OUTER' + name 'x' is refused",
        members: () => [file("ok.txt"), { name: `${MARK}x`, prefix: `/${S}`, data: "x" }],
        re: /absolute path/, escapes: true },
      { title: "A7 (4): a GNU-magic header with bytes where ustar keeps its prefix is refused (tarfile reads them as a prefix, GNU tar does not)",
        members: () => [file("ok.txt"), { name: `${MARK}x`, prefix: "..", magic: "gnu", data: "x" }],
        re: /prefix/, escapes: true },
    ]);

    it("A7 (4): a full 155-byte prefix and a full 100-byte name, neither NUL-terminated, restore as the 256-byte prefix/name", function () {
      const prefix = "p".repeat(155);
      const name = "n".repeat(100);
      // Bytes after the prefix field must not leak into the path.
      const members = [{ name, prefix, pad: "Z".repeat(12), data: "full" }];
      const full = `${prefix}/${name}`;
      assert.deepStrictEqual(otherReaders(archive(members)), { gnu: [full], py: [full] });
      restored(members, { [full]: "full" });
    });

    it("A7 (5): a 100-byte name with no NUL restores under exactly those 100 bytes (the mode field is not part of it)", function () {
      const name = `${MARK}${"n".repeat(100 - MARK.length)}`;
      assert.strictEqual(Buffer.byteLength(name), 100);
      const members = [{ name, data: "hundred" }]; // the mode field "0000644" follows at once
      assert.deepStrictEqual(otherReaders(archive(members)), { gnu: [name], py: [name] });
      restored(members, { [name]: "hundred" });
    });

    it("A7: positive control: a plain ustar member with a prefix restores", function () {
      restored([{ name: "f", prefix: "a/b", data: "p" }], { "a/b/f": "p" });
    });
  });

  describe("A8: numeric fields", function () {
    const ten = "0123456789";
    const sized = (size) => [file("ok.txt"), { name: `${MARK}n`, size, data: ten }];
    const notOctal = /number field is not plain octal/;
    refusals([
      ["the size '-1000'", sized("-1000"), notOctal],
      ["a negative octal size '-0000001750'", sized("-0000001750\0"), notOctal],
      ["a base-256 size of -1 (sign bit set)", sized(Buffer.alloc(12, 0xff)), notOctal],
      ["a base-256 size over 64 bits", sized(Buffer.concat([Buffer.from([0x80]), Buffer.alloc(11, 0xff)])), notOctal],
      ["a small base-256 size (10)", sized(Buffer.concat([Buffer.from([0x80]), Buffer.alloc(10), Buffer.from([10])])), notOctal],
      ["the size '0000000012x' (trailing garbage)", sized("0000000012x"), notOctal],
      ["the size '00000 00012' (a space inside)", sized("00000 00012"), notOctal],
      ["an empty size field", sized(Buffer.alloc(12)), notOctal],
      ["a 12-digit size of 8 GiB (past what 11 octal digits hold)", sized("100000000000"), notOctal],
      // 1 MiB declared, 10 bytes and the end marker present: the parser runs out mid-member.
      ["a size past the end of the archive", sized(octal(1 << 20, 12)), /truncated/],
    ].map(([what, members, re]) => ({ title: `A8: ${what} is refused, nothing written`, members: () => members, re })));

    it("A8: a checksum off by one, or computed over signed bytes, is refused", function () {
      const m = { name: `${MARK}\xe9`, data: ten };
      const good = checksumOf(header(m));
      // A signed-char sum counts the byte 0xe9 as -23, i.e. 256 less.
      for (const sum of [good + 1, good - 1, good - 256]) {
        refused({ members: () => [file("ok.txt"), { ...m, chksum: `${sum.toString(8).padStart(6, "0")}\0 ` }],
          re: /checksum does not match/ });
      }
    });

    it("A8: a size 8 GiB past the data is refused in under a second per MiB read", function () {
      const mib = Buffer.alloc(1 << 20, "d");
      const arc = archive([{ name: `${MARK}big`, size: octal(0o77777777777, 12), data: mib }], { end: false });
      const t0 = process.hrtime.bigint();
      const err = refusedIntact(sbx, ws, arc, /truncated/);
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      assert.strictEqual(err.code, "EINVAL");
      assert.ok(ms < 1000, `${ms} ms`);
    });

    it("A8: positive control: space-padded octal ('    12    ') and a plain size both restore 10 bytes", function () {
      restored([{ name: "spaced", size: "    12     ", data: ten }, { name: "plain", data: ten }],
        { spaced: ten, plain: ten });
    });
  });
});
