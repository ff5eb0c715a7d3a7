// The ES module entry of kern-sandbox/ai: the CommonJS module, by name.
import m from "./index.js";

export const { createSandboxSession, createSandboxProvider, codeInterpreterTool } = m;
export default m;
