"use strict";

// Secret hygiene (SECURITY-CASES.md D10, over A34's locations): a canary
// passed through options.env must show up nowhere but in the box's own
// environment: not in any process's argv, not in the environ of kern, of
// `kern stop` or of Node, not in any file under the TMPDIR the workspaces
// live in, in the workspaces, in the kern double's state directory or in
// the child's working directory, nor in a file created meanwhile directly
// in /tmp, /dev/shm or $XDG_RUNTIME_DIR, nor in results, errors or logs; also
// while boxes run and after the Node process running them is SIGKILLed.
// The env reaches kern through a memfd, or through an O_TMPFILE file where
// memfd_create is unavailable (forced here for every other child).
const assert = require("assert");
const crypto = require("crypto");
const fs = require("fs");
const os = require("os");
const path = require("path");
const readline = require("readline");
const { spawn } = require("child_process");
const h = require("./lib/harness");
const leaks = require("./lib/leaks");

const stress = process.env.KERN_SANDBOX_STRESS === "1";

const { note } = h;

/** Descriptors of kern processes (exe === kern) whose link includes text. */
function kernFdsLinkingTo(kern, text) {
  let n = 0;
  for (const p of leaks.processTable().values()) {
    if (p.exe === kern) n += leaks.fdsLinkingTo(text, p.pid);
  }
  return n;
}

describe("D10: secret hygiene", function () {
  it(`D10: the A34 canary is found 0 times in A34's locations over ${stress ? "10,000" : "1,000"} runs, ` +
    `${stress ? "1,000" : "100"} of them killed mid-run (SIGKILL of the Node process running them)`, async function () {
    const nChildren = stress ? 200 : 20;
    const complete = 45; // finished runs per child
    const inflight = 5; // runs live at its SIGKILL
    this.timeout(nChildren * 10000 + 30000);
    const dir = h.tmpDir("d10-");
    // A private copy of the double: its processes are told apart by exe, and
    // its state directory (argv of every box) is next to it.
    const kern = path.join(dir, "kern");
    fs.copyFileSync(h.fakeKern(), kern);
    fs.chmodSync(kern, 0o755);
    const tmp = path.join(dir, "tmp"); // the children's TMPDIR: their workspaces' parent
    const cwd = path.join(dir, "cwd");
    fs.mkdirSync(tmp);
    fs.mkdirSync(cwd);
    const canary = `CANARY-${crypto.randomUUID()}`;
    const since = Date.now() - 1000;
    const shared = ["/dev/shm", os.tmpdir(), process.env.XDG_RUNTIME_DIR].filter(Boolean);
    const search = () => leaks.canarySearch({ needle: canary, kern, dirs: [dir], shallowDirs: shared, since });
    const clean = (found) => found.argv.length === 0 && found.environ.length === 0 && found.files.length === 0;

    // Positive control: the search finds a copy planted in each kind of place.
    {
      const planted = [path.join(tmp, "kern-ws-planted", "f"), path.join(cwd, "planted"),
        path.join("/dev/shm", `ks-d10-${crypto.randomBytes(4).toString("hex")}`)];
      fs.mkdirSync(path.dirname(planted[0]));
      for (const f of planted) fs.writeFileSync(f, `before ${canary} after`);
      // "; :" keeps sh alive where it would exec sleep (bash), with the canary in its argv.
      const inArgv = spawn("sh", ["-c", "sleep 30; :", canary], { stdio: "ignore" });
      const inEnv = spawn("sleep", ["30"], { stdio: "ignore", env: { PLANTED: canary, PATH: process.env.PATH } });
      try {
        const found = await h.waitFor(() => {
          const f = search();
          return f.argv.includes(inArgv.pid) && f.environ.includes(inEnv.pid) ? f : null;
        }, 3000);
        assert.ok(found, "the search sees a process with the canary in argv and one with it in environ");
        assert.deepStrictEqual(found.argv, [inArgv.pid]);
        assert.deepStrictEqual(found.environ, [inEnv.pid]);
        assert.deepStrictEqual(found.files.sort(), [...planted].sort());
      } finally {
        inArgv.kill("SIGKILL");
        inEnv.kill("SIGKILL");
        await Promise.all([h.exitOf(inArgv), h.exitOf(inEnv)]);
        for (const f of planted) fs.rmSync(f);
        fs.rmdirSync(path.dirname(planted[0]));
      }
      const after = search();
      assert.ok(clean(after), `nothing left of the planted copies: ${JSON.stringify(after)}`);
    }

    const script = path.join(h.repo, "test/fixtures/scripts/secret-boxes.js");
    const hits = [];
    let killedMidRun = 0;
    let runs = 0;
    let searches = 0;
    let minBoxEnv = Infinity;
    let slowestGone = 0;
    const start = Date.now();
    for (let k = 0; k < nChildren; k++) {
      // Every other child without memfd_create: the env then goes through an
      // O_TMPFILE file in TMPDIR, which has no name.
      const fallback = k % 2 === 1;
      const child = spawn(process.execPath, [script, h.repo, String(complete), String(inflight)], {
        cwd,
        env: { ...process.env, KERN_BIN: kern, TMPDIR: tmp, KERN_SANDBOX_FORCE_FALLBACK: fallback ? "memfd" : "" },
        stdio: ["pipe", "pipe", "pipe"],
      });
      const exited = h.exitOf(child);
      let logs = "";
      child.stdout.on("data", (d) => (logs += d));
      child.stderr.on("data", (d) => (logs += d));
      const lines = readline.createInterface({ input: child.stdout })[Symbol.asyncIterator]();
      const next = async () => {
        const line = await lines.next();
        if (line.done) throw new Error(`child ${k} ended early: ${logs.slice(-2000)}`);
        return JSON.parse(line.value);
      };
      child.stdin.end(`${canary}\n`);
      try {
        const done = await next();
        assert.deepStrictEqual(done, { completed: complete, bad: [] }, `child ${k}`);
        runs += complete;
        assert.deepStrictEqual(await next(), { inflight }, `child ${k}`);
        // While its boxes run: they hold the canary in their env (positive
        // control), nothing else does.
        const mid = search();
        searches++;
        if (!clean(mid)) hits.push({ child: k, when: "mid-run", ...mid });
        // A workload caught inside its `exec sleep` shows an empty environ
        // for a moment (the kernel has installed the new memory map but not
        // yet its environment), so a short count is read again until it
        // settles.
        let boxEnv = mid.boxEnv;
        if (boxEnv < inflight)
          await h.waitFor(() => (boxEnv = leaks.canarySearch({ needle: canary, kern }).boxEnv) >= inflight, 2000);
        minBoxEnv = Math.min(minBoxEnv, boxEnv);
        assert.ok(boxEnv >= inflight, `child ${k}: ${boxEnv} box workloads hold the canary`);
        // Positive control for the env channel: each box's kern holds it.
        const channel = fallback ? `${tmp}/#` : "memfd:kern-sandbox-env";
        assert.ok(kernFdsLinkingTo(kern, channel) >= inflight, `child ${k}: the env goes through ${channel}`);
      } finally {
        child.kill("SIGKILL");
      }
      const [, signal] = await exited;
      assert.strictEqual(signal, "SIGKILL", `child ${k} died of the kill`);
      runs += inflight;
      killedMidRun += inflight;
      const t0 = Date.now();
      // Processes only (fast): no kern, and no workload holding the canary,
      // in a box or orphaned.
      const gone = await h.waitFor(() => {
        if (h.processesUsing(kern).length > 0) return false;
        const f = leaks.canarySearch({ needle: canary, kern });
        return f.boxEnv === 0 && f.environ.length === 0;
      }, 2000, 10);
      slowestGone = Math.max(slowestGone, Date.now() - t0);
      assert.ok(gone, `child ${k}: kern or box processes left 2 s after the kill`);
      const post = search();
      searches++;
      if (!clean(post)) hits.push({ child: k, when: "after the kill", ...post });
      if (logs.includes(canary)) hits.push({ child: k, when: "its stdout/stderr" });
    }
    const wall = Date.now() - start;
    const final = search();
    searches++;
    if (!clean(final)) hits.push({ when: "at the end", ...final });
    // The killed children's workspaces stay behind (nobody closed them):
    // they were searched, file by file.
    const leftover = fs.readdirSync(tmp).filter((n) => n.startsWith("kern-ws-")).length;
    note(`D10: ${runs} runs (${killedMidRun} killed mid-run) in ${nChildren} children, ${wall} ms; ` +
      `${searches} searches; canary hits ${hits.length}; box workloads holding it mid-run >= ${minBoxEnv}; ` +
      `boxes gone <= ${slowestGone} ms after each kill; ${leftover} killed-session workspaces searched`);
    assert.deepStrictEqual(hits, []);
    assert.strictEqual(runs, nChildren * (complete + inflight));
    assert.strictEqual(killedMidRun, nChildren * inflight);
    assert.ok(leftover >= nChildren, "the killed sessions' workspaces were there to search");
  });
});
