// kern-sandbox/ai against the AI SDK's own declarations (tsc --strict):
// the session is an Experimental_SandboxSession of the provider-utils that
// `ai` 7 uses (every member) and of the narrower one @ai-sdk/harness pins;
// the provider is a HarnessV1SandboxProvider; the tool goes into generateText.
import { generateText, type Experimental_SandboxSession as NewestSession, type ToolSet } from "ai";
import type { Experimental_SandboxSession as HarnessPinnedSession } from "@ai-sdk/provider-utils";
import type { HarnessV1SandboxProvider, HarnessV1NetworkSandboxSession } from "@ai-sdk/harness";
import { MockLanguageModelV3 } from "ai/test";
import { Sandbox } from "kern-sandbox";
import { createSandboxSession, createSandboxProvider, codeInterpreterTool } from "kern-sandbox/ai";

const session = createSandboxSession();
const newest: NewestSession = session;
const pinned: HarnessPinnedSession = session;
const fromOptions: NewestSession = createSandboxSession({ image: "python:3.12-slim", timeoutS: 10 });
const fromSandbox: NewestSession = createSandboxSession(new Sandbox());

const provider: HarnessV1SandboxProvider = createSandboxProvider({ ports: [8000], memoryMb: 1024 });
async function harness(): Promise<void> {
  const s: HarnessV1NetworkSandboxSession = await provider.createSession({ sessionId: "x" });
  const r: HarnessPinnedSession = s.restricted();
  await s.setNetworkPolicy?.({ mode: "custom", allowedHosts: ["pypi.org"] });
  const { url } = await s.getPortEndpoint({ port: 8000 });
  void r;
  void url;
  await provider.resumeSession?.({ sessionId: "x" });
}

async function spawnTyped(): Promise<void> {
  const p = await session.spawn({ command: "cat", stdin: true });
  const w: WritableStream<Uint8Array> = p.stdin;
  const q = await session.spawn({ command: "ls" });
  // @ts-expect-error without stdin: true there is no stdin
  void q.stdin;
  void w;
  const r = await session.run({ command: "ls", maxOutputLength: 100 });
  const n: number | undefined = r.stdoutLength;
  void n;
}

async function withTool(): Promise<void> {
  const tool = codeInterpreterTool(session);
  const tools: ToolSet = { code: tool };
  const model = new MockLanguageModelV3();
  await generateText({ model, tools, prompt: "hi", experimental_sandbox: session });
  await tool.close();
  await session.close();
}

void [newest, pinned, fromOptions, fromSandbox, harness, spawnTyped, withTool];
