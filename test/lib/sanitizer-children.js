"use strict";

// Under `npm run test:asan` the sanitizer runtimes are preloaded into this
// process (LD_PRELOAD, scripts/test-asan.sh), and every child inherited
// them: the tests' own tools (ps, tar, python3, sh) ran inside the
// sanitizer's runtime, slowly, and once a `ps -eo args` hung on a futex
// there for minutes. The preload leaves this process's environment here;
// only a Node child gets it back, since it may load the ASan build of the
// addon, whose runtime must come first. The package's own boxes (the kern
// double and its children, started by the addon with this environment) run
// without it.
const childProcess = require("child_process");

function install() {
  const preload = process.env.LD_PRELOAD;
  if (!preload) return;
  delete process.env.LD_PRELOAD;
  const withPreload = (opts) => ({ ...opts, env: { ...(opts?.env ?? process.env), LD_PRELOAD: preload } });
  // spawn/execFile/spawnSync/execFileSync(file[, args][, options][, callback])
  for (const name of ["spawn", "spawnSync", "execFile", "execFileSync"]) {
    const original = childProcess[name];
    childProcess[name] = function (file, ...rest) {
      if (file !== process.execPath) return original.call(this, file, ...rest);
      const args = Array.isArray(rest[0]) ? rest.shift() : [];
      const opts = rest[0] !== null && typeof rest[0] === "object" ? rest.shift() : {};
      return original.call(this, file, args, withPreload(opts), ...rest);
    };
  }
  // fork(module[, args][, options]) always runs Node.
  const fork = childProcess.fork;
  childProcess.fork = function (modulePath, ...rest) {
    const args = Array.isArray(rest[0]) ? rest.shift() : [];
    const opts = rest[0] !== null && typeof rest[0] === "object" ? rest.shift() : {};
    return fork.call(this, modulePath, args, withPreload(opts));
  };
}

module.exports = { install };
