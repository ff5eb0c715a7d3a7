"use strict";

// What processes other than the box get from us: the env secret (A34), our
// descriptors in an unrelated child_process (A37), and the user's terminal
// (A40). Every census has a positive control that shows it can see a leak.
const assert = require("assert");
const crypto = require("crypto");
const fs = require("fs");
const path = require("path");
const { spawn, execFileSync } = require("child_process");
const { withSandbox } = require("..");
const h = require("./lib/harness");
const { dirPrefix } = require("../lib/init");
const leaks = require("./lib/leaks");
const procfs = require("./lib/procfs");

const { note, privateKern } = h;

/** The process group of pid, or null once it is gone. */
function pgrpOf(pid) {
  return procfs.readStat(pid)?.pgrp ?? null;
}

/**
 * The processes whose /proc/PID/<file> (environ, cmdline) holds needle, on
 * the whole host, each with its process group. The group is read around the
 * file: a box's `sleep 0.1` that exits right after its environ was read
 * keeps the group it had (read afterwards it would be null, which looks like
 * a process outside every box: CI saw that once, under ASan).
 */
function procHolders(file, needle) {
  const holders = [];
  for (const pid of procfs.pids()) {
    const groupBefore = pgrpOf(pid);
    try {
      if (!fs.readFileSync(`/proc/${pid}/${file}`).includes(needle)) continue;
    } catch {
      continue; /* gone meanwhile, or a kernel thread */
    }
    holders.push({ pid, pgrp: pgrpOf(pid) ?? groupBefore });
  }
  return holders.sort((a, b) => a.pid - b.pid);
}

/** Pids whose /proc/PID/<file> holds needle. */
function procHits(file, needle) {
  return procHolders(file, needle).map((p) => p.pid);
}

/** fd number -> link target of a process. */
function fdTable(pid) {
  const out = {};
  for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
    try {
      out[fd] = fs.readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      /* closed meanwhile */
    }
  }
  return out;
}

/** A real python3 (pyenv shims are shell scripts that take ~0.5 s to start). */
function realPython() {
  try {
    return execFileSync("python3", ["-c", "import sys; print(sys.executable)"], { encoding: "utf8" }).trim();
  } catch {
    return null;
  }
}

describe("what other processes get (A34, A37, A40)", function () {
  describe("A34: the env secret outside the box", function () {
    const script = path.join(h.repo, "test/fixtures/scripts/secret-holder.js");
    for (const [what, fallback] of [["memfd", ""], ["O_TMPFILE fallback", "memfd"]]) {
      it(`A34 (${what}): while boxes run and after kill -9 of Node, the secret is in no ` +
        "/proc/*/environ but the box workloads', in no /proc/*/cmdline and in no file under " +
        "$TMPDIR", async function () {
        this.timeout(60000); // above startWait's 30 s, so a failed wait reports itself
        const dir = fs.realpathSync(h.tmpDir("a34-"));
        const kern = privateKern(dir);
        const tmp = path.join(dir, "tmp");
        fs.mkdirSync(tmp);
        const secret = `CANARY-${crypto.randomUUID()}`;
        const marker = `a34-${crypto.randomBytes(4).toString("hex")}`;
        const child = spawn(process.execPath, [script, h.repo, marker],
          { env: { ...process.env, KERN_BIN: kern, TMPDIR: tmp, KERN_SANDBOX_FORCE_FALLBACK: fallback },
            stdio: ["pipe", "pipe", "pipe"] });
        child.stdin.end(`${secret}\n`);
        const exited = h.exitOf(child);
        let out = "";
        let kernsAtKill = [];
        child.stdout.on("data", (d) => (out += d));
        child.stderr.on("data", (d) => (out += d));
        try {
          // Three kerns (the two calls' and the session's prewarmed box),
          // each with its in-box init exec'd. Waited for as a whole: a kern's
          // child before its exec still has kern's exe, and would count as
          // one more kern in a single look.
          let kerns = [];
          let workloads = [];
          const settled = () => {
            // A kern's child before its exec still has kern's exe: it is
            // no kern (it has its parent's group, and counted as the third
            // kern once, in CI, while the third had not started).
            const all = h.processes();
            const using = h.processesUsing(kern);
            kerns = using.filter((pid) => all.some((p) => p.pid === pid && !using.includes(p.ppid)));
            workloads = h.processes().filter((p) => kerns.includes(p.ppid) && p.exe !== kern &&
              p.state !== "Z").map((p) => p.pid);
            return kerns.length === 3 && workloads.length === 3;
          };
          assert.ok(await h.waitFor(() => out.includes("running") && settled(), h.startWait(10000)),
            `the boxes run: ${out}; kerns ${kerns}, workloads ${workloads}`);
          // kern leads its own process group (its own session), and the box's
          // processes (the loop's `sleep`s too) run in it.
          assert.deepStrictEqual(kerns.map(pgrpOf), kerns);
          kernsAtKill = kerns;

          // Positive control: the secret is in the box's env (the scan sees it
          // where it belongs), and it travels to kern through fd 4.
          const holders = procHolders("environ", secret);
          const hits = holders.map((p) => p.pid);
          assert.ok(workloads.every((p) => hits.includes(p)), `the workloads' env holds it: ${hits}`);
          const outside = holders.filter((p) => kerns.includes(p.pid) || !kerns.includes(p.pgrp))
            .map((p) => `${p.pid} (group ${p.pgrp})`);
          assert.deepStrictEqual(outside, [], "no process but the boxes' has it in its environ");
          assert.deepStrictEqual(procHits("cmdline", secret), []);
          const fd4 = kerns.map((k) => {
            try {
              return { target: fs.readlinkSync(`/proc/${k}/fd/4`), holds: fs.readFileSync(`/proc/${k}/fd/4`).includes(secret) };
            } catch (e) {
              return { target: e.code, holds: false };
            }
          });
          note(`${what}: kern's fd 4: ${fd4.map((f) => f.target).join(", ")}`);
          for (const f of fd4) {
            // The double keeps the env file open while the box runs.
            assert.ok(f.holds, `fd 4 of kern holds the secret: ${f.target}`);
            if (fallback === "") assert.match(f.target, /^\/memfd:kern-sandbox-env( \(deleted\))?$/);
            // An O_TMPFILE file: in $TMPDIR, holding the secret, with no name.
            else assert.match(f.target, new RegExp(`^${tmp}/#\\d+ \\(deleted\\)$`));
          }
          assert.strictEqual(leaks.secretFiles([tmp], secret).length, 0, "no file under $TMPDIR holds the secret");
        } finally {
          child.kill("SIGKILL");
        }
        const [, signal] = await exited;
        assert.strictEqual(signal, "SIGKILL");
        assert.ok(await h.waitFor(() => h.processesWith(marker).length === 0 &&
          h.processesUsing(kern).length === 0, 2000), "the boxes died with Node");
        // The double kills only its direct workload: a box's `sleep 0.1` may
        // outlive it by up to 0.1 s (a real kern's pid namespace takes it
        // down at once). Any such straggler is in a box's group, and goes.
        const stragglers = procHolders("environ", secret);
        assert.deepStrictEqual(stragglers.filter((p) => !kernsAtKill.includes(p.pgrp)), []);
        assert.ok(await h.waitFor(() => procHits("environ", secret).length === 0, 1000),
          `left with the secret in their environ: ${procHits("environ", secret)}`);
        assert.deepStrictEqual(procHits("cmdline", secret), []);
        const dirs = [tmp, dir];
        if (process.env.XDG_RUNTIME_DIR) dirs.push(process.env.XDG_RUNTIME_DIR);
        assert.strictEqual(leaks.secretFiles(dirs, secret).length, 0, `no file under ${dirs.join(", ")} holds the secret`);
        assert.ok(!out.includes(secret), "nor the host's output");
        // What a killed host leaves: its workspace (no one is left to remove
        // it) and the in-box init's directory (the next process removes it),
        // and no env file of any name.
        const left = fs.readdirSync(tmp);
        note(`${what}: left in $TMPDIR after kill -9: ${JSON.stringify(left)}`);
        assert.ok(left.every((e) => /^kern-ws-/.test(e) || e.startsWith(dirPrefix(child.pid))),
          JSON.stringify(left));
        fs.rmSync(dir, { recursive: true, force: true });
      });
    }
  });

  describe("A37: descriptors reach no unrelated child", function () {
    let leak = null;
    let leakPath = null;
    let census = null;
    // What a child_process inherits before any box of this test runs: fds the
    // test process itself inherited without O_CLOEXEC (a CI runner may pass
    // one down) go to every child, ours or not; everything else must not.
    let baseline = null;
    // fd 1 is the pipe the child reports on (a new one each time).
    const extraOf = (t) => Object.entries(t).filter(([fd, target]) => Number(fd) > 2 && baseline[fd] !== target);
    before(async function () {
      this.timeout(30000);
      if (!h.have("cc")) return;
      const dir = h.tmpDir("fdleak-");
      census = path.join(dir, "fd-census");
      execFileSync("cc", ["-O2", "-Wall", "-Wextra", "-Werror", "-o", census,
        path.join(h.repo, "test/fixtures/fd-census.c")], { stdio: "pipe" });
      const inc = ["/usr/include/node", path.resolve(process.execPath, "../../include/node")]
        .find((d) => fs.existsSync(path.join(d, "node_api.h")));
      if (!inc) return;
      const out = path.join(dir, "fd_leak.node");
      leakPath = out;
      execFileSync("cc", ["-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-Werror", `-I${inc}`, "-o", out,
        path.join(h.repo, "test/fixtures/fd-leak.c")], { stdio: "pipe" });
      leak = require(out);
    });
    before(async function () {
      if (census === null) return;
      await h.waitFor(() => require("../lib/binding").liveBoxes() === 0, 5000);
      baseline = await unrelatedChild();
      note(`a child_process inherits, with no box running: ${JSON.stringify(baseline)}`);
      assert.deepStrictEqual([0, 2].map((fd) => baseline[fd]), ["/dev/null", "/dev/null"]);
      assert.match(baseline[1], /^(pipe|socket):/);
    });

    /** The fd table of a child_process started now, as the child sees it in main(). */
    async function unrelatedChild() {
      const child = spawn(census, [], { stdio: ["ignore", "pipe", "ignore"] });
      let out = "";
      child.stdout.on("data", (d) => (out += d));
      const [code] = await h.exitOf(child);
      await new Promise((resolve) => (child.stdout.readableEnded ? resolve() : child.stdout.once("end", resolve)));
      assert.strictEqual(code, 0);
      const table = {};
      for (const line of out.split("\n").filter(Boolean)) {
        const sp = line.indexOf(" ");
        table[line.slice(0, sp)] = line.slice(sp + 1);
      }
      return table;
    }

    it("A37: 50 fds opened without O_CLOEXEC (O_PATH on / and /sys/fs/cgroup among them) show " +
      "up in an unrelated child (positive control) but reach neither kern (fds 0-4) nor the box (0-2)",
    async function () {
      if (leak === null) return h.skip(this, "no C compiler or no Node headers (node_api.h) to build the fd-leak addon");
      if (census === null) return h.skip(this, "no C compiler for the fd-census helper");
      const fds = [leak.open("/", true), leak.open("/sys/fs/cgroup", true)];
      while (fds.length < 50) fds.push(leak.open("/dev/null", false));
      try {
        const t = await unrelatedChild();
        assert.deepStrictEqual(fds.filter((fd) => !(fd in t)), [], "every leaked fd is in the child");
        assert.strictEqual(t[fds[0]], "/");
        assert.strictEqual(t[fds[1]], "/sys/fs/cgroup");
        assert.strictEqual(extraOf(t).length, 50);
        assert.strictEqual(Object.keys(t).length, Object.keys(baseline).length + 50);

        const r = await withSandbox((s) => s.run(["sh", "-c", "ls /proc/$$/fd"]));
        assert.deepStrictEqual(r.stdout.split("\n").filter(Boolean), ["0", "1", "2"], "the box's fds");
        const d = await withSandbox({ image: "fake:dump" }, (s) => s.run(["true"]));
        const nums = d.stderr.split("\n").filter((l) => /^fake-kern: fd \d+ /.test(l))
          .map((l) => Number(l.split(" ")[2]));
        // The double opens one fd of its own to list /proc/self/fd.
        assert.deepStrictEqual(nums.filter((n) => n <= 4), [0, 1, 2, 3, 4]);
        assert.ok(fds.every((fd) => fd > 4));
        assert.ok(nums.filter((n) => n > 4).length <= 1, `a leaked fd reached kern: ${nums}`);
      } finally {
        fds.forEach((fd) => leak.close(fd));
      }
    });

    it("A37: without close_range (forced fallback), a descriptor leaked above the soft limit " +
      "(at 19,000, the limit lowered to 1,000 after) reaches neither kern nor the box (positive " +
      "control: an unrelated child gets it)", async function () {
      this.timeout(h.startWait(30000));
      if (leak === null) return h.skip(this, "no C compiler or no Node headers (node_api.h) to build the fd-leak addon");
      if (census === null) return h.skip(this, "no C compiler for the fd-census helper");
      if (!h.have("prlimit")) return h.skip(this, "prlimit is not installed");
      // The fallback's close loop once stopped at the soft limit (at most
      // 65,536), which says nothing of descriptors opened before the limit
      // was lowered, or above 65,536 where the limit is higher.
      const high = 19000;
      const code = `
        const leak = require(${JSON.stringify(leakPath)});
        const { withSandbox } = require(${JSON.stringify(h.repo)});
        const { execFileSync } = require("child_process");
        leak.dupTo(leak.open("/dev/null", false), ${high});
        process.stdout.write("ready\\n");
        process.stdin.once("data", async () => {
          const child = execFileSync(${JSON.stringify(census)}, { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] })
            .split("\\n").filter(Boolean).map((l) => Number(l.split(" ")[0]));
          const kern = [];
          for (let i = 0; i < 2; i++) {
            const d = await withSandbox({ image: "fake:dump" }, (s) => s.run(["true"]));
            kern.push(d.stderr.split("\\n").filter((l) => /^fake-kern: fd \\d+ /.test(l))
              .map((l) => Number(l.split(" ")[2])));
          }
          const box = await withSandbox((s) => s.run(["sh", "-c", "ls /proc/$$/fd"]));
          process.stdout.write(JSON.stringify({ child, kern, box: box.stdout.split("\\n").filter(Boolean) }));
          process.stdin.destroy();
        });`;
      const child = spawn(process.execPath, ["-e", code], { stdio: ["pipe", "pipe", "inherit"],
        env: { ...process.env, KERN_SANDBOX_FORCE_FALLBACK: "close_range" } });
      const exited = h.closeOf(child); // its stdout is read after
      let out = "";
      child.stdout.on("data", (d) => (out += d));
      try {
        assert.ok(await h.waitFor(() => out.startsWith("ready\n"), h.startWait(5000)), "the child starts");
        execFileSync("prlimit", [`--pid=${child.pid}`, "--nofile=1000:"]);
        child.stdin.write("go\n");
        const [code_] = await exited;
        assert.strictEqual(code_, 0);
      } finally {
        if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
        await exited;
      }
      const r = JSON.parse(out.slice("ready\n".length));
      assert.ok(r.child.includes(high), `positive control: an unrelated child gets ${high}: ${r.child}`);
      for (const nums of r.kern) {
        assert.ok(nums.includes(0) && nums.includes(4), `the dump listed kern's fds: ${nums}`);
        assert.ok(!nums.includes(high), `a leaked fd reached kern: ${nums}`);
      }
      assert.deepStrictEqual(r.box, ["0", "1", "2"], "the box's fds");
    });

    it("A37: 100 child_process children started while boxes spawn, stream, time out and are " +
      "watched inherit only what a child got before any box ran (its stdio, plus what the " +
      "test process itself inherited)", async function () {
      this.timeout(60000);
      if (census === null) return h.skip(this, "no C compiler for the fd-census helper");
      const seen = { pidfd: 0, memfd: 0, inotify: 0, pipe: 0 };
      const extra = [];
      let boxes = 0;
      let spawns = 0;
      await withSandbox({ timeoutS: 0.3, onStdout: () => {} }, async (sbx) => {
        let stop = false;
        const lanes = Array.from({ length: 6 }, async (_, l) => {
          while (!stop) {
            await sbx.run(l % 3 === 0 ? ["sh", "-c", "trap '' TERM; sleep 5"]
              : ["sh", "-c", "echo a; touch f$$; sleep 0.05; echo b; rm f$$"]);
            boxes++;
          }
        });
        try {
          // The env memfd lives only while a box is being spawned: seeing it
          // is luck (9 of 100 in some runs), so the census goes on past 100
          // children until it has been seen once (at most 1,000).
          for (; spawns < 100 || (seen.memfd === 0 && spawns < 1000); spawns++) {
            // What the engine holds at this instant: the material for a leak.
            const own = Object.values(fdTable("self"));
            if (own.some((t) => t === "anon_inode:[pidfd]")) seen.pidfd++;
            if (own.some((t) => t.startsWith("/memfd:kern-sandbox-env"))) seen.memfd++;
            if (own.some((t) => t === "anon_inode:inotify")) seen.inotify++;
            if (own.filter((t) => t.startsWith("pipe:")).length > 8) seen.pipe++;
            const t = await unrelatedChild();
            const bad = extraOf(t);
            if (bad.length > 0 || Object.keys(t).length !== Object.keys(baseline).length) extra.push(bad);
          }
        } finally {
          stop = true;
          await Promise.all(lanes);
        }
      });
      note(`${spawns} unrelated children beside ${boxes} boxes; our process held pidfds at ${seen.pidfd}, ` +
        `inotify at ${seen.inotify}, > 8 pipes at ${seen.pipe}, an env memfd at ${seen.memfd} of ` +
        `the ${spawns} spawns`);
      assert.deepStrictEqual(extra, []);
      // The census ran while the engine held descriptors of each long-lived kind.
      assert.ok(seen.pidfd > 50 && seen.inotify > 50 && seen.pipe > 50 && seen.memfd > 0, JSON.stringify(seen));
    });
  });

  describe("A40: TIOCSTI into the user's terminal", function () {
    it("A40: under `script -qec`, a box's TIOCSTI on fds 0-2 fails (ENOTTY), /dev/tty cannot be " +
      "opened (ENXIO), nothing reaches the pty; a child sharing the tty injects (positive control)",
    async function () {
      this.timeout(30000);
      if (!h.have("script")) return h.skip(this, "script(1) (util-linux/bsdutils) is not installed");
      const python = realPython();
      if (python === null) return h.skip(this, "no python3 for the TIOCSTI probe");
      const dir = h.tmpDir("a40-");
      const outFile = path.join(dir, "out.json");
      const boxLine = `box-${crypto.randomBytes(6).toString("hex")}`;
      const ctlLine = `ctl-${crypto.randomBytes(6).toString("hex")}`;
      const q = (s) => `'${s.replace(/'/g, "'\\''")}'`;
      const cmd = [process.execPath, path.join(h.repo, "test/fixtures/scripts/tiocsti.js"), h.repo, python,
        path.join(h.repo, "test/fixtures/scripts/tiocsti-probe.py"), outFile, boxLine, ctlLine].map(q).join(" ");
      // Only script's own pty is ever written to: its stdin is a pipe the
      // test holds open (EOF would end the child's read), its output a pipe.
      const child = spawn("script", ["-qec", cmd, "/dev/null"], { stdio: ["pipe", "pipe", "pipe"] });
      let transcript = "";
      child.stdout.on("data", (d) => (transcript += d));
      child.stderr.on("data", (d) => (transcript += d));
      const exited = h.exitOf(child);
      const done = await h.waitFor(() => child.exitCode !== null || child.signalCode !== null, 20000, 50);
      if (!done) child.kill("SIGKILL");
      const [code, signal] = await exited;
      child.stdin.destroy();
      assert.strictEqual(code, 0, `script ended ${code ?? signal}: ${transcript.slice(-500)}`);
      const r = JSON.parse(fs.readFileSync(outFile, "utf8"));
      assert.strictEqual(r.error, undefined);
      assert.strictEqual(r.stdinIsTTY, true, "Node's stdin is the pty");

      const box = JSON.parse(r.box.stdout);
      note(`box: ${r.box.stdout.trim()}`);
      assert.deepStrictEqual(box.isatty, [false, false, false]);
      assert.deepStrictEqual(box.sti, { 0: "ENOTTY", 1: "ENOTTY", 2: "ENOTTY" });
      assert.strictEqual(box.devtty, "ENXIO");
      assert.ok(!r.got.includes(boxLine), "nothing of the box reached the pty's input");
      assert.ok(!transcript.includes(boxLine), "nor its echo");

      const ctl = JSON.parse(r.ctl.stdout);
      note(`control: ${r.ctl.stdout.trim()}; the pty's input got ${JSON.stringify(r.got)}`);
      let legacy = null;
      try {
        legacy = fs.readFileSync("/proc/sys/dev/tty/legacy_tiocsti", "utf8").trim();
      } catch {
        /* older kernel: TIOCSTI always on */
      }
      if (ctl.sti["0"] !== "ok" && legacy === "0")
        return h.skipHost(this, `positive control only: TIOCSTI is disabled (dev.tty.legacy_tiocsti=0, ${ctl.sti["0"]}); the box's failures above still hold`);
      assert.deepStrictEqual(ctl.isatty, [true, false, true]);
      assert.strictEqual(ctl.sti["0"], "ok");
      assert.strictEqual(ctl.devtty, "ok");
      assert.ok(r.got.includes(`${ctlLine}\n`), "the control's line reached the pty's input");
    });
  });
});
