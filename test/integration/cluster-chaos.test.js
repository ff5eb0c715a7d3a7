"use strict";

// Issue 35's chaos run (SECURITY-CASES D12): 3 workers, 500 mixed one-shot
// calls, a worker SIGKILLed and started again every 3 s, prewarmed
// one-shot sessions on (--warm 1). Every call gets
// exactly one outcome; a call without network is rejected only when both
// workers it ran on died; none runs twice unless a kill hit it; no box is
// left. On the kern double (KS_CLUSTER_REAL_KERN=1: the real kern of
// test/lib/realkern.js, with its images).
const assert = require("assert");
const fs = require("fs");
const path = require("path");
const h = require("../lib/harness");
const { RedisServer, requireRedis } = require("../lib/redis");
const { WorkerProc, kernProcesses, censusZero, CLIENT_TIMING } = require("../lib/cluster");
const { connect } = require("../../lib/cluster");

const CALLS = Number(process.env.KS_CHAOS_CALLS || 500);
const shq = (s) => `'${s.replace(/'/g, "'\\''")}'`;

describe("kern-sandbox/cluster: chaos (issue 35, D12)", function () {
  this.timeout(h.startWait(600000));
  let redis = null;
  let cl = null;
  let workers = [];
  let stateDir;
  let kernBin = h.fakeKern();
  let env = {};

  before(async function () {
    requireRedis(this);
    if (process.env.KS_CLUSTER_REAL_KERN === "1") {
      const rk = require("../lib/realkern");
      if (rk.why !== null) return h.skipHost(this, rk.why);
      kernBin = rk.realKern;
      env = { KERN_BIN: kernBin };
    }
    redis = await new RedisServer().start();
    stateDir = h.tmpDir("cl-state-");
    cl = await connect({ connection: redis.connection, timing: CLIENT_TIMING, maxQueued: CALLS + 10 });
  });

  after(async function () {
    if (cl) await cl.close();
    for (const w of workers) await w.stop();
    if (redis) await redis.dispose();
  });

  const start = async () => {
    const w = await new WorkerProc(redis, { stateDir, env, args: ["--capacity", "2", "--warm", "1", "--allow-network", "--any-image"] }).start();
    workers.push(w);
    return w;
  };

  it(`${CALLS} calls, a worker killed every 3 s: one outcome each, re-run only after a kill, census 0`, async function () {
    for (let i = 0; i < 3; i++) await start();
    const marks = h.tmpDir("cl-chaos-");
    const kills = [];
    let stop = false;
    const killer = (async () => {
      while (!stop) {
        await h.sleep(3000);
        if (stop) break;
        const live = workers.filter((w) => w.proc.exitCode === null && w.proc.signalCode === null);
        const victim = live[Math.floor(Math.random() * live.length)];
        kills.push(Date.now());
        await victim.kill();
        workers = workers.filter((w) => w !== victim);
        await start();
      }
    })();
    const outcomes = [];
    const calls = [];
    for (let i = 0; i < CALLS; i++) {
      const runs = path.join(marks, String(i));
      const network = i % 10 === 0;
      const ms = [0, 100, 300, 800][i % 4];
      const argv = ["sh", "-c", `echo x >> ${shq(runs)}; sleep ${ms / 1000}; echo ${i}`];
      const t0 = Date.now();
      const p = (i % 3 === 0 ? cl.runCode(`print(${i})`, { network }) : cl.run(argv, { network }))
        .then((r) => ({ ok: true, out: r.stdout.trim() }), (e) => ({ ok: false, code: e.code, message: e.message }));
      calls.push(p.then((o) => {
        outcomes[i] = { ...o, i, network, python: i % 3 === 0, t0, t1: Date.now(), runs: runs };
      }));
      if (i % 20 === 19) await h.sleep(200); // a steady stream, not one burst
    }
    await Promise.all(calls);
    stop = true;
    await killer;
    const count = (o) => (fs.existsSync(o.runs) ? fs.readFileSync(o.runs, "utf8").split("\n").filter(Boolean).length : 0);
    const bad = [];
    const killedDuring = (o) => kills.some((k) => k >= o.t0 && k <= o.t1);
    let reruns = 0;
    let rejected = 0;
    for (const o of outcomes) {
      if (o.ok && o.out !== String(o.i)) bad.push(`${o.i}: wrong output ${o.out}`);
      if (!o.ok) {
        rejected++;
        if (o.code !== "ERR_SANDBOX_HOST_LOST") bad.push(`${o.i}: ${o.code} ${o.message}`);
        else if (!o.network && !/twice|stalled more than|no other worker/.test(o.message)) bad.push(`${o.i}: rejected after one death: ${o.message}`);
      }
      if (o.python || env.KERN_BIN) continue; // the marks are the sh calls' on the double (a real box cannot see them)
      const n = count(o);
      if (n > 1) reruns++;
      if (n > 2) bad.push(`${o.i}: ran ${n} times`);
      if (n === 2 && (o.network || !killedDuring(o))) bad.push(`${o.i}: ran twice ${o.network ? "with network" : "without a kill"}`);
    }
    h.note(`${CALLS} calls, ${kills.length} kills: ${CALLS - rejected} results, ${rejected} HOST_LOST, ${reruns} re-runs`);
    assert.deepStrictEqual(bad, []);
    assert.strictEqual(outcomes.filter(Boolean).length, CALLS, "every call settled");
    // Stop the survivors (their warm boxes go with them), then one more
    // start removes the dead workers' run dirs.
    for (const w of workers) await w.stop();
    workers = [];
    assert.ok(await h.waitFor(() => kernProcesses(kernBin).length === 0, 5000), "no kern process left");
    await (await start()).stop();
    workers = [];
    assert.deepStrictEqual(await censusZero(stateDir), { kern: 0, runDirs: [] });
    assert.deepStrictEqual(h.processesIn(stateDir), []);
  });
});
