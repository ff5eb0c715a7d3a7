"use strict";

// Helpers of the adapter tests (test/96-98): scripted models and small checks.

/** An AI SDK LanguageModelV3 generate result: the tool calls given
 * ([toolName, input] pairs), or a final text. */
function v3Step({ calls = [], text = null }) {
  const usage = {
    inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
    outputTokens: { total: 1, text: 1, reasoning: 0 },
  };
  const content = calls.map(([toolName, input], i) => ({
    type: "tool-call", toolCallId: `call-${toolName}-${i}-${Math.random().toString(36).slice(2, 8)}`,
    toolName, input: JSON.stringify(input),
  }));
  if (text !== null) content.push({ type: "text", text });
  return {
    content,
    finishReason: { unified: calls.length > 0 ? "tool-calls" : "stop", raw: undefined },
    usage,
    warnings: [],
  };
}

/** Whether a required module can be loaded (an installed devDependency). */
function canLoad(id) {
  try {
    require.resolve(id);
    return true;
  } catch {
    return false;
  }
}

/** A web ReadableStream of the given strings. */
function streamOfStrings(parts) {
  return new ReadableStream({
    start(c) {
      for (const p of parts) c.enqueue(new TextEncoder().encode(p));
      c.close();
    },
  });
}

/** All bytes of a web ReadableStream as a string. */
async function textOf(stream) {
  return new Response(stream).text();
}

module.exports = { v3Step, canLoad, streamOfStrings, textOf };

/**
 * A stand-in for sbx.spawn (issue 33's process API, not on this tree yet),
 * built on sbx.run, so that the adapters' code for the process API runs in
 * the tests now: stdin a Node Writable, stdout/stderr Readables, wait(),
 * kill(), and `ports` as the API will give them (a made-up host port per box
 * port: nothing listens there). It records every call's options.
 */
function standInSpawn(sbx) {
  const { PassThrough } = require("stream");
  const { EventEmitter } = require("events");
  const calls = [];
  let n = 0;
  sbx.spawn = async (argv, opts = {}) => {
    // As the process API: a signal already aborted rejects at once, no box
    // (the adapters' probe of the options, lib/adapter/shell.js features).
    if (opts.signal && opts.signal.aborted) throw Object.assign(new Error("aborted"), { name: "AbortError" });
    calls.push({ argv, opts });
    const p = new EventEmitter();
    const ac = new AbortController();
    p.id = `proc-${++n}`;
    p.stdout = new PassThrough();
    p.stderr = new PassThrough();
    p.stdin = opts.stdin === false ? null : new PassThrough();
    p.ports = {};
    for (const port of opts.ports || []) p.ports[port] = { host: "127.0.0.1", port: 40000 + port, url: `http://127.0.0.1:${40000 + port}` };
    p.exited = false;
    p.signals = [];
    p.kill = (sig = "SIGKILL") => {
      p.signals.push(sig);
      ac.abort(new Error(sig));
    };
    const call = { signal: ac.signal, onStdout: (b) => p.stdout.write(b), onStderr: (b) => p.stderr.write(b) };
    if (opts.env) call.env = opts.env;
    if (p.stdin) call.stdin = p.stdin;
    const done = sbx.run(argv, call);
    const settled = done.then((r) => r, (e) => {
      throw e;
    }).finally(() => {
      p.exited = true;
      p.stdout.end();
      p.stderr.end();
    });
    settled.then((r) => p.emit("exit", r), () => {});
    p.wait = () => settled;
    return p;
  };
  return calls;
}

module.exports.standInSpawn = standInSpawn;

let featuresOnce = null;

/** What this tree's process API gives ({ spawn, pty, ports }), asked as
 * the adapters ask it (lib/adapter/shell.js features) of an open Sandbox. */
function processFeatures() {
  if (featuresOnce === null) {
    featuresOnce = (async () => {
      const { Sandbox } = require("../..");
      const { features } = require("../../lib/adapter/shell");
      const sbx = await new Sandbox({ prewarm: 0 }).open();
      try {
        return await features(sbx);
      } finally {
        await sbx.close();
      }
    })();
  }
  return featuresOnce;
}

module.exports.processFeatures = processFeatures;
