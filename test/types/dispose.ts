// Issue 32: `await using` closes a Sandbox and a Kernel (Symbol.asyncDispose).
import { Sandbox } from "kern-sandbox";

export async function disposes(): Promise<string> {
  await using sbx = await new Sandbox().open();
  await using kernel = await sbx.kernel({ timeoutS: 5 });
  const r = await kernel.runCode("1 + 1");
  return r.results[0].formats()[0];
}
