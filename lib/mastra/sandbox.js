"use strict";

// KernWorkspaceSandbox: the `WorkspaceSandbox` of @mastra/core 1.x
// (@mastra/core/workspace) on a kern-sandbox Sandbox. Mastra's workspace
// gives an agent `mastra_workspace_execute_command` through executeCommand;
// snapshot() writes the workspace as a checkpoint that a sandbox with the
// same id restores at start(). Needs nothing from @mastra/core at run time.
const fs = require("fs");
const os = require("os");
const path = require("path");
const crypto = require("crypto");
const { Sandbox } = require("../sandbox");
const { sandboxError } = require("../errors");
const { describe } = require("../options");
const { SandboxRef } = require("../adapter/sandbox-ref");
const { workspacePath } = require("../adapter/paths");
const { runShell } = require("../adapter/shell");
const { writeBytes } = require("../adapter/files");
const { describeSandbox } = require("../ai/session");

const OWN_KEYS = ["id", "checkpointDir"];

function defaultCheckpointDir() {
  const state = process.env.XDG_STATE_HOME && path.isAbsolute(process.env.XDG_STATE_HOME)
    ? process.env.XDG_STATE_HOME : path.join(os.homedir(), ".local", "state");
  return path.join(state, "kern-sandbox", "mastra");
}

/** A shell line of command and its arguments, each argument quoted. */
function commandLine(command, args) {
  if (!args || args.length === 0) return command;
  return [command, ...args.map((a) => `'${String(a).replace(/'/g, "'\\''")}'`)].join(" ");
}

class KernWorkspaceSandbox {
  name = "kern-sandbox";
  provider = "kern";
  status = "pending";
  supportsCheckpoints = true;
  #ref;
  #checkpointDir;
  #createdAt = new Date();
  #lastUsedAt;
  #running = new Set(); // AbortControllers of the commands running now

  /** options: Sandbox options, plus `id` (default a random one) and
   * `checkpointDir` (where snapshot() writes, default
   * $XDG_STATE_HOME/kern-sandbox/mastra); or an open Sandbox. */
  constructor(options) {
    const o = options instanceof Sandbox ? {} : (options ?? {});
    if (typeof o !== "object" || Array.isArray(o))
      throw sandboxError("ERR_SANDBOX_INVALID_ARG", `new KernWorkspaceSandbox() takes Sandbox options or a Sandbox, got ${describe(options)}`);
    this.id = o.id ?? `kern-${crypto.randomUUID()}`;
    if (typeof this.id !== "string" || !/^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/.test(this.id))
      throw sandboxError("ERR_SANDBOX_INVALID_OPTION", `options.id must be 1-128 of [A-Za-z0-9._-], got ${describe(o.id)}`);
    this.#checkpointDir = o.checkpointDir ?? defaultCheckpointDir();
    this.#ref = new SandboxRef(options, { extraKeys: OWN_KEYS, what: "KernWorkspaceSandbox" });
  }

  /** The Sandbox commands run on. */
  get sandbox() {
    return this.#ref.sandbox;
  }

  get #checkpoint() {
    return path.join(this.#checkpointDir, `${this.id}.tar.gz`);
  }

  /** Opens the Sandbox; a checkpoint of this id (snapshot()) is restored into it. */
  async start() {
    if (this.status === "running") return { outcome: "connected" };
    this.status = "starting";
    try {
      const sbx = await this.#ref.open();
      const restored = fs.existsSync(this.#checkpoint);
      if (restored) sbx.restore(this.#checkpoint);
      this.status = "running";
      return { outcome: restored ? "connected" : "created" };
    } catch (e) {
      this.status = "error";
      this.error = e.message;
      throw e;
    }
  }

  /** Kills the commands running now; the workspace stays. */
  async stop() {
    for (const ac of this.#running) ac.abort(new Error("the sandbox was stopped"));
    this.status = "stopped";
  }

  /** stop(), then closes a Sandbox made from options (its temporary workspace goes with it). */
  async destroy() {
    this.status = "destroying";
    await this.stop();
    await this.#ref.close();
    this.status = "destroyed";
  }

  isReady() {
    return this.status === "running";
  }

  getInfo() {
    const sbx = this.#ref.sandbox;
    return {
      id: this.id, name: this.name, provider: this.provider, status: this.status,
      createdAt: this.#createdAt, lastUsedAt: this.#lastUsedAt,
      resources: { memoryMB: sbx.memoryMb ?? undefined, cpuCores: sbx.cpus ?? undefined },
      metadata: { image: sbx.image, workingDirectory: "/workspace" },
    };
  }

  getInstructions() {
    return describeSandbox(this.#ref.sandbox);
  }

  /** Runs `command` (a shell line; args are appended, quoted) in a fresh box. */
  async executeCommand(command, args, options = {}) {
    if (this.status !== "running") await this.start();
    const sbx = await this.#ref.open();
    const line = commandLine(command, args);
    const ac = new AbortController();
    const outer = options.abortSignal;
    const onAbort = () => ac.abort(outer.reason);
    if (outer) outer.addEventListener("abort", onAbort, { once: true });
    this.#running.add(ac);
    this.#lastUsedAt = new Date();
    const t0 = performance.now();
    try {
      if (outer && outer.aborted) throw outer.reason;
      const r = await runShell(sbx, line, {
        workingDirectory: options.cwd, env: stringEnv(options.env), signal: ac.signal,
        timeoutS: typeof options.timeout === "number" && options.timeout > 0 ? options.timeout / 1000 : undefined,
        onStdout: options.onStdout ? (b) => options.onStdout(b.toString("utf8")) : undefined,
        onStderr: options.onStderr ? (b) => options.onStderr(b.toString("utf8")) : undefined,
      });
      const fault = r.fault ? r.fault.type : null;
      let stderr = r.stderr;
      if (r.fault) stderr += `${stderr && !stderr.endsWith("\n") ? "\n" : ""}[kern-sandbox: ${r.fault.type}: ${r.fault.message}]\n`;
      return {
        success: r.success, exitCode: r.exitCode, stdout: r.stdout, stderr,
        executionTimeMs: performance.now() - t0, timedOut: fault === "timeout", killed: fault === "killed",
        stdoutTruncated: r.truncated, stderrTruncated: r.truncated, command, args: args ?? [],
      };
    } finally {
      this.#running.delete(ac);
      if (outer) outer.removeEventListener("abort", onAbort);
    }
  }

  /** Writes files into the workspace (paths relative or under /workspace/). */
  async writeFiles(files, options = {}) {
    const sbx = await this.#ref.open();
    for (const f of files) {
      if (options.abortSignal) options.abortSignal.throwIfAborted();
      if (f.mode !== undefined)
        throw sandboxError("ERR_SANDBOX_NOT_SUPPORTED", `kern-sandbox writes files with mode 0644; ${JSON.stringify(f.path)} ` +
          "asks for a mode (chmod it with executeCommand)");
      await writeBytes(sbx, workspacePath(f.path, { file: true, what: "file path" }),
        typeof f.content === "string" ? Buffer.from(f.content, "utf8") : f.content);
    }
  }

  /** Writes the workspace as a checkpoint (a .tar.gz under checkpointDir,
   * by sbx.snapshot: needs KERN_SANDBOX_SNAPSHOT=1) that start() of a
   * sandbox with this id restores. */
  async snapshot() {
    const sbx = await this.#ref.open();
    fs.mkdirSync(this.#checkpointDir, { recursive: true, mode: 0o700 });
    sbx.snapshot(this.#checkpoint);
  }
}

function stringEnv(env) {
  if (!env) return undefined;
  const out = {};
  for (const [k, v] of Object.entries(env)) if (typeof v === "string") out[k] = v;
  return out;
}

module.exports = { KernWorkspaceSandbox, commandLine };
