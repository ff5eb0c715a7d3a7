"use strict";

// Issue 15, part 3: the examples against a real kern with the images of
// ../shared/tools/make-kern-images.sh (SKIP without them).
const assert = require("assert");
const h = require("../lib/harness");
const { realKern, why } = require("../lib/realkern");
const { EXPECT, runExample } = require("../lib/examples");

describe("integration: the examples with a real kern (issue 15)", function () {
  this.timeout(120000);
  beforeEach(function () {
    if (why !== null) h.skipHost(this, why);
  });

  for (const [name, patterns] of Object.entries(EXPECT)) {
    it(`${name} runs and prints what it promises`, function () {
      const r = runExample(name, { KERN_BIN: realKern });
      assert.strictEqual(r.status, 0, `${name}: exit ${r.status}\n${r.stdout}\n${r.stderr}`);
      for (const re of patterns) assert.match(r.stdout, re, name);
    });
  }
});
