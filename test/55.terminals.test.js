"use strict";

// Issue 33, item 3: terminals (spawn with pty) against the kern test
// double, which runs the real ks-init: the cases of test/lib/terminal-cases
// (SECURITY-CASES F3 among them).
const { Sandbox } = require("..");
const { terminalCases } = require("./lib/terminal-cases");

describe("terminals: spawn(argv, { pty }) (issue 33)", function () {
  this.timeout(60000);
  let sbx;
  before(async function () {
    sbx = await new Sandbox({ prewarm: 0 }).open();
  });
  after(async function () {
    if (sbx) await sbx.close();
  });

  terminalCases(() => sbx);
});
