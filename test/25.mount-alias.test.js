"use strict";

// A30: a bind mount gives a sensitive directory a second, innocent name. The
// alias is made as root in a private mount namespace (`unshare -m` in a child
// process, so no mount is ever visible to this process or outlives the
// child), and the mount check runs in that namespace: it must refuse the
// alias by device and inode, since its path says nothing.
const assert = require("assert");
const fs = require("fs");
const path = require("path");
const { spawnSync } = require("child_process");
const h = require("./lib/harness");

// Runs in the child, inside the namespace: argv = [alias of /etc, alias of /,
// a plain directory]. Prints one JSON report.
const PROBE = `
const fs = require("fs");
const path = require("path");
const { Sandbox, MountRefused } = require(process.env.KS_REPO);
const [etcAlias, rootAlias, plain] = process.argv.slice(1);
const id = (p) => { const s = fs.statSync(p); return s.dev + ":" + s.ino; };
const verdict = (src) => {
  try {
    new Sandbox({ mounts: { [src]: "/data" } });
    return "accepted";
  } catch (e) {
    return e instanceof MountRefused && /refusing mount source/.test(e.message) ? "refused" : "error: " + e.message;
  }
};
const sources = [etcAlias, path.join(etcAlias, "ssl"), rootAlias,
  path.join(rootAlias, "etc"), path.join(rootAlias, "usr"), plain];
console.log(JSON.stringify({
  realpath: fs.realpathSync(etcAlias),
  sameAsEtc: id(etcAlias) === id("/etc"),
  sameAsRoot: id(rootAlias) === id("/"),
  hasPasswd: fs.existsSync(path.join(etcAlias, "passwd")),
  verdicts: Object.fromEntries(sources.map((s) => [s, verdict(s)])),
}));
`;

describe("mount sources: bind aliases (A30)", function () {
  it("A30: a bind alias of /etc (or of /, or a path inside one) is refused by device and inode, not by path", function () {
    const T = h.tmpDir("alias-");
    const etcAlias = path.join(T, "alias");
    const rootAlias = path.join(T, "rootalias");
    const plain = path.join(T, "plain");
    for (const d of [etcAlias, rootAlias, plain]) fs.mkdirSync(d);
    const script = 'mount --bind /etc "$1" && mount --bind / "$2" && shift 2 && exec "$@"';
    const r = spawnSync("unshare", ["-m", "--propagation", "private", "sh", "-c", script, "sh",
      etcAlias, rootAlias, process.execPath, "-e", PROBE, etcAlias, rootAlias, plain],
    { encoding: "utf8", env: { ...process.env, KS_REPO: h.repo }, timeout: 20000 });
    if (r.status !== 0 && !r.stdout) {
      const why = `cannot bind-mount in a private mount namespace (unshare -m: ${
        String(r.stderr || (r.error && r.error.message) || r.status).trim()})`;
      if (process.env.KERN_SANDBOX_MUST_WORK === "1") throw new Error(why);
      return h.skip(this, why);
    }
    assert.strictEqual(r.status, 0, r.stderr);
    // Nothing leaked into this namespace: the aliases are plain empty dirs here.
    assert.deepStrictEqual(fs.readdirSync(etcAlias), []);
    assert.ok(!fs.readFileSync("/proc/self/mountinfo", "utf8").includes(T));
    const rep = JSON.parse(r.stdout);
    // Positive control: in the namespace the alias really is /etc under a
    // name no path rule knows (realpath keeps it), and a plain directory
    // next to it is accepted, so the refusals are not about the location.
    assert.strictEqual(rep.realpath, etcAlias);
    assert.strictEqual(rep.sameAsEtc, true);
    assert.strictEqual(rep.sameAsRoot, true);
    assert.strictEqual(rep.hasPasswd, true);
    assert.deepStrictEqual(rep.verdicts, {
      [etcAlias]: "refused",
      [path.join(etcAlias, "ssl")]: "refused", // inside /etc, by inode of an ancestor
      [rootAlias]: "refused", // contains /etc, /root, ...
      [path.join(rootAlias, "etc")]: "refused",
      [path.join(rootAlias, "usr")]: "accepted", // /usr itself is allowed, as A27 tests
      [plain]: "accepted",
    });
  });
});
