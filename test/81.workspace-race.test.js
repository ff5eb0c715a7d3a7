"use strict";

// The H4 race (SECURITY-CASES.md A17, A18; figure D2): a box runs
// test/fixtures/swapper.c, which keeps exchanging d (a real directory of the
// workspace) and l (a symlink to $OUTER) with renameat2(RENAME_EXCHANGE),
// while the host does 100,000 writeFile("d/f")/readFile("d/f") calls (400,000
// with KERN_SANDBOX_STRESS=1) through the API, 16 in flight. Nothing may be
// written under $OUTER (H3: the exact set of paths, contents and mtimes), no
// read may return $OUTER/f, and every refusal must be one of the documented
// codes. Run once with openat2 and once, in a child node, with the O_NOFOLLOW
// fallback forced.
const assert = require("assert");
const crypto = require("crypto");
const fs = require("fs");
const path = require("path");
const { execFileSync } = require("child_process");
const { Sandbox } = require("..");
const h = require("./lib/harness");
const probe = require("./fixtures/scripts/ws-probe");
const attack = require("./fixtures/scripts/ws-attack");

// KERN_SANDBOX_STRESS=1: the catalogue's D2 figure (400,000 ops per mode).
const OPS = process.env.KERN_SANDBOX_STRESS === "1" ? 400000 : 100000;
const CONCURRENCY = 16;
const MIN_SWAPS = 1000;
const ALLOWED = ["ELOOP", "ENOTDIR", "ENOENT", "EAGAIN"];

const opsTitle = OPS.toLocaleString("en-US");

describe(`workspace race (H4): d <-> l -> $OUTER exchanged during ${opsTitle} host calls per mode`, function () {
  let ws;
  let outer;
  let sbx;
  let before;

  beforeEach(async function () {
    ws = h.tmpDir("race-ws-");
    outer = h.tmpDir("race-outer-");
    fs.writeFileSync(path.join(outer, "f"), "OUTSIDE");
    fs.writeFileSync(path.join(outer, "big"), crypto.randomBytes(1 << 20)); // A18's 1 MiB canary
    fs.mkdirSync(path.join(outer, "sub"));
    fs.writeFileSync(path.join(outer, "sub/f"), "OUTSIDE-SUB");
    before = attack.census(outer);
    sbx = await new Sandbox({ workspace: ws, timeoutS: 300 }).open();
    const r = await sbx.run(["sh", "-c", `mkdir d && ln -s '${outer}' l`]);
    assert.strictEqual(r.exitCode, 0, r.stderr);
    // Positive control: through l, outside the API, the canary is there.
    assert.strictEqual(fs.readFileSync(path.join(ws, "l/f"), "utf8"), "OUTSIDE");
  });

  afterEach(async function () {
    // The mkdir walk leaves ~40,000 directories: closing the session (its
    // last tracker drain, then the contained removal) takes a while, more so
    // under the sanitizers.
    this.timeout(h.underSanitizer ? 300000 : 60000);
    await attack.stopAll();
    const t0 = Date.now();
    await sbx.close();
    const closeMs = Date.now() - t0;
    if (closeMs > 1000) console.log(`      close() of the raced workspace: ${closeMs} ms`);
    execFileSync("rm", ["-rf", "--one-file-system", ws, outer]);
  });

  /** Checks one race report and the H3 census; prints the figures. */
  function verdict(label, report, swaps, elapsedMs, { ops = OPS, parents = false } = {}) {
    const byCode = {};
    let failures = 0;
    for (const [key, n] of Object.entries(report.failures)) {
      const code = key.split(" ")[1].split("/")[0];
      byCode[code] = (byCode[code] || 0) + n;
      failures += n;
    }
    const successes = report.writesOk + report.readsOk;
    console.log(`      [${label}] ${report.ops} ops in ${(elapsedMs / 1000).toFixed(1)} s ` +
      `(${Math.round(report.ops / (report.elapsedMs / 1000))}/s): ${successes} ok ` +
      `(${report.writesOk} writes, ${report.readsOk} reads), ${failures} refused ` +
      `${JSON.stringify(byCode)}; ${swaps} swaps`);
    console.log(`      [${label}] refusals by call and syscall: ${JSON.stringify(report.failures)}`);

    assert.strictEqual(report.ops, ops);
    assert.strictEqual(successes + failures, ops);
    assert.strictEqual(report.foreignReads, 0,
      `reads returned content the test never wrote: ${JSON.stringify(report.foreignSamples)}`);
    assert.deepStrictEqual(report.badErrors, [], "every failure is a SandboxError with code/errno/path");
    for (const code of Object.keys(byCode))
      assert.ok(ALLOWED.includes(code), `unexpected failure code ${code}: ${JSON.stringify(byCode)}`);
    // Both sides really happened: calls landed inside d, and calls met the link.
    assert.ok(report.writesOk > 0 && report.readsOk > 0, "some calls succeeded inside d");
    assert.ok(failures > 0, "some calls met the symlink");
    assert.ok(swaps > MIN_SWAPS, `the attack really ran: ${swaps} swaps (want > ${MIN_SWAPS})`);

    // H3: not one byte, name or timestamp changed under $OUTER.
    assert.deepStrictEqual(attack.census(outer), before, "H3: $OUTER unchanged");
    assert.strictEqual(fs.readFileSync(path.join(outer, "f"), "utf8"), "OUTSIDE");
    // The workspace: d is the real directory again (the swapper undoes an odd
    // count), holding one of our payloads, and no temp file was left behind.
    assert.ok(fs.lstatSync(path.join(ws, "d")).isDirectory());
    assert.ok(fs.lstatSync(path.join(ws, "l")).isSymbolicLink());
    const inD = fs.readdirSync(path.join(ws, "d"));
    if (parents) {
      assert.ok(inD.length === report.writesOk && inD.every((n) => /^[nm]\d+$/.test(n)),
        `${inD.length} directories in d for ${report.writesOk} writes`);
      for (const n of inD) assert.deepStrictEqual(fs.readdirSync(path.join(ws, "d", n)), ["f"]);
    } else {
      assert.deepStrictEqual(inD, ["f"]);
      assert.match(fs.readFileSync(path.join(ws, "d/f"), "utf8"), /^inside-[a-z]+-\d+$/);
    }
    assert.deepStrictEqual(fs.readdirSync(ws).sort(), ["d", "l"]);
  }

  it("A17/A18 (D2): openat2: 0 bytes written under $OUTER, 0 reads of it, only ELOOP/ENOTDIR/ENOENT/EAGAIN", async function () {
    this.timeout(OPS > 100000 ? 600000 : 120000);
    const t0 = Date.now();
    const swapper = await attack.startSwapper(sbx, ws, "d", "l");
    let res;
    let swaps;
    try {
      [res] = await probe.runOps(sbx, [{ op: "race", n: OPS, concurrency: CONCURRENCY, tag: "main" }]);
    } finally {
      ({ swaps } = await swapper.stop());
    }
    assert.ok(res.ok, res.message);
    verdict("openat2", res.value, swaps, Date.now() - t0);
  });

  it("A17/A18 (D2): the same with the openat2 fallback forced (KERN_SANDBOX_FORCE_FALLBACK=openat2)", async function () {
    this.timeout(OPS > 100000 ? 600000 : 120000);
    const t0 = Date.now();
    const swapper = await attack.startSwapper(sbx, ws, "d", "l");
    let out;
    let swaps;
    try {
      out = await attack.fallbackProbe(ws,
        [{ op: "race", n: OPS, concurrency: CONCURRENCY, tag: "fallback" }]);
    } finally {
      ({ swaps } = await swapper.stop());
    }
    assert.strictEqual(out.mode, "openat2");
    const [res] = out.results;
    assert.ok(res.ok, res.message);
    // Positive control: the child really resolved with the O_NOFOLLOW walk.
    assert.ok(Object.keys(res.value.failures).every((k) => !k.endsWith("/openat2")),
      JSON.stringify(res.value.failures));
    verdict("fallback", res.value, swaps, Date.now() - t0);
  });

  it("A17 (mkdir walk): writeFile(\"d/<new>/f\") creating a new parent each time, both modes, 20,000 calls each", async function () {
    this.timeout(120000);
    const n = 20000;
    const t0 = Date.now();
    const swapper = await attack.startSwapper(sbx, ws, "d", "l");
    let here;
    let there;
    let swaps;
    try {
      [here] = await probe.runOps(sbx,
        [{ op: "race", n, concurrency: CONCURRENCY, tag: "here", parents: true }]);
      [there] = (await attack.fallbackProbe(ws,
        [{ op: "race", n, concurrency: CONCURRENCY, tag: "fb", parents: true, prefix: "m" }])).results;
    } finally {
      ({ swaps } = await swapper.stop());
    }
    assert.ok(here.ok && there.ok, `${here.message} ${there.message}`);
    console.log(`      [openat2] refusals: ${JSON.stringify(here.value.failures)}`);
    console.log(`      [fallback] refusals: ${JSON.stringify(there.value.failures)}`);
    const merged = {
      ops: here.value.ops + there.value.ops,
      writesOk: here.value.writesOk + there.value.writesOk,
      readsOk: here.value.readsOk + there.value.readsOk,
      elapsedMs: here.value.elapsedMs + there.value.elapsedMs,
      foreignReads: here.value.foreignReads + there.value.foreignReads,
      foreignSamples: [...here.value.foreignSamples, ...there.value.foreignSamples],
      badErrors: [...here.value.badErrors, ...there.value.badErrors],
      failures: { ...here.value.failures },
    };
    for (const [k, v] of Object.entries(there.value.failures)) merged.failures[k] = (merged.failures[k] || 0) + v;
    verdict("mkdir walk, both modes", merged, swaps, Date.now() - t0, { ops: 2 * n, parents: true });
  });
});
