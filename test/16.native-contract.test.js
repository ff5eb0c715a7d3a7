"use strict";

// Issue 32: the native contract's tables agree. The raw result of a run is
// laid out by one table (csrc/napi/raw-result.h), a kernel message's by
// another (csrc/napi/cell-result.h): the addon exports their names,
// lib/binding.js makes its objects from them, and types/binding.d.ts must
// declare exactly those fields.
const assert = require("assert");
const fs = require("fs");
const path = require("path");
const { execFileSync } = require("child_process");
const h = require("./lib/harness");
const binding = require("../lib/binding");

/** The fields of `interface name` in a .d.ts, in order. */
function interfaceFields(file, name) {
  const src = fs.readFileSync(file, "utf8");
  const start = src.indexOf(`export interface ${name} {`);
  assert.ok(start >= 0, `${name} is not in ${file}`);
  const body = src.slice(start, src.indexOf("\n}", start));
  return [...body.matchAll(/^ {2}([A-Za-z_$][\w$]*)\??:/gm)].map((m) => m[1]);
}

describe("the native contract (issue 32)", function () {
  it("RawRunResult in types/binding.d.ts has exactly the fields of csrc/napi/raw-result.h", function () {
    const declared = interfaceFields(path.join(h.repo, "types/binding.d.ts"), "RawRunResult");
    assert.deepStrictEqual([...declared].sort(), [...binding.RAW_RESULT_FIELDS].sort());
    const table = fs.readFileSync(path.join(h.repo, "csrc/napi/raw-result.h"), "utf8");
    const inTable = [...table.matchAll(/^ {2}X\((\w+),/gm)].map((m) => m[1]);
    assert.deepStrictEqual(inTable, binding.RAW_RESULT_FIELDS, "the addon exports the table's names");
    assert.deepStrictEqual(inTable.slice(-2), ["stdout", "stderr"], "the output comes last");
  });

  it("RawCellResult in types/binding.d.ts has exactly the fields of csrc/napi/cell-result.h", function () {
    const declared = interfaceFields(path.join(h.repo, "types/binding.d.ts"), "RawCellResult");
    assert.deepStrictEqual([...declared].sort(), [...binding.CELL_RESULT_FIELDS].sort());
    const table = fs.readFileSync(path.join(h.repo, "csrc/napi/cell-result.h"), "utf8");
    const inTable = [...table.matchAll(/^ {2}X\((\w+),/gm)].map((m) => m[1]);
    assert.deepStrictEqual(inTable, binding.CELL_RESULT_FIELDS, "the addon exports the table's names");
    assert.deepStrictEqual(inTable.slice(-2), ["stdout", "stderr"], "the output comes last");
  });

  it("the Release addon has none of the test natives; the build the tests load has them all", function () {
    this.timeout(30000);
    const natives = ["liveBoxes", "tailBoxes", "cancelledGroups", "pendingCloses", "submitWakes",
      "propKeys"];
    const release = path.join(h.repo, "build", "Release", "kern_sandbox.node");
    if (!fs.existsSync(release)) return h.skip(this, "build/Release is not built (npm run build)");
    // In a child: this process has loaded its own build under the same
    // module name; the Release file is loaded as is, with nothing set up.
    const exported = JSON.parse(execFileSync(process.execPath, ["-e",
      `process.stdout.write(JSON.stringify(Object.keys(require(${JSON.stringify(release)}))))`],
    { encoding: "utf8", env: { ...process.env, KERN_SANDBOX_BUILD: "" } }));
    assert.ok(exported.includes("wsOpen") && exported.includes("RAW_RESULT_FIELDS"),
      `positive control: the child did load the addon (${exported.join(", ")})`);
    assert.deepStrictEqual(natives.filter((n) => exported.includes(n)), [],
      "test natives in the Release build");
    assert.notStrictEqual(binding.flavour, "Release", "the suite runs on a build with the test natives");
    assert.deepStrictEqual(natives.filter((n) => typeof binding[n] !== "function"), [],
      `the ${binding.flavour} build lacks test natives`);
  });

  it("types/binding.d.ts declares exactly what the addon exports", function () {
    const src = fs.readFileSync(path.join(h.repo, "types/binding.d.ts"), "utf8");
    const declared = [...src.matchAll(/^export (?:function|const) ([A-Za-z_$][\w$]*)/gm)].map((m) => m[1]);
    // flavour is lib/binding.js's, not the addon's.
    const exported = Object.keys(binding).filter((k) => k !== "flavour");
    assert.deepStrictEqual([...new Set(declared)].sort(), exported.sort());
  });

  it("the box entry points take one options object; a missing or wrong field is a TypeError " +
    "(RangeError out of range) naming the entry point and the field", function () {
    const dir = h.tmpDir("contract-");
    const root = binding.wsOpen(dir, false);
    try {
      const good = { kern: "/bin/true", argv: ["/bin/true"], env: [], tmpdir: dir, timeoutMs: 1000,
        maxOutputBytes: 10 };
      for (const fn of ["startBox", "parkBox", "startKernel"]) {
        assert.throws(() => binding[fn](), { name: "TypeError", message: new RegExp(`${fn}\\(opts\\) takes 1`) });
        assert.throws(() => binding[fn](5), { name: "TypeError", message: new RegExp(`${fn}\\(\\) takes an options object`) });
        assert.throws(() => binding[fn]({ ...good, kern: undefined }),
          { name: "TypeError", code: "ERR_INVALID_ARG_TYPE", message: new RegExp(`${fn}\\(\\): opts\\.kern is required`) });
        assert.throws(() => binding[fn]({ ...good, argv: "x" }), { name: "TypeError", message: /opts\.argv must be an array/ });
        assert.throws(() => binding[fn]({ ...good, timeoutMs: -1 }),
          { name: "RangeError", code: "ERR_OUT_OF_RANGE", message: /opts\.timeoutMs out of range/ });
        assert.throws(() => binding[fn]({ ...good, kernHandle: root }),
          { name: "TypeError", message: new RegExp(`${fn}\\(\\) expected a kern handle \\(kernOpen\\)`) });
      }
      // Only startBox runs without the init's terms; parkBox needs its key,
      // a kernel its own.
      const init = { earlyCap: -1, resultMax: 0 };
      assert.throws(() => binding.parkBox(good), { name: "TypeError", message: /parkBox\(\): opts\.init is required/ });
      assert.throws(() => binding.parkBox({ ...good, init }), { message: /parkBox\(\): opts\.parkKey is required/ });
      assert.throws(() => binding.parkBox({ ...good, init: { ...init, earlyCap: 300 } }),
        { name: "RangeError", message: /opts\.init\.earlyCap out of range/ });
      assert.throws(() => binding.startKernel({ ...good, init }), { message: /startKernel\(\): opts\.kernelKey is required/ });
      assert.throws(() => binding.startKernel({ ...good, init, kernelKey: 7, claim: root }),
        { name: "TypeError", message: /startKernel\(\) expected a parked box's handle \(parkBox\)/ });
      // A claim names its parked box by the handle parkBox gave, nothing else.
      for (const bad of [3, { parkKey: 3 }, root]) {
        assert.throws(() => binding.claimBox(bad, { ...good, init }),
          { name: "TypeError", message: /claimBox\(\) expected a parked box's handle \(parkBox\)/ });
        assert.throws(() => binding.claimSend(bad, ["true"]), { name: "TypeError", message: /claimSend\(\) expected a parked box's handle/ });
        assert.throws(() => binding.dropParked(bad), { name: "TypeError", message: /dropParked\(\) expected a parked box's handle/ });
      }
      assert.throws(() => binding.kernelCell({ kernelKey: 1, id: 0, type: "nope", a: 0, b: 0, timeoutMs: 1, maxOutputBytes: 0 }),
        { name: "TypeError", message: /kernelCell\(\): opts\.type must be "kernel", "cell" or "rollback"/ });
      assert.throws(() => binding.kernelCell({ id: 0 }), { name: "TypeError", message: /kernelCell\(\): opts\.kernelKey is required/ });
    } finally {
      binding.wsClose(root);
    }
  });

  it("descriptors travel as type-tagged handles: a number or another kind is a TypeError naming " +
    "the kind expected; a closed handle is EBADF", async function () {
    const dir = h.tmpDir("contract-");
    fs.writeFileSync(path.join(dir, "f"), "x");
    const root = binding.wsOpen(dir, false);
    const kern = binding.kernOpen(process.execPath);
    assert.deepStrictEqual(Object.keys(root), [], "a handle shows nothing of what it holds");
    assert.strictEqual(typeof kern.script, "boolean");
    assert.strictEqual(kern.script, false);
    assert.strictEqual(kern.mode & fs.constants.S_IFMT, fs.constants.S_IFREG);
    // Positive control: the handle works.
    assert.strictEqual((await binding.wsReadFile(root, "f", 10)).toString(), "x");
    const fd = fs.openSync(dir, "r");
    try {
      for (const [what, call] of [
        ["wsReadFile", (r) => binding.wsReadFile(r, "f", 10)],
        ["wsWriteFile", (r) => binding.wsWriteFile(r, "g", Buffer.from("y"))],
        ["wsList", (r) => binding.wsList(r, "")],
        ["wsRemoveTree", (r) => binding.wsRemoveTree(r)],
        ["wsWatch", (r) => binding.wsWatch(r)],
        ["wsSnapshot", (r) => binding.wsSnapshot(r, dir, "x.tar.gz")],
        ["wsRestore", (r) => binding.wsRestore(r, path.join(dir, "none.tar.gz"))],
        ["wsCloseLater", (r) => binding.wsCloseLater(r)],
      ]) {
        for (const bad of [fd, {}, null, kern.handle]) {
          assert.throws(() => call(bad), { name: "TypeError", code: "ERR_INVALID_ARG_TYPE",
            message: `kern-sandbox: ${what}() expected a workspace handle (wsOpen)` }, `${what}(${typeof bad})`);
        }
      }
      assert.throws(() => binding.wsClose(fd), { name: "TypeError", message: /wsClose\(\) expected a handle of this addon/ });
    } finally {
      fs.closeSync(fd);
    }
    assert.ok(fs.existsSync(path.join(dir, "f")), "nothing ran on a wrong argument");
    assert.strictEqual(binding.wsClose(kern.handle), true);
    assert.strictEqual(binding.wsClose(root), true);
    assert.strictEqual(binding.wsClose(root), false, "a second close closes nothing");
    // Closed: a Node-shaped EBADF, whatever number the descriptor had.
    assert.throws(() => binding.wsReadFile(root, "f", 10), (e) => {
      assert.strictEqual(e.code, "EBADF");
      assert.strictEqual(e.errno, -9);
      assert.strictEqual(e.syscall, "wsReadFile");
      return true;
    });
    assert.throws(() => binding.wsWatch(root), { code: "EBADF", syscall: "wsWatch" });
    assert.throws(() => binding.startBox({ kern: "/bin/true", argv: ["/bin/true"], env: [], tmpdir: dir,
      timeoutMs: 1000, maxOutputBytes: 10, kernHandle: kern.handle }), { code: "EBADF", syscall: "startBox" });
  });
});
