// An OpenAI Agents JS sandbox agent whose sandbox is a kern box: the SDK's
// own shell and filesystem tools (exec_command, apply_patch, view_image)
// run through KernSandboxClient.
// With OPENAI_API_KEY set (and `npm install @openai/agents`) it asks a real
// model; without it a scripted model plays the part.
// Run: node examples/openai-agents-sandbox.js     (needs: npm install @openai/agents-core)
"use strict";

const core = require("@openai/agents-core");
const { SandboxAgent, Manifest, filesystem, shell } = require("@openai/agents-core/sandbox");
const { KernSandboxClient } = require("kern-sandbox/openai-agents");

/** A Model that answers each turn from a script (no API key needed). */
function scriptedModel() {
  const turns = [
    [{ type: "apply_patch_call", callId: "p1", status: "completed",
      operation: { type: "create_file", path: "fib.py", diff: "+a, b = 0, 1\n+for _ in range(10):\n+    a, b = b, a + b\n+print(a)\n" } }],
    [{ type: "function_call", callId: "e1", name: "exec_command", status: "completed",
      arguments: JSON.stringify({ cmd: "python3 fib.py && cat README.md" }) }],
    [{ type: "message", role: "assistant", status: "completed",
      content: [{ type: "output_text", text: "fib(10) is 55." }] }],
  ];
  let i = 0;
  return {
    async getResponse() {
      return { usage: new core.Usage(), output: turns[Math.min(i++, turns.length - 1)] };
    },
    getStreamedResponse() {
      throw new Error("not streamed");
    },
  };
}

function chooseModel() {
  if (!process.env.OPENAI_API_KEY) return scriptedModel();
  require("@openai/agents"); // registers the OpenAI model provider
  return process.env.OPENAI_MODEL || "gpt-5-mini";
}

async function main() {
  core.setTracingDisabled(true);
  const agent = new SandboxAgent({
    name: "coder",
    instructions: "Write fib.py that prints the 10th Fibonacci number, run it, and answer.",
    model: chooseModel(),
    capabilities: [filesystem(), shell()],
    defaultManifest: new Manifest({ entries: { "README.md": { type: "file", content: "a kern box\n" } } }),
  });
  const client = new KernSandboxClient({ timeoutS: 20 });
  const result = await core.run(agent, "go", { sandbox: { client }, maxTurns: 6 });
  for (const item of result.newItems) {
    if (item.type === "tool_call_output_item" && item.output)
      console.log("tool output:", String(item.output).trim().split("\n").slice(2).join(" | "));
  }
  console.log("answer:", result.finalOutput);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
