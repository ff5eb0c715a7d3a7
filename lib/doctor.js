"use strict";

// doctor(): can this host run boxes, and which caps will really hold? Each
// check is { id, ok, required, detail, fix }; a failed required check means
// no box can run. The decisive one is a probe box: the same kern, image and
// options a session would use, so what it reports is what calls will get.
const fs = require("fs");
const os = require("os");
const path = require("path");
const { execFile } = require("child_process");
const binding = require("./binding");
const { findKern, kernEnv, HOW_TO_GET_KERN } = require("./kern");
const { DEFAULTS } = require("./options");
const { uidRangeAvailable, ownIds, kernRuntimeDir, mountOf } = require("./hostfacts");
const { NO_CAP_WARNING } = require("./warnings");

const MIN_LINUX = [5, 3]; // pidfd_open

function check(id, ok, detail, fix = null, { required = true } = {}) {
  return { id, ok, required, detail, fix: ok ? null : fix };
}

function run(file, args, env) {
  return new Promise((resolve) => {
    execFile(file, args, { env, timeout: 20000, encoding: "utf8", maxBuffer: 1 << 20 },
      (error, stdout, stderr) => resolve({ error, stdout, stderr }));
  });
}

function readOr(file, dflt = null) {
  try {
    return fs.readFileSync(file, "utf8").trim();
  } catch {
    return dflt;
  }
}

function linuxCheck() {
  const release = os.release();
  const [major, minor] = release.split(".").map((n) => parseInt(n, 10));
  const ok = major > MIN_LINUX[0] || (major === MIN_LINUX[0] && minor >= MIN_LINUX[1]);
  return check("linux", ok, `Linux ${release}`,
    `upgrade to Linux ${MIN_LINUX.join(".")} or newer: the engine needs pidfds`);
}

function featureChecks() {
  const f = binding.hostFeatures();
  return [
    check("pidfd", f.pidfdOpen, f.pidfdOpen ? "pidfd_open(2) works" : "pidfd_open(2) is refused",
      "a kernel (or seccomp filter) without pidfd_open cannot run the engine: Linux 5.3 or newer, " +
        "and a container policy that allows pidfd_open"),
    check("openat2", f.openat2, f.openat2 ? "openat2(2) RESOLVE_BENEATH works"
      : "openat2(2) is missing: workspace paths are resolved by an O_NOFOLLOW walk instead",
    "Linux 5.6 or newer gives the one-call resolution; the walk is as safe, only slower",
    { required: false }),
  ];
}

function usernsCheck() {
  const uid = typeof process.getuid === "function" ? process.getuid() : -1;
  const max = Number(readOr("/proc/sys/user/max_user_namespaces", "1"));
  const debian = readOr("/proc/sys/kernel/unprivileged_userns_clone");
  const ubuntu = readOr("/proc/sys/kernel/apparmor_restrict_unprivileged_userns");
  const problems = [];
  if (!(max > 0)) problems.push("user.max_user_namespaces is 0");
  if (uid !== 0 && debian === "0") problems.push("kernel.unprivileged_userns_clone is 0");
  if (uid !== 0 && ubuntu === "1") problems.push("kernel.apparmor_restrict_unprivileged_userns is 1");
  const ok = problems.length === 0;
  return check("userns", ok,
    ok ? (uid === 0 ? "running as root: user namespaces are available (max " +
      `${max})` : `unprivileged user namespaces are available (max ${max})`)
      : problems.join("; "),
    "allow unprivileged user namespaces: `sysctl -w kernel.unprivileged_userns_clone=1` " +
      "(Debian), `sysctl -w kernel.apparmor_restrict_unprivileged_userns=0` or an AppArmor " +
      "profile for kern (Ubuntu 24.04), `sysctl -w user.max_user_namespaces=15000`");
}

async function tmpdirCheck() {
  const dir = os.tmpdir();
  let made = null;
  try {
    made = await fs.promises.mkdtemp(path.join(dir, "kern-ws-doctor-"));
    await fs.promises.writeFile(path.join(made, "probe"), "ok");
    return check("tmpdir", true, `${dir} is writable`);
  } catch (e) {
    return check("tmpdir", false, `cannot make a workspace in ${JSON.stringify(dir)}: ${e.code || e.message}`,
      "point TMPDIR at a writable directory, or pass options.workspace to every Sandbox");
  } finally {
    if (made !== null) await fs.promises.rm(made, { recursive: true, force: true }).catch(() => {});
  }
}

// File systems that keep their files in memory.
const MEMORY_FS = new Set(["tmpfs", "ramfs"]);

/**
 * Where kern keeps each box's scratch layer and its registry. Every box's
 * start and teardown write and remove files there; on a disk file system
 * they wait on its journal (and, mounted with discard, on the device's
 * discards) behind whatever else writes to it, and the tail of a call's
 * latency follows those waits; a tmpfs has neither (bench/README.md has
 * the figures).
 */
function runtimeDirCheck(env) {
  const rt = kernRuntimeDir(env);
  const m = rt === null ? null : mountOf(rt.dir);
  if (m === null) {
    return check("runtime-dir", true, rt === null ? "kern's runtime dir: none of its places can be made " +
      "(kern says so when a box starts)" : `kern's runtime dir ${rt.dir}: its file system is not known`,
    null, { required: false });
  }
  const { dir, tmpfsAt: base } = rt;
  const ok = MEMORY_FS.has(m.fsType);
  const discard = m.options.includes("discard") ? ", mounted with discard" : "";
  const { uid, gid } = ownIds();
  return check("runtime-dir", ok, ok ? `kern's runtime dir ${dir} is in memory (${m.fsType})`
    : `kern's runtime dir ${dir} is on a disk (${m.fsType} at ${m.mountPoint}${discard}): each box's ` +
      "start and teardown write there, so calls wait on that disk at times (tail latencies of " +
      "tens to hundreds of ms)",
  `mount a tmpfs on ${base}, as systemd-logind does for a login session ` +
      `(\`mkdir -p ${base} && mount -t tmpfs -o mode=0700,uid=${uid},gid=${gid} tmpfs ${base}\`); ` +
      "keep XDG_RUNTIME_DIR where it is: kern finds the systemd user manager through it",
  { required: false });
}

function uidRangeCheck() {
  const ok = uidRangeAvailable();
  let user = "USER";
  try {
    user = os.userInfo().username;
  } catch {
    /* keep the placeholder */
  }
  return check("uid-range", ok, ok ? "newuidmap/newgidmap and a subordinate id range are there"
    : "no uid range: boxes run with a single-uid map (an image that chowns or drops privileges fails)",
  `install uidmap (Debian/Ubuntu) and give ${user} a range in /etc/subuid and /etc/subgid, ` +
      `e.g. \`usermod --add-subuids 100000-165535 --add-subgids 100000-165535 ${user}\``,
  { required: false });
}

function imageCheck(listing, image) {
  const [name, tag = "latest"] = image.split(/:(?=[^/]*$)/);
  const ok = listing.split("\n").some((line) => line.trim().split(/\s+/)[0] === `${name}:${tag}`);
  return check("image", ok, ok ? `${image} is in kern's image cache`
    : `${image} is not in kern's image cache: the first box would pull it (network needed)`,
  `\`kern pull ${image}\` on a host with network, or \`kern load\` an image archive ` +
      "(docker save format); or pass options.image naming an image the cache has",
  { required: false });
}

// What the probe box prints of its cgroup: one "name=value" per line.
const CGROUP_PROBE = "for f in cgroup.controllers memory.max pids.max cpu.max; do " +
  "v=$(head -n 1 /sys/fs/cgroup/$f 2>/dev/null); echo \"$f=$v\"; done";

function cgroupCheck(result) {
  const seen = {};
  for (const line of result.stdout.split("\n")) {
    const i = line.indexOf("=");
    if (i > 0) seen[line.slice(0, i)] = line.slice(i + 1).trim();
  }
  const v2 = fs.existsSync("/sys/fs/cgroup/cgroup.controllers");
  const memory = result.limits === null ? "unknown" : result.limits.memory;
  const pids = /^\d+$/.test(seen["pids.max"] || "") ? "enforced" : "not_enforced";
  const cpu = seen["cpu.max"] ? "available" : "not available";
  const ok = memory === "enforced" && pids === "enforced";
  return {
    check: check("cgroup", ok, `${v2 ? "cgroup v2" : "no cgroup v2 unified hierarchy (cgroup v1)"}; ` +
      `in a probe box: memory ${memory}, pids ${pids}, cpu ${cpu}` +
      (seen["cgroup.controllers"] ? ` (delegated: ${seen["cgroup.controllers"]})` : ""),
    "boxes run, but their caps do not bind: use a host with cgroup v2 that delegates the memory " +
        "and pids controllers to your user (systemd's user@.service Delegate=, or " +
        "`cgroup_enable=memory` on the kernel command line of WSL2 and Raspberry Pi OS); " +
        "requireLimits: true refuses such boxes, and `kern doctor` has kern's own view",
    { required: false }),
    controllers: { memory, pids, cpu },
  };
}

/**
 * Checks whether boxes can run here. opts.image: the image to probe
 * (default the package's). Resolves to { ok, checks, controllers }; never
 * rejects for a host problem (that is a failed check).
 */
async function doctor(opts = {}) {
  const image = opts.image ?? DEFAULTS.image;
  const checks = [];
  let kern = null;
  try {
    kern = findKern();
  } catch (e) {
    checks.push(check("kern", false, e.message.split(";")[0], HOW_TO_GET_KERN));
  }
  // kern's own environment, as a box gets it, less the started fd (no box here).
  const envObj = Object.fromEntries(kernEnv({ enforceLimits: true, startedFd: binding.STARTED_FD })
    .filter((kv) => !kv.startsWith("KERN_STARTED_FD="))
    .map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]));
  if (kern !== null) {
    const v = await run(kern, ["--version"], envObj);
    const version = v.error ? null : v.stdout.trim().split("\n")[0];
    checks.push(check("kern", version !== null, version !== null ? `${kern} (${version})`
      : `${kern} does not run: ${v.error && (v.error.code || v.error.message)}`, HOW_TO_GET_KERN));
  }
  checks.push(linuxCheck(), ...featureChecks(), usernsCheck(), await tmpdirCheck(),
    runtimeDirCheck(envObj), uidRangeCheck());
  let controllers = null;
  if (checks.find((c) => c.id === "kern").ok) {
    const listing = await run(kern, ["images"], envObj);
    checks.push(imageCheck(listing.error ? "" : listing.stdout, image));
    const probe = await probeBox(image, checks.find((c) => c.id === "tmpdir").ok);
    checks.push(probe.check);
    if (probe.result !== null) {
      const cg = cgroupCheck(probe.result);
      checks.push(cg.check);
      controllers = cg.controllers;
    }
  } else {
    for (const id of ["image", "box"]) checks.push(check(id, false, "not checked: kern was not found", HOW_TO_GET_KERN));
  }
  const ok = checks.every((c) => c.ok || !c.required);
  return { ok, checks, controllers };
}

async function probeBox(image, haveTmp) {
  if (!haveTmp) {
    return { check: check("box", false, "not checked: no workspace can be made",
      "fix the tmpdir check first"), result: null };
  }
  // Required here, not at the top: sandbox.js requires this module's users.
  const { Sandbox } = require("./sandbox");
  const t0 = process.hrtime.bigint();
  try {
    // The probe's caps are the doctor's to report, not a caller's to be warned of.
    const sbx = new Sandbox({ image, memoryMb: 256, pids: 64, timeoutS: 60, trackFiles: false,
      [NO_CAP_WARNING]: true });
    await sbx.open();
    let r;
    try {
      r = await sbx.run(["sh", "-c", CGROUP_PROBE]);
    } finally {
      await sbx.close();
    }
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    const ok = r.exitCode === 0 && r.fault === null;
    return {
      check: check("box", ok, ok ? `a probe box ran in ${image} (${ms.toFixed(0)} ms, open to close)`
        : `a probe box in ${image} failed: ${r.fault ? `${r.fault.type}: ${r.fault.message}`
          : `exit ${r.exitCode}: ${r.stderr.trim().slice(0, 300)}`}`,
      "read kern's message above; `kern doctor` checks kern's own requirements"),
      result: ok ? r : null,
    };
  } catch (e) {
    return { check: check("box", false, `a probe box could not start: ${e.message}`,
      "read the message; `kern doctor` checks kern's own requirements"), result: null };
  }
}

module.exports = { doctor };
