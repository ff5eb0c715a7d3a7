"use strict";

// The hooks every snapshot/restore suite needs: KERN_SANDBOX_SNAPSHOT=1 for
// the suite (restored after), and before each test a fresh workspace, an
// output directory and an open Sandbox on that workspace (closed after).
// The workspace is the only entry of its own parent directory (outer), so a
// write that escapes it by one level lands where a test can census it.
const fs = require("fs");
const path = require("path");
const { Sandbox } = require("../..");
const h = require("./harness");

/** Registers the hooks in the calling describe(); `use` gets { sbx, ws, out, outer } before each test. */
function snapshotSession(use) {
  let saved;
  let sbx = null;
  before(function () {
    saved = process.env.KERN_SANDBOX_SNAPSHOT;
    process.env.KERN_SANDBOX_SNAPSHOT = "1";
  });
  after(function () {
    if (saved === undefined) delete process.env.KERN_SANDBOX_SNAPSHOT;
    else process.env.KERN_SANDBOX_SNAPSHOT = saved;
  });
  beforeEach(async function () {
    const outer = h.tmpDir("snapouter-");
    const ws = path.join(outer, "ws");
    fs.mkdirSync(ws);
    const out = h.tmpDir("snapout-");
    // capDrop []: some boxes make devices (mknod needs CAP_MKNOD, which
    // every box drops by default since issue 13).
    sbx = await new Sandbox({ workspace: ws, capDrop: [] }).open();
    use({ sbx, ws, out, outer });
  });
  afterEach(async function () {
    await sbx.close();
  });
}

module.exports = { snapshotSession };
