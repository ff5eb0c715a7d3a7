"use strict";

// kern-sandbox/mastra: the Mastra adapter (README, "Mastra"). It needs
// nothing from @mastra/core at run time (the interface is plain methods).
const { KernWorkspaceSandbox } = require("./sandbox");

module.exports = { KernWorkspaceSandbox };
