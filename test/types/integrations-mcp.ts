// Type-checks kern-sandbox/mcp and kern-sandbox/langchain as a user would write them.
import { Sandbox } from "kern-sandbox";
import { createMcpServer, DEFAULT_LIMITS, TOOL_NAMES, LineTransport, serveStdio } from "kern-sandbox/mcp";
import { codeInterpreterTool } from "kern-sandbox/langchain";

async function main(): Promise<void> {
  const server = createMcpServer({ image: "python:3.12-slim", kernel: true, limits: { replyChars: 20000 } });
  await server.connect(new LineTransport());
  const sbx: Sandbox = await server.sandbox();
  const n: number = DEFAULT_LIMITS.streamChars + (await sbx.listFiles()).length;
  const first: "run_code" = TOOL_NAMES[0];
  await server.close();
  void serveStdio({ prewarm: 0 });

  const tool = codeInterpreterTool({ timeoutS: 5 });
  const out = await tool.invoke({ code: "print(1)" });
  const s: Sandbox = tool.sandbox;
  await tool.close();
  const given = codeInterpreterTool(await new Sandbox().open(), { name: "python" });
  void [n, first, out, s, given];
}
void main;
