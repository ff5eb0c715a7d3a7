"use strict";

// The boot's bytecode, per kern and image: loading marshalled code
// (lib/inbox/python-load.py) costs an interpreter box a small fraction of
// compiling python-boot.py (bench/README.md has the figures). The code is compiled
// once per process, kern and image, by a box of its own that runs nothing
// but lib/inbox/python-compile.py under `python3 -I -S`, with no session's
// environment, mounts, network or workspace: a box that ran a session's
// code, or started with its settings (PYTHONPATH, LD_PRELOAD, a mount over
// the stdlib), could hand every later box of the process (every session)
// code of its choosing, so none of them may compile it. The host writes the
// result to the init directory, which boxes mount read-only.
//
// Compiled when a key's second interpreter box starts, after that call: a
// process that starts one Python box never pays for a compile box.
const crypto = require("crypto");
const fs = require("fs");
const os = require("os");
const path = require("path");
const benchoff = require("./benchoff");
const { BOX_DIR, BOOT_SOURCE } = require("./init");
const { NO_CAP_WARNING } = require("./warnings");

const COMPILER = fs.readFileSync(path.join(__dirname, "inbox", "python-compile.py"), "utf8");

// `${initDir}\0${kern}\0${image}` -> "seen" (one box started), "compiling",
// "ready" or "failed" (no retry in this process: boxes compile the text).
const states = new Map();
const compiling = new Set(); // their promises, for compilesSettled()
const workspaces = new Set(); // compile boxes' workspaces, removed at exit too
let exitHook = false;

const names = new Map(); // `${kern}\0${image}` -> binName's answer: no hash on a call's path

/** The file name of the boot's bytecode for boxes of this kern and image. */
function binName(kern, image) {
  const key = `${kern}\0${image}`;
  let name = names.get(key);
  if (name === undefined) {
    name = `boot-${crypto.createHash("sha256").update(key).digest("hex").slice(0, 24)}.bin`;
    names.set(key, name);
  }
  return name;
}

/**
 * A Python interpreter box of this kern and image is starting: the in-box
 * path of its boot's bytecode (there or not, python-load.py copes). On the
 * key's second box, the compile starts once the caller's call has settled
 * (whenSettled). o: the session's normalized options, for what a box needs
 * to start on this host at all (enforceLimits, apparmor); none of its
 * environment, mounts or workspace reach the compile box. runBox(boxOpts,
 * argv) runs one box and resolves to its ExecutionResult (lib/sandbox.js's
 * runPackageBox): this file knows how the bytecode is made and kept, not how
 * a box runs.
 */
function bootBin(initDir, kern, o, whenSettled, runBox) {
  const key = `${initDir}\0${kern}\0${o.image}`;
  const state = states.get(key);
  // (Bench switch bootcache off: never compiled; every box loads the text.)
  if (benchoff.isOff("bootcache")) return `${BOX_DIR}/${binName(kern, o.image)}`;
  if (state === undefined) states.set(key, "seen");
  else if (state === "seen") {
    states.set(key, "compiling");
    const p = new Promise((resolve) => whenSettled(resolve))
      .then(() => compile(initDir, kern, o, runBox))
      .then((ok) => states.set(key, ok ? "ready" : "failed"))
      .finally(() => compiling.delete(p));
    compiling.add(p);
  }
  return `${BOX_DIR}/${binName(kern, o.image)}`;
}

/** Runs the compile box; writes the bytecode into initDir under kern's and
 * the image's name. Never throws. */
async function compile(initDir, kern, o, runBox) {
  let ws = null;
  try {
    // (Made synchronously, so the exit hook knows it at once; its writes and
    // its removal run on libuv's threads: the blocks a removal frees can wait
    // on the disk (a discard, -o discard), beside the program's calls.)
    ws = fs.mkdtempSync(path.join(os.tmpdir(), "kern-boot-compile-"));
    if (!exitHook) process.once("exit", removeWorkspaces);
    exitHook = true;
    workspaces.add(ws);
    // (No warning of its own about caps: the box is the package's, and a
    // caller who runs without a memory cap must not hear about ours.)
    const r = await runBox({ image: o.image, workspace: ws, enforceLimits: o.enforceLimits,
      ...(o.apparmor !== null ? { apparmor: o.apparmor } : {}),
      prewarm: 0, results: false, trackFiles: false, [NO_CAP_WARNING]: true },
    ["python3", "-I", "-S", "-c", COMPILER, `${BOX_DIR}/${BOOT_SOURCE}`]);
    const nl = r.stdout.indexOf("\n");
    const hex = r.stdout.slice(nl + 1);
    if (r.exitCode !== 0 || r.fault !== null || r.truncated || nl <= 0 ||
        hex.length === 0 || hex.length % 2 !== 0 || !/^[0-9a-f]+$/.test(hex))
      return false;
    const data = Buffer.concat([Buffer.from(r.stdout.slice(0, nl + 1), "utf8"), Buffer.from(hex, "hex")]);
    // Whole or not at all: a box may open it at any moment.
    const file = path.join(initDir, binName(kern, o.image));
    const tmp = `${file}.${crypto.randomBytes(6).toString("hex")}.tmp`;
    await fs.promises.writeFile(tmp, data, { mode: 0o400 });
    await fs.promises.rename(tmp, file);
    return true;
  } catch {
    return false;
  } finally {
    // (Forgotten only once gone: the exit hook tries again otherwise.)
    if (ws !== null && await fs.promises.rm(ws, { recursive: true, force: true }).then(() => true,
      () => false))
      workspaces.delete(ws);
  }
}

/** At exit: what a compile under way still holds (synchronously, the exit
 * hook's only way). */
function removeWorkspaces() {
  for (const ws of workspaces) {
    try {
      fs.rmSync(ws, { recursive: true, force: true });
    } catch {
      // (A removal on a worker thread may be under way beside this one.)
    }
  }
  workspaces.clear();
}

/** Settles once no compile runs (for the tests' census). */
async function compilesSettled() {
  while (compiling.size > 0) await Promise.allSettled([...compiling]);
}

module.exports = { bootBin, binName, compilesSettled };
