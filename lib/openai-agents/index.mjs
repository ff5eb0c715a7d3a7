// The ES module entry of kern-sandbox/openai-agents: the CommonJS module, by name.
import m from "./index.js";

export const { KernSandboxClient, KernAgentsSession, codeInterpreterTool } = m;
export default m;
