// Type check of the process API (issue 33): every new option, field and
// class of spawn(), spawnCode() and BoxProcess, against types/index.d.ts.
// Checked with: npx tsc -p test/types --noEmit
import { Readable, Writable } from "stream";
import { Sandbox, BoxProcess, SandboxError } from "kern-sandbox";
import type { ExecutionResult, SpawnOptions, SpawnCodeOptions, PublishedPort, PtySize } from "kern-sandbox";

export async function processes(): Promise<void> {
  const sbx = await new Sandbox().open();
  const opts: SpawnOptions = { stdin: true, timeoutS: null, signal: new AbortController().signal, cwd: "sub",
    env: { A: "1" }, keepBytes: 1 << 20, ports: [8000], publishHost: "127.0.0.1" };
  const p: BoxProcess = await sbx.spawn(["cat"], opts);
  const code: SpawnCodeOptions = { language: "bash", stdin: false, timeoutS: 5 };
  const q: BoxProcess = await sbx.spawnCode("echo hi", code);
  const id: string = p.id;
  const stdin: Writable | null = p.stdin;
  const out: Readable = p.stdout;
  const err: Readable = p.stderr;
  const dropped: { stdout: number; stderr: number } = p.droppedBytes;
  const exited: boolean = p.exited;
  const port: PublishedPort | undefined = p.ports[8000];
  if (port) console.log(port.host, port.port, port.url);
  await p.waitForPort(8000, { timeoutS: 10 });
  p.on("exit", (r: ExecutionResult | null, e: Error | null) => console.log(r?.exitCode, e?.message));
  p.kill();
  p.kill("SIGKILL", { graceS: 0 });
  q.kill(15);
  const size: PtySize = { cols: 120 };
  const t: BoxProcess = await sbx.spawn(["bash", "-i"], { pty: size });
  const t2: BoxProcess = await sbx.spawnCode("input()", { pty: true, env: { TERM: "vt100" } });
  t.resize(100, 40);
  t2.stdin?.write("\x03");
  const r: ExecutionResult = await p.wait();
  const live: BoxProcess[] = sbx.processes();
  console.log(id, stdin, out, err, dropped, exited, r.stdout, live.length, SandboxError);
  await sbx.close();
}
