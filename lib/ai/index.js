"use strict";

// kern-sandbox/ai: the AI SDK 7 adapter (README, "AI SDK"). `ai` and
// `@ai-sdk/harness` are optional peers: the session and the provider need
// neither at run time; codeInterpreterTool() requires `ai` when called.
const { createSandboxSession } = require("./session");
const { createSandboxProvider } = require("./harness");
const { codeInterpreterTool } = require("./tool");

module.exports = { createSandboxSession, createSandboxProvider, codeInterpreterTool };
