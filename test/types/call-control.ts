// Compile-only exercise of the additions to 0.1.1 (issue 13: call control). usage.ts, the 0.1.1
// check, is left exactly as it was; this file uses every new option, field and class.
// Checked with: npx tsc -p test/types --noEmit

import { Readable } from "stream";
import { runCode, withSandbox, Sandbox, AbortError, isKilledFault, SandboxError, doctor } from "kern-sandbox";
import type { DoctorReport, DoctorCheck } from "kern-sandbox";
import type {
  CallOptions, RunCodeOptions, OpenOptions, ReadFileOptions, ResourceUsage, KilledFault, ResourceLimits,
  ExecutionResult, SandboxOptions, SandboxFaultType,
} from "kern-sandbox";

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type Expect<T extends true> = T;

export type CallControlChecks = [
  Expect<Equal<ExecutionResult["usage"], ResourceUsage | null>>,
  Expect<Equal<ResourceUsage, { cpuUserMs: number; cpuSystemMs: number; maxRssKb: number }>>,
  Expect<Equal<KilledFault["oom"], boolean>>,
  Expect<Equal<ExecutionResult["limits"], ResourceLimits | null>>,
  Expect<Equal<ResourceLimits["memory"], "enforced" | "not_enforced" | "none">>,
  Expect<Equal<KilledFault["type"], "killed">>,
  // (results: issue 14.)
  Expect<Equal<RunCodeOptions, CallOptions & { language?: "python" | "bash" | "node"; results?: boolean | null }>>,
  Expect<Equal<CallOptions["timeoutS"], number | null | undefined>>,
  Expect<Equal<CallOptions["signal"], AbortSignal | null | undefined>>,
  Expect<Equal<SandboxOptions["capDrop"], string[] | undefined>>,
  Expect<Equal<SandboxOptions["securityProfile"], "untrusted" | null | undefined>>,
  Expect<Equal<SandboxOptions["requireLimits"], boolean | undefined>>,
  Expect<Equal<SandboxOptions["trackFiles"], boolean | undefined>>,
  Expect<Equal<SandboxOptions["prewarm"], number | undefined>>,
  Expect<Equal<AbortError["code"], "ABORT_ERR">>,
  Expect<Equal<AbortError["stdout"], string>>,
  // The 0.1.1 union is unchanged: no "oom" type.
  Expect<Equal<SandboxFaultType, "timeout" | "escape_blocked" | "killed" | "startup_failed">>,
];

export async function main(): Promise<void> {
  const opts: SandboxOptions = {
    capDrop: ["ALL"], securityProfile: "untrusted", apparmor: "my-profile", requireLimits: true,
    trackFiles: false,
  };
  const ac = new AbortController();
  const open: OpenOptions = { signal: ac.signal };
  const sbx = await new Sandbox(opts).open(open);
  const call: CallOptions = {
    timeoutS: 2.5, env: { KEY: "v" }, onStdout: (c: Buffer) => void c, onStderr: null, signal: ac.signal,
  };
  const rc: RunCodeOptions = { ...call, language: "bash" };
  const r1: ExecutionResult = await sbx.runCode("echo hi", rc);
  const r2: ExecutionResult = await sbx.run(["true"], call);
  const r3: ExecutionResult = await sbx.run(["true"], { timeoutS: null, env: null });
  const u: ResourceUsage | null = r1.usage;
  if (u !== null) console.log(u.cpuUserMs + u.cpuSystemMs, u.maxRssKb);
  if (isKilledFault(r2.fault)) {
    const oom: boolean = r2.fault.oom;
    console.log(oom);
  }
  const read: ReadFileOptions = { maxBytes: 1024 };
  const buf: Buffer = await sbx.readFile("out.txt", read);
  try {
    await sbx.run(["sleep", "10"], { signal: AbortSignal.timeout(100) });
  } catch (e) {
    if (e instanceof AbortError) console.log(e.name, e.code, e.cause, e.stdout, e.stderr);
    else if (e instanceof SandboxError) console.log(e.message);
  }
  // stdin (issue 33): a string, bytes, a Node Readable, a web ReadableStream.
  await sbx.run(["cat"], { stdin: "text" });
  await sbx.run(["cat"], { stdin: Buffer.from("bytes") });
  await sbx.run(["cat"], { stdin: new Uint8Array(3) });
  await sbx.run(["cat"], { stdin: Readable.from(["a", "b"]) });
  await sbx.runCode("print(input())", { stdin: new ReadableStream<Uint8Array>(), language: "python" });
  const stdinOpt: CallOptions["stdin"] = null;
  await sbx.close();
  const one: ExecutionResult = await runCode("print(1)", { memoryMb: 256, signal: ac.signal, timeoutS: 1,
    stdin: stdinOpt ?? "x" });
  const w = await withSandbox({ capDrop: [] }, (s) => s.runCode("print(2)", { language: "python" }));
  const report: DoctorReport = await doctor({ image: "python:3.12-slim" });
  const failed: DoctorCheck[] = report.checks.filter((c) => !c.ok && c.required);
  console.log(r3, buf, one, w, failed, report.controllers?.memory);
}
