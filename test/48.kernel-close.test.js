"use strict";

// Issue 31: every promise the package returns settles, and while one is
// pending something holds the event loop. A kernel's box (like a prewarmed
// one) holds nothing on the loop while it idles; Kernel.close() kills it and
// waits for its end, and the loop must be held meanwhile (lib/hold.js), or
// Node exits with status 0 in the middle of the program. The exit status
// cannot tell, so each flow runs 200 rounds, in child processes of 50
// rounds each, and every round must print its last line.
const h = require("./lib/harness");
const { assertFlow, FLOWS } = require("./lib/kernel-close");

// Under a sanitizer (npm run test:asan / test:tsan, whose children load the
// sanitized addon) 50 rounds a flow: the plain run has done the 200.
const ROUNDS = h.underSanitizer ? 50 : 200;

describe("every promise settles before Node may exit (issue 31)", function () {
  this.timeout(h.underSanitizer ? 600000 : 120000);
  for (const flow of FLOWS) {
    it(`${flow}: ${ROUNDS} of ${ROUNDS} rounds reach their last line`, async function () {
      await assertFlow(flow, ROUNDS);
    });
  }
});
