"use strict";

// The OpenAI Agents JS sandbox session (`SandboxSession` of
// @openai/agents-core/sandbox) on a kern-sandbox Sandbox: what a kern box
// can do (exec, writeStdin, terminals with sbx.spawn, files, images, the
// patch editor, the workspace as tar.gz, published ports).
const fs = require("fs");
const os = require("os");
const path = require("path");
const { sandboxError } = require("../errors");
const { workspacePath } = require("../adapter/paths");
const { features, noPorts } = require("../adapter/shell");
const { readOrNull, writeBytes } = require("../adapter/files");
const boxfs = require("../adapter/boxfs");
const { ProcessTable } = require("./exec");
const { materialize } = require("./manifest");

class KernAgentsSession {
  #ref;
  #sdk;
  #procs;
  #archiveLimits = null;
  #pty = false; // whether this Sandbox's process API gives terminals (asked at start())

  /** state: the SDK's session state (manifest, environment, ...) plus
   * workspacePath, workspaceOwned and configuredExposedPorts; ref: the
   * SandboxRef; sdk: { core, sandbox, internal } of @openai/agents-core. */
  constructor({ state, ref, sdk, archiveLimits }) {
    this.state = state;
    this.#ref = ref;
    this.#sdk = sdk;
    this.#procs = new ProcessTable(sdk.internal);
    if (archiveLimits !== undefined) this.setArchiveLimits(archiveLimits);
  }

  /** The Sandbox this session runs on. */
  get sandbox() {
    return this.#ref.sandbox;
  }

  async #sbx() {
    return this.#ref.open();
  }

  async start() {
    const sbx = await this.#sbx();
    this.#pty = (await features(sbx)).pty;
    if (this.state.workspacePath === undefined) this.state.workspacePath = null;
    if (!this.state.workspaceReady) {
      await materialize(sbx, this.state.manifest, this.#sdk);
      this.state.workspaceReady = true;
    }
  }

  async running() {
    return !this.#ref.closed;
  }

  setArchiveLimits(limits) {
    this.#sdk.sandbox.validateSandboxArchiveLimits(limits);
    this.#archiveLimits = limits ?? null;
  }

  /** Whether exec({ tty: true }) gets a terminal: the process API's pty, when this kern-sandbox has it. */
  supportsPty() {
    return this.#pty;
  }

  async exec(args) {
    const sbx = await this.#sbx();
    return this.#procs.exec(sbx, args, this.#env(), this.state.configuredExposedPorts || []);
  }

  async execCommand(args) {
    return this.#sdk.internal.formatExecResponse(await this.exec(args));
  }

  async writeStdin(args) {
    await this.#sbx();
    return this.#procs.writeStdin(args);
  }

  #env() {
    const env = {};
    for (const [k, v] of Object.entries(this.state.environment || {})) {
      if (typeof v === "string") env[k] = v;
    }
    return Object.keys(env).length > 0 ? env : undefined;
  }

  async readFile(args) {
    const rel = workspacePath(args.path, { file: true, what: "readFile path" });
    const bytes = await readOrNull(await this.#sbx(), rel);
    // The SDK's own not-found error, which its tools and memory tell from other failures.
    if (bytes === null)
      throw new this.#sdk.sandbox.SandboxWorkspaceReadNotFoundError(`no such file in the workspace: ${args.path}`,
        { path: args.path });
    const u8 = new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    return typeof args.maxBytes === "number" && u8.byteLength > args.maxBytes ? u8.subarray(0, args.maxBytes) : u8;
  }

  async listDir(args) {
    const rel = workspacePath(args.path, { what: "listDir path" });
    const entries = await boxfs.listDirectory(await this.#sbx(), rel);
    if (entries === null)
      throw sandboxError("ERR_SANDBOX_INVALID_PATH", `no such directory in the workspace: ${JSON.stringify(args.path)}`);
    return entries.map((e) => ({ name: e.name, path: rel === "" ? e.name : `${rel}/${e.name}`,
      type: e.type === "directory" ? "dir" : e.type === "file" ? "file" : "other" }));
  }

  async pathExists(p) {
    return (await boxfs.stat(await this.#sbx(), workspacePath(p, { what: "path" }))) !== null;
  }

  async directoryExists(p) {
    const st = await boxfs.stat(await this.#sbx(), workspacePath(p, { what: "path" }));
    return st !== null && st.type === "directory";
  }

  async viewImage(args) {
    const rel = workspacePath(args.path, { file: true, what: "viewImage path" });
    const max = this.#sdk.internal.MAX_VIEW_IMAGE_BYTES;
    let bytes;
    try {
      bytes = await readOrNull(await this.#sbx(), rel, max);
    } catch (e) {
      if (e.code === "EFBIG") throw new this.#sdk.core.UserError(`Image file exceeds the ${max} byte limit: ${args.path}`);
      throw e;
    }
    if (bytes === null) throw new this.#sdk.core.UserError(`Image file not found: ${args.path}`);
    return this.#sdk.internal.imageOutputFromBytes(args.path, new Uint8Array(bytes));
  }

  createEditor() {
    const applyDiff = this.#sdk.core.applyDiff;
    const sbx = () => this.#sbx();
    const rel = (p) => workspacePath(p, { file: true, what: "patch path" });
    return {
      async createFile(op) {
        await writeBytes(await sbx(), rel(op.path), Buffer.from(applyDiff("", op.diff, "create"), "utf8"));
        return { status: "completed" };
      },
      async updateFile(op) {
        const s = await sbx();
        const from = rel(op.path);
        const cur = await readOrNull(s, from);
        if (cur === null) return { status: "failed", output: `no such file: ${op.path}` };
        const to = op.moveTo ? rel(op.moveTo) : from;
        await writeBytes(s, to, Buffer.from(applyDiff(cur.toString("utf8"), op.diff), "utf8"));
        if (to !== from) await boxfs.deleteFile(s, from);
        return { status: "completed" };
      },
      async deleteFile(op) {
        const gone = await boxfs.deleteFile(await sbx(), rel(op.path));
        return gone ? { status: "completed" } : { status: "failed", output: `no such file: ${op.path}` };
      },
    };
  }

  async materializeEntry(args) {
    const rel = workspacePath(args.path, { what: "entry path" });
    await materialize(await this.#sbx(), { root: "/workspace", entries: { [rel]: args.entry } }, this.#sdk);
  }

  async applyManifest(manifest) {
    await materialize(await this.#sbx(), manifest, this.#sdk);
  }

  /** The workspace as a .tar.gz (sbx.snapshot: needs KERN_SANDBOX_SNAPSHOT=1). */
  async persistWorkspace() {
    const sbx = await this.#sbx();
    return withTempFile(async (file) => {
      sbx.snapshot(file);
      return new Uint8Array(await fs.promises.readFile(file));
    });
  }

  /** Extracts a .tar.gz into the workspace (sbx.restore: every member vetted first). */
  async hydrateWorkspace(data, options = {}) {
    const sbx = await this.#sbx();
    const bytes = typeof data === "string" ? Buffer.from(data, "base64")
      : Buffer.from(data instanceof ArrayBuffer ? new Uint8Array(data) : data);
    const limits = options.archiveLimits === undefined ? this.#archiveLimits : options.archiveLimits;
    if (limits && typeof limits.maxInputBytes === "number" && bytes.length > limits.maxInputBytes)
      throw sandboxError("ERR_SANDBOX_SNAPSHOT_REFUSED", `the archive has ${bytes.length} bytes, over ` +
        `archiveLimits.maxInputBytes (${limits.maxInputBytes})`);
    await withTempFile(async (file) => {
      await fs.promises.writeFile(file, bytes, { mode: 0o600 });
      sbx.restore(file);
    });
  }

  async resolveExposedPort(port) {
    const p = this.#sdk.sandbox.normalizeExposedPort(port);
    const configured = this.state.configuredExposedPorts || [];
    if (!configured.includes(p))
      throw sandboxError("ERR_SANDBOX_INVALID_ARG", `port ${p} is not exposed: ` +
        `new KernSandboxClient({ exposedPorts: [${p}] }) publishes it for every exec'd process`);
    if (!(await features(this.#ref.sandbox)).ports) throw noPorts();
    const t = this.#procs.publisherOf(p);
    if (!t) throw sandboxError("ERR_SANDBOX_INVALID_ARG", `no running process publishes port ${p}: start it with exec first`);
    const { host, port: hostPort } = t.proc.ports[p];
    return this.#sdk.sandbox.recordExposedPortEndpoint(this.state, { host, port: hostPort, tls: false }, p);
  }

  async stop() {
    this.#procs.killAll();
  }

  async shutdown() {
    this.#procs.killAll();
  }

  /** Ends the session: its processes, and a Sandbox the client made (with a temporary workspace, that too). */
  async delete() {
    this.#procs.killAll();
    await this.#ref.close();
  }

  async close() {
    await this.delete();
  }
}

async function withTempFile(fn) {
  const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), "ks-oa-"));
  try {
    return await fn(path.join(dir, "workspace.tar.gz"));
  } finally {
    await fs.promises.rm(dir, { recursive: true, force: true });
  }
}

module.exports = { KernAgentsSession };
