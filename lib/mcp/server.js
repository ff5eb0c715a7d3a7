"use strict";

// createMcpServer(options): the SDK's low-level Server with kern-sandbox's
// tools, on one Sandbox (the session: one workspace for every call, each
// call a fresh box; or, in kernel mode, Python in one fork-isolated kernel).
// The tools are thin: they call the public API and bound what goes back to
// the model (./bound.js). A fault or a non-zero exit is a tool result with
// isError, never a protocol error; an unknown tool is one (InvalidParams).
const { Sandbox } = require("../sandbox");
const { version } = require("../../package.json");
const { loadSdk } = require("./sdk");
const { toolList, checkArgs } = require("./tools");
const { limitsOf } = require("./bound");
const { renderRun, errorResult } = require("./render");
const { writeFileTool, readFileTool, listFilesTool } = require("./files");
const { ProcessTable } = require("./procs");
const { isOff } = require("../benchoff");

const OUTPUT_DIR = ".mcp-output";
// Saved outputs go to this many slots in turn, each overwritten when its
// turn comes again: a model that floods in a loop cannot fill the disk.
const OUTPUT_SLOTS = 16;

// Defaults that suit a server for a model: matplotlib needs a writable
// config dir in a read-only image, and no tool reports result.files.
const SERVER_DEFAULTS = { trackFiles: false };
const SERVER_ENV = { MPLCONFIGDIR: "/tmp" };

const INSTRUCTIONS = "kern-sandbox runs code in a local, isolated sandbox (a kern box per call, network off " +
  "unless the server allows it). Files in /workspace persist across calls. Use run_code for Python, bash or " +
  "node; run_command for a shell line; write_file/read_file/list_files for the workspace; start_process and " +
  "process_output for servers and long-running commands.";

/** A signal that aborts with either (AbortSignal.any is Node 20.3+). */
function anySignal(a, b) {
  if (typeof AbortSignal.any === "function") return AbortSignal.any([a, b]);
  const ac = new AbortController();
  for (const s of [a, b]) {
    if (s.aborted) ac.abort(s.reason);
    else s.addEventListener("abort", () => ac.abort(s.reason), { once: true });
  }
  return ac.signal;
}

/**
 * Registers the tools/call handler with the SDK's Protocol, under the
 * Server's override of setRequestHandler. The request is still parsed with
 * CallToolRequestSchema before the handler (the Protocol's own check); what
 * the override adds is a second parse of the same request and a parse of
 * the handler's result against CallToolResultSchema (plus task results,
 * which a server without the tasks capability never gets: the Protocol
 * refuses them first). Our results are built by render.js and files.js in
 * that schema's shape, and the client parses every result with the same
 * schema itself, so the server's re-parse is work on every reply that
 * checks nothing new (bench/README.md has its cost). An SDK whose Server has no
 * such parent method gets the Server's registration, as before.
 */
function onToolsCall(server, handler) {
  const sdk = loadSdk();
  const protocolSet = Object.getPrototypeOf(sdk.Server.prototype)?.setRequestHandler;
  if (typeof protocolSet === "function" && protocolSet !== sdk.Server.prototype.setRequestHandler)
    protocolSet.call(server, sdk.CallToolRequestSchema, handler);
  else server.setRequestHandler(sdk.CallToolRequestSchema, handler);
}

const CLOSING_MESSAGE = "the MCP server is closing; the call was stopped";

function messageOf(e) {
  if (e && typeof e.code === "string" && e.name === "SandboxError") return `${e.message} (${e.code})`;
  return e && e.message ? e.message : String(e);
}

class KernMcpServer {
  #sbx = null; // Promise<Sandbox> while opening or open
  #own;
  #given;
  #options;
  #kernel = null; // Promise<Kernel>
  #closing = new AbortController();
  #closed = null;
  #seq = 0;
  #open = null; // the Sandbox once open (null again once closing): an early call needs it at once
  #transport = null; // the LineTransport, when connected to one: #early replies on it
  #earlyCalls = new Map(); // request id -> the AbortController of an early call not settled (#early)

  constructor(options = {}) {
    if (options === null || typeof options !== "object") throw new TypeError("createMcpServer(options): options must be an object");
    const { sandbox, kernel = false, limits, name = "kern-sandbox", ...sandboxOptions } = options;
    const sdk = loadSdk();
    this.limits = limitsOf(limits);
    this.kernelMode = kernel === true;
    this.#own = sandbox === undefined || sandbox === null;
    if (this.#own) {
      const env = { ...SERVER_ENV, ...(sandboxOptions.env ?? {}) };
      this.#options = { ...SERVER_DEFAULTS, ...sandboxOptions, env };
      // Validates every option now: a bad one fails the server's creation, not its first call.
      this.#given = new Sandbox(this.#options);
    } else {
      if (!(sandbox instanceof Sandbox)) throw new TypeError("createMcpServer: options.sandbox must be a Sandbox");
      this.#given = sandbox;
    }
    this.tools = new Map(toolList({ kernel: this.kernelMode }).map((t) => [t.name, t]));
    this.processes = new ProcessTable(() => this.sandbox(), this.limits);
    this.server = new sdk.Server({ name, version }, { capabilities: { tools: {} }, instructions: INSTRUCTIONS });
    this.server.setRequestHandler(sdk.ListToolsRequestSchema, () => ({ tools: [...this.tools.values()] }));
    onToolsCall(this.server, (req, extra) => this.#call(req.params, extra));
    this.server.onclose = () => {
      this.close().catch((e) => process.stderr.write(`kern-sandbox mcp: close: ${e && e.stack}\n`));
    };
    this.handlers = {
      run_code: (a, signal) => this.#runCode(a, signal),
      run_command: (a, signal) => this.#runCommand(a, signal),
      write_file: async (a) => writeFileTool(await this.sandbox(), a),
      read_file: async (a) => readFileTool(await this.sandbox(), a, this.limits),
      list_files: async (a) => listFilesTool(await this.sandbox(), a, this.limits),
      start_process: (a, signal) => this.processes.start(a, signal),
      process_output: (a, signal) => this.processes.output(a, signal),
      write_stdin: (a) => this.processes.write(a),
      stop_process: (a) => this.processes.stop(a),
      list_processes: () => this.processes.list(),
    };
  }

  /** The open Sandbox: opened on first use; an open that failed is tried again next time. */
  sandbox() {
    if (this.#closing.signal.aborted) return Promise.reject(new Error("the MCP server is closing"));
    if (this.#sbx === null) {
      const sbx = this.#given;
      this.#sbx = (this.#own ? sbx.open() : Promise.resolve(sbx)).then((open) => {
        if (!this.#closing.signal.aborted) this.#open = open;
        return open;
      }, (e) => {
        this.#sbx = null;
        throw e;
      });
    }
    return this.#sbx;
  }

  /** Connects the SDK's server to a transport (stdio, or any the SDK has). */
  async connect(transport) {
    if ("onearly" in transport && !isOff("mcp-early")) {
      this.#transport = transport;
      transport.onearly = (message) => this.#early(message);
    }
    await this.server.connect(transport);
  }

  /**
   * Answers a run_code or run_command call itself, as its line is read,
   * without the SDK's Protocol: its dispatch (the request's schema checks,
   * bench/README.md has its cost) would run on a core the box needs.
   * Only a call the Protocol would hand to #call with these very arguments
   * and nothing else of its request: a plain request (the transport
   * checked), params of name and arguments only (no task, no _meta, so no
   * progress and nothing of the tasks capability), arguments the tool takes,
   * an open Sandbox, no kernel, no other early call of that id. Its
   * reply is what the Protocol would send: the tool result, an isError
   * result for a failure, and none once the client cancelled it. A
   * notifications/cancelled for it aborts it here (the Protocol, which
   * gets the notification too, knows no such request and ignores it).
   * Returns true when it took the message.
   */
  #early(message) {
    const p = message.params;
    if (message.method === "notifications/cancelled") {
      const id = p?.requestId;
      this.#earlyCalls.get(id)?.abort(p.reason === undefined ? new Error("cancelled by the client") : String(p.reason));
      return false;
    }
    if (message.method !== "tools/call" || !Object.hasOwn(message, "id") || this.#open === null ||
      this.kernelMode || this.#closing.signal.aborted || p === undefined ||
      (p.name !== "run_code" && p.name !== "run_command") || this.#earlyCalls.has(message.id)) return false;
    for (const k in p) if (k !== "name" && k !== "arguments") return false;
    const checked = checkArgs(this.tools.get(p.name), p.arguments);
    if (checked.error) return false;
    // One controller, aborted by the client's cancel or by close():
    // AbortSignal.any would put its listeners' setup before the box.
    const id = message.id;
    const cancel = new AbortController();
    this.#earlyCalls.set(id, cancel);
    const reply = (result) => {
      this.#earlyCalls.delete(id);
      // Cancelled by the client: no reply, as the Protocol sends none.
      if (cancel.signal.aborted && !this.#closing.signal.aborted) return;
      this.#transport.send({ jsonrpc: "2.0", id, result }).catch(() => {});
    };
    this.handlers[p.name](checked.args, cancel.signal).then(reply, (e) => reply(errorResult(
      this.#closing.signal.aborted ? CLOSING_MESSAGE : messageOf(e))));
    return true;
  }

  async #call(params, extra) {
    const tool = this.tools.get(params.name);
    if (tool === undefined) {
      const { McpError, ErrorCode } = loadSdk();
      throw new McpError(ErrorCode.InvalidParams, `unknown tool ${JSON.stringify(String(params.name).slice(0, 80))}; ` +
        `the tools are ${[...this.tools.keys()].join(", ")}`);
    }
    const checked = checkArgs(tool, params.arguments);
    if (checked.error) return errorResult(checked.error);
    const signal = anySignal(extra.signal, this.#closing.signal);
    try {
      return await this.handlers[tool.name](checked.args, signal);
    } catch (e) {
      if (this.#closing.signal.aborted) return errorResult(CLOSING_MESSAGE);
      if (extra.signal.aborted) throw e; // cancelled: the SDK sends no reply
      return errorResult(messageOf(e));
    }
  }

  #save(name) {
    const slot = this.#seq++ % OUTPUT_SLOTS;
    return async (stream, text) => {
      const rel = `${OUTPUT_DIR}/${slot}-${stream}.txt`;
      try {
        await (await this.sandbox()).writeFile(rel, text);
        return `/workspace/${rel}`;
      } catch (e) {
        process.stderr.write(`kern-sandbox mcp: cannot save ${rel}: ${messageOf(e)}\n`);
        return null;
      }
    };
  }

  #ctx(sbx, name, timeoutS) {
    return { limits: this.limits, save: this.#save(name), timeoutS: timeoutS ?? sbx.timeoutS,
      maxOutputBytes: sbx.maxOutputBytes };
  }

  async #runCode(a, signal) {
    // No turn before the box when the Sandbox is open (no await): Node's
    // stream work (nextTicks) would run first.
    const sbx = this.#open ?? await this.sandbox();
    const language = a.language ?? "python";
    const opts = { signal, ...(a.timeout_s !== undefined ? { timeoutS: a.timeout_s } : {}) };
    if (this.kernelMode && language === "python") return this.#runCell(sbx, a.code, opts);
    const r = await sbx.runCode(a.code, { ...opts, language });
    return renderRun(r, this.#ctx(sbx, "run_code", a.timeout_s));
  }

  async #runCell(sbx, code, opts) {
    if (this.#kernel === null) {
      this.#kernel = sbx.kernel({ isolation: "fork" }).catch((e) => {
        this.#kernel = null;
        throw e;
      });
    }
    const kernel = await this.#kernel;
    try {
      const r = await kernel.runCode(code, opts);
      return renderRun(r, this.#ctx(sbx, "run_code", opts.timeoutS));
    } catch (e) {
      if (e.code !== "ERR_SANDBOX_KERNEL_DEAD" && e.code !== "ERR_SANDBOX_KERNEL_CLOSED") throw e;
      this.#kernel = null;
      kernel.close().catch(() => {});
      return errorResult(`the Python kernel died and its state is lost: ${messageOf(e)}. The next run_code ` +
        "starts a fresh one: re-run the imports and definitions you need.");
    }
  }

  async #runCommand(a, signal) {
    const sbx = this.#open ?? await this.sandbox(); // as #runCode
    const opts = { signal, ...(a.timeout_s !== undefined ? { timeoutS: a.timeout_s } : {}) };
    const r = await sbx.run(["sh", "-c", a.command], opts);
    return renderRun(r, this.#ctx(sbx, "run_command", a.timeout_s));
  }

  /**
   * Stops every call (their boxes are killed), every process and the
   * kernel, closes the transport, and closes the Sandbox if the server
   * made it (a temporary workspace is removed). Idempotent.
   */
  close() {
    if (this.#closed === null) {
      this.#closed = (async () => {
        this.#closing.abort(new Error("the MCP server is closing"));
        this.#open = null;
        for (const cancel of this.#earlyCalls.values()) cancel.abort(this.#closing.signal.reason);
        this.processes.killAll();
        const kernel = this.#kernel;
        this.#kernel = null;
        if (kernel !== null) await kernel.then((k) => k.close(), () => {});
        this.server.onclose = undefined;
        await this.server.close().catch(() => {});
        // A close() during open() kills the setup box and fails that open().
        if (this.#own) await this.#given.close();
      })();
    }
    return this.#closed;
  }
}

/** An MCP server with kern-sandbox's tools (see KernMcpServer). */
function createMcpServer(options) {
  return new KernMcpServer(options);
}

module.exports = { createMcpServer, KernMcpServer, OUTPUT_DIR, OUTPUT_SLOTS };
