"use strict";

// The in-box init built without glibc (csrc/init/nolibc.c, on x86-64 and
// arm64) against the same init linked with glibc, built here from the same
// source: the command it starts, found by glibc's execvp rules, and the
// words it prints when it cannot, must be glibc's to the byte, since a cold
// box's result is compared with kern's own exec (test/41). Each case runs
// both inits outside a box (the double's mode: a child subreaper) with the
// same argv, environment and working directory, and compares status,
// stdout and stderr.
const assert = require("assert");
const fs = require("fs");
const path = require("path");
const { execFileSync, spawnSync, spawn } = require("child_process");
const h = require("./lib/harness");

const repo = path.resolve(__dirname, "..");
const built = path.join(repo, "build", "Release", "ks-init");

describe("the in-box init without glibc", function () {
  let glibcInit = null;
  let dir;

  before(function () {
    if (!["x64", "arm64"].includes(process.arch))
      return h.skipHost(this, `binding.gyp links glibc into the init on ${process.arch}: nothing to compare`);
    if (!fs.existsSync(built)) return h.skip(this, `no built init at ${built}`);
    dir = h.tmpDir("init-libc-");
    glibcInit = path.join(dir, "ks-init-glibc");
    try {
      execFileSync("cc", ["-std=gnu11", "-O2", "-static", "-o", glibcInit,
        path.join(repo, "csrc/init/ks-init.c"), path.join(repo, "csrc/init/spec.c")], { stdio: "pipe" });
    } catch (e) {
      return h.skip(this, `cannot link the init with glibc here (libc.a, from libc6-dev): ${e.stderr}`);
    }
    // The work tree of the cases: commands found (or not) along PATH.
    const put = (rel, body, mode) => {
      fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
      fs.writeFileSync(path.join(dir, rel), body, { mode });
    };
    put("bin1/tool", "#!/bin/sh\necho bin1 \"$@\"\n", 0o644); // not executable: EACCES, search goes on
    put("bin2/tool", "#!/bin/sh\necho bin2 \"$@\"\n", 0o755);
    put("bin1/onlyhere", "#!/bin/sh\necho x\n", 0o644);
    put("bin2/script", "echo no-shebang \"$0\" \"$@\"\n", 0o755); // ENOEXEC: /bin/sh runs it
    put("cwdtool", "#!/bin/sh\necho from-cwd\n", 0o755);
    put("garbage", "\x7fELF not really", 0o755);
    fs.mkdirSync(path.join(dir, "bin3/tool"), { recursive: true }); // a directory: EACCES
    fs.writeFileSync(path.join(dir, "notadir"), "");
  });

  /** Both inits with argv, env (replacing the environment) and cwd; through
   * runner (an emulator) when given. */
  function both(argv, env, { cwd = dir, pair = [built, glibcInit], runner = null } = {}) {
    const run = (init) => {
      const args = ["--exec", "--", ...argv];
      const r = runner === null
        ? spawnSync(init, args, { cwd, env, encoding: "utf8", timeout: 20000 })
        : spawnSync(runner, [init, ...args], { cwd, env, encoding: "utf8", timeout: 20000 });
      return { status: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
    };
    return { ours: run(pair[0]), glibc: run(pair[1]) };
  }

  /** Asserts that both inits gave the same; the leftover case's pids differ. */
  function assertSame(what, { ours, glibc }) {
    if (what.startsWith("what the workload leaves")) {
      // Each init returns at once with the sleeper dead.
      for (const r of [ours, glibc]) {
        const pid = Number(r.stderr.trim());
        assert.ok(pid > 0, r.stderr);
        assert.throws(() => process.kill(pid, 0), /ESRCH/);
        r.stderr = "";
      }
    }
    assert.deepStrictEqual(ours, glibc);
    assert.notStrictEqual(glibc.status, null, `positive control: the glibc init ran the case (${what}): ${JSON.stringify(glibc)}`);
  }

  const bin = (...d) => d.map((x) => path.join(dir, x)).join(":");
  const cases = [
    ["a command along the default PATH", ["true"], () => ({ PATH: "/usr/bin:/bin" })],
    ["its exit code", ["sh", "-c", "echo out; echo err >&2; exit 42"], () => ({ PATH: "/usr/bin:/bin" })],
    ["a death by signal: 128+N", ["sh", "-c", "kill -9 $$"], () => ({ PATH: "/usr/bin:/bin" })],
    ["a command that is nowhere (127, kern's words)", ["no-such-tool"], () => ({ PATH: "/usr/bin:/bin" })],
    ["no PATH at all: glibc's /bin:/usr/bin", ["sh", "-c", "echo $PATH; echo ok"], () => ({})],
    ["an empty PATH entry is the working directory", ["cwdtool"], () => ({ PATH: `/nonexistent::${bin("bin2")}` })],
    ["EACCES (not executable) goes on to the next entry", ["tool", "a", "b"], () => ({ PATH: bin("bin1", "bin2") })],
    ["a directory of that name goes on too", ["tool"], () => ({ PATH: bin("bin3", "bin2") })],
    ["found only where it is not executable: 126, though a later entry has none", ["onlyhere"], () => ({ PATH: bin("bin1", "bin2") })],
    ["an entry that is a file (ENOTDIR) goes on", ["tool"], () => ({ PATH: `${bin("notadir")}:${bin("bin2")}` })],
    ["a file without #! runs under /bin/sh, by PATH", ["script", "x", "y"], () => ({ PATH: `${bin("bin2")}:/usr/bin:/bin` })],
    ["a file without #! runs under /bin/sh, by path", [path.join("bin2", "script")], () => ({ PATH: "/usr/bin:/bin" })],
    ["an exec format the kernel refuses", ["./garbage"], () => ({ PATH: "/usr/bin:/bin" })],
    ["an absolute path that is missing", ["/nonexistent/tool"], () => ({ PATH: "/usr/bin:/bin" })],
    ["an empty command", [""], () => ({ PATH: "/usr/bin:/bin" })],
    ["a name longer than NAME_MAX", ["x".repeat(300)], () => ({ PATH: "/usr/bin:/bin" })],
    ["a PATH entry longer than PATH_MAX", ["true"], () => ({ PATH: `/${"y".repeat(5000)}:/usr/bin:/bin` })],
    ["argv and environment reach the workload as given", ["sh", "-c", 'printf "%s|" "$0" "$@"; echo; echo "$V"', "zero", "o ne", ""],
      () => ({ PATH: "/usr/bin:/bin", V: "v=1 é" })],
    ["what the workload leaves behind is ended (a subreaper outside a box)", ["sh", "-c", "sleep 30 & echo $! >&2; exit 3"],
      () => ({ PATH: "/usr/bin:/bin" })],
  ];

  for (const [what, argv, env] of cases) {
    it(`the same as with glibc: ${what}`, function () {
      assertSame(what, both(argv, env()));
    });
  }

  // The arm64 build (its own _start, system calls and sigaction), where a
  // cross compiler and qemu-user are installed (Debian: gcc-aarch64-linux-gnu,
  // qemu-user): both inits built here from the same source, run by qemu.
  it("the same as with glibc on arm64, every case above (cross-built, run by qemu-user)", function () {
    const cc = "aarch64-linux-gnu-gcc";
    const qemu = h.have("qemu-aarch64"); // by its path: the cases' PATH may not find it
    if (!h.have(cc) || !qemu)
      return h.skip(this, `no ${cc} and qemu-aarch64 here (Debian: gcc-aarch64-linux-gnu, qemu-user)`);
    // The compiler's package only recommends the cross C library: without
    // its headers the build below cannot even start.
    if (!fs.existsSync("/usr/aarch64-linux-gnu/include/stdlib.h"))
      return h.skip(this, `${cc} has no arm64 C library headers here (Debian: libc6-dev-arm64-cross)`);
    this.timeout(120000);
    const src = (f) => path.join(repo, "csrc/init", f);
    const arm = path.join(dir, "ks-init-arm64");
    const armGlibc = path.join(dir, "ks-init-arm64-glibc");
    execFileSync(cc, ["-std=gnu11", "-Wall", "-Wextra", "-Werror", "-O2", "-fno-stack-protector",
      "-fno-tree-loop-distribute-patterns", "-U_FORTIFY_SOURCE", "-fno-pie", "-static", "-nostdlib",
      "-no-pie", "-o", arm, src("ks-init.c"), src("spec.c"), src("nolibc.c"), "-lgcc"]);
    execFileSync(cc, ["-std=gnu11", "-O2", "-static", "-o", armGlibc, src("ks-init.c"), src("spec.c")]);
    // (Not the leftover case: under qemu-user neither init finds the
    // orphan it should kill, glibc's build as ours.)
    for (const [what, argv, env] of cases.filter(([w]) => !w.startsWith("what the workload leaves")))
      assertSame(what, both(argv, env(), { pair: [arm, armGlibc], runner: qemu }));
  });

  it("the same as with glibc: a SIGTERM to the init reaches the workload, whose handler decides", async function () {
    const end = async (init) => {
      const c = spawn(init, ["--exec", "--", "sh", "-c", 'trap "echo term; exit 7" TERM; echo ready; sleep 20 & wait'],
        { env: { PATH: "/usr/bin:/bin" } });
      let out = "";
      c.stdout.on("data", (d) => (out += d));
      while (!out.includes("ready")) await h.sleep(10);
      c.kill("SIGTERM");
      const [code] = await new Promise((r) => c.on("close", (...a) => r(a)));
      return { code, out };
    };
    assert.deepStrictEqual(await end(built), await end(glibcInit));
    assert.deepStrictEqual(await end(built), { code: 7, out: "ready\nterm\n" });
  });

  it("the same as with glibc: dispositions the init was given (SIGINT ignored) are the workload's", function () {
    // The shell's `trap "" INT` starts the init with SIGINT ignored.
    const show = "grep -E '^Sig(Ign|Blk)' /proc/self/status";
    const run = (init) => execFileSync("sh", ["-c", `trap "" INT; exec ${init} --exec -- sh -c "${show}"`],
      { env: { PATH: "/usr/bin:/bin" }, encoding: "utf8" });
    const ours = run(built);
    assert.strictEqual(ours, run(glibcInit));
    assert.match(ours, /SigIgn:\s*0*2\b/, "positive control: SIGINT (bit 2) is ignored");
  });

  it("is small and starts without glibc (no glibc start-up in the binary)", function () {
    const size = fs.statSync(built).size;
    assert.ok(size < 200 * 1024, `${size} bytes: is it linked with glibc again?`);
    assert.ok(fs.statSync(glibcInit).size > 400 * 1024, "positive control: a static glibc init is large");
  });
});
