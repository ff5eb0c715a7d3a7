// Issue 14's declarations: rich results, Result and the Kernel (type-checked
// by test/11; never run).
import { Kernel, Result, Sandbox, runCode, type ExecutionResult, type KernelOptions } from "kern-sandbox";

async function main(): Promise<void> {
  const r: ExecutionResult = await runCode("1 + 1");
  const first: Result | undefined = r.results[0];
  if (first !== undefined) {
    const text: string | null = first.text;
    const png: Buffer | null = first.png;
    const names: string[] = first.formats();
    const data: Record<string, string> = first.data;
    void [text, png, names, data, first.html, first.markdown, first.svg, first.latex, first.json, first.jpeg];
  }
  const off: ExecutionResult = await runCode("print(1)", { results: false });
  void off;

  const sbx = new Sandbox({ results: true, prewarm: 1 });
  await sbx.open();
  const opts: KernelOptions = { isolation: "fork", checkpoints: 4, signal: new AbortController().signal };
  const k: Kernel = await sbx.kernel(opts);
  const cell: ExecutionResult = await k.runCode("x = 1", {
    timeoutS: 2, signal: AbortSignal.timeout(5000), onStdout: (b: Buffer) => void b, results: false,
  });
  void cell;
  const held: number = k.checkpointsHeld;
  const mode: "shared" | "fork" = k.isolation;
  void [held, mode, k.checkpoints];
  await k.rollback();
  await k.rollback(2);
  await k.restart();
  await k.close();
  const shared = await sbx.kernel();
  await shared.close();
  // @ts-expect-error a kernel keeps the env it started with
  await shared.runCode("x", { env: { A: "1" } });
  await sbx.close();
}

void main;
