"use strict";

// Global hooks: every test talks to the kern test double unless a test says
// otherwise, and the run ends with no process of ours left behind.
const assert = require("assert");
const h = require("./lib/harness");

process.env.KERN_BIN = h.fakeKern();

exports.mochaHooks = {
  async afterAll() {
    const binding = require("../lib/binding");
    const live = await h.waitFor(() => binding.liveBoxes() === 0, 5000);
    assert.ok(live, `boxes still live after the suite: ${binding.liveBoxes()}`);
    // A `kern stop` helper may outlive its box by up to its own deadline.
    const zombies = await h.waitFor(() => h.children().length === 0, 12000);
    h.cleanup();
    assert.ok(zombies, `child processes left after the suite: ${JSON.stringify(h.children())}`);
  },
};
