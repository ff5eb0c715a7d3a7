"use strict";

// The AI SDK 7 sandbox session (`Experimental_SandboxSession` of
// @ai-sdk/provider-utils) over a kern-sandbox Sandbox. It needs nothing
// from the `ai` package at run time: the interface is plain methods.
const { sandboxError } = require("../errors");
const { SandboxRef } = require("../adapter/sandbox-ref");
const { workspacePath, BOX_WORKSPACE } = require("../adapter/paths");
const { runShell, ShellProcess, hasSpawn } = require("../adapter/shell");
const { readOrNull, writeBytes, collect, streamOf } = require("../adapter/files");
const boxfs = require("../adapter/boxfs");
const { decode, encode, lineRange } = require("./text");

/** What a model is told about the sandbox (`description`). */
function describeSandbox(sbx, { ports = [] } = {}) {
  const net = sbx.network ? "the host's network" :
    (sbx.egressAllow && sbx.egressAllow.length > 0 ? `network only to ${sbx.egressAllow.join(", ")}` : "no network");
  const lines = [
    `A Linux sandbox (kern box, image ${sbx.image}). Every command runs as \`sh -c\` in a fresh box ` +
      `whose working directory is ${BOX_WORKSPACE}: files under ${BOX_WORKSPACE} persist between commands; ` +
      "processes, memory and files elsewhere do not.",
    `Network: ${net}. Each command has a deadline of ${sbx.timeoutS} s` +
      (sbx.memoryMb ? ` and ${sbx.memoryMb} MiB of memory.` : "."),
    `File tools reach only ${BOX_WORKSPACE}: use relative paths or paths under ${BOX_WORKSPACE}/.`,
  ];
  if (ports.length > 0) lines.push(`Ports ${ports.join(", ")} of a spawned process are published to the host.`);
  if (sbx.setup) lines.push(`Set up with: ${sbx.setup}`);
  return lines.join("\n");
}

/** A path's workspace form for a file call. */
const filePath = (o, what) => workspacePath(o && o.path, { file: true, what });

/**
 * The session's members, on ctx: { acquire(signal): Promise<Sandbox> (open),
 * description(): string, spawnOptions(): { ports }, track(proc) }.
 */
function sessionMembers(ctx) {
  const open = (o) => ctx.acquire(o && o.abortSignal);
  return {
    get description() {
      return ctx.description();
    },

    async readFile(o) {
      const rel = filePath(o, "readFile path");
      const bytes = await readOrNull(await open(o), rel);
      return bytes === null ? null : streamOf(bytes);
    },

    async readBinaryFile(o) {
      const rel = filePath(o, "readBinaryFile path");
      const bytes = await readOrNull(await open(o), rel);
      return bytes === null ? null : new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    },

    async readTextFile(o) {
      const rel = filePath(o, "readTextFile path");
      const bytes = await readOrNull(await open(o), rel);
      if (bytes === null) return null;
      return lineRange(decode(bytes, o.encoding ?? "utf-8"), o.startLine, o.endLine);
    },

    async writeFile(o) {
      const rel = filePath(o, "writeFile path");
      const sbx = await open(o);
      if (!o.content || typeof o.content.getReader !== "function")
        throw sandboxError("ERR_SANDBOX_INVALID_ARG", "writeFile's content must be a ReadableStream<Uint8Array>");
      await writeBytes(sbx, rel, await collect(o.content, undefined, o.abortSignal));
    },

    async writeBinaryFile(o) {
      const rel = filePath(o, "writeBinaryFile path");
      if (!(o.content instanceof Uint8Array))
        throw sandboxError("ERR_SANDBOX_INVALID_ARG", "writeBinaryFile's content must be a Uint8Array");
      await writeBytes(await open(o), rel, o.content);
    },

    async writeTextFile(o) {
      const rel = filePath(o, "writeTextFile path");
      await writeBytes(await open(o), rel, encode(o.content, o.encoding ?? "utf-8"));
    },

    async stat(o) {
      const rel = workspacePath(o && o.path, { what: "stat path" });
      return boxfs.stat(await open(o), rel, o.abortSignal);
    },

    async listDirectory(o) {
      const rel = workspacePath(o && o.path, { what: "listDirectory path" });
      return boxfs.listDirectory(await open(o), rel, o.abortSignal);
    },

    async deleteFile(o) {
      const rel = filePath(o, "deleteFile path");
      return boxfs.deleteFile(await open(o), rel, o.abortSignal);
    },

    async run(o) {
      const sbx = await open(o);
      const r = await runShell(sbx, o.command, { workingDirectory: o.workingDirectory, env: o.env, signal: o.abortSignal });
      let stderr = r.stderr;
      if (r.fault) stderr += `${stderr && !stderr.endsWith("\n") ? "\n" : ""}[kern-sandbox: ${r.fault.type}: ${r.fault.message}]\n`;
      return bounded({ exitCode: r.exitCode, stdout: r.stdout, stderr }, o.maxOutputLength);
    },

    async spawn(o) {
      const sbx = await open(o);
      return spawnProcess(sbx, o, ctx);
    },
  };
}

/** run's result with each stream cut to maxOutputLength UTF-16 units, the
 * full lengths beside them (the newest interface's maxOutputLength). */
function bounded(r, max) {
  if (max === undefined || max === null) return r;
  if (!Number.isSafeInteger(max) || max < 1)
    throw sandboxError("ERR_SANDBOX_INVALID_ARG", `maxOutputLength must be a positive safe integer, got ${max}`);
  return { ...r, stdout: r.stdout.slice(0, max), stderr: r.stderr.slice(0, max),
    stdoutLength: r.stdout.length, stderrLength: r.stderr.length };
}

/** spawn(): a SandboxProcess (with `stdin`, a WritableStream, when asked). */
async function spawnProcess(sbx, o, ctx) {
  if (o.stdin !== undefined && typeof o.stdin !== "boolean")
    throw sandboxError("ERR_SANDBOX_INVALID_ARG", "spawn's stdin must be a boolean");
  const streams = { stdout: null, stderr: null };
  const out = {};
  for (const name of ["stdout", "stderr"]) {
    out[name] = new ReadableStream({ start: (c) => (streams[name] = c) });
  }
  const closeStreams = () => {
    for (const c of Object.values(streams)) {
      try {
        c.close();
      } catch {
        // already closed or cancelled by the reader
      }
    }
  };
  const proc = await ShellProcess.start(sbx, o.command, {
    workingDirectory: o.workingDirectory, env: o.env, signal: o.abortSignal, stdin: o.stdin === true,
    ports: hasSpawn(sbx) ? ctx.spawnOptions().ports : [], timeoutS: hasSpawn(sbx) ? null : undefined,
    onStart: (p) => {
      for (const name of ["stdout", "stderr"]) {
        p.on(name, (b) => {
          try {
            streams[name].enqueue(new Uint8Array(b.buffer, b.byteOffset, b.byteLength));
          } catch {
            // the reader cancelled its stream: the rest of it is dropped
          }
        });
      }
    },
  });
  const settled = proc.wait().finally(closeStreams);
  settled.catch(() => {});
  ctx.track(proc);
  const handle = {
    pid: undefined,
    stdout: out.stdout,
    stderr: out.stderr,
    async wait() {
      try {
        const { exitCode } = await settled;
        return { exitCode };
      } catch (e) {
        // The interface: an abort by abortSignal rejects wait() with its reason.
        if (o.abortSignal && o.abortSignal.aborted) throw o.abortSignal.reason;
        throw e;
      }
    },
    async kill() {
      proc.kill();
      await settled.catch(() => {});
    },
  };
  if (o.stdin === true) {
    handle.stdin = new WritableStream({
      write: (chunk) => proc.write(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)),
      close: () => proc.end(),
      abort: () => proc.end(),
    });
  }
  return handle;
}

/**
 * createSandboxSession(options | sandbox): an Experimental_SandboxSession
 * on a Sandbox made from options (opened on first use, closed by
 * close()), or on the caller's Sandbox (opened if needed, never closed here).
 */
function createSandboxSession(arg) {
  const ref = new SandboxRef(arg, { what: "createSandboxSession()" });
  const live = new Set();
  const ctx = {
    acquire: (signal) => ref.open(signal),
    description: () => describeSandbox(ref.sandbox),
    spawnOptions: () => ({ ports: [] }),
    track: (p) => {
      live.add(p);
      p.wait().catch(() => {}).finally(() => live.delete(p));
    },
  };
  const session = sessionMembers(ctx);
  Object.defineProperties(session, {
    sandbox: { value: ref.sandbox, enumerable: false },
    close: {
      enumerable: false,
      value: async () => {
        for (const p of live) p.kill();
        await ref.close();
      },
    },
  });
  session[Symbol.asyncDispose] = session.close;
  return session;
}

module.exports = { createSandboxSession, sessionMembers, describeSandbox };
