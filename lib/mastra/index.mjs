// The ES module entry of kern-sandbox/mastra: the CommonJS module, by name.
import m from "./index.js";

export const { KernWorkspaceSandbox } = m;
export default m;
