"use strict";

// Issue 32, item 4: the bench switches (KERN_SANDBOX_BENCH_OFF,
// lib/benchoff.js) that bench/ab.js turns the speed mechanisms off with.
// Each must be honoured where it is observable, an unknown name must fail
// (a typo must not pass for an A/B), and with no switch nothing changes.
// In children: the switches are read once, when the package loads.
const assert = require("assert");
const crypto = require("crypto");
const fs = require("fs");
const path = require("path");
const { execFileSync, spawnSync } = require("child_process");
const h = require("./lib/harness");
const benchoff = require("../lib/benchoff");
const ab = require("../bench/ab");

const built = require("../lib/init").INIT_BINARY; // the init of the addon this run loads

// What a child observes of each mechanism, as JSON on stdout.
const PROBE = `
  const fs = require("fs");
  const path = require("path");
  const repo = ${JSON.stringify(h.repo)};
  const binding = require(repo + "/lib/binding");
  const init = require(repo + "/lib/init");
  const bootcache = require(repo + "/lib/bootcache");
  const { watchClosesSettled } = require(repo + "/lib/census");
  const { Sandbox } = require(repo);
  const h = require(repo + "/test/lib/harness");
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  let claims = 0;
  let directs = 0;
  const claimSend = binding.claimSend;
  binding.claimSend = (...a) => (claims++, claimSend(...a));
  const kernelCell = binding.kernelCell;
  binding.kernelCell = (opts) => (opts.direct === true && directs++, kernelCell(opts));
  let hands = 0;
  for (const name of ["startBox", "claimBox"]) {
    const orig = binding[name];
    binding[name] = (...a) => {
      const o = a[a.length - 1];
      const started = o.onStarted;
      // A descriptor really handed over (not only asked for).
      if (o.handStdout === true && started) o.onStarted = (fd) => (fd !== null && hands++, started(fd));
      return orig(...a);
    };
  }
  (async () => {
    const out = { calls: [] };
    // claim-send: a claimed exec box's argv (claimSend); direct-cells: a kernel's cells (direct).
    // inline-ends: the scan thread's context switches over these calls (a
    // box that ends through it wakes it).
    const scanSwitches = () => fs.readdirSync("/proc/self/task").map((t) =>
      fs.readFileSync("/proc/self/task/" + t + "/status", "utf8")).filter((st) => /^Name:\\s+ks-scan$/m.test(st))
      .reduce((n, st) => n + Number(/^voluntary_ctxt_switches:\\s+(\\d+)/m.exec(st)[1]), 0);
    let s = await new Sandbox({ prewarm: 1 }).open();
    out.scanSwitches = 0;
    for (let i = 0; i < 3; i++) {
      await h.poolReady(s); // the pool's box is up and waiting
      const s0 = scanSwitches();
      const r = await s.run(["echo", "warm"]);
      out.scanSwitches += scanSwitches() - s0;
      out.calls.push([r.exitCode, r.stdout]);
    }
    const k = await s.kernel();
    for (let i = 0; i < 3; i++) {
      const r = await k.runCode("6 * 7");
      out.calls.push([r.exitCode, r.results[0]?.text]);
    }
    await k.close();
    // hand-stdout: a process's stdout read by this thread from its start.
    const p = await s.spawn(["sh", "-c", "sleep 0.1; echo spawned"], { stdin: false });
    const pr = await p.wait();
    out.calls.push([pr.exitCode, pr.stdout]);
    await s.close();
    // A cold box among the calls.
    s = await new Sandbox({ prewarm: 0 }).open();
    const r = await s.run(["echo", "cold"]);
    out.calls.push([r.exitCode, r.stdout]);
    // turn-wakes: the engine's wakeups for 5 cold boxes submitted in one turn.
    const w0 = binding.submitWakes();
    const five = await Promise.all(Array.from({ length: 5 }, () => s.run(["echo", "turn"])));
    out.turnWakes = binding.submitWakes() - w0;
    // propkeys: the option names this process keeps as strings by now.
    out.propKeys = binding.propKeys();
    out.calls.push([five.every((x) => x.exitCode === 0 && x.stdout === "turn\\n") ? 0 : 1, "turn"]);
    await s.close();
    // bootcache: a fresh image's bytecode after three interpreter boxes.
    const image = process.argv[1];
    s = await new Sandbox({ prewarm: 0, image }).open();
    for (let i = 0; i < 3; i++) {
      const r = await s.runCode("print(1)");
      out.calls.push([r.exitCode, r.stdout]);
      await watchClosesSettled();
      await bootcache.compilesSettled();
    }
    await s.close();
    const dir = init.initDir();
    out.bin = fs.existsSync(path.join(dir, bootcache.binName(process.env.KERN_BIN, image)));
    out.initBinary = init.INIT_BINARY;
    out.init = fs.readFileSync(path.join(dir, "ks-init")).toString("base64");
    // mcp-early: tools/call requests that reached the SDK's Protocol, of two
    // run_command calls (the first opens the server's Sandbox, and an
    // early call needs it open), and their replies.
    const { PassThrough } = require("stream");
    const { createMcpServer, LineTransport } = require(repo + "/lib/mcp");
    const input = new PassThrough();
    const output = new PassThrough();
    const t = new LineTransport({ input, output });
    const srv = createMcpServer({ prewarm: 1 });
    await srv.connect(t);
    const deliver = t.onmessage;
    out.mcpViaSdk = 0;
    t.onmessage = (m) => (m.method === "tools/call" && out.mcpViaSdk++, deliver(m));
    let text = "";
    output.on("data", (d) => { text += d; });
    const reply = async (id) => {
      for (;;) {
        const m = text.split("\\n").filter(Boolean).map((l) => JSON.parse(l)).find((x) => x.id === id);
        if (m) return m;
        await sleep(10);
      }
    };
    input.write(JSON.stringify({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-06-18",
      capabilities: {}, clientInfo: { name: "probe", version: "0" } } }) + "\\n");
    await reply(0);
    // (Whether the server's pool has a box up changes neither path.)
    for (const id of [1, 2]) {
      input.write(JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call",
        params: { name: "run_command", arguments: { command: "echo mcp" } } }) + "\\n");
      out.calls.push([0, (await reply(id)).result.content.map((c) => c.text).join("").includes("mcp\\n") ? "mcp" : text]);
    }
    await srv.close();
    out.claims = claims;
    out.directs = directs;
    out.hands = hands;
    process.stdout.write(JSON.stringify(out));
  })().catch((e) => { console.error(e); process.exitCode = 1; });`;

function probe(env) {
  const e = { ...process.env, ...env };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete e[k];
  const image = `python:bench-off-${crypto.randomBytes(4).toString("hex")}`;
  const r = spawnSync(process.execPath, ["-e", PROBE, image], { env: e, encoding: "utf8" });
  assert.strictEqual(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

const CALLS = [[0, "warm\n"], [0, "warm\n"], [0, "warm\n"], [0, "42"], [0, "42"], [0, "42"],
  [0, "spawned\n"], [0, "cold\n"], [0, "turn"], [0, "1\n"], [0, "1\n"], [0, "1\n"], [0, "mcp"], [0, "mcp"]];

describe("bench switches (issue 32: the A/B of each speed mechanism)", function () {
  this.timeout(h.startWait(60000));
  let glibcInit = null;

  before(function () {
    if (!fs.existsSync(built)) return h.skip(this, `no built init at ${built}`);
    glibcInit = path.join(h.tmpDir("bench-off-"), "ks-init");
    try {
      execFileSync("cc", ["-std=gnu11", "-O2", "-static", "-s", "-o", glibcInit,
        path.join(h.repo, "csrc/init/ks-init.c"), path.join(h.repo, "csrc/init/spec.c")], { stdio: "pipe" });
    } catch (e) {
      return h.skip(this, `cannot link the init with glibc here (libc.a, from libc6-dev): ${e.stderr}`);
    }
    return undefined;
  });

  it("with none off, every mechanism is in use (the positive control)", function () {
    const o = probe({ KERN_SANDBOX_BENCH_OFF: undefined, KERN_SANDBOX_BENCH_INIT: glibcInit });
    assert.deepStrictEqual(o.calls, CALLS);
    assert.ok(o.claims >= 1, `claimSend calls: ${o.claims}`);
    assert.ok(o.directs >= 1, `cells sent from the JS thread: ${o.directs}`);
    assert.strictEqual(o.hands, 1, "the process's stdout handed to the JS thread");
    assert.strictEqual(o.mcpViaSdk, 1, "the second tools/call answered by the MCP server itself");
    assert.strictEqual(o.turnWakes, 2, "5 boxes of one turn: the first woke the engine, the turn's end the rest");
    assert.ok(o.propKeys >= 10, `option names kept: ${o.propKeys}`);
    // (A call may still end on the scan thread: its change list not yet
    // read by the tracker, or the trylock taken. Off, every call wakes it.)
    assert.ok(o.scanSwitches < 3, `calls ended on the supervisor thread (scan thread switches: ${o.scanSwitches})`);
    assert.strictEqual(o.bin, true, "the boot's bytecode");
    assert.strictEqual(o.initBinary, built);
    assert.strictEqual(o.init, fs.readFileSync(built).toString("base64"));
  });

  it("with all off: no claimSend, no direct cell, no compile box, the given init; the " +
    "calls' results unchanged", function () {
    const o = probe({ KERN_SANDBOX_BENCH_OFF: Object.keys(benchoff.MECHANISMS).join(","),
      KERN_SANDBOX_BENCH_INIT: glibcInit });
    assert.deepStrictEqual(o.calls, CALLS);
    assert.strictEqual(o.claims, 0);
    assert.strictEqual(o.directs, 0);
    assert.strictEqual(o.hands, 0);
    assert.strictEqual(o.mcpViaSdk, 2);
    assert.strictEqual(o.turnWakes, 5, "each of the turn's 5 boxes woke the engine");
    assert.strictEqual(o.propKeys, 0, "every field read by its C string");
    assert.ok(o.scanSwitches >= 3, `the scan thread's switches over 3 calls: ${o.scanSwitches}`);
    assert.strictEqual(o.bin, false);
    assert.strictEqual(o.initBinary, glibcInit);
    assert.strictEqual(o.init, fs.readFileSync(glibcInit).toString("base64"));
    assert.notStrictEqual(o.init, fs.readFileSync(built).toString("base64"));
  });

  it("one off leaves the others on (bootcache alone: the init, the claims and the direct cells stay)", function () {
    const o = probe({ KERN_SANDBOX_BENCH_OFF: " bootcache ", KERN_SANDBOX_BENCH_INIT: undefined });
    assert.deepStrictEqual(o.calls, CALLS);
    assert.ok(o.directs >= 1, `cells sent from the JS thread: ${o.directs}`);
    assert.ok(o.claims >= 1, `claimSend calls: ${o.claims}`);
    assert.strictEqual(o.turnWakes, 2);
    assert.ok(o.propKeys >= 10, `option names kept: ${o.propKeys}`);
    assert.deepStrictEqual([o.bin, o.initBinary], [false, built]);
  });

  it("an unknown name, or inbox-libc without an init, fails the package's load", function () {
    for (const [off, init, words] of [["fd-kit", "", /names no mechanism: "fd-kit"/],
      ["js-writes", "", /names no mechanism: "js-writes"/],
      ["bootcache,inline-end", "", /names no mechanism: "inline-end"/],
      ["inbox-libc", undefined, /inbox-libc needs KERN_SANDBOX_BENCH_INIT/]]) {
      const env = { ...process.env, KERN_SANDBOX_BENCH_OFF: off };
      if (init === undefined) delete env.KERN_SANDBOX_BENCH_INIT;
      const r = spawnSync(process.execPath, ["-e", `require(${JSON.stringify(h.repo)})`], { env, encoding: "utf8" });
      assert.notStrictEqual(r.status, 0, off);
      assert.match(r.stderr, words);
    }
    assert.deepStrictEqual([...benchoff.parse(" , bootcache,claim-send,")], ["bootcache", "claim-send"]);
  });

  it("bench/ab.js's verdict: moves only when the medians are > 5% apart and the ranges apart or one arm slower in all of >= 6 paired rounds", function () {
    assert.strictEqual(ab.verdict([10, 10.2, 10.1], [11, 11.2, 11.1]).verdict, "moves");
    assert.strictEqual(ab.verdict([10, 10.2, 11.1], [11, 11.2, 11.1]).verdict, "within noise"); // overlap
    assert.strictEqual(ab.verdict([10, 10.1], [10.3, 10.4]).verdict, "within noise"); // < 5%
    assert.strictEqual(ab.verdict([10, 10], [9, 9]).verdict, "moves");
    assert.strictEqual(ab.verdict([10], [9]).verdict, "no verdict (1 round)");
    // Paired by round: ranges that overlap, B slower in each of 6 rounds.
    const a6 = [10, 12, 10.5, 11.5, 10.2, 11];
    assert.strictEqual(ab.verdict(a6, a6.map((v) => v * 1.1)).verdict, "moves");
    assert.strictEqual(ab.verdict(a6, a6.map((v, i) => (i === 3 ? v * 0.99 : v * 1.1))).verdict, "within noise"); // 5 of 6
    assert.strictEqual(ab.verdict(a6.slice(0, 5), a6.slice(0, 5).map((v) => v * 1.1)).verdict, "within noise"); // 5 rounds
    assert.strictEqual(ab.verdict(a6, a6.map((v) => v * 1.03)).verdict, "within noise"); // < 5%
    for (const name of Object.keys(benchoff.MECHANISMS)) assert.ok(ab.MOVES[name].length > 0, name);
  });
});
