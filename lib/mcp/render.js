"use strict";

// An ExecutionResult (of run_code, run_command, a stopped process) as an MCP
// tool result a model can act on: a status line that says what happened and
// what to do, stdout and stderr each within its cap (cut in the middle, the
// whole stream saved as a workspace file), and the rich results: images as
// image content, the rest as text. A fault or a non-zero exit is isError.
const { Reply, cutMiddle, forModel, formatCount: n } = require("./bound");

function faultLine(fault, timeoutS) {
  const msg = forModel(fault.message || "");
  switch (fault.type) {
    case "timeout":
      return `error: timeout: the code ran past its time limit${timeoutS ? ` of ${timeoutS} s` : ""} and was ` +
        "killed. Make it faster or do less per call, or pass a larger timeout_s.";
    case "killed":
      return fault.oom ? `error: out of memory: the code was killed at the box's memory cap (${msg}). Use less memory ` +
        "(smaller data, chunks, del what you no longer need)."
        : `error: killed: the code was killed (SIGKILL): ${msg}`;
    case "escape_blocked":
      return "error: blocked: the code made a system call the sandbox forbids and was killed (SIGSYS). " +
        "Do it another way.";
    case "startup_failed":
      return `error: the box could not start: ${msg}. This is the server's configuration (image, kern), not the code.`;
    default:
      return `error: ${fault.type}: ${msg}`;
  }
}

function statusLine(r, timeoutS) {
  const ms = ` (${Math.round(r.durationMs)} ms)`;
  if (r.fault) return faultLine(r.fault, timeoutS);
  if (r.exitCode !== 0) return `error: exit code ${r.exitCode}${ms}: it failed; see stderr below.`;
  return `exit code 0${ms}`;
}

/** One stream as a block of text within its cap; the whole stream is saved
 * (save(name, text) resolves to its workspace path, or null) when cut. */
async function streamBlock(reply, name, raw, save) {
  const clean = forModel(raw);
  const { head, tail, cut } = cutMiddle(clean, reply.room(reply.limits.streamChars));
  if (cut === 0) return `--- ${name} ---\n${head}`;
  const saved = await save(name, raw);
  const where = saved === null ? "the whole output could not be saved"
    : `the whole ${name} is in the workspace file ${saved} (read_file it with offset to page through; it is ` +
      "replaced after 16 more saved outputs)";
  return `--- ${name} ---\n${head}\n[... ${n(cut)} characters of ${name} cut here (${n(clean.length)} in all); ` +
    `${where} ...]\n${tail}`;
}

/** Adds a call's rich results (Result[]) to the reply in order. */
function addResults(reply, results) {
  let left = 0;
  for (let i = 0; i < results.length; i++) {
    const x = results[i];
    if (x.png) reply.image(x.png, "image/png", `result ${i + 1} (PNG)`);
    else if (x.jpeg) reply.image(x.jpeg, "image/jpeg", `result ${i + 1} (JPEG)`);
    else {
      const text = x.markdown ?? x.text ?? x.json ?? "";
      if (reply.room() < 100) {
        left = results.length - i;
        break;
      }
      const { head, tail, cut } = cutMiddle(forModel(text), reply.room(reply.limits.streamChars));
      reply.text(`--- result ${i + 1} ---\n${cut === 0 ? head : `${head}\n[... ${n(cut)} characters cut ...]\n${tail}`}`);
    }
  }
  if (left > 0) reply.text(`[... ${n(left)} more result(s) cut: the reply's cap is ${n(reply.limits.replyChars)} characters]`);
}

/**
 * The tool result of an ExecutionResult. ctx: { limits, save, timeoutS,
 * maxOutputBytes }.
 */
async function renderRun(r, ctx) {
  const reply = new Reply(ctx.limits);
  reply.isError = !r.success;
  const parts = [statusLine(r, ctx.timeoutS)];
  if (r.stdout) parts.push(await streamBlock(reply, "stdout", r.stdout, ctx.save));
  if (r.stderr) parts.push(await streamBlock(reply, "stderr", r.stderr, ctx.save));
  if (r.truncated)
    parts.push(`[the sandbox kept only the first ${n(ctx.maxOutputBytes)} bytes of each stream; the rest was discarded]`);
  reply.text(parts.join("\n"));
  addResults(reply, r.results || []);
  return reply.finish();
}

/** A tool result that is an error with a message a model can act on. */
function errorResult(message) {
  return { content: [{ type: "text", text: `error: ${forModel(message)}` }], isError: true };
}

/** A tool result of plain text, within the reply's cap. */
function textResult(limits, text) {
  const reply = new Reply(limits);
  reply.text(text);
  return reply.finish();
}

module.exports = { renderRun, errorResult, textResult };
