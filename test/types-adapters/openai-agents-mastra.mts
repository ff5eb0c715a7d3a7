// kern-sandbox/openai-agents and kern-sandbox/mastra against the frameworks'
// own declarations (tsc --strict).
import { run, Agent, type FunctionTool } from "@openai/agents-core";
import { SandboxAgent, Manifest, type SandboxClient, type SandboxSession } from "@openai/agents-core/sandbox";
import { Workspace, type WorkspaceSandbox } from "@mastra/core/workspace";
import { Sandbox } from "kern-sandbox";
import { KernSandboxClient, codeInterpreterTool } from "kern-sandbox/openai-agents";
import { KernWorkspaceSandbox } from "kern-sandbox/mastra";

async function agents(): Promise<void> {
  const client: SandboxClient<any, any> = new KernSandboxClient({ exposedPorts: [8000], memoryMb: 1024 });
  const shared = new KernSandboxClient(new Sandbox());
  const session: SandboxSession = await shared.create({ manifest: new Manifest() });
  const r = await session.exec?.({ cmd: "ls" });
  const exit: number | null | undefined = r?.exitCode;
  const tool: FunctionTool = codeInterpreterTool();
  const agent = new SandboxAgent({ name: "a", instructions: "x" });
  await run(agent, "hi", { sandbox: { client } });
  await run(new Agent({ name: "b", tools: [tool] }), "hi");
  void exit;
}

async function mastra(): Promise<void> {
  const sandbox: WorkspaceSandbox = new KernWorkspaceSandbox({ id: "x", timeoutS: 10 });
  const fromSandbox: WorkspaceSandbox = new KernWorkspaceSandbox(new Sandbox());
  const workspace = new Workspace({ sandbox });
  const res = await sandbox.executeCommand?.("ls", [], { timeout: 1000 });
  const ok: boolean | undefined = res?.success;
  await sandbox.snapshot();
  void [workspace, fromSandbox, ok];
}

void [agents, mastra];
