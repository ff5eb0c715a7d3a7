"use strict";

// codeInterpreterTool(sandbox): an AI SDK `tool()` that runs code in a box.
const { requirePeer } = require("../peer");
const { SandboxRef } = require("../adapter/sandbox-ref");
const { DESCRIPTION, INPUT_SCHEMA, runForModel } = require("../adapter/interpreter");

/** sandbox: nothing, Sandbox options, an open Sandbox, or a session made by
 * createSandboxSession() (its Sandbox is used). The tool's own Sandbox (made
 * from options) is closed by tool.close(). */
function codeInterpreterTool(sandbox) {
  const { tool, jsonSchema } = requirePeer("ai", { install: "ai", what: "kern-sandbox/ai codeInterpreterTool()" });
  const ref = new SandboxRef(sandbox && sandbox.sandbox && typeof sandbox.run === "function" ? sandbox.sandbox : sandbox,
    { what: "codeInterpreterTool()" });
  const t = tool({
    description: DESCRIPTION,
    inputSchema: jsonSchema(INPUT_SCHEMA),
    execute: async (input, { abortSignal } = {}) => runForModel(await ref.open(abortSignal), input, abortSignal),
  });
  Object.defineProperty(t, "close", { value: () => ref.close(), enumerable: false });
  return t;
}

module.exports = { codeInterpreterTool };
