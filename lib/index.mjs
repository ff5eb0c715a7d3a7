// The ES module entry (package.json "exports" -> "import"): the CommonJS
// package, re-exported by name, so `import { runCode } from "kern-sandbox"`
// works in every Node >= 18 without relying on cjs-module-lexer.
import kern from "./index.js";

export const {
  Sandbox,
  withSandbox,
  runCode,
  ExecutionResult,
  SandboxError,
  MountRefused,
  AbortError,
  isKilledFault,
  Result,
  Kernel,
  BoxProcess,
  doctor,
  version,
} = kern;
export default kern;
