// Types of kern-sandbox/cluster (issue 35): the client has the local API's shape.
import { connect, startWorker, type ClusterSandbox } from "kern-sandbox/cluster";
import type { ExecutionResult } from "kern-sandbox";

async function main(): Promise<void> {
  const worker = await startWorker({ connection: { path: "/run/redis.sock" }, capacity: 2,
    policy: { images: ["python:3.12-slim"], env: false, maxTimeoutS: 60 } });
  const cluster = await connect({ connection: { host: "redis", port: 6379, password: "x" }, maxQueued: 100, queueTimeoutS: 30 });
  const r: ExecutionResult = await cluster.runCode("print(1)", { timeoutS: 5, queueTimeoutS: 10, signal: AbortSignal.timeout(1000) });
  const n: number = await cluster.withSandbox({ memoryMb: 256 }, async (s: ClusterSandbox) => {
    await s.writeFile("a.txt", "x");
    const b: Buffer = await s.readFile("a.txt", { maxBytes: 10 });
    await s.run(["ls"]);
    return b.length + (await s.listFiles()).length;
  });
  await using sbx = await new cluster.Sandbox({ image: "python:3.12-slim" }).open();
  const w: string | null = sbx.workerId;
  void [r, n, w];
  await cluster.close();
  await worker.close({ graceS: 5 });
}
void main;
