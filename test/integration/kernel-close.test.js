"use strict";

// Issue 31 with a real kern: each of test/48's flows 50 times (one child of
// 50 rounds), every round reaching its last line. SKIPs without a real kern.
const { realKern, why } = require("../lib/realkern");
const h = require("../lib/harness");
const { assertFlow, FLOWS } = require("../lib/kernel-close");

describe("integration: every promise settles before Node may exit, with a real kern (issue 31)",
  function () {
    this.timeout(900000);
    beforeEach(function () {
      if (why !== null) h.skipHost(this, why);
    });
    for (const flow of FLOWS) {
      it(`${flow}: 50 of 50 rounds reach their last line`, async function () {
        await assertFlow(flow, 50, { KERN_BIN: realKern });
      });
    }
  });
