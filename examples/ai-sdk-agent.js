// An AI SDK 7 agent with kern-sandbox: the code-interpreter tool and the
// sandbox session (experimental_sandbox) for tools of your own.
// With AI_GATEWAY_API_KEY set it asks a real model (through the AI Gateway);
// without it a scripted model (the SDK's MockLanguageModelV3) plays the part.
// Run: node examples/ai-sdk-agent.js     (needs: npm install ai)
"use strict";

const { generateText, tool, jsonSchema, isStepCount } = require("ai");
const { createSandboxSession, codeInterpreterTool } = require("kern-sandbox/ai");

/** The model: a real one when a key is set, else a script of tool calls. */
function chooseModel() {
  if (process.env.AI_GATEWAY_API_KEY) return process.env.AI_MODEL || "openai/gpt-5-mini";
  const { MockLanguageModelV3 } = require("ai/test");
  const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
    outputTokens: { total: 1, text: 1, reasoning: 0 } };
  const call = (toolName, input) => ({ content: [{ type: "tool-call", toolCallId: `c-${toolName}`, toolName,
    input: JSON.stringify(input) }], finishReason: { unified: "tool-calls", raw: undefined }, usage, warnings: [] });
  return new MockLanguageModelV3({ doGenerate: [
    call("run_code", { code: "import statistics\nprint(statistics.mean([3, 5, 10]))" }),
    call("read_file", { path: "/workspace/notes.txt" }),
    { content: [{ type: "text", text: "The mean is 6 and the note says hello." }],
      finishReason: { unified: "stop", raw: undefined }, usage, warnings: [] },
  ] });
}

async function main() {
  // One sandbox session for the conversation: its workspace persists between calls.
  const session = createSandboxSession({ timeoutS: 20 });
  await session.writeTextFile({ path: "notes.txt", content: "hello from the workspace\n" });
  const tools = {
    run_code: codeInterpreterTool(session),
    // A tool of your own that gets the session from the SDK (experimental_sandbox).
    read_file: tool({
      description: "Read a text file of the sandbox workspace.",
      inputSchema: jsonSchema({ type: "object", properties: { path: { type: "string" } }, required: ["path"] }),
      execute: async ({ path }, { experimental_sandbox: sandbox }) => sandbox.readTextFile({ path }),
    }),
  };
  try {
    const result = await generateText({
      model: chooseModel(),
      system: session.description,
      prompt: "What is the mean of 3, 5 and 10? Then read notes.txt.",
      tools,
      experimental_sandbox: session,
      stopWhen: isStepCount(5),
    });
    for (const step of result.steps) {
      for (const r of step.toolResults) console.log(`tool ${r.toolName}:`, JSON.stringify(r.output));
    }
    console.log("answer:", result.text);
  } finally {
    await session.close();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
