"use strict";

// Issue 32: the protocol constants have one definition each, the C headers
// (csrc/init/protocol.h, csrc/core/box/interp.h). JS takes them from the
// addon (PROTOCOL, csrc/napi/protocol.c); the in-box Python cannot include
// a header, so its copies are checked here against the headers, as is the
// addon's table. A constant changed on one side only fails this test.
const assert = require("assert");
const fs = require("fs");
const path = require("path");
const h = require("./lib/harness");
const binding = require("../lib/binding");

const read = (rel) => fs.readFileSync(path.join(h.repo, rel), "utf8");

/** NAME -> value of every `KS_X = N` enum member and `#define KS_X N[u]` in a header. */
function cConstants(rel) {
  const src = read(rel);
  const out = new Map();
  for (const m of src.matchAll(/\b(KS_[A-Z0-9_]+)\s*=\s*(0x[0-9a-fA-F]+|\d+)u?\b/g)) out.set(m[1], Number(m[2]));
  for (const m of src.matchAll(/^#define\s+(KS_[A-Z0-9_]+)\s+(0x[0-9a-fA-F]+|\d+)u?\b/gm)) out.set(m[1], Number(m[2]));
  for (const m of src.matchAll(/^#define\s+(KS_[A-Z0-9_]+)\s+"([^"]*)"/gm)) out.set(m[1], m[2]);
  return out;
}

/** NAME -> value of module-level `A, B = 1, 2` and `A = 1` integer assignments in Python. */
function pyConstants(rel) {
  const out = new Map();
  for (const line of read(rel).split("\n")) {
    const m = line.match(/^([A-Z_][A-Z0-9_]*(?:\s*,\s*[A-Z_][A-Z0-9_]*)*)\s*=\s*((?:0x[0-9a-fA-F]+|\d+)(?:\s*,\s*(?:0x[0-9a-fA-F]+|\d+))*)\s*(?:#.*)?$/);
    if (m === null) continue;
    const names = m[1].split(",").map((x) => x.trim());
    const values = m[2].split(",").map((x) => Number(x.trim()));
    if (names.length === values.length) names.forEach((n, i) => out.set(n, values[i]));
  }
  return out;
}

describe("protocol constants have one definition (issue 32)", function () {
  const ip = cConstants("csrc/core/box/interp.h");
  const init = cConstants("csrc/init/protocol.h");

  it("the headers parse (positive control)", function () {
    assert.strictEqual(ip.get("KS_IP_RUN"), 1);
    assert.strictEqual(ip.get("KS_IP_MAGIC"), 0x3149534b);
    assert.strictEqual(init.get("KS_INIT_BOX_DIR"), "/.ks");
  });

  it("the addon's PROTOCOL is the headers'", function () {
    const P = binding.PROTOCOL;
    assert.deepStrictEqual({ ...P.IP_END }, { OK: ip.get("KS_IP_OK"), EXCEPTION: ip.get("KS_IP_EXCEPTION"),
      EXIT: ip.get("KS_IP_EXIT"), INTERRUPTED: ip.get("KS_IP_INTERRUPTED") });
    assert.deepStrictEqual({ ...P.IP_MODE }, { SHARED: ip.get("KS_IP_SHARED"), FORK: ip.get("KS_IP_FORK") });
    assert.deepStrictEqual({ ...P.INIT_END }, { EXITED: init.get("KS_INIT_EXITED"),
      SIGNALED: init.get("KS_INIT_SIGNALED") });
    assert.strictEqual(P.INIT_BOX_DIR, init.get("KS_INIT_BOX_DIR"));
    assert.strictEqual(P.INIT_BOX_PATH, init.get("KS_INIT_BOX_PATH"));
    assert.ok(Object.isFrozen(P) && Object.isFrozen(P.IP_END));
  });

  it("the in-box Python's copies are the headers'", function () {
    const boot = pyConstants("lib/inbox/python-boot.py");
    const kernel = pyConstants("lib/inbox/python-kernel.py");
    const want = [
      [boot, "_KS_INTERP_FD", init, "KS_INIT_INTERP_FD"],
      [boot, "_KS_MAGIC", ip, "KS_IP_MAGIC"],
      [boot, "_KS_RECORD_MAX", ip, "KS_IP_RECORD_MAX"],
      [boot, "_KS_MORE", ip, "KS_IP_MORE"],
      [boot, "_KS_RESULTS", ip, "KS_IP_RESULTS"],
      [boot, "_KS_RESULTS_DROPPED", ip, "KS_IP_RESULTS_DROPPED"],
      [boot, "_KS_FINAL", ip, "KS_IP_DONE_FINAL"],
      [boot, "_KS_TAKEN", ip, "KS_IP_TAKEN"],
      [boot, "_KS_RESULT", ip, "KS_IP_RESULT"],
      [boot, "_KS_DONE", ip, "KS_IP_DONE"],
      [kernel, "RECORD_MAX", ip, "KS_IP_RECORD_MAX"],
      [kernel, "CELL", ip, "KS_IP_CELL"],
      [kernel, "ROLLBACK", ip, "KS_IP_ROLLBACK"],
      [kernel, "DONE", ip, "KS_IP_DONE"],
      [kernel, "READY", ip, "KS_IP_READY"],
      [kernel, "FORKED", ip, "KS_IP_FORKED"],
      [kernel, "ENDED", ip, "KS_IP_ENDED"],
      [kernel, "SHARED", ip, "KS_IP_SHARED"],
      [kernel, "FORK", ip, "KS_IP_FORK"],
      [kernel, "RESULTS", ip, "KS_IP_RESULTS"],
      [kernel, "OK", ip, "KS_IP_OK"],
      [kernel, "EXCEPTION", ip, "KS_IP_EXCEPTION"],
      [kernel, "EXIT", ip, "KS_IP_EXIT"],
      [kernel, "INTERRUPTED", ip, "KS_IP_INTERRUPTED"],
      [kernel, "RESULTS_DROPPED", ip, "KS_IP_RESULTS_DROPPED"],
    ];
    const bad = [];
    for (const [py, pyName, c, cName] of want) {
      assert.ok(c.has(cName), `${cName} is not in its header`);
      if (py.get(pyName) !== c.get(cName)) bad.push(`${pyName} = ${py.get(pyName)}, ${cName} = ${c.get(cName)}`);
    }
    assert.deepStrictEqual(bad, []);
  });
});
