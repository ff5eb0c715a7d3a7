"use strict";

// Under `npm run test:asan` the sanitizer runtimes are preloaded into this
// process (LD_PRELOAD, scripts/test-asan.sh), and every child inherits
// them: a Node child must (it may load the ASan build of the addon, whose
// runtime has to come first), and so must anything that starts Node in
// turn (script, sh, prlimit, timeout). The programs the tests run only to
// look at the system (ps, pgrep, tar, gzip, the compiler, mount) run
// without it: they are not the addon's code, and inside the runtime they are
// slow and can block on its locks.
const path = require("path");
const childProcess = require("child_process");

const TOOLS = new Set(["ps", "pgrep", "pkill", "tar", "bsdtar", "gzip", "cc", "gcc", "clang",
  "mount", "umount", "mkfifo", "rm", "nm", "stat", "ls"]);

function withoutPreload(opts) {
  const env = { ...(opts?.env ?? process.env) };
  delete env.LD_PRELOAD;
  return { ...opts, env };
}

function install() {
  if (!process.env.LD_PRELOAD) return;
  // spawn/execFile/spawnSync/execFileSync(file[, args][, options][, callback])
  for (const name of ["spawn", "spawnSync", "execFile", "execFileSync"]) {
    const original = childProcess[name];
    childProcess[name] = function (file, ...rest) {
      if (typeof file !== "string" || !TOOLS.has(path.basename(file))) return original.call(this, file, ...rest);
      const args = Array.isArray(rest[0]) ? rest.shift() : [];
      const opts = rest[0] !== null && typeof rest[0] === "object" ? rest.shift() : {};
      return original.call(this, file, args, withoutPreload(opts), ...rest);
    };
  }
}

module.exports = { install, TOOLS };
