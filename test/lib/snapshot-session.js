"use strict";

// The hooks every snapshot/restore suite needs: KERN_SANDBOX_SNAPSHOT=1 for
// the suite (restored after), and before each test a fresh workspace, an
// output directory and an open Sandbox on that workspace (closed after).
const { Sandbox } = require("../..");
const h = require("./harness");

/** Registers the hooks in the calling describe(); `use` gets { sbx, ws, out } before each test. */
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
    const ws = h.tmpDir("snapws-");
    const out = h.tmpDir("snapout-");
    sbx = await new Sandbox({ workspace: ws }).open();
    use({ sbx, ws, out });
  });
  afterEach(async function () {
    await sbx.close();
  });
}

module.exports = { snapshotSession };
