"use strict";

// Issue 16, the one-shot's cost: every interpreter box runs the boot from
// its bytecode (lib/bootcache.js, lib/inbox/python-load.py) once a box of
// the process's own has compiled it for that kern and image, and from its
// text until then. The bytecode must come only from that box (never from a
// session's settings or code), must be used only by the interpreter that
// made it, and the boot's own imports must never be the workspace's.
const assert = require("assert");
const crypto = require("crypto");
const fs = require("fs");
const os = require("os");
const path = require("path");
const { execFileSync } = require("child_process");
const h = require("./lib/harness");
const { Sandbox } = require("..");
const init = require("../lib/init");
const bootcache = require("../lib/bootcache");
const { watchClosesSettled } = require("../lib/census");

const INBOX = path.join(h.repo, "lib", "inbox");

/** A fresh image name: its key has no bytecode and no compile yet (the
 * double runs any image name as its host). */
function freshImage() {
  return `python:bytecode-${crypto.randomBytes(4).toString("hex")}`;
}

/** The host path of the bytecode file for boxes of image. */
function binFile(image) {
  return path.join(init.initDir(os.tmpdir()), bootcache.binName(process.env.KERN_BIN, image));
}

/** What python-compile.py prints for source, compiled by the boxes'
 * python3 (the double's boxes run one of the host's): [header line, code]. */
async function boxCompile(source) {
  return withSession({}, async (s) => {
    await s.writeFile("boot.py", source);
    const r = await s.run(["python3", "-I", "-S", "-c",
      fs.readFileSync(path.join(INBOX, "python-compile.py"), "utf8"), "/workspace/boot.py"]);
    assert.strictEqual(r.exitCode, 0, r.stderr);
    const nl = r.stdout.indexOf("\n");
    return [r.stdout.slice(0, nl), Buffer.from(r.stdout.slice(nl + 1), "hex")];
  });
}

function writeBin(file, header, code) {
  fs.rmSync(file, { force: true });
  fs.writeFileSync(file, Buffer.concat([Buffer.from(`${header}\n`), code]), { mode: 0o400 });
}

async function withSession(opts, fn) {
  const s = await new Sandbox({ prewarm: 0, ...opts }).open();
  try {
    return await fn(s);
  } finally {
    await s.close();
  }
}

describe("the boot's bytecode (issue 16: the one-shot's cost)", function () {
  this.timeout(60000);

  it("after a key's second interpreter box, a box of its own compiles it (python3 -I -S, no " +
    "session environment, mount or workspace) into the init directory, and calls run as before",
  async function () {
    // The double records each box's environment under this image; a name
    // no other test uses (a mode named twice is the mode once).
    const image = "fake:record-env+record-env+record-env";
    const file = binFile(image);
    const mountSrc = h.tmpDir("boot-mount-");
    await withSession({ image, env: { KS_BOOT_SECRET: "s3cret" },
      mounts: { [mountSrc]: "/data" } }, async (s) => {
      for (let i = 0; i < 3; i++) {
        const r = await s.runCode("import sys\nprint(sys.argv, len(sys.orig_argv))\n6 * 7");
        assert.deepStrictEqual([r.stdout, r.stderr, r.exitCode, r.results.map((x) => x.text)],
          ["['-c'] 3\n", "", 0, ["42"]]);
        if (i === 1) {
          await watchClosesSettled(); // the compile runs once the second call has settled
          assert.ok(fs.existsSync(file), "the bytecode is there after the second box");
        }
      }
    });
    const [header] = await boxCompile("pass\n");
    assert.strictEqual(fs.readFileSync(file).subarray(0, header.length + 1).toString(), `${header}\n`);
    // The compile box, as the double recorded it: its own workspace, no
    // mount or env of the session's.
    const dir = h.stateDir();
    const compiles = fs.readdirSync(dir).filter((f) => f.endsWith(".argv"))
      .map((f) => fs.readFileSync(path.join(dir, f), "utf8").split("\0").slice(0, -1))
      .filter((argv) => h.isCompileBox(argv) && argv.includes(image));
    assert.strictEqual(compiles.length, 1, "one compile box for the key");
    const argv = compiles[0];
    assert.ok(!argv.join(" ").includes(mountSrc), `no session mount: ${argv.join(" ")}`);
    assert.deepStrictEqual(h.boxCommand(argv).slice(0, 4), ["python3", "-I", "-S", "-c"]);
    const envOf = (a) => fs.readFileSync(path.join(dir, `${a[a.indexOf("box") + 1]}.envfile`), "utf8");
    assert.ok(!envOf(argv).includes("KS_BOOT_SECRET"), envOf(argv));
    // Positive control: the session's own boxes had it.
    const session = fs.readdirSync(dir).filter((f) => f.endsWith(".argv"))
      .map((f) => fs.readFileSync(path.join(dir, f), "utf8").split("\0").slice(0, -1))
      .filter((a) => !h.isCompileBox(a) && a.includes(image));
    assert.ok(session.length >= 3 && session.every((a) => envOf(a).includes("KS_BOOT_SECRET=s3cret")));
    assert.deepStrictEqual(fs.readdirSync(os.tmpdir()).filter((n) => n.startsWith("kern-boot-compile-")), [],
      "the compile box's workspace is gone");
  });

  it("bytecode from a session's settings cannot reach another session: a sitecustomize.py on " +
    "PYTHONPATH that rewrites compile() runs in its own boxes, never in the compile box",
  async function () {
    const image = freshImage();
    const ws = h.tmpDir("boot-poison-");
    // If this ran where the boot is compiled, every later box would print
    // POISONED first.
    fs.writeFileSync(path.join(ws, "sitecustomize.py"),
      "import builtins\n_c = builtins.compile\n" +
      "def compile(src, *a, **k):\n" +
      "    if isinstance(src, str) and '_ks_private' in src:\n" +
      "        src = 'print(\"POISONED\")\\n' + src\n" +
      "    return _c(src, *a, **k)\n" +
      "builtins.compile = compile\nprint('site ran')\n");
    await withSession({ image, workspace: ws, env: { PYTHONPATH: "." } }, async (s) => {
      // Positive control: where a session's box compiles the boot itself
      // (no bytecode yet), the poison takes.
      for (let i = 0; i < 2; i++)
        assert.strictEqual((await s.runCode("print(1)")).stdout, "site ran\nPOISONED\n1\n");
      await watchClosesSettled();
      // The bytecode, from the compile box, is clean.
      assert.strictEqual((await s.runCode("print(1)")).stdout, "site ran\n1\n");
    });
    assert.ok(fs.existsSync(binFile(image)), "positive control: the bytecode was compiled");
    await withSession({ image }, async (s) => {
      const r = await s.runCode("print(1)");
      assert.deepStrictEqual([r.stdout, r.stderr], ["1\n", ""]);
    });
  });

  it("a box runs the bytecode made by its own interpreter; bytecode with another interpreter's " +
    "line, or none, is passed over for the text", async function () {
    const image = freshImage();
    const file = binFile(image);
    const boot = fs.readFileSync(path.join(init.initDir(os.tmpdir()), init.BOOT_SOURCE), "utf8");
    // The boot with a line of its own first: which of the two the box ran.
    const [header, code] = await boxCompile(`import os\nos.write(2, b"from bytecode\\n")\n${boot}`);
    const run = () => withSession({ image }, (s) => s.runCode("print(1)"));
    writeBin(file, header, code);
    let r = await run();
    assert.deepStrictEqual([r.stdout, r.stderr], ["1\n", "from bytecode\n"]);
    writeBin(file, header.replace(/^\((\d+)/, (m, v) => `(${Number(v) + 1}`), code);
    r = await run();
    assert.deepStrictEqual([r.stdout, r.stderr], ["1\n", ""]);
    writeBin(file, header, code.subarray(0, 100)); // cut short
    r = await run();
    assert.deepStrictEqual([r.stdout, r.stderr], ["1\n", ""]);
    fs.rmSync(file, { force: true });
    r = await run();
    assert.deepStrictEqual([r.stdout, r.stderr, r.exitCode], ["1\n", "", 0]);
  });

  it("the boot's own imports are never the workspace's: a resource.py or json.py there runs " +
    "only when the code imports it (cold and prewarmed boxes)", async function () {
    const ws = h.tmpDir("boot-shadow-");
    for (const name of ["resource", "json"])
      fs.writeFileSync(path.join(ws, `${name}.py`), `print("workspace ${name}.py ran")\n`);
    const jsonRepr = "class J:\n    def _repr_json_(self): return {'a': 1}\nJ()";
    for (const prewarm of [0, 1]) {
      await withSession({ workspace: ws, prewarm }, async (s) => {
        if (prewarm) await h.poolReady(s); // the box is up and waiting
        const r = await s.runCode(jsonRepr);
        assert.deepStrictEqual([r.stdout, r.stderr], ["", ""], `prewarm ${prewarm}`);
        assert.deepStrictEqual(JSON.parse(r.results[0].json), { a: 1 });
        // Positive control: the code's own import finds the workspace's.
        const own = await s.runCode("import resource, json");
        assert.strictEqual(own.stdout, "workspace resource.py ran\nworkspace json.py ran\n");
      });
    }
  });

  it("the compile box warns of nothing: a caller without a memory cap hears of none", function () {
    const codes = (memoryMb) => execFileSync(process.execPath, ["-e", `
      const { Sandbox } = require(${JSON.stringify(h.repo)});
      const seen = [];
      process.on("warning", (w) => seen.push(w.code));
      (async () => {
        const s = await new Sandbox({ image: "fake:mem-unenforced", memoryMb: ${memoryMb},
          prewarm: 0 }).open();
        for (let i = 0; i < 3; i++) await s.runCode("1");
        await require(${JSON.stringify(path.join(h.repo, "lib", "bootcache"))}).compilesSettled();
        await s.close();
        setImmediate(() => process.stdout.write(JSON.stringify(seen)));
      })();`], { encoding: "utf8", env: process.env, timeout: 30000 });
    assert.deepStrictEqual(JSON.parse(codes("null")), []);
    // Positive control: the caller's own capped boxes do warn, once.
    assert.deepStrictEqual(JSON.parse(codes("512")), ["KERN_SANDBOX_MEMORY_NOT_ENFORCED"]);
  });

  it("a process that exits while a compile runs leaves no compile workspace", async function () {
    await watchClosesSettled(); // (this process's own compiles)
    const out = execFileSync(process.execPath, ["-e", `
      const fs = require("fs");
      const os = require("os");
      const { runCode } = require(${JSON.stringify(h.repo)});
      // Before the package's own exit hook: whether a compile was under way.
      process.on("exit", () => process.stdout.write(String(fs.readdirSync(os.tmpdir())
        .filter((n) => n.startsWith("kern-boot-compile-")).length)));
      (async () => {
        await runCode("print(1)", { image: "python:exit-${crypto.randomBytes(3).toString("hex")}" });
        await runCode("print(2)", { image: "python:exit-same" });
        await runCode("print(3)", { image: "python:exit-same" });
        setImmediate(() => setImmediate(() => process.exit(0)));
      })();`], { encoding: "utf8", env: process.env, timeout: 30000 });
    assert.strictEqual(out, "1", "positive control: a compile was under way at the exit");
    assert.deepStrictEqual(fs.readdirSync(os.tmpdir()).filter((n) => n.startsWith("kern-boot-compile-")), []);
  });
});
