"use strict";

// codeInterpreterTool(sandbox): an OpenAI Agents function tool that runs
// code in a kern box. Not the SDK's own `codeInterpreterTool`, which is
// OpenAI's hosted interpreter (code runs on OpenAI's servers).
const { requirePeer } = require("../peer");
const { SandboxRef } = require("../adapter/sandbox-ref");
const { DESCRIPTION, LANGUAGES, runForModel } = require("../adapter/interpreter");

/** sandbox: nothing, Sandbox options, or an open Sandbox; tool.close()
 * closes a Sandbox made from options. */
function codeInterpreterTool(sandbox) {
  const { tool } = requirePeer("@openai/agents-core", { what: "kern-sandbox/openai-agents codeInterpreterTool()" });
  const ref = new SandboxRef(sandbox, { what: "codeInterpreterTool()" });
  const t = tool({
    name: "run_code",
    description: DESCRIPTION,
    // Strict mode: every property required; language may be null (python).
    strict: true,
    parameters: {
      type: "object",
      properties: {
        code: { type: "string", description: "The code to run." },
        language: { type: ["string", "null"], enum: [...LANGUAGES, null], description: "python (default), bash, or node." },
      },
      required: ["code", "language"],
      additionalProperties: false,
    },
    execute: async (input, _ctx, details) => {
      const signal = details && details.signal;
      const args = typeof input === "string" ? JSON.parse(input) : input;
      return JSON.stringify(await runForModel(await ref.open(signal), args, signal));
    },
  });
  Object.defineProperty(t, "close", { value: () => ref.close(), enumerable: false });
  return t;
}

module.exports = { codeInterpreterTool };
