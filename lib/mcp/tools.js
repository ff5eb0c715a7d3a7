"use strict";

// The MCP server's tools as a model sees them: names (kern's own Python
// server names its first four so), descriptions written for a model, and
// their input schemas; plus the check of a call's arguments against them,
// done here by hand so that a wrong argument gets a message that says what
// the tool takes (the SDK's low-level Server validates nothing).

const str = (description) => ({ type: "string", description });
const TIMEOUT = { type: "number", exclusiveMinimum: 0,
  description: "Wall-clock limit in seconds for this call (default: the server's)." };
const PATH = str("A path in the workspace: relative (\"data.csv\") or under /workspace (\"/workspace/data.csv\").");
const PROC_ID = str("The process id start_process returned.");

function runCodeDescription(kernel) {
  const state = kernel
    ? "Python runs in ONE persistent interpreter: variables, imports and functions persist across run_code " +
      "calls (each call runs in a fork of that state, so a call that crashes or times out loses only itself). " +
      "bash and node run in a fresh box per call."
    : "Each call runs in a fresh box: in-memory state does not persist between calls, files in /workspace do.";
  return "Run Python (default), bash or node code in a local, isolated kern sandbox and return its stdout, " +
    "stderr and rich results: the value of a last bare expression and every display() come back as text, " +
    "matplotlib figures and images as images you can see. The working directory is /workspace. " +
    `${state} A non-zero exit, an exception or a timeout is returned as an error result with the output. ` +
    "Long output is cut in the middle; the whole output is then saved in a workspace file named in the reply.";
}

/** The tool list (tools/list), for a server with kernel mode on or off. */
function toolList({ kernel = false } = {}) {
  return [
    { name: "run_code", description: runCodeDescription(kernel),
      inputSchema: { type: "object", additionalProperties: false, required: ["code"], properties: {
        code: str("The code to run."),
        language: { type: "string", enum: ["python", "bash", "node"], description: "The language (default python)." },
        timeout_s: TIMEOUT } } },
    { name: "run_command", description: "Run one shell command line (sh -c) in a fresh isolated box with " +
      "/workspace as its working directory, and return its stdout, stderr and exit code. Use it for ls, " +
      "grep, pip list, running a script you wrote, and so on. A non-zero exit is returned as an error result.",
    inputSchema: { type: "object", additionalProperties: false, required: ["command"], properties: {
      command: str("The shell command line, e.g. \"python3 analysis.py --rows 10 | tail -n 5\"."),
      timeout_s: TIMEOUT } } },
    { name: "write_file", description: "Write a file in the sandbox workspace (creating its directories), " +
      "replacing any file there. Text by default; pass encoding \"base64\" for binary content.",
    inputSchema: { type: "object", additionalProperties: false, required: ["path", "content"], properties: {
      path: PATH, content: str("The file's content."),
      encoding: { type: "string", enum: ["utf8", "base64"], description: "How content is encoded (default utf8)." } } } },
    { name: "read_file", description: "Read a file from the sandbox workspace. Text comes back as text (a long " +
      "file in pages: pass offset to read on); images (PNG, JPEG, GIF, WebP) as images; other binary files as " +
      "a resource, within a size cap.",
    inputSchema: { type: "object", additionalProperties: false, required: ["path"], properties: {
      path: PATH,
      offset: { type: "integer", minimum: 0, description: "For text: the character to start at (default 0)." } } } },
    { name: "list_files", description: "List the files in the sandbox workspace (or in one of its " +
      "directories), with their sizes in bytes.",
    inputSchema: { type: "object", additionalProperties: false, properties: {
      path: str("A directory of the workspace to list (default: all of it).") } } },
    { name: "start_process", description: "Start a long-running shell command (a server, a watcher, an " +
      "interactive program) in its own isolated box and return at once with its id. Its output is kept: read " +
      "it with process_output. ports: box TCP ports to publish; the reply gives the URL on the host for each.",
    inputSchema: { type: "object", additionalProperties: false, required: ["command"], properties: {
      command: str("The shell command line, e.g. \"python3 -m http.server 8000\"."),
      ports: { type: "array", items: { type: "integer", minimum: 1, maximum: 65535 }, maxItems: 16,
        description: "TCP ports in the box to publish on the host (e.g. [8000])." } } } },
    { name: "process_output", description: "Read a started process's output after a cursor, and whether it " +
      "has exited (with its exit code). Pass the next_cursor of the previous reply as since to get only new " +
      "output; wait_s waits up to that many seconds for new output or the exit.",
    inputSchema: { type: "object", additionalProperties: false, required: ["id"], properties: {
      id: PROC_ID,
      since: { type: "integer", minimum: 0, description: "The cursor to read after (default 0: from the start)." },
      wait_s: { type: "number", minimum: 0, maximum: 30, description: "Seconds to wait for new output (default 0)." } } } },
    { name: "write_stdin", description: "Write text to a started process's stdin (add \\n to end a line); " +
      "eof true closes its stdin afterwards.",
    inputSchema: { type: "object", additionalProperties: false, required: ["id"], properties: {
      id: PROC_ID, data: str("The text to write."),
      eof: { type: "boolean", description: "Close stdin after writing (default false)." } } } },
    { name: "stop_process", description: "Stop a started process (SIGTERM, then SIGKILL after a grace period) " +
      "and return its last output and exit code.",
    inputSchema: { type: "object", additionalProperties: false, required: ["id"], properties: { id: PROC_ID } } },
    { name: "list_processes", description: "List the started processes: id, command, running or exited, " +
      "published URLs.", inputSchema: { type: "object", additionalProperties: false, properties: {} } },
  ];
}

const TOOL_NAMES = Object.freeze(toolList().map((t) => t.name));

/** What is wrong with one value against a property schema, or null. */
function badValue(value, schema) {
  const t = schema.type;
  if (t === "string" && typeof value !== "string") return "must be a string";
  if (t === "boolean" && typeof value !== "boolean") return "must be true or false";
  if ((t === "number" || t === "integer") && (typeof value !== "number" || !Number.isFinite(value)))
    return "must be a finite number";
  if (t === "integer" && !Number.isInteger(value)) return "must be a whole number";
  if (schema.enum && !schema.enum.includes(value)) return `must be one of ${schema.enum.map((v) => JSON.stringify(v)).join(", ")}`;
  if (schema.exclusiveMinimum !== undefined && value <= schema.exclusiveMinimum) return `must be above ${schema.exclusiveMinimum}`;
  if (schema.minimum !== undefined && value < schema.minimum) return `must be at least ${schema.minimum}`;
  if (schema.maximum !== undefined && value > schema.maximum) return `must be at most ${schema.maximum}`;
  if (t === "array") {
    if (!Array.isArray(value)) return "must be an array";
    if (schema.maxItems !== undefined && value.length > schema.maxItems) return `must have at most ${schema.maxItems} items`;
    for (const item of value) {
      const bad = badValue(item, schema.items);
      if (bad !== null) return `items ${bad.replace(/^must/, "must each")}`;
    }
  }
  return null;
}

const clip = (s, n = 80) => (s.length > n ? `${s.slice(0, n)}...` : s);

/**
 * The arguments of a call checked against the tool's schema: the args
 * object, or a message a model can act on (what is wrong, what the tool takes).
 */
function checkArgs(tool, args) {
  const schema = tool.inputSchema;
  const takes = () => {
    const names = Object.keys(schema.properties);
    return names.length === 0 ? `${tool.name} takes no arguments`
      : `${tool.name} takes ${names.map((n) => (schema.required?.includes(n) ? `${n} (required)` : n)).join(", ")}`;
  };
  const a = args === undefined || args === null ? {} : args;
  if (typeof a !== "object" || Array.isArray(a)) return { error: `the arguments must be an object; ${takes()}` };
  for (const name of Object.keys(a)) {
    if (!Object.prototype.hasOwnProperty.call(schema.properties, name))
      return { error: `unknown argument ${JSON.stringify(clip(name))}; ${takes()}` };
  }
  for (const name of schema.required ?? []) {
    if (a[name] === undefined || a[name] === null) return { error: `missing argument ${JSON.stringify(name)}; ${takes()}` };
  }
  for (const [name, prop] of Object.entries(schema.properties)) {
    if (a[name] === undefined || a[name] === null) continue;
    const bad = badValue(a[name], prop);
    if (bad !== null) return { error: `argument ${JSON.stringify(name)} ${bad}; ${takes()}` };
  }
  return { args: a };
}

module.exports = { toolList, checkArgs, TOOL_NAMES };
