"use strict";

// kern-sandbox/langchain: codeInterpreterTool(sandbox), a LangChain.js tool
// (`tool()` of @langchain/core/tools, an optional peer dependency) that runs
// a model's code in a kern box. Its content is the text a model reads,
// bounded as the MCP server's replies are (lib/mcp/bound.js); its artifact
// carries the whole ExecutionResult and the images, for the application.
const { requirePeer } = require("../peer");
const { Sandbox } = require("../sandbox");
const { renderRun } = require("../mcp/render");
const { limitsOf } = require("../mcp/bound");

const PEER = { pkg: "@langchain/core", what: "kern-sandbox/langchain" };
const OUTPUT_DIR = ".tool-output";

const SCHEMA = {
  type: "object",
  properties: {
    code: { type: "string", description: "The code to run." },
    language: { type: "string", enum: ["python", "bash", "node"], description: "The language (default python)." },
  },
  required: ["code"],
  additionalProperties: false,
};

const DESCRIPTION = "Run Python (default), bash or node code in a local, isolated kern sandbox and return its " +
  "stdout, stderr and rich results (the value of a last bare expression, display() output; images are " +
  "attached). Files in /workspace persist across calls; memory does not. A non-zero exit or a timeout is " +
  "reported with the output, starting with \"error:\".";

/**
 * A code-interpreter tool. sandbox: an open Sandbox (the caller closes it),
 * or Sandbox options / nothing: then the tool makes its own Sandbox, opens it
 * on first use, and tool.close() closes it. opts: { name, description,
 * limits } (limits as createMcpServer's).
 */
function codeInterpreterTool(sandbox, opts = {}) {
  const { tool } = requirePeer("@langchain/core/tools", PEER);
  const own = !(sandbox instanceof Sandbox);
  const sbx = own ? new Sandbox(sandbox ?? {}) : sandbox;
  const limits = limitsOf(opts.limits);
  let opening = null;
  const ready = () => {
    if (!own) return Promise.resolve(sbx);
    opening ??= sbx.open().catch((e) => {
      opening = null;
      throw e;
    });
    return opening;
  };
  let seq = 0;
  const save = (n) => async (stream, text) => {
    const rel = `${OUTPUT_DIR}/${n}-${stream}.txt`;
    try {
      await sbx.writeFile(rel, text);
      return `/workspace/${rel}`;
    } catch {
      return null;
    }
  };
  const t = tool(async (input, config) => {
    await ready();
    const signal = config && config.signal ? config.signal : undefined;
    const r = await sbx.runCode(input.code, { language: input.language ?? "python", ...(signal ? { signal } : {}) });
    const reply = await renderRun(r, { limits, save: save(seq++ % 16), timeoutS: sbx.timeoutS, maxOutputBytes: sbx.maxOutputBytes });
    const text = reply.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");
    const images = reply.content.filter((c) => c.type === "image").map(({ mimeType, data }) => ({ mimeType, data }));
    return [text, { result: r, images, isError: reply.isError === true }];
  }, { name: opts.name ?? "code_interpreter", description: opts.description ?? DESCRIPTION, schema: SCHEMA,
    responseFormat: "content_and_artifact" });
  Object.defineProperty(t, "close", { value: async () => {
    if (own) await sbx.close();
  } });
  Object.defineProperty(t, "sandbox", { value: sbx });
  return t;
}

module.exports = { codeInterpreterTool };
