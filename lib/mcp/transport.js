"use strict";

// The stdio transport of `kern-sandbox mcp`: newline-delimited JSON-RPC on
// two streams, as the SDK's StdioServerTransport, with what that one lacks
// for a server a model's client drives (SECURITY-CASES G1):
// - a line that is not JSON, or not a JSON-RPC message, gets an error reply
//   (-32700 / -32600, with the request's id when one can be read, else
//   null) and the server keeps serving; the SDK's transport only reports it
//   to its own onerror;
// - a line over maxLineBytes is skipped up to its newline, with bounded
//   memory, and answered with -32700 (the SDK's transport closes itself);
// - EOF on the input, or an error on either stream (EPIPE when the client
//   went away), closes the transport, so the server's close follows.
const { loadSdk } = require("./sdk");

const DEFAULT_MAX_LINE = 32 * 1024 * 1024;

/**
 * True when value is certainly a JSON-RPC request or notification as the
 * SDK's JSONRPCMessageSchema takes it: "2.0", a string method, an id that
 * is a string or a safe integer (or none), params absent or an object
 * without _meta, and no other key. A strict subset of the schema, checked
 * by hand because the schema's parse (a zod union) tries its branches on
 * every message; anything else (_meta, responses, errors, anything odd)
 * goes to the schema as before. The SDK's Protocol checks every message it
 * gets again with its own schemas; a tools/call the server answers itself
 * (onearly) has its arguments checked by the tool's own check (checkArgs).
 */
function plainRequest(v) {
  if (v === null || typeof v !== "object" || Array.isArray(v) || v.jsonrpc !== "2.0" || typeof v.method !== "string")
    return false;
  for (const k in v) if (k !== "jsonrpc" && k !== "id" && k !== "method" && k !== "params") return false;
  if (Object.hasOwn(v, "id") && typeof v.id !== "string" && !Number.isSafeInteger(v.id)) return false;
  const p = v.params;
  return p === undefined || (p !== null && typeof p === "object" && !Array.isArray(p) && !Object.hasOwn(p, "_meta"));
}

class LineTransport {
  #input;
  #output;
  #max;
  #pieces = [];
  #size = 0;
  #skipping = false; // inside a line that passed the cap
  #closed = false;

  constructor({ input = process.stdin, output = process.stdout, maxLineBytes = DEFAULT_MAX_LINE } = {}) {
    this.#input = input;
    this.#output = output;
    this.#max = maxLineBytes;
    this.onmessage = undefined;
    this.onerror = undefined;
    this.onclose = undefined;
    // The server's hook (lib/mcp/server.js): onearly(message) sees each
    // plain request and notification first, and returns true for a
    // tools/call it answers itself, which the Protocol then never gets.
    this.onearly = undefined;
    this.onData = (chunk) => this.#data(chunk);
    this.onEnd = () => this.close();
    this.onStreamError = (e) => {
      this.onerror?.(e);
      this.close();
    };
  }

  async start() {
    this.#input.on("data", this.onData);
    this.#input.on("end", this.onEnd);
    this.#input.on("error", this.onStreamError);
    this.#output.on("error", this.onStreamError);
  }

  #data(chunk) {
    let start = 0;
    while (!this.#closed) {
      const nl = chunk.indexOf(10, start);
      const piece = chunk.subarray(start, nl === -1 ? chunk.length : nl);
      if (!this.#skipping) {
        if (this.#size + piece.length > this.#max) {
          this.#skipping = true;
          this.#pieces = [];
          this.#size = 0;
        } else if (piece.length > 0) {
          this.#pieces.push(piece);
          this.#size += piece.length;
        }
      }
      if (nl === -1) return;
      start = nl + 1;
      if (this.#skipping) {
        this.#skipping = false;
        this.#reply(null, -32700, `Parse error: a message longer than ${this.#max} bytes was skipped`);
      } else {
        const line = Buffer.concat(this.#pieces, this.#size);
        this.#pieces = [];
        this.#size = 0;
        this.#line(line.toString("utf8").replace(/\r$/, ""));
      }
    }
  }

  #line(text) {
    if (text.trim() === "") return;
    let value;
    try {
      value = JSON.parse(text);
    } catch (e) {
      this.#reply(null, -32700, `Parse error: ${e.message}`);
      return;
    }
    if (plainRequest(value)) {
      // A tools/call the server answers itself (onearly returns true)
      // never reaches the SDK's Protocol; a cancel of one does, harmlessly.
      if (this.onearly?.(value) !== true) this.#deliver(value);
      return;
    }
    const parsed = loadSdk().JSONRPCMessageSchema.safeParse(value);
    if (!parsed.success) {
      const id = value !== null && typeof value === "object" && (typeof value.id === "string" ||
        (typeof value.id === "number" && Number.isFinite(value.id))) ? value.id : null;
      this.#reply(id, -32600, "Invalid Request: not a JSON-RPC 2.0 request, notification or response");
      return;
    }
    this.#deliver(parsed.data);
  }

  #deliver(message) {
    try {
      this.onmessage?.(message);
    } catch (e) {
      this.onerror?.(e);
    }
  }

  #reply(id, code, message) {
    this.send({ jsonrpc: "2.0", id, error: { code, message } }).catch(() => {});
  }

  send(message) {
    if (this.#closed) return Promise.resolve();
    return new Promise((resolve) => {
      if (this.#output.write(`${JSON.stringify(message)}\n`)) resolve();
      else {
        const done = () => {
          this.#output.off("drain", done);
          this.#output.off("close", done);
          resolve();
        };
        this.#output.once("drain", done);
        this.#output.once("close", done);
      }
    });
  }

  async close() {
    if (this.#closed) return;
    this.#closed = true;
    this.#input.off("data", this.onData);
    this.#input.off("end", this.onEnd);
    this.#input.off("error", this.onStreamError);
    this.#pieces = [];
    this.onclose?.();
  }
}

module.exports = { LineTransport, DEFAULT_MAX_LINE, plainRequest };
