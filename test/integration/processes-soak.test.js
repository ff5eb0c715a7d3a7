"use strict";

// SECURITY-CASES D11 / F5 with a real kern: 1,000 mixed spawns (terminals, services on
// published ports, stdin writers, short commands), 50 alive at a time, each
// ended by a random kill, abort, deadline, its own exit or its session's
// close; then every process had exactly one 'exit' and one settlement, and
// the census (boxes, kern, forwarders, descriptors, ports) is 0. SKIPs
// without a real kern. About a minute.
const assert = require("assert");
const h = require("../lib/harness");
const { useRealKern } = require("../lib/realkern");

describe("integration: 1,000 mixed spawns with random ends (D11, F5)", function () {
  this.timeout(900000);
  const pkg = useRealKern();
  let kern;
  before(function () {
    kern = pkg();
  });

  it("one exit and one settlement each; census 0 afterwards", async function () {
    const TOTAL = Number(process.env.KS_SOAK_SPAWNS || 1000);
    const rand = (n) => Math.floor(Math.random() * n);
    const counts = [];
    let sessions = [];
    const openSession = async () => {
      const s = await new kern.Sandbox({ prewarm: rand(2) }).open();
      sessions.push(s);
      return s;
    };
    let current = await openSession();
    let started = 0;
    let refused = 0;
    const t0 = Date.now();
    const one = async (i) => {
      if (rand(40) === 0) { // now and then a session closes under its processes
        const old = current;
        current = await openSession();
        setTimeout(() => old.close(), rand(300));
      }
      const s = current;
      const ac = new AbortController();
      const kind = rand(6);
      const argv = kind === 0 ? ["python3", "-m", "http.server", "8000", "--bind", "127.0.0.1"]
        : kind === 1 ? ["cat"] : kind === 2 ? ["bash", "--norc", "--noprofile", "-i"]
          : ["sh", "-c", `sleep ${(Math.random() * 0.5).toFixed(2)}; echo ${i}`];
      const opts = { timeoutS: rand(3) === 0 ? 0.2 + Math.random() : null, signal: ac.signal,
        stdin: kind === 1 || kind === 2, ports: kind === 0 ? [8000] : undefined,
        pty: kind === 2 ? true : undefined };
      let p;
      try {
        p = await s.spawn(argv, opts);
      } catch (e) {
        if (e.name !== "AbortError" && e.code !== "ERR_SANDBOX_CLOSED") throw e;
        refused++;
        return;
      }
      started++;
      const c = { exit: 0, settled: 0 };
      counts.push(c);
      p.on("exit", () => c.exit++);
      const end = rand(4);
      if (kind === 1) p.stdin.write(`line ${i}\n`);
      if (kind === 2) p.stdin.write(`sleep 100 &\necho ${i}\n`); // a job the shell's end leaves
      setTimeout(() => {
        if (end === 0) p.kill(rand(2) ? "SIGTERM" : "SIGKILL", { graceS: 0.2 });
        else if (end === 1) ac.abort();
        else if (kind === 1) p.stdin.end();
        else if (kind === 2) p.stdin.write("exit\n");
        else if (opts.timeoutS === null) p.kill("SIGKILL");
      }, rand(400));
      await p.wait().then(() => c.settled++, () => c.settled++);
    };
    const running = new Set();
    for (let i = 0; i < TOTAL; i++) {
      while (running.size >= 50) await Promise.race(running);
      const t = one(i).finally(() => running.delete(t));
      running.add(t);
    }
    await Promise.all(running);
    for (const s of sessions) await s.close();
    sessions = [];
    await h.sleep(2000);
    for (const c of counts) assert.deepStrictEqual(c, { exit: 1, settled: 1 });
    h.note(`${started} processes started, ${refused} refused at a close or abort, ` +
      `${((Date.now() - t0) / 1000).toFixed(1)} s`);
    assert.ok(started > TOTAL * 0.8, `${started} of ${TOTAL} started`);
    // The suite's census (test/00.setup.js) then finds no box, kern,
    // forwarder, descriptor or port left.
  });
});
