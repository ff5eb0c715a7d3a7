"use strict";

// The MCP server under test, driven the way a client drives it: the SDK's
// own Client over stdio (StdioClientTransport spawning `node
// bin/kern-sandbox.js mcp`, with the double as KERN_BIN, inherited from the
// test process), or raw lines on its stdin for what no well-behaved client
// sends.
const path = require("path");
const { spawn } = require("child_process");
const h = require("./harness");

const BIN = path.join(h.repo, "bin", "kern-sandbox.js");

/** A connected SDK Client: { client, transport, pid, stderr() }. */
async function connect(args = [], env = {}) {
  const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
  const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");
  const transport = new StdioClientTransport({ command: process.execPath, args: [BIN, "mcp", ...args],
    env: { ...process.env, ...env }, stderr: "pipe" });
  let err = "";
  transport.stderr.on("data", (b) => {
    err += b;
  });
  const client = new Client({ name: "kern-sandbox-test", version: "0.0.0" });
  await client.connect(transport);
  return { client, transport, pid: transport.pid, stderr: () => err };
}

/** The text of a tool result's text items, joined. */
function textOf(result) {
  return result.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");
}

/** A server on raw pipes: send(obj | string), lines (every stdout line),
 * next(pred) (the first reply that matches), end(), exit. */
function raw(args = [], env = {}) {
  const child = spawn(process.execPath, [BIN, "mcp", ...args], { env: { ...process.env, ...env },
    stdio: ["pipe", "pipe", "pipe"] });
  const lines = [];
  const parsed = []; // lines, parsed once each
  const waiters = [];
  let buf = "";
  let stderr = "";
  child.stderr.on("data", (b) => {
    stderr += b;
  });
  child.stdout.on("data", (b) => {
    buf += b;
    let nl;
    while ((nl = buf.indexOf("\n")) !== -1) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      lines.push(line);
      parsed.push(JSON.parse(line));
      for (const w of [...waiters]) w(parsed.length - 1);
    }
  });
  const exit = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  const send = (m) => child.stdin.write(typeof m === "string" ? m : `${JSON.stringify(m)}\n`);
  /** The first stdout message (parsed) from index `from` on that pred accepts. */
  const next = (pred, ms = 20000) => new Promise((resolve, reject) => {
    const check = (from = 0) => {
      for (let i = from; i < parsed.length; i++) {
        const m = parsed[i];
        if (pred(m)) {
          waiters.splice(waiters.indexOf(check), 1);
          clearTimeout(timer);
          resolve(m);
          return;
        }
      }
    };
    const timer = setTimeout(() => {
      waiters.splice(waiters.indexOf(check), 1);
      reject(new Error(`no reply matched in ${ms} ms; stdout: ${lines.join("\n").slice(0, 2000)}; stderr: ${stderr}`));
    }, ms);
    waiters.push(check);
    check();
  });
  const init = async () => {
    send({ jsonrpc: "2.0", id: "init", method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "0" } } });
    const r = await next((m) => m.id === "init");
    send({ jsonrpc: "2.0", method: "notifications/initialized" });
    return r;
  };
  return { child, send, next, init, lines, exit, stderr: () => stderr, end: () => child.stdin.end() };
}

module.exports = { BIN, connect, textOf, raw };
