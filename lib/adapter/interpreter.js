"use strict";

// The code-interpreter tool every adapter offers a model: run Python, shell
// or Node code in a fresh box on the session's workspace, with a reply
// bounded for a model. Only the wrapping differs per framework.
const { sandboxError } = require("../errors");

const LANGUAGES = ["python", "bash", "node"];
// Per stream: what a model gets of stdout and of stderr (the rest is cut
// and the cut is marked; the box's files stay in the workspace).
const STREAM_MAX = 16 * 1024;

const DESCRIPTION = "Run code in an isolated Linux sandbox (a fresh kern box per call, no network unless " +
  "configured). language: python (default), bash, or node. The working directory is /workspace, whose files " +
  "persist between calls; variables and processes do not. Print what you need to see. Returns stdout, stderr, " +
  "the exit code, an error when the sandbox stopped the code (timeout, memory), and the files the code " +
  "created or changed.";

/** JSON Schema of the tool's input. */
const INPUT_SCHEMA = Object.freeze({
  type: "object",
  properties: {
    code: { type: "string", description: "The code to run." },
    language: { type: "string", enum: LANGUAGES, description: "python (default), bash, or node." },
  },
  required: ["code"],
  additionalProperties: false,
});

/** s cut to max UTF-16 units, the cut marked with how much went. */
function cut(s, max = STREAM_MAX) {
  if (s.length <= max) return s;
  return `${s.slice(0, max)}\n[... ${s.length - max} more characters cut]`;
}

/** Runs one input on sbx; a reply for a model (a plain object). */
async function runForModel(sbx, input, signal) {
  const code = input && input.code;
  const language = (input && input.language) || "python";
  if (typeof code !== "string") throw sandboxError("ERR_SANDBOX_INVALID_ARG", "code must be a string");
  if (!LANGUAGES.includes(language))
    throw sandboxError("ERR_SANDBOX_INVALID_ARG", `language must be one of ${LANGUAGES.join(", ")}`);
  const r = await sbx.runCode(code, signal ? { language, signal } : { language });
  const reply = { exitCode: r.exitCode, stdout: cut(r.stdout), stderr: cut(r.stderr) };
  if (r.fault) reply.error = `${r.fault.type}: ${r.fault.message}`;
  const texts = (r.results || []).map((x) => x && x.text).filter((t) => typeof t === "string");
  if (texts.length > 0) reply.results = texts.slice(0, 20).map((t) => cut(t, 4096));
  if (r.files && r.files.length > 0)
    reply.files = r.files.slice(0, 50).map((f) => `${typeof f.path === "string" ? f.path : "?"} (${f.change}, ${f.size} bytes)`);
  return reply;
}

module.exports = { DESCRIPTION, INPUT_SCHEMA, LANGUAGES, runForModel, cut };
