"use strict";

// Helpers of the adapter tests (test/96-98): scripted models and small checks.

/** An AI SDK LanguageModelV3 generate result: the tool calls given
 * ([toolName, input] pairs), or a final text. */
function v3Step({ calls = [], text = null }) {
  const usage = {
    inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
    outputTokens: { total: 1, text: 1, reasoning: 0 },
  };
  const content = calls.map(([toolName, input], i) => ({
    type: "tool-call", toolCallId: `call-${toolName}-${i}-${Math.random().toString(36).slice(2, 8)}`,
    toolName, input: JSON.stringify(input),
  }));
  if (text !== null) content.push({ type: "text", text });
  return {
    content,
    finishReason: { unified: calls.length > 0 ? "tool-calls" : "stop", raw: undefined },
    usage,
    warnings: [],
  };
}

/** Whether a required module can be loaded (an installed devDependency). */
function canLoad(id) {
  try {
    require.resolve(id);
    return true;
  } catch {
    return false;
  }
}

/** A web ReadableStream of the given strings. */
function streamOfStrings(parts) {
  return new ReadableStream({
    start(c) {
      for (const p of parts) c.enqueue(new TextEncoder().encode(p));
      c.close();
    },
  });
}

/** All bytes of a web ReadableStream as a string. */
async function textOf(stream) {
  return new Response(stream).text();
}

module.exports = { v3Step, canLoad, streamOfStrings, textOf };
