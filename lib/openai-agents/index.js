"use strict";

// kern-sandbox/openai-agents: the OpenAI Agents JS adapter (README, "OpenAI
// Agents"). @openai/agents-core is an optional peer, required when a client
// or a tool is made.
const { KernSandboxClient } = require("./client");
const { KernAgentsSession } = require("./session");
const { codeInterpreterTool } = require("./tool");

module.exports = { KernSandboxClient, KernAgentsSession, codeInterpreterTool };
