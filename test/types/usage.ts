// Compile-only exercise of the public kern-sandbox API (types/index.d.ts).
// Nothing here runs at import time: `main()` is exported but never invoked.
// Checked with: npx tsc -p test/types --noEmit

import { runCode, withSandbox, Sandbox, ExecutionResult, SandboxError, MountRefused, version } from "kern-sandbox";
import type { SandboxOptions, FileInfo, SandboxFault, MountSpec, Language } from "kern-sandbox";
import type { SandboxFaultType } from "kern-sandbox";

// --- tiny type-equality helpers (fail compilation if a declared type drifts) -----------------------
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type Expect<T extends true> = T;

export type TypeChecks = [
  Expect<Equal<SandboxFaultType, "timeout" | "escape_blocked" | "killed" | "startup_failed">>,
  Expect<Equal<SandboxFault, { type: SandboxFaultType; message: string }>>,
  Expect<Equal<FileInfo["change"], "created" | "modified">>,
  Expect<Equal<FileInfo["path"], string>>,
  Expect<Equal<FileInfo["size"], number>>,
  Expect<Equal<ExecutionResult["stdout"], string>>,
  Expect<Equal<ExecutionResult["stderr"], string>>,
  Expect<Equal<ExecutionResult["exitCode"], number>>,
  Expect<Equal<ExecutionResult["durationMs"], number>>,
  Expect<Equal<ExecutionResult["fault"], SandboxFault | null>>,
  Expect<Equal<ExecutionResult["files"], FileInfo[]>>,
  Expect<Equal<ExecutionResult["truncated"], boolean>>,
  Expect<Equal<ExecutionResult["success"], boolean>>,
  Expect<Equal<Language, "python" | "bash" | "node">>,
  Expect<Equal<MountSpec, string | [target: string, mode: "ro" | "rw"]>>,
  Expect<Equal<SandboxOptions["memoryMb"], number | null | undefined>>,
  Expect<Equal<SandboxOptions["cpus"], number | null | undefined>>,
  Expect<Equal<SandboxOptions["pids"], number | null | undefined>>,
  Expect<Equal<SandboxOptions["timeoutS"], number | undefined>>,
  Expect<Equal<SandboxOptions["mounts"], Record<string, MountSpec> | undefined>>,
  Expect<Equal<SandboxOptions["env"], Record<string, string> | undefined>>,
  Expect<Equal<SandboxOptions["onStdout"], ((chunk: Buffer) => void) | undefined>>,
  Expect<Equal<ReturnType<Sandbox["open"]>, Promise<Sandbox>>>,
  Expect<Equal<ReturnType<Sandbox["close"]>, Promise<void>>>,
  Expect<Equal<ReturnType<Sandbox["snapshot"]>, void>>,
  Expect<Equal<ReturnType<Sandbox["restore"]>, void>>,
  Expect<Equal<ReturnType<Sandbox["readFile"]>, Promise<Buffer>>>,
  Expect<Equal<ReturnType<Sandbox["listFiles"]>, Promise<FileInfo[]>>>,
  Expect<Equal<typeof version, string>>,
];

declare const csvBytes: Buffer;

export async function main(): Promise<void> {
  // --- README: one-shot --------------------------------------------------------------------------
  const r = await runCode("print(sum(range(100)))");
  console.log(r.stdout, r.success); // "4950\n" true

  // --- README: a session with setup --------------------------------------------------------------
  await withSandbox({ setup: "pip install pandas" }, async (sbx) => {
    await sbx.writeFile("data.csv", csvBytes);
    const r2 = await sbx.runCode("import pandas as pd; print(pd.read_csv('data.csv').describe())");
    console.log(r2.stdout);
    const chart: Buffer = await sbx.readFile("out.png");
    console.log(chart.length);
  });

  // --- README: JavaScript in the box ---------------------------------------------------------------
  const rn = await runCode("console.log([1,2,3].map(x => x * x))", {
    image: "node:20-slim",
    language: "node",
  });
  console.log(rn.stdout);
  const rb = await runCode("echo hi", { language: "bash" });
  console.log(rb.exitCode);

  // --- README: the timeout example -------------------------------------------------------------
  const rt = await runCode("while True: pass", { timeoutS: 5 });
  const ok: boolean = rt.success; // false
  const ft: SandboxFaultType | undefined = rt.fault?.type; // "timeout"
  if (rt.fault !== null) {
    const f: SandboxFault = rt.fault;
    const msg: string = f.message;
    switch (f.type) {
      case "timeout":
      case "escape_blocked":
      case "killed":
      case "startup_failed":
        console.log(ok, ft, msg);
        break;
      default: {
        const never: never = f.type;
        console.log(never);
      }
    }
  }

  // --- README: charts / artifacts --------------------------------------------------------------
  await withSandbox({ setup: "pip install matplotlib" }, async (sbx) => {
    await sbx.runCode(
      "import matplotlib; matplotlib.use('Agg')\n" +
        "import matplotlib.pyplot as plt; plt.plot([1,4,9]); plt.savefig('chart.png')",
    );
    const png: Buffer = await sbx.readFile("chart.png");
    return png;
  });

  // --- every option ------------------------------------------------------------------------------
  const opts: SandboxOptions = {
    image: "python:3.12-slim",
    setup: "pip install pandas",
    workspace: "/tmp/kern-ws-demo",
    memoryMb: 512,
    cpus: 1.5,
    pids: 256,
    timeoutS: 30,
    network: false,
    egressAllow: ["pypi.org", "files.pythonhosted.org"],
    mounts: { "/srv/data": "/data", "/srv/models": ["/models", "ro"], "/srv/out": ["/out", "rw"] },
    profiles: ["vcpu:heavy", "vgpio:leds", "vdisk:scratch"],
    env: { API_TOKEN: "secret", LANG: "C.UTF-8" },
    maxOutputBytes: 64 * 1024 * 1024,
    enforceLimits: true,
    depsReadonly: false,
    onStdout: (chunk: Buffer) => process.stdout.write(chunk),
    onStderr: (chunk) => {
      const b: Buffer = chunk;
      process.stderr.write(b);
    },
  };
  const uncapped: SandboxOptions = { memoryMb: null, cpus: null, pids: null };
  const empty: SandboxOptions = {};
  const relaxed: SandboxOptions = { network: true, enforceLimits: false, depsReadonly: true };

  // MountSpec, both forms
  const m1: MountSpec = "/data";
  const m2: MountSpec = ["/data", "ro"];
  const m3: MountSpec = ["/data", "rw"];
  const mounts: Record<string, MountSpec> = { "/a": m1, "/b": m2, "/c": m3 };

  // --- Sandbox class: full lifecycle ---------------------------------------------------------------
  const sbx = new Sandbox(opts);
  const opened: Sandbox = await sbx.open();
  try {
    const lang: Language = "python";
    const rc: ExecutionResult = await opened.runCode("print(1)", { language: lang });
    const rc2 = await sbx.runCode("print(2)");
    const rc3 = await sbx.runCode("print(3)", {});
    const rr: ExecutionResult = await sbx.run(["sh", "-c", "ls -la"]);
    const rr2 = await sbx.run(["python3", "--version"]);

    // result fields and their types
    const stdout: string = rr.stdout;
    const stderr: string = rr.stderr;
    const exitCode: number = rr.exitCode;
    const durationMs: number = rr.durationMs;
    const fault: SandboxFault | null = rr.fault;
    const t: "timeout" | "escape_blocked" | "killed" | "startup_failed" | undefined = rr.fault?.type;
    const files: FileInfo[] = rr.files;
    const truncated: boolean = rr.truncated;
    const success: boolean = rr.success;
    for (const fi of files) {
      const p: string = fi.path;
      const size: number = fi.size;
      const change: "created" | "modified" = fi.change;
      console.log(p, size, change);
    }
    console.log(rc, rc2, rc3, rr2, stdout, stderr, exitCode, durationMs, fault, t, truncated, success);

    // workspace I/O
    await sbx.writeFile("notes/hello.txt", "hello");
    await sbx.writeFile("blob.bin", Buffer.from([1, 2, 3]));
    const data: Buffer = await sbx.readFile("notes/hello.txt");
    console.log(data.toString("utf8"));

    // listFiles, with and without subdir
    const all: FileInfo[] = await sbx.listFiles();
    const sub: FileInfo[] = await sbx.listFiles("notes");
    console.log(all.length, sub.length);

    // snapshot / restore (synchronous; gated by KERN_SANDBOX_SNAPSHOT=1)
    process.env.KERN_SANDBOX_SNAPSHOT = "1";
    const snap: void = sbx.snapshot("/tmp/ws.tar.gz");
    const rest: void = sbx.restore("/tmp/ws.tar.gz");
    console.log(snap, rest);
  } finally {
    await sbx.close();
  }
  const bare = new Sandbox();
  await bare.open();
  await bare.close();

  // --- withSandbox: without options, return-value typing ------------------------------------------
  const n: number = await withSandbox(async (s) => {
    const res = await s.runCode("print(42)");
    return Number(res.stdout.trim());
  });
  const files2: FileInfo[] = await withSandbox(uncapped, (s) => s.listFiles());
  const str: string = await withSandbox(empty, async () => "done");
  console.log(n, files2, str, relaxed, mounts);

  // --- one-shot with every option plus a language ----------------------------------------------
  const r1 = await runCode("print(1)", { ...opts, language: "python" });
  const r3 = await runCode("print(1)", uncapped);
  console.log(r1.success, r3.success);

  // --- errors -------------------------------------------------------------------------------------
  try {
    new Sandbox({ mounts: { "/": "/host" } });
  } catch (e) {
    if (e instanceof MountRefused) {
      const asBase: SandboxError = e;
      const asError: Error = e;
      console.log(asBase.message, asError.name);
    } else if (e instanceof SandboxError) {
      console.log(e.message);
    } else if (e instanceof Error) {
      const sys = e as NodeJS.ErrnoException;
      console.log(sys.code, sys.errno, sys.syscall, sys.path);
    }
  }
  const err: SandboxError = new SandboxError("boom");
  const mr: SandboxError = new MountRefused("refused");
  console.log(err instanceof Error, mr instanceof SandboxError, r instanceof ExecutionResult);

  // --- version ------------------------------------------------------------------------------------
  const v: string = version;
  console.log(v.split("."));

  // --- misuse is rejected -----------------------------------------------------------------------
  // @ts-expect-error run() takes an argv array, not a shell string
  await sbx.run("ls -la");
  // @ts-expect-error "ruby" is not a Language
  await runCode("puts 1", { language: "ruby" });
  // @ts-expect-error "ruby" is not a Language (session form)
  await sbx.runCode("puts 1", { language: "ruby" });
  // @ts-expect-error unknown option key
  new Sandbox({ imgae: "python:3.12-slim" });
  // @ts-expect-error unknown option key on the one-shot form
  await runCode("print(1)", { timeout: 5 });
  // @ts-expect-error mount mode must be "ro" or "rw"
  const badMount: MountSpec = ["/data", "rx"];
  // @ts-expect-error mount mode must be "ro" or "rw" (inside options)
  new Sandbox({ mounts: { "/srv": ["/srv", "rx"] } });
  // @ts-expect-error timeoutS is not nullable
  new Sandbox({ timeoutS: null });
  // @ts-expect-error env values must be strings
  new Sandbox({ env: { N: 1 } });
  // @ts-expect-error success is read-only
  r.success = true;
  // @ts-expect-error fault may be null
  console.log(r.fault.type);
  // @ts-expect-error readFile resolves to a Buffer, not a string
  const s: string = await sbx.readFile("x");
  // @ts-expect-error "bogus" is not a SandboxFaultType
  const badFault: SandboxFaultType = "bogus";
  console.log(badMount, s, badFault);
}
