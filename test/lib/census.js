"use strict";

// What a restore left behind, and the check every refused restore shares.
const assert = require("assert");
const crypto = require("crypto");
const fs = require("fs");
const path = require("path");
const { SandboxError } = require("../..");

/** Every entry under dir (dotfiles, staging dirs and special files too):
 * type, mode, owner, link count and content, so "exactly as it was" means
 * exactly (a hardlink made to a file shows in its link count). */
function census(dir) {
  const out = {};
  const walk = (d, rel) => {
    for (const name of fs.readdirSync(d).sort()) {
      const p = path.join(d, name);
      const r = rel ? `${rel}/${name}` : name;
      const st = fs.lstatSync(p);
      const kind = st.isDirectory() ? "d" : st.isFile() ? "f" : st.isSymbolicLink() ? "l" : "s";
      out[r] = `${kind} ${(st.mode & 0o7777).toString(8)} ${st.uid}:${st.gid} ` +
        (st.isFile() ? `${st.nlink} ${crypto.createHash("sha1").update(fs.readFileSync(p)).digest("hex")}` : "");
      if (st.isDirectory()) walk(p, r);
    }
  };
  walk(dir, "");
  return out;
}

/** A restore that must be refused with a SandboxError matching re, the
 * workspace left exactly as it was; returns the error. */
function refusedIntact(sbx, ws, arc, re) {
  const before = census(ws);
  let err = null;
  assert.throws(() => sbx.restore(arc), (e) => {
    err = e;
    assert.ok(e instanceof SandboxError, String(e));
    assert.match(e.message, re);
    return true;
  });
  assert.deepStrictEqual(census(ws), before, "the workspace is exactly as it was");
  return err;
}

module.exports = { census, refusedIntact };
