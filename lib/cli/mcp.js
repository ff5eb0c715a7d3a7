"use strict";

// `kern-sandbox mcp [flags]`: the MCP server on stdio (lib/mcp/stdio.js).
// Every option is a flag or an environment variable (for MCP clients whose
// configuration sets env more easily than args); a flag wins.

const OPTIONS = [
  // flag, env (after KERN_SANDBOX_MCP_), kind, the createMcpServer option, its value, help
  ["--image", "IMAGE", "string", "image", "REF", "the OCI image of every box (default python:3.12-slim)"],
  ["--setup", "SETUP", "string", "setup", "CMD", "a shell command run once at start, with network (\"pip install pandas\")"],
  ["--memory", "MEMORY", "mb", "memoryMb", "MIB", "memory cap of each box in MiB (default 512; 0: kern's default)"],
  ["--cpus", "CPUS", "number", "cpus", "N", "CPU cap of each box in cores (default uncapped)"],
  ["--timeout", "TIMEOUT", "number", "timeoutS", "S", "each call's time limit in seconds (default 30)"],
  ["--workspace", "WORKSPACE", "string", "workspace", "DIR", "an existing host directory as the workspace (default a temp dir, removed at exit)"],
  ["--network", "NETWORK", "bool", "network", "", "give every box the host network (relaxes isolation)"],
  ["--egress-allow", "EGRESS_ALLOW", "list", "egressAllow", "D1,D2", "let boxes reach only these domains"],
  ["--prewarm", "PREWARM", "integer", "prewarm", "N", "boxes kept started ahead of calls, 0-16 (default 1)"],
  ["--kernel", "KERNEL", "bool", "kernel", "", "Python run_code keeps its state across calls (one interpreter, each call fork-isolated)"],
  ["--stream-chars", "STREAM_CHARS", "integer", "limits.streamChars", "N", "characters of each stream in a reply (default 16000)"],
  ["--reply-chars", "REPLY_CHARS", "integer", "limits.replyChars", "N", "characters of text in one reply (default 64000)"],
  ["--max-images", "MAX_IMAGES", "integer", "limits.imagesPerReply", "N", "images in one reply (default 8)"],
];

const ENV_PREFIX = "KERN_SANDBOX_MCP_";

function usage() {
  const lines = ["usage: kern-sandbox mcp [options]", "",
    "An MCP server on stdio (Model Context Protocol) whose tools run code in kern boxes: run_code,",
    "run_command, write_file, read_file, list_files, start_process, process_output, write_stdin,",
    "stop_process, list_processes. It needs @modelcontextprotocol/sdk installed beside kern-sandbox.", "",
    "options (each also an environment variable; a flag wins):"];
  for (const [flag, env, kind, , arg, help] of OPTIONS) {
    lines.push(`  ${`${flag}${arg ? ` ${arg}` : ""}`.padEnd(22)} ${help}`);
    lines.push(`  ${"".padEnd(22)} ${ENV_PREFIX}${env}${kind === "bool" ? "=1" : `=${arg}`}`);
  }
  lines.push(`  ${"--help, -h".padEnd(22)} this text`, "",
    "KERN_BIN names the kern binary (default: kern on PATH).", "");
  return lines.join("\n");
}

class UsageError extends Error {}

function valueOf(kind, raw, name) {
  const bad = (what) => new UsageError(`${name} ${what}, got ${JSON.stringify(raw)}`);
  switch (kind) {
    case "string":
      if (raw === "") throw bad("needs a value");
      return raw;
    case "bool":
      if (/^(1|true|yes|on)$/i.test(raw)) return true;
      if (/^(0|false|no|off|)$/i.test(raw)) return false;
      throw bad("must be 1/true or 0/false");
    case "list":
      return raw.split(",").map((s) => s.trim()).filter(Boolean);
    case "mb": {
      const v = Number(raw);
      if (raw === "" || !Number.isInteger(v) || v < 0) throw bad("must be a whole number of MiB (0: kern's default)");
      return v === 0 ? null : v;
    }
    case "integer": {
      const v = Number(raw);
      if (raw === "" || !Number.isInteger(v) || v < 0) throw bad("must be a whole number");
      return v;
    }
    default: {
      const v = Number(raw);
      if (raw === "" || !Number.isFinite(v) || v <= 0) throw bad("must be a number above 0");
      return v;
    }
  }
}

function assign(out, key, value) {
  if (key.startsWith("limits.")) (out.limits ??= {})[key.slice(7)] = value;
  else out[key] = value;
}

/** createMcpServer options from argv (after "mcp") and env; { help } for --help. */
function parseArgs(argv, env = process.env) {
  const out = {};
  for (const [, name, kind, key] of OPTIONS) {
    const raw = env[`${ENV_PREFIX}${name}`];
    if (raw !== undefined) assign(out, key, valueOf(kind, raw, `${ENV_PREFIX}${name}`));
  }
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--help" || arg === "-h") return { help: true };
    const eq = arg.indexOf("=");
    const flag = eq === -1 ? arg : arg.slice(0, eq);
    const opt = OPTIONS.find((o) => o[0] === flag);
    if (opt === undefined) throw new UsageError(`unknown option ${JSON.stringify(arg)}`);
    const [, , kind, key] = opt;
    let raw;
    if (eq !== -1) raw = arg.slice(eq + 1);
    else if (kind === "bool") raw = "1";
    else if (i + 1 < argv.length) raw = argv[++i];
    else throw new UsageError(`${flag} needs a value`);
    assign(out, key, valueOf(kind, raw, flag));
  }
  return { options: out };
}

/** The subcommand: resolves to the process's exit code. */
async function main(argv) {
  let parsed;
  try {
    parsed = parseArgs(argv);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    process.stderr.write(`kern-sandbox mcp: ${e.message}\n\n${usage()}`);
    return 2;
  }
  if (parsed.help) {
    process.stdout.write(usage());
    return 0;
  }
  const { serveStdio } = require("../mcp/stdio");
  try {
    await serveStdio(parsed.options);
  } catch (e) {
    // A bad option value (the Sandbox's own check) or a missing SDK.
    if (e && (e.name === "SandboxError" || e instanceof TypeError || e instanceof RangeError)) {
      process.stderr.write(`kern-sandbox mcp: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
  return 0;
}

module.exports = { main, parseArgs, usage, OPTIONS, ENV_PREFIX };
